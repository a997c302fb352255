"""An existing DSPy app, its tools guarded by toolguard with one added line.

Offline: the model is DSPy's own ``dspy.utils.DummyLM`` playing a script of ReAct
steps. DSPy needs an environment of its own (its litellm's botocore pins
``python-dateutil<3``, which the main environment's 4.x excludes); from the root of a
clone::

    python3 -m venv .venv-dspy && .venv-dspy/bin/pip install -e ".[dspy]"
    .venv-dspy/bin/python examples/dspy_app.py

The app is written as for plain DSPy: functions and a ``dspy.ReAct`` program. Without
the marked line, ReAct tells the model the exception's text and a traceback: here, a
database password. The script: the model looks up an order whose backend leaks a
secret (hidden: the model gets toolguard's message with an error id, the cause is
logged once under that id), then an order that does not exist (a ``ToolError``, sent as
written), then finishes and answers.
"""

# example-environment: dspy

from typing import Any

import dspy
import structlog
from dspy.utils import DummyLM

from toolguard import Dispatcher, ToolError
from toolguard.integrations.dspy import guard


def order_status(order_id: int) -> str:
    """Look up an order by its number."""
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


def step(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"next_thought": f"call {tool}", "next_tool_name": tool, "next_tool_args": arguments}


def main() -> None:
    dispatcher = Dispatcher([], external_tools=["order_status"])
    react = dspy.ReAct(
        "question -> answer",
        tools=guard([order_status], dispatcher),  # the one line toolguard adds
    )
    model = DummyLM(
        [
            step("order_status", {"order_id": 7}),
            step("order_status", {"order_id": 99}),
            step("finish", {}),
            {"reasoning": "neither order was found", "answer": "Sorry, I could not find it."},
        ]
    )
    with structlog.testing.capture_logs() as logs, dspy.context(lm=model):
        prediction = react(question="Where is my order?")
    hidden = prediction.trajectory["observation_0"]
    visible = prediction.trajectory["observation_1"]
    assert "s3cret" not in hidden and "error id" in hidden
    assert visible.endswith("ToolError: There is no order 99. Ask the user to check the number.")
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] in hidden
    print("the model was told:", hidden.splitlines()[-1][:160], "...")
    print("the log has the cause, under error id", event["error_id"])
    print("answer:", prediction.answer)


if __name__ == "__main__":
    main()
