"""An existing OpenAI Agents SDK app, guarded by toolguard with one added line.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[openai-agents]"
    .venv/bin/python examples/openai_agents_app.py

(offline: the model is the SDK's own ``agents.testing.ScriptedModel`` playing a script
of tool calls; tracing is off)

The app is written in the SDK's own style: ``@function_tool`` functions taking the
run's context (``RunContextWrapper[Shop]``), an input guardrail, ``Runner.run`` with a
context object. The one line toolguard adds is marked below; nothing else changes.

What the run shows:

* a backend error whose message holds a password: the model is told toolguard's
  generic message with an error id, and the application's log gets the cause once,
  under the same id (the SDK alone would tell the model "An error occurred...");
* a ``ToolError`` written for the model: it arrives as it is;
* arguments the model got wrong: toolguard's message naming the argument;
* the SDK's own features in the same app: the tools read the run's context, and
  the input guardrail still trips.
"""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import Any

import structlog
from agents import (
    Agent,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    RunContextWrapper,
    Runner,
    RunResult,
    ToolCallItem,
    ToolCallOutputItem,
    function_tool,
    input_guardrail,
    set_tracing_disabled,
)
from agents.testing import ScriptedModel, assistant_message, function_call

from toolguard import Dispatcher, ToolError
from toolguard.integrations.openai_agents import guard

# --- the app, as it was -----------------------------------------------------------------------


@dataclass
class Shop:
    """What every tool of this app gets from the run."""

    user: str
    thread_id: str


class BackendDown(Exception):
    pass


ORDERS = {7: "shipped", 8: "packed"}


@function_tool
def order_status(ctx: RunContextWrapper[Shop], order_id: int) -> str:
    """Look up the status of one of the user's orders.

    Args:
        order_id: The order's number.
    """
    if order_id not in ORDERS:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return f"Order {order_id} of {ctx.context.user}: {ORDERS[order_id]}"


@function_tool
def refund(ctx: RunContextWrapper[Shop], order_id: int) -> str:
    """Refund an order."""
    raise BackendDown("payments at postgres://admin:s3cret@10.0.0.7 refused the connection")


@input_guardrail
def no_passwords(context: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
    return GuardrailFunctionOutput(output_info=None, tripwire_triggered="password" in str(text))


model = ScriptedModel(
    [
        [function_call("order_status", {"order_id": 7}, call_id="call_1")],
        [function_call("refund", {"order_id": 7}, call_id="call_2")],
        [function_call("order_status", {"order_id": 9}, call_id="call_3")],
        [function_call("order_status", {"order_id": "seven"}, call_id="call_4")],
        [assistant_message("Order 7 has shipped; the refund could not be made right now.")],
    ]
)

agent = Agent[Shop](
    name="support",
    instructions="Answer questions about the user's orders.",
    model=model,
    tools=[order_status, refund],
    input_guardrails=[no_passwords],
)

# --- toolguard: the one added line ------------------------------------------------------------
agent.tools = guard(agent.tools, Dispatcher([], external_tools=[t.name for t in agent.tools]))
# ----------------------------------------------------------------------------------------------


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
            print(f"  tool: {item.output}")
    print(f"final output: {result.final_output}")


async def main() -> RunResult:
    shop = Shop(user="ann", thread_id="thread-1")
    result = await Runner.run(agent, "Where is my order 7? Refund it.", context=shop)
    try:
        await Runner.run(agent, "my password is hunter2", context=shop)
    except InputGuardrailTripwireTriggered:
        print("--- the SDK's own input guardrail still trips ---")
    return result


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

    said = {
        str(item.call_id): str(item.output)
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem)
    }
    assert "s3cret" not in str(result.to_input_list())
    assert said["call_1"] == "Order 7 of ann: shipped"
    assert "error id" in said["call_2"]
    assert said["call_3"] == "There is no order 9. Ask the user to check the number."
    assert said["call_4"].startswith("Invalid arguments for tool 'order_status':\n- 'order_id'")
    assert model.remaining_steps == 0
