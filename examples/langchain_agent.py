"""A LangChain ``create_agent`` agent whose tools answer through toolguard.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[langchain]"
    .venv/bin/python examples/langchain_agent.py

(offline: the model is LangChain's fake chat model, playing a script of tool calls)

Two kinds of tools in one agent:

* toolguard tools, turned into LangChain tools with ``as_langchain_tools``;
* a plain LangChain ``@tool``, which ``ToolguardMiddleware`` puts under the same policy.

The script calls a tool whose backend leaks a secret (hidden, logged once with an
error id), a plain tool that fails the same way, a tool with a message written for
the model, and finally a ``return_direct`` tool that ends the loop.
"""

from __future__ import annotations

from collections.abc import MutableMapping, Sequence
from typing import Any

import structlog
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool as langchain_tool

from toolguard import Dispatcher, ToolError, ToolPolicy, tool
from toolguard.integrations.langchain import ToolguardMiddleware, as_langchain_tools


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


@langchain_tool
def shipping_quote(country: str) -> str:
    """Quote shipping to a country (a plain LangChain tool)."""
    raise RuntimeError("carrier API key sk-live-123 expired")


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools; it answers from a script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self


def calls(*items: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{name}_{n}"}
            for n, (name, args) in enumerate(items)
        ],
    )


script = [
    calls(("order_status", {"order_id": 7}), ("shipping_quote", {"country": "NO"})),
    calls(("order_status", {"order_id": 42})),
    calls(("order_status", {"order_id": "seven"})),
    calls(("final_answer", {"text": "Order 7: status unavailable (see error ids)."})),
    AIMessage("This answer is never reached: final_answer ended the loop."),
]

guard = Dispatcher(
    [order_status, final_answer],
    # shipping_quote runs in LangChain; naming it here lets an override name it exactly.
    external_tools=[shipping_quote.name],
    overrides={"shipping_quote": ToolPolicy(log_level="error")},
)
agent = create_agent(
    ScriptedModel(messages=iter(script)),
    tools=[*as_langchain_tools(guard), shipping_quote],
    middleware=[ToolguardMiddleware(guard)],
)


def one_line_cause(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Show a hidden cause as one line instead of a traceback (this app's choice)."""
    error = event.pop("exc_info", None)
    if error is not None:
        event["cause"] = repr(error)
    return event


def show(messages: Sequence[AnyMessage]) -> None:
    for message in messages:
        if isinstance(message, ToolMessage):
            print(f"  tool {message.name} [{message.status}]: {message.content}")
        elif isinstance(message, AIMessage) and message.tool_calls:
            for call in message.tool_calls:
                print(f"model calls {call['name']}({call['args']})")
        else:
            print(f"{message.type}: {message.content}")


if __name__ == "__main__":
    # toolguard never configures logging; the application does.
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            one_line_cause,
            structlog.dev.ConsoleRenderer(colors=False),
        ]
    )
    print("--- what the application's log gets: the hidden causes, once each ---")
    state = agent.invoke({"messages": [HumanMessage("Where is my order 7?")]})
    print("--- the conversation, as the model saw it ---")
    show(state["messages"])

    transcript = "\n".join(str(m.content) for m in state["messages"])
    assert "s3cret" not in transcript and "sk-live-123" not in transcript
    assert isinstance(state["messages"][-1], ToolMessage)  # return_direct ended the loop
    assert state["messages"][-1].content == "Order 7: status unavailable (see error ids)."
