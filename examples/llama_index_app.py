"""An existing LlamaIndex agent, its tools guarded by toolguard with one added line.

Offline: the model is LlamaIndex's own ``MockFunctionCallingLLM`` playing a script of
tool calls. Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[llama-index]"
    .venv/bin/python examples/llama_index_app.py

The app is written as for plain LlamaIndex: ``FunctionTool``s (one of them takes the
workflow ``Context``, one is ``return_direct``), a ``FunctionAgent``, a ``Context``
kept across runs. The one line toolguard adds is marked below. Without it, LlamaIndex
sends ``str(e)`` to the model: here, a database password.

The script: the model looks up an order whose backend leaks a secret (hidden: the
model gets toolguard's message with an error id, the cause is logged once under that
id), an order that does not exist (a ``ToolError``, sent as written), keeps a note in
the agent's state (``Context`` still works), then calls the ``return_direct`` tool,
whose success ends the run with its output.
"""

# No ``from __future__ import annotations``: LlamaIndex recognises a ``Context``
# parameter by its annotation object.

import asyncio
from collections.abc import Sequence
from typing import Any

import structlog
from llama_index.core.agent.workflow import AgentOutput, FunctionAgent
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool
from llama_index.core.workflow import Context

from toolguard import Dispatcher, ToolError
from toolguard.integrations.llama_index import guard

SECRET = "postgres://admin:s3cret@10.0.0.7"


# --- the app, as written for LlamaIndex -----------------------------------------------


def order_status(order_id: int) -> str:
    """Look up the status of an order."""
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 7:
        raise ConnectionError(f"orders-db at {SECRET} refused the connection")
    return f"Order {order_id} has shipped."


async def remember(ctx: Context, note: str) -> str:
    """Keep a note for later in this conversation."""
    await ctx.store.set("note", note)
    return f"Noted: {note}"


def reply(text: str) -> str:
    """Send the final reply to the user."""
    return f"Reply sent: {text}"


tools = [
    FunctionTool.from_defaults(order_status),
    FunctionTool.from_defaults(async_fn=remember),
    FunctionTool.from_defaults(reply, return_direct=True),
]

dispatcher = Dispatcher([], external_tools=["order_status", "remember", "reply"])
tools = guard(tools, dispatcher)  # <- the one line toolguard adds


# --- the model: a script, offline -------------------------------------------------------

SCRIPT: list[list[tuple[str, dict[str, Any]]]] = [
    [("order_status", {"order_id": 7}), ("order_status", {"order_id": 42})],
    [("remember", {"note": "the user asked about orders 7 and 42"})],
    [("reply", {"text": "Order 7 is delayed by a database outage; 42 does not exist."})],
]
seen_by_model: list[str] = []


def model(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
    for message in messages:
        if message.role == "tool":
            seen_by_model.append(message.content or "")
    calls = SCRIPT.pop(0) if SCRIPT else []
    if not calls:
        return ChatMessage(role="assistant", content="(the model answers itself)")
    return ChatMessage(
        role="assistant",
        blocks=[
            ToolCallBlock(tool_call_id=f"call_{name}_{i}", tool_name=name, tool_kwargs=arguments)
            for i, (name, arguments) in enumerate(calls)
        ],
    )


async def main() -> None:
    agent = FunctionAgent(tools=tools, llm=MockFunctionCallingLLM(response_generator=model))
    ctx = Context(agent)
    with structlog.testing.capture_logs() as logs:
        output = await agent.run("Where are my orders 7 and 42?", ctx=ctx)
    assert isinstance(output, AgentOutput)

    print("What the model was told:")
    for text in dict.fromkeys(seen_by_model):
        print("  -", text)
    (hidden,) = [event for event in logs if event["event"] == "tool_error_hidden"]
    print(f"Logged once, for the operator: error id {hidden['error_id']}: {hidden['exc_info']!r}")
    print("The note kept in the agent's Context:", await ctx.store.get("note"))
    print("The run's answer (return_direct):", output.response.content)

    assert not any(SECRET in text for text in seen_by_model)
    assert any(hidden["error_id"] in text for text in seen_by_model)
    assert "There is no order 42. Ask the user to check the number." in seen_by_model
    assert output.response.content.startswith("Reply sent:")


if __name__ == "__main__":
    asyncio.run(main())
