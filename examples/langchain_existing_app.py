"""An existing LangChain app, guarded by adding one line.

Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[langchain]"
    .venv/bin/python examples/langchain_existing_app.py

(offline: the model is LangChain's fake chat model, playing a script of tool calls)

The app is written the LangChain way, and stays so: ``@tool`` functions, a
``ToolRuntime`` reading the run's context (the user) and the store, a tool that
answers with a ``Command`` updating the agent's state, a state schema, a
checkpointer, ``create_agent``. toolguard adds one line, the middleware, and a
policy for it (what this app wants beyond toolguard's defaults):

* ``order_status`` is flaky: its ``ConnectionError`` is retried;
* ``order_status`` raises LangChain's ``ToolException`` for "no such order": the
  model reads that message, as LangChain intends;
* ``read_invoice`` parses the billing API's reply with pydantic, and the reply does
  not parse: the ``ValidationError`` (with a token in it) is hidden from the model and
  logged once with an error id (LangGraph would have sent its text as "bad arguments");
* ``final_answer`` ends the run when it succeeds (``return_direct``).
"""

from __future__ import annotations

import itertools
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
import structlog
from langchain.agents import AgentState, create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import InjectedToolCallId, ToolException, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import ToolRuntime
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

from toolguard import Dispatcher, Retry, ToolPolicy
from toolguard.integrations.langchain import ToolguardMiddleware

# --- the app, as it was --------------------------------------------------------------


@dataclass
class Customer:
    user_id: str


class SupportState(AgentState[Any]):
    ticket: str


FLAKY = {"order_status": 1}  # the orders database drops the first connection


@tool
def order_status(order_id: int, runtime: ToolRuntime[Customer]) -> str:
    """Look up the status of one of the customer's orders."""
    if FLAKY["order_status"]:
        FLAKY["order_status"] -= 1
        raise ConnectionError("orders-db at postgres://admin:s3cret@10.0.0.7 reset the connection")
    assert runtime.store is not None
    order = runtime.store.get(("orders", runtime.context.user_id), str(order_id))
    if order is None:
        raise ToolException(f"There is no order {order_id}. Ask the customer to check the number.")
    return f"Order {order_id}: {order.value['status']}"


class Invoice(pydantic.BaseModel):
    invoice_id: str
    total_cents: int


@tool
def read_invoice(invoice_id: str) -> str:
    """Read an invoice from the billing API."""
    reply = {"invoice_id": invoice_id, "total_cents": "see token=sk-live-123 for totals"}
    invoice = Invoice.model_validate(reply)  # the API's reply does not parse
    return f"Invoice {invoice.invoice_id}: {invoice.total_cents / 100:.2f}"


@tool
def open_ticket(summary: str, tool_call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Open a support ticket for the customer."""
    return Command(
        update={
            "ticket": f"T-1: {summary}",
            "messages": [ToolMessage("Ticket T-1 opened.", tool_call_id=tool_call_id)],
        }
    )


@tool
def final_answer(text: str) -> str:
    """Give the customer the final answer."""
    return text


TOOLS = [order_status, read_invoice, open_ticket, final_answer]


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, accepting tools; it answers from a script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self


CALL_IDS = itertools.count(1)


def calls(*items: tuple[str, dict[str, Any]]) -> AIMessage:
    return AIMessage(
        content="",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{next(CALL_IDS)}"} for name, args in items
        ],
    )


SCRIPT = [
    calls(("order_status", {"order_id": 7}), ("read_invoice", {"invoice_id": "INV-7"})),
    calls(("order_status", {"order_id": 42})),
    calls(("open_ticket", {"summary": "invoice INV-7 unreadable"})),
    calls(("final_answer", {"text": "Order 7 has shipped; ticket T-1 covers your invoice."})),
    AIMessage("This answer is never reached: final_answer ended the run."),
]

# --- toolguard: the policy, and the one line below -----------------------------------

POLICY = {
    "order_status": ToolPolicy(retries=Retry(attempts=2, on=ConnectionError, initial=0.01)),
    "final_answer": ToolPolicy(return_direct=True),
}
guard = Dispatcher([], external_tools=[t.name for t in TOOLS], overrides=POLICY)

store = InMemoryStore()
store.put(("orders", "ann"), "7", {"status": "shipped"})
agent = create_agent(
    ScriptedModel(messages=iter(SCRIPT)),
    tools=TOOLS,
    state_schema=SupportState,
    context_schema=Customer,
    store=store,
    checkpointer=InMemorySaver(),
    middleware=[ToolguardMiddleware(guard, tools=TOOLS)],  # the line toolguard adds, first
)


# --- running it ----------------------------------------------------------------------


def one_line_cause(
    logger: Any, method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Show a hidden cause as one line instead of a traceback (this app's choice)."""
    error = event.pop("exc_info", None)
    if error is not None:
        event["cause"] = " ".join(repr(error).split())
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
    seen: list[MutableMapping[str, Any]] = []

    def keep(logger: Any, method: str, event: MutableMapping[str, Any]) -> Any:
        seen.append(dict(event))
        return event

    # toolguard never configures logging; the application does.
    structlog.configure(
        processors=[
            keep,
            structlog.processors.add_log_level,
            one_line_cause,
            structlog.dev.ConsoleRenderer(colors=False),
        ]
    )
    config: Any = {"configurable": {"thread_id": "customer-ann"}}
    print("--- what the application's log gets ---")
    state = agent.invoke(
        {"messages": [HumanMessage("Where is order 7, and what about invoice INV-7?")]},
        config,
        context=Customer(user_id="ann"),
    )
    print("--- the conversation, as the model saw it ---")
    show(state["messages"])
    print(f"--- the agent's state: ticket = {state['ticket']!r} ---")

    transcript = "\n".join(m.model_dump_json() for m in state["messages"])
    answers = {m.tool_call_id: m for m in state["messages"] if isinstance(m, ToolMessage)}
    # the secrets never reached the model; each hidden cause was logged exactly once,
    # under the error id the model was given
    assert "s3cret" not in transcript and "sk-live-123" not in transcript
    [hidden] = [e for e in seen if e["event"] == "tool_error_hidden"]
    assert hidden["tool"] == "read_invoice" and "sk-live-123" in repr(hidden["exc_info"])
    assert hidden["call_id"] == "call_2"
    assert hidden["error_id"] in str(answers["call_2"].content)
    assert [e["event"] for e in seen].count("tool_retry") == 1  # order_status, retried once
    # the visible message arrived intact; LangChain's features still work
    assert answers["call_3"].content == (
        "There is no order 42. Ask the customer to check the number."
    )
    assert state["ticket"] == "T-1: invoice INV-7 unreadable"
    assert isinstance(state["messages"][-1], ToolMessage)  # final_answer ended the run
    assert state["messages"][-1].text.startswith("Order 7 has shipped")
