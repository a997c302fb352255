"""An OpenAI Agents SDK agent whose tools answer through toolguard.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[openai-agents]"
    .venv/bin/python examples/openai_agents_demo.py

(offline: the model is the SDK's own ``agents.testing.ScriptedModel`` playing a script
of tool calls; tracing is off)

Changed lines, compared with plain ``@function_tool`` tools:
``tools=as_function_tools(guard)`` and ``tool_use_behavior=tool_use_behavior(guard)``.

The script calls a tool whose backend leaks a secret (hidden, logged once with an
error id), the same tool with an order that does not exist (a message written for
the model), the tool with a bad argument (toolguard's validation message, not the
SDK's "An error occurred"), and finally a ``return_direct`` tool that ends the run:
its result is the run's final output.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import structlog
from agents import (
    Agent,
    ItemHelpers,
    MessageOutputItem,
    Runner,
    RunResult,
    ToolCallItem,
    ToolCallOutputItem,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from toolguard import Dispatcher, ToolError, tool
from toolguard.integrations.openai_agents import as_function_tools, tool_use_behavior


class BackendDown(Exception):
    pass


@tool
def order_status(order_id: int) -> str:
    """Look up the status of an order."""
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    raise BackendDown("orders-db at postgres://admin:s3cret@10.0.0.7 refused the connection")


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the user the final answer and stop."""
    return text


model = ScriptedModel(
    [
        [function_call("order_status", {"order_id": 7}, call_id="call_1")],
        [function_call("order_status", {"order_id": 42}, call_id="call_2")],
        [function_call("order_status", {"order_id": "seven"}, call_id="call_3")],
        [
            function_call(
                "final_answer",
                {"text": "Order 7: status unavailable (see the error id)."},
                call_id="call_4",
            )
        ],
        [assistant_message("This answer is never reached: final_answer ended the run.")],
    ]
)

guard = Dispatcher([order_status, final_answer])
agent = Agent(
    name="support",
    instructions="Answer questions about orders.",
    model=model,
    tools=as_function_tools(guard),
    tool_use_behavior=tool_use_behavior(guard),
)


def one_line_cause(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Show a hidden cause as one line instead of a traceback (this app's choice)."""
    error = event.pop("exc_info", None)
    if error is not None:
        event["cause"] = repr(error)
    return event


def show(result: RunResult) -> None:
    for item in result.new_items:
        if isinstance(item, ToolCallItem):
            raw: Any = item.raw_item
            print(f"model calls {raw.name}({raw.arguments})")
        elif isinstance(item, ToolCallOutputItem):
            decision = (item.custom_data or {}).get("toolguard", {})
            mark = "error" if decision.get("is_error") else "ok"
            print(f"  tool [{mark}]: {item.output}")
        elif isinstance(item, MessageOutputItem):
            print(f"assistant: {ItemHelpers.text_message_output(item)}")
    print(f"final output: {result.final_output}")


async def main() -> RunResult:
    return await Runner.run(agent, "Where is my order 7?")


if __name__ == "__main__":
    set_tracing_disabled(True)  # offline: never export traces to OpenAI
    # toolguard never configures logging; the application does.
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            one_line_cause,
            structlog.dev.ConsoleRenderer(colors=False),
        ]
    )
    print("--- what the application's log gets: the hidden cause, once ---")
    result = asyncio.run(main())
    print("--- the conversation, as the model saw it ---")
    show(result)

    assert "s3cret" not in str(result.to_input_list())
    assert result.final_output == "Order 7: status unavailable (see the error id)."
    assert model.remaining_steps == 1  # the model was not asked again after final_answer
