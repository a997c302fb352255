"""An existing Haystack app, its tools guarded by toolguard with one added line.

Offline: the chat generator is a Haystack ``@component`` playing a script. Run from
the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[haystack]"
    .venv/bin/python examples/haystack_app.py

The app is written as for plain Haystack: an ``@tool`` function reading an API key
from the Agent's ``State``, and an ``Agent``. Without the marked line, Haystack tells
the model the exception's text and every argument the tool was called with: here, a
database password and the API key. The script: the model looks up an order whose
backend leaks a secret (hidden: the model gets toolguard's message with an error id,
the cause is logged once under that id) and an order that does not exist (a
``ToolError``, sent as written), then answers.
"""

from typing import Any

import structlog
from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.tools import tool

from toolguard import Dispatcher, ToolError
from toolguard.integrations.haystack import guard


@tool(inputs_from_state={"api_key": "api_key"})
def order_status(order_id: int, api_key: str) -> str:
    """Look up an order."""
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


@component
class ScriptedGenerator:
    """The app's LLM, played offline: two tool calls in one step, then the answer."""

    def __init__(self) -> None:
        self.seen: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        self.seen.append(list(messages))
        if len(self.seen) > 1:
            return {"replies": [ChatMessage.from_assistant("Sorry, I could not find it.")]}
        calls = [
            ToolCall(tool_name="order_status", arguments={"order_id": 7}, id="c1"),
            ToolCall(tool_name="order_status", arguments={"order_id": 99}, id="c2"),
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}


def main() -> None:
    dispatcher = Dispatcher([], external_tools=["order_status"])
    generator = ScriptedGenerator()
    agent = Agent(
        chat_generator=generator,
        tools=guard([order_status], dispatcher),  # the one line toolguard adds
        state_schema={"api_key": {"type": str}},
    )
    with structlog.testing.capture_logs() as logs:
        result = agent.run(
            messages=[ChatMessage.from_user("Where is my order?")], api_key="sk-live-123"
        )
    hidden, visible = (r.result for m in generator.seen[-1] for r in m.tool_call_results)
    assert "s3cret" not in hidden and "sk-live-123" not in hidden and "error id" in hidden
    assert visible == "There is no order 99. Ask the user to check the number."
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] in hidden
    print("the model was told:", hidden[:160], "...")
    print("the log has the cause, under error id", event["error_id"])
    print("answer:", result["last_message"].text)


if __name__ == "__main__":
    main()
