"""An existing Pydantic AI app, guarded by toolguard with one added line.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[pydantic-ai]"
    .venv/bin/python examples/pydantic_ai_existing_app.py

(offline: the model is Pydantic AI's ``FunctionModel`` playing a script of tool calls)

The app is written in Pydantic AI's own style: a ``deps`` dataclass, tools taking
``RunContext``, dynamic instructions, Pydantic AI's own ``ModelRetry``, a tool that
needs a human's approval, and a tool returning a ``ToolReturn``. None of it knows
toolguard. The one line toolguard adds is the ``capabilities=[...]`` argument of
``Agent``: every tool call then goes through the dispatcher's policy.

Without that line, the backend failure in ``order_status`` (its message carries a
database password) crashes the run with the password in the traceback. With it,
the model is told the tool failed, quoting an error id; the cause is logged once,
under that id; everything else (deps, instructions, ModelRetry, approvals,
ToolReturn) works as before.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import Any

import structlog
from pydantic_ai import (
    Agent,
    DeferredToolRequests,
    DeferredToolResults,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    ModelRetry,
    RunContext,
    TextPart,
    ToolCallPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolguard import Dispatcher
from toolguard.integrations.pydantic_ai import ToolguardCapability

# --- the app, as it was -------------------------------------------------------------------


class OrdersDown(Exception):
    pass


@dataclass
class Shop:
    customer: str
    orders: dict[int, str] = field(default_factory=lambda: {7: "shipped"})
    refunded: list[int] = field(default_factory=list)


script: list[list[ModelResponsePart]] = [
    [ToolCallPart("order_status", {"order_id": 13}, tool_call_id="call_1")],
    [ToolCallPart("order_status", {"order_id": 99999}, tool_call_id="call_2")],
    [
        ToolCallPart("order_status", {"order_id": 7}, tool_call_id="call_3"),
        ToolCallPart("refund", {"order_id": 7}, tool_call_id="call_4"),
    ],
    [TextPart("Order 7 has shipped and is refunded.")],
]


def play(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The scripted model: the next response, whatever it was told."""
    return ModelResponse(parts=script.pop(0))


agent = Agent(
    FunctionModel(play),
    deps_type=Shop,
    output_type=[str, DeferredToolRequests],
    capabilities=[ToolguardCapability(Dispatcher([], external_tools=["order_status", "refund"]))],
)


@agent.instructions
def who(ctx: RunContext[Shop]) -> str:
    return f"You help {ctx.deps.customer} with their orders."


@agent.tool
def order_status(ctx: RunContext[Shop], order_id: int) -> ToolReturn:
    """Look up the status of an order."""
    if order_id == 13:
        raise OrdersDown("orders-db at postgres://admin:s3cret@10.0.0.7 refused the connection")
    if order_id not in ctx.deps.orders:
        raise ModelRetry(f"There is no order {order_id}; order numbers here are below 1000.")
    return ToolReturn(
        return_value=f"Order {order_id}: {ctx.deps.orders[order_id]}",
        metadata={"source": "orders-db"},
    )


@agent.tool(requires_approval=True)
def refund(ctx: RunContext[Shop], order_id: int) -> str:
    """Refund an order (a human approves first)."""
    ctx.deps.refunded.append(order_id)
    return f"Refunded order {order_id}."


# --- running it ------------------------------------------------------------------------------

logged: list[MutableMapping[str, Any]] = []


def keep(logger: Any, method: str, event: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    """Keep each event for the checks below, and show a cause as one line."""
    logged.append(dict(event))
    error = event.pop("exc_info", None)
    if error is not None:
        event["cause"] = repr(error)
    return event


def show(messages: list[ModelMessage]) -> None:
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                print(f"model calls {part.tool_name}({part.args_as_json_str()})")
            elif isinstance(part, ToolReturnPart):
                print(f"  tool [{part.outcome}]: {part.content}")
            elif isinstance(part, TextPart) and isinstance(message, ModelResponse):
                print(f"assistant: {part.content}")
            elif type(part).__name__ == "RetryPromptPart":
                print(f"  tool [retry]: {part.content}")


if __name__ == "__main__":
    # toolguard never configures logging; the application does.
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            keep,
            structlog.dev.ConsoleRenderer(colors=False),
        ]
    )
    shop = Shop(customer="Ann")
    print("--- what the application's log gets: the hidden cause, once ---")
    first = agent.run_sync("Where is order 13? And refund order 7.", deps=shop)
    assert isinstance(first.output, DeferredToolRequests)
    print(f"--- awaiting approval for: {[c.tool_name for c in first.output.approvals]} ---")
    second = agent.run_sync(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"call_4": True}),
        deps=shop,
    )
    print("--- the conversation, as the model saw it ---")
    show(second.all_messages())
    print(f"output: {second.output}")

    transcript = str(second.all_messages())
    [hidden] = [event for event in logged if event["event"] == "tool_error_hidden"]
    assert "s3cret" not in transcript
    assert f"error id {hidden['error_id']}" in transcript  # the id the model saw
    assert sum("s3cret" in repr(event) for event in logged) == 1  # logged once
    assert "order numbers here are below 1000" in transcript  # ModelRetry intact
    assert shop.refunded == [7]  # the approval flow ran
    assert second.output == "Order 7 has shipped and is refunded."
    statuses = [
        part
        for message in second.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id == "call_3"
    ]
    assert statuses[0].metadata == {"source": "orders-db"}  # the ToolReturn untouched
