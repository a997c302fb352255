"""One tool, three ways, in a real LangChain ``create_agent`` run.

* ``native``: LangChain's own ``@tool`` on the plain function, no toolguard (the
  reference for what the model sees and for success);
* ``in_place``: LangChain's own ``@tool`` on the toolguard ``@tool`` of that function,
  guarded by name by ``ToolguardMiddleware`` (the dispatcher has the toolguard tool);
* ``adapter``: toolguard's ``as_langchain_tool``, under the same middleware.

Driven by ``create_agent`` with LangChain's ``GenericFakeChatModel`` playing a script
of tool calls. The three give the same schema to the model (the adapter also says
``additionalProperties: false``: toolguard refuses arguments the schema does not
name), the same values for LangGraph's injection types, the same messages and state
on success; on failure the two toolguard ways give toolguard's answer (where the
native tool crashes the run, or sends ``ToolNode``'s own text).

LangChain's decorator is used with ``parse_docstring=True``: toolguard, like it,
takes the summary as the description and each argument's line as its description.

How the in-place way answers failures, unguarded against guarded, is the
conformance driver's (``conformance/test_langchain.py``); here the failures are the
adapter's.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest
from langchain.agents import AgentState, create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

import toolguard
from toolguard import Dispatcher, ToolError
from toolguard.integrations.langchain import ToolguardMiddleware, as_langchain_tool

from .langchain_helpers import SECRET, Logs, ScriptedModel, ai, builtin_message, tool_messages

Way = Literal["native", "in_place", "adapter"]
WAYS: tuple[Way, ...] = ("native", "in_place", "adapter")
TOOLGUARD_WAYS: tuple[Way, ...] = ("in_place", "adapter")


def build(way: Way, function: Callable[..., Any]) -> tuple[BaseTool, list[Any]]:
    """The tool built ``way``, and the middleware its agent runs with."""
    if way == "native":
        return lc_tool(parse_docstring=True)(function), []
    guarded = toolguard.tool(function)
    dispatcher = Dispatcher([guarded])
    middleware = [ToolguardMiddleware(dispatcher)]
    if way == "in_place":
        return lc_tool(parse_docstring=True)(guarded), middleware
    return as_langchain_tool(guarded, dispatcher=dispatcher), middleware


def play(
    way: Way,
    function: Callable[..., Any],
    calls: list[tuple[dict[str, Any], str]],
    *,
    state: dict[str, Any] | None = None,
    **agent_options: Any,
) -> dict[str, Any]:
    """Run an agent whose one tool is ``function`` built ``way``: the final state."""
    tool, middleware = build(way, function)
    script = [ai((tool.name, args, call_id)) for args, call_id in calls]
    agent = create_agent(
        ScriptedModel(messages=iter([*script, AIMessage("done")])),
        tools=[tool],
        middleware=middleware,
        **agent_options,
    )
    config: Any = {"configurable": {"thread_id": f"thread-{way}"}}
    start: Any = {"messages": [HumanMessage("go")], **(state or {})}
    final: dict[str, Any] = agent.invoke(start, config)
    return final


def answer(message: ToolMessage) -> tuple[Any, Any, str, str | None]:
    """What a tool message says (its metadata and id aside)."""
    return (message.content, message.artifact, message.status, message.name)


# --- the tools ---------------------------------------------------------------------------

SEEN: dict[str, dict[str, Any]] = {}
STORE = InMemoryStore()


def search(
    query: str,
    state: Annotated[dict[str, Any], InjectedState],
    messages: Annotated[list[Any], InjectedState("messages")],
    store: Annotated[BaseStore, InjectedStore()],
    call_id: Annotated[str, InjectedToolCallId],
    runtime: ToolRuntime,
    config: RunnableConfig,
    limit: int = 3,
) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    SEEN[query] = {
        "state_messages": [m.content for m in state["messages"]],
        "messages": [m.content for m in messages],
        "store": store,
        "call_id": call_id,
        "runtime": (type(runtime), runtime.tool_call_id, runtime.store),
        "thread": config["configurable"]["thread_id"].split("-")[0],
        "limit": limit,
    }
    return f"{limit} results for {query}"


class Notes(AgentState[Any]):
    notes: list[str]


def note(text: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Add a note to the conversation.

    Args:
        text: The note.
    """
    return Command(
        update={"notes": [text], "messages": [ToolMessage(f"noted {text}", tool_call_id=call_id)]}
    )


def own_message(text: str, call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Answer with a message of its own.

    Args:
        text: The text.
    """
    return ToolMessage(text.upper(), tool_call_id=call_id, artifact={"raw": text})


def blocks(text: str) -> list[dict[str, Any]]:
    """Answer with content blocks.

    Args:
        text: The text.
    """
    return [
        {"type": "text", "text": text},
        {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"},
    ]


def plain_text(text: str) -> str:
    """Echo.

    Args:
        text: The text.
    """
    return f"echo {text}"


def record(order_id: int) -> dict[str, Any]:
    """Read an order.

    Args:
        order_id: The order.
    """
    return {"order": order_id, "items": ["hat", "scarf"], "paid": True}


def charge(card: str) -> str:
    """Charge a card.

    Args:
        card: The card number.
    """
    raise RuntimeError(f"payment backend refused: {SECRET}")


def find_order(order_id: int) -> str:
    """Find an order.

    Args:
        order_id: The order.
    """
    try:
        raise KeyError(order_id)
    except KeyError as error:
        raise ToolError(f"There is no order {order_id}. Ask the user to check it.") from error


TOOLS = [search, note, own_message, blocks, plain_text, record, charge, find_order]


# --- the schema the model sees ----------------------------------------------------------------


@pytest.mark.parametrize("function", TOOLS, ids=lambda f: f.__name__)
def test_the_three_ways_show_the_model_the_same_schema(function: Callable[..., Any]) -> None:
    native, in_place, adapter = (convert_to_openai_tool(build(w, function)[0]) for w in WAYS)

    assert in_place == native
    parameters = adapter["function"]["parameters"]
    assert parameters.pop("additionalProperties") is False  # toolguard refuses extras
    assert adapter == native


# --- LangChain's injection -------------------------------------------------------------------


def test_the_three_ways_get_the_same_injected_values() -> None:
    for way in WAYS:
        final = play(way, search, [({"query": way}, f"call-{way}")], store=STORE)
        assert tool_messages(final["messages"])[f"call-{way}"].content == f"3 results for {way}"
    native, in_place, adapter = (SEEN[way] for way in WAYS)

    for seen, way in ((native, "native"), (in_place, "in_place"), (adapter, "adapter")):
        assert seen.pop("call_id") == f"call-{way}"
        runtime_type, runtime_call_id, runtime_store = seen.pop("runtime")
        assert (runtime_type, runtime_call_id, runtime_store) == (ToolRuntime, f"call-{way}", STORE)
    assert in_place == native
    assert adapter == native
    assert native["store"] is STORE and native["thread"] == "thread"
    assert native["messages"] == native["state_messages"] == ["go", ""]


@pytest.mark.parametrize("way", WAYS)
def test_the_model_cannot_set_an_injected_value_in_any_way(way: Way) -> None:
    forged = {"query": f"forged-{way}", "call_id": "forged", "state": {"messages": []}}
    final = play(way, search, [(forged, "real-id")], store=STORE)

    assert tool_messages(final["messages"])["real-id"].content == f"3 results for forged-{way}"
    assert SEEN[f"forged-{way}"]["call_id"] == "real-id"
    assert SEEN[f"forged-{way}"]["state_messages"] == ["go", ""]


# --- LangChain's return values on success -------------------------------------------------------


@pytest.mark.parametrize("function", [own_message, blocks, plain_text], ids=lambda f: f.__name__)
def test_the_three_ways_answer_a_success_with_the_same_message(
    function: Callable[..., Any],
) -> None:
    answers = [
        answer(tool_messages(play(way, function, [({"text": "hi"}, "c1")])["messages"])["c1"])
        for way in WAYS
    ]
    assert answers[0] == answers[1] == answers[2]


def test_the_three_ways_apply_a_command_to_the_state_alike() -> None:
    finals = [
        play(way, note, [({"text": "n1"}, "c1")], state={"notes": []}, state_schema=Notes)
        for way in WAYS
    ]
    answers = [answer(tool_messages(final["messages"])["c1"]) for final in finals]
    assert [final["notes"] for final in finals] == [["n1"]] * 3
    assert answers[0] == answers[1] == answers[2]
    assert answers[0][:3] == ("noted n1", None, "success")


def test_the_three_ways_send_the_same_data_for_a_structured_return() -> None:
    """LangChain writes ``json.dumps`` with spaces, toolguard compact JSON: the same data."""
    contents = [
        tool_messages(play(way, record, [({"order_id": 7}, "c1")])["messages"])["c1"].content
        for way in WAYS
    ]
    data = [json.loads(str(content)) for content in contents]
    assert data[0] == data[1] == data[2] == {"order": 7, "items": ["hat", "scarf"], "paid": True}


# --- failures: toolguard's policy -----------------------------------------------------------


def test_the_adapter_answers_a_hidden_failure_and_logs_one_event(logs: Logs) -> None:
    final = play("adapter", charge, [({"card": "4242"}, "c1")])

    for message in final["messages"]:
        assert SECRET not in message.model_dump_json()
    [event] = logs
    assert (event["event"], event["tool"], event["call_id"]) == (
        "tool_error_hidden",
        "charge",
        "c1",
    )
    message = tool_messages(final["messages"])["c1"]
    assert (message.status, message.content) == (
        "error",
        builtin_message("charge", event["error_id"]),
    )
    assert message.response_metadata["toolguard"]["error_id"] == event["error_id"]


def test_a_visible_error_reads_the_same_in_both_toolguard_ways(logs: Logs) -> None:
    """The adapter and the guard, both toolguard's answer (with the cause's log event)."""
    answers = [
        answer(tool_messages(play(way, find_order, [({"order_id": 42}, "c1")])["messages"])["c1"])
        for way in TOOLGUARD_WAYS
    ]
    assert answers[0] == answers[1]
    assert answers[0][:3] == ("There is no order 42. Ask the user to check it.", None, "error")
    assert [event["event"] for event in logs] == ["tool_error_hidden"] * 2  # the KeyError cause


def test_bad_arguments_get_the_same_bounded_message_in_both_toolguard_ways() -> None:
    bad = {"query": ["not", "text"], "limit": "x" * 100_000}
    contents = [
        str(tool_messages(play(way, search, [(bad, "c1")], store=STORE)["messages"])["c1"].content)
        for way in WAYS
    ]
    native, in_place, adapter = contents
    assert in_place == adapter
    assert in_place.startswith("Invalid arguments for tool 'search':\n- 'query': ")
    assert "- 'limit': " in in_place and len(in_place) < 600
    assert native.startswith("Error invoking tool 'search'")  # ToolNode's own text


def test_arguments_the_schema_does_not_name_are_refused_by_the_adapter_only() -> None:
    """The one difference on success: LangChain ignores an argument it does not know,
    toolguard refuses it (and its schema says so)."""
    contents = [
        tool_messages(play(way, plain_text, [({"text": "a", "txt": "b"}, "c1")])["messages"])[
            "c1"
        ].content
        for way in WAYS
    ]
    assert contents[:2] == ["echo a", "echo a"]
    assert contents[2] == (
        "Invalid arguments for tool 'plain_text':\n"
        "- 'txt': unexpected argument; this tool accepts: text"
    )
