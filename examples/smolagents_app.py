"""An existing smolagents app, its tools guarded by toolguard with one added line.

Offline: the model is a smolagents ``Model`` subclass playing a script. Run from the
root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[smolagents]"
    .venv/bin/python examples/smolagents_app.py

The app is written as for plain smolagents: ``@tool`` functions and a ``CodeAgent``.
Without the marked line, smolagents tells the model the exception's text: here, a
database password. The script: the model's code looks up an order whose backend
leaks a secret (hidden: the model gets toolguard's message with an error id, the
cause is logged once under that id), then an order that does not exist (a
``ToolError``, sent as written), then answers.
"""

from typing import Any

import structlog
from smolagents import CodeAgent, Model, tool
from smolagents.models import ChatMessage, MessageRole
from smolagents.monitoring import LogLevel

from toolguard import Dispatcher, ToolError
from toolguard.integrations.smolagents import guard


@tool
def order_status(order_id: int) -> str:
    """Look up an order.

    Args:
        order_id: The order's number.
    """
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


class ScriptedModel(Model):  # type: ignore[misc]  # smolagents is untyped
    """The app's LLM, played offline: two code snippets, then the answer."""

    def __init__(self) -> None:
        super().__init__(model_id="scripted")
        self.steps = [
            "<code>\nprint(order_status(order_id=7))\n</code>",
            "<code>\nprint(order_status(order_id=99))\n</code>",
            "<code>\nfinal_answer('Sorry, I could not find your order.')\n</code>",
        ]
        self.seen: list[str] = []

    def generate(self, messages: list[ChatMessage], *args: Any, **kwargs: Any) -> ChatMessage:
        self.seen.append(str(messages[-1].content))
        return ChatMessage(role=MessageRole.ASSISTANT, content=self.steps.pop(0))


def main() -> None:
    dispatcher = Dispatcher([], external_tools=["order_status"])
    model = ScriptedModel()
    agent = CodeAgent(
        tools=guard([order_status], dispatcher),  # the one line toolguard adds
        model=model,
        verbosity_level=LogLevel.OFF,
    )
    with structlog.testing.capture_logs() as logs:
        answer = agent.run("Where is my order?")
    hidden, visible = model.seen[1], model.seen[2]
    assert "s3cret" not in hidden and "error id" in hidden
    assert "There is no order 99. Ask the user to check the number." in visible
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] in hidden
    print("the model was told:", hidden[:160], "...")
    print("the log has the cause, under error id", event["error_id"])
    print("answer:", answer)


if __name__ == "__main__":
    main()
