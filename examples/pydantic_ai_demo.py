"""A Pydantic AI agent whose tools answer through toolguard.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[pydantic-ai]"
    .venv/bin/python examples/pydantic_ai_demo.py

(offline: the model is Pydantic AI's ``FunctionModel`` playing a script of tool calls)

Changed lines, compared with plain Pydantic AI tools:
``tools=as_pydantic_ai_tools(guard)`` and ``capabilities=[ToolguardCapability(guard)]``.

The script calls a tool whose backend leaks a secret (hidden: a failed tool result
with toolguard's generic message; the cause logged once with an error id), the same
tool with an order that does not exist (a message written for the model), a tool
that answers a wrong date with ``RetryWithFeedback`` (Pydantic AI's own retry loop:
the model corrects the call), and finally a ``return_direct`` tool that ends the
run: its result is the run's output.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import structlog
from pydantic_ai import (
    Agent,
    AgentRunResult,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolguard import Dispatcher, RetryWithFeedback, ToolError, tool
from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tools


class BackendDown(Exception):
    pass


@tool
def order_status(order_id: int) -> str:
    """Look up the status of an order."""
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    raise BackendDown("orders-db at postgres://admin:s3cret@10.0.0.7 refused the connection")


@tool
def book_table(day: str) -> str:
    """Book a table for the user."""
    if len(day) != 10 or day[4] != "-":
        raise RetryWithFeedback(f"{day!r} is not a date; send YYYY-MM-DD (e.g. 2026-05-01).")
    return f"Table booked for {day}."


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the user the final answer and stop."""
    return text


script: list[list[ModelResponsePart]] = [
    [ToolCallPart("order_status", {"order_id": 7}, tool_call_id="call_1")],
    [ToolCallPart("order_status", {"order_id": 42}, tool_call_id="call_2")],
    [ToolCallPart("book_table", {"day": "May 1st"}, tool_call_id="call_3")],
    [ToolCallPart("book_table", {"day": "2026-05-01"}, tool_call_id="call_4")],
    [ToolCallPart("final_answer", {"text": "Booked for May 1st."}, tool_call_id="call_5")],
    [TextPart("This answer is never reached: final_answer ended the run.")],
]


def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: the next response, whatever it was told."""
    return ModelResponse(parts=script.pop(0))


guard = Dispatcher([order_status, book_table, final_answer])
agent = Agent(
    FunctionModel(play),
    tools=as_pydantic_ai_tools(guard),
    capabilities=[ToolguardCapability(guard)],
)


def one_line_cause(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Show a hidden cause as one line instead of a traceback (this app's choice)."""
    error = event.pop("exc_info", None)
    if error is not None:
        event["cause"] = repr(error)
    return event


def show(result: AgentRunResult[str]) -> None:
    for message in result.all_messages():
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                print(f"user: {part.content}")
            elif isinstance(part, ToolCallPart):
                print(f"model calls {part.tool_name}({part.args_as_json_str()})")
            elif isinstance(part, ToolReturnPart):
                print(f"  tool [{part.outcome}]: {part.content}")
            elif isinstance(part, TextPart) and isinstance(message, ModelResponse):
                by = " (toolguard: return_direct)" if message.metadata else ""
                print(f"assistant{by}: {part.content}")
    print(f"output: {result.output}")


if __name__ == "__main__":
    # toolguard never configures logging; the application does.
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            one_line_cause,
            structlog.dev.ConsoleRenderer(colors=False),
        ]
    )
    print("--- what the application's log gets: the hidden cause, once ---")
    result = agent.run_sync("Where is my order 7? And book a table for May 1st.")
    print("--- the conversation, as the model saw it ---")
    show(result)

    transcript = str(result.all_messages())
    assert "s3cret" not in transcript
    assert result.output == "Booked for May 1st."
    assert len(script) == 1  # the model was not asked again after final_answer
    assert isinstance(result.all_messages()[-2], ModelRequest)
