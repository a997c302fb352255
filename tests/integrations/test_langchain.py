"""The LangChain/LangGraph integration, driven through the real ``create_agent`` loop.

The model is LangChain's own ``GenericFakeChatModel`` answering from a script; tools,
``ToolNode``, middleware, checkpointer and interrupts are the framework's own.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Annotated, Any

import pydantic
import pytest
from langchain.agents import create_agent
from langchain_core.messages import (
    AIMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Command, interrupt

import toolguard
from toolguard import (
    Dispatcher,
    Injected,
    InjectedCallId,
    Output,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
)
from toolguard.handlers import always, fail
from toolguard.integrations.langchain import (
    ToolguardMiddleware,
    as_langchain_tool,
    as_langchain_tools,
    stop_requested,
)

from .langchain_helpers import (
    SECRET,
    Logs,
    ScriptedModel,
    ai,
    arun,
    builtin_message,
    hidden_event,
    run,
    tool_messages,
)

# --- toolguard tools used below -------------------------------------------------------


@toolguard.tool
def charge(card: str) -> str:
    """Charge a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@toolguard.tool
def find_order(order_id: int) -> str:
    """Find an order."""
    try:
        raise KeyError(order_id)
    except KeyError as error:
        raise ToolError(f"There is no order {order_id}. Ask the user to check it.") from error


@toolguard.tool(return_direct=True)
def submit(text: str) -> str:
    """Submit the final answer."""
    if not text:
        raise ToolError("The answer is empty; write one.")
    return f"Submitted: {text}"


# --- as_langchain_tool in create_agent -------------------------------------------------


def test_hidden_cause_reaches_no_message_and_is_logged_once(logs: Logs) -> None:
    messages, _ = run(
        [as_langchain_tool(charge)],
        [ai(("charge", {"card": "4242"}, "call-1")), AIMessage("Payment failed.")],
    )

    event = hidden_event(messages, logs)
    answer = tool_messages(messages)["call-1"]
    assert event["event"] == "tool_error_hidden"
    assert (event["tool"], event["call_id"]) == ("charge", "call-1")
    assert answer.status == "error"
    assert answer.content == builtin_message("charge", event["error_id"])
    assert answer.response_metadata["toolguard"] == {
        "return_direct": False,
        "error_id": event["error_id"],
    }
    assert messages[-1].content == "Payment failed."


def test_tool_error_message_reaches_the_model_as_an_error() -> None:
    messages, _ = run(
        [as_langchain_tool(find_order)],
        [ai(("find_order", {"order_id": 42}, "call-1")), AIMessage("Which order?")],
    )

    answer = tool_messages(messages)["call-1"]
    assert answer.status == "error"
    assert answer.content == "There is no order 42. Ask the user to check it."
    assert messages[-1].content == "Which order?"


def test_return_direct_tool_ends_the_loop_after_its_success() -> None:
    guard = Dispatcher([submit])
    messages, unused = run(
        as_langchain_tools(guard),
        [ai(("submit", {"text": "42"}, "call-1")), AIMessage("never asked")],
        middleware=[ToolguardMiddleware(guard)],
    )

    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage]
    assert messages[-1].content == "Submitted: 42"
    assert [m.content for m in unused] == ["never asked"]


def test_failed_return_direct_tool_does_not_end_the_loop() -> None:
    guard = Dispatcher([submit])
    messages, unused = run(
        as_langchain_tools(guard),
        [ai(("submit", {"text": ""}, "call-1")), AIMessage("Let me write one.")],
        middleware=[ToolguardMiddleware(guard)],
    )

    answer = tool_messages(messages)["call-1"]
    assert (answer.status, answer.content) == ("error", "The answer is empty; write one.")
    assert messages[-1].content == "Let me write one."
    assert unused == []


def test_invalid_arguments_get_toolguards_message_and_the_tool_never_runs() -> None:
    ran: list[int] = []

    @toolguard.tool
    def refund(order_id: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    expected = Dispatcher([refund]).dispatch(
        ToolCall(name="refund", arguments={"order_id": "abc"}, id="x")
    )
    messages, _ = run(
        [as_langchain_tool(refund)],
        [ai(("refund", {"order_id": "abc"}, "call-1")), AIMessage("Oops.")],
    )

    answer = tool_messages(messages)["call-1"]
    assert answer.status == "error"
    assert answer.content == expected.content
    assert str(answer.content).startswith("Invalid arguments for tool 'refund':\n- 'order_id': ")
    assert ran == []


def test_injected_call_id_is_the_frameworks_tool_call_id_and_not_in_the_schema() -> None:
    @toolguard.tool
    def track(parcel: str, call_id: Annotated[str, InjectedCallId]) -> str:
        """Track a parcel."""
        return f"{parcel} tracked by {call_id}"

    lc_track = as_langchain_tool(track)
    messages, _ = run([lc_track], [ai(("track", {"parcel": "P1"}, "call-7")), AIMessage("ok")])

    assert tool_messages(messages)["call-7"].content == "P1 tracked by call-7"
    assert convert_to_openai_tool(lc_track)["function"]["parameters"] == {
        "type": "object",
        "properties": {"parcel": {"type": "string"}},
        "required": ["parcel"],
        "additionalProperties": False,
    }


def test_artifact_stays_on_the_message_beside_the_content() -> None:
    @toolguard.tool
    def rows(table: str) -> Output:
        """Read a table."""
        return Output(content=f"2 rows in {table}", artifact=[{"id": 1}, {"id": 2}])

    messages, _ = run([as_langchain_tool(rows)], [ai(("rows", {"table": "t"}, "c")), AIMessage("")])

    answer = tool_messages(messages)["c"]
    assert (answer.status, answer.content) == ("success", "2 rows in t")
    assert answer.artifact == [{"id": 1}, {"id": 2}]


def test_dispatcher_overrides_and_defaults_apply_to_its_tools(logs: Logs) -> None:
    guard = Dispatcher(
        [charge, find_order],
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={"find_*": ToolPolicy(on_error=always("Override: orders are offline."))},
    )
    messages, _ = run(
        as_langchain_tools(guard),
        [ai(("charge", {"card": "1"}, "c1"), ("find_order", {"order_id": 1}, "c2")), AIMessage("")],
    )

    event = hidden_event(messages, logs)
    answers = tool_messages(messages)
    assert answers["c1"].content == f"Agent default: charge failed ({event['error_id']})."
    assert answers["c2"].content == "Override: orders are offline."


def test_without_a_dispatcher_the_global_defaults_apply() -> None:
    toolguard.configure(on_error="Global: {tool} is down.")
    messages, _ = run(
        [as_langchain_tool(charge)], [ai(("charge", {"card": "1"}, "c")), AIMessage("")]
    )

    assert tool_messages(messages)["c"].content == "Global: charge is down."


def test_as_langchain_tool_refuses_a_tool_the_dispatcher_does_not_have() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="'charge' is not one of this"):
        as_langchain_tool(charge, dispatcher=Dispatcher([submit]))


def test_a_call_without_a_tool_call_id_returns_toolguards_content() -> None:
    assert as_langchain_tool(submit).invoke({"text": "hi"}) == "Submitted: hi"
    assert as_langchain_tool(find_order).invoke('{"order_id": 7}') == (
        "There is no order 7. Ask the user to check it."
    )


@dataclass
class User:
    name: str


def test_injected_context_is_the_langgraph_runtime_context() -> None:
    @toolguard.tool
    def whoami(user: Annotated[User, Injected]) -> str:
        """Who is asking."""
        return user.name

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("whoami", {}, "c")), AIMessage("")])),
        tools=[as_langchain_tool(whoami)],
        context_schema=User,
    )
    state = agent.invoke({"messages": [HumanMessage("go")]}, context=User("ann"))

    assert tool_messages(state["messages"])["c"].content == "ann"


def test_a_handler_that_fails_the_invocation_propagates_out_of_the_agent(logs: Logs) -> None:
    guard = Dispatcher([charge], on_error=fail)
    with pytest.raises(ToolCallFailed) as raised:
        run(
            as_langchain_tools(guard),
            [ai(("charge", {"card": "1"}, "c")), AIMessage("")],
            middleware=[ToolguardMiddleware(guard)],  # does not answer it a second time
        )

    assert (raised.value.tool, raised.value.call_id) == ("charge", "c")
    assert [event["event"] for event in logs] == ["tool_call_failed"]


def test_interrupt_in_a_tool_pauses_the_graph_and_resume_reruns_it(logs: Logs) -> None:
    @toolguard.tool
    def approve(amount: int) -> str:
        """Ask a human to approve a payment."""
        return f"approved {amount}: {interrupt(f'Approve {amount}?')}"

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("approve", {"amount": 5}, "c")), AIMessage("done")])),
        tools=[as_langchain_tool(approve)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}

    paused = agent.invoke({"messages": [HumanMessage("pay")]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["Approve 5?"]
    assert tool_messages(paused["messages"]) == {}

    resumed = agent.invoke(Command(resume="yes"), config)
    assert tool_messages(resumed["messages"])["c"].content == "approved 5: yes"
    assert resumed["messages"][-1].content == "done"
    assert logs == []


def test_a_resume_value_failing_the_interrupt_schema_fails_the_run(logs: Logs) -> None:
    """LangGraph marks that ValidationError per instance (``is_invalid_resume``): it is
    control flow, so the run fails, nothing is logged, and the interrupt can be
    answered again."""

    @toolguard.tool
    def approve(amount: int) -> str:
        """Ask a human for a number."""
        return f"approved {interrupt('How many?', response_schema=int)}"

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("approve", {"amount": 5}, "c")), AIMessage("done")])),
        tools=[as_langchain_tool(approve)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}
    agent.invoke({"messages": [HumanMessage("pay")]}, config)

    with pytest.raises(pydantic.ValidationError):
        agent.invoke(Command(resume="not a number"), config)
    assert logs == []

    resumed = agent.invoke(Command(resume="7"), config)
    assert tool_messages(resumed["messages"])["c"].content == "approved 7"


async def test_async_agent_hides_causes_and_runs_sync_tools_off_the_loop(logs: Logs) -> None:
    threads: list[int] = []

    @toolguard.tool
    async def acharge(card: str) -> str:
        """Charge a card (async)."""
        raise RuntimeError(f"payment backend refused: {SECRET}")

    @toolguard.tool
    def where() -> str:
        """Report the thread (sync)."""
        threads.append(threading.get_ident())
        return "here"

    messages, _ = await arun(
        [as_langchain_tool(acharge), as_langchain_tool(where)],
        [ai(("acharge", {"card": "1"}, "c1"), ("where", {}, "c2")), AIMessage("done")],
    )

    event = hidden_event(messages, logs)
    answers = tool_messages(messages)
    assert answers["c1"].content == builtin_message("acharge", event["error_id"])
    assert answers["c2"].content == "here"
    assert threads != [threading.get_ident()]
    assert messages[-1].content == "done"


async def test_async_path_awaits_an_async_handler_for_a_sync_tool_run_off_the_loop(
    logs: Logs,
) -> None:
    threads: list[int] = []

    async def apologise(error: Exception, context: toolguard.HandlerContext) -> str:
        return f"Sorry, {context.tool} is unavailable ({context.error_id})."

    @toolguard.tool(on_error=apologise)
    def slow_charge(card: str) -> str:
        """Charge a card (sync, with an async handler)."""
        threads.append(threading.get_ident())
        raise RuntimeError(f"payment backend refused: {SECRET}")

    messages, _ = await arun(
        [as_langchain_tool(slow_charge)],
        [ai(("slow_charge", {"card": "1"}, "c")), AIMessage("done")],
    )

    event = hidden_event(messages, logs)
    answer = tool_messages(messages)["c"]
    assert answer.content == f"Sorry, slow_charge is unavailable ({event['error_id']})."
    assert threads and threads != [threading.get_ident()]


async def test_interrupt_in_a_sync_tool_run_off_the_loop_pauses_the_async_graph(
    logs: Logs,
) -> None:
    @toolguard.tool
    def approve(amount: int) -> str:
        """Ask a human to approve a payment (sync, on the async path)."""
        return f"approved {amount}: {interrupt(f'Approve {amount}?')}"

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("approve", {"amount": 5}, "c")), AIMessage("done")])),
        tools=[as_langchain_tool(approve)],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}

    paused = await agent.ainvoke({"messages": [HumanMessage("pay")]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["Approve 5?"]
    resumed = await agent.ainvoke(Command(resume="yes"), config)
    assert tool_messages(resumed["messages"])["c"].content == "approved 5: yes"
    assert logs == []


# --- ToolguardMiddleware with plain LangChain tools -------------------------------------


@lc_tool
def pay(card: str) -> str:
    """Pay with a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@lc_tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    raise ToolError(f"There is no order {order_id}. Ask the user to check it.")


@lc_tool
def finish_report(text: str) -> str:
    """Finish with a report."""
    if not text:
        raise ValueError("empty report")
    return f"Report: {text}"


@lc_tool
def note(text: str) -> str:
    """Take a note."""
    return f"noted {text}"


FINISH_STOPS = {"finish_*": ToolPolicy(return_direct=True)}


def test_middleware_applies_agent_defaults_and_overrides_to_plain_tools(logs: Logs) -> None:
    guard = Dispatcher(
        [],
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={"look*": ToolPolicy(on_error=always("Override: orders are offline."))},
    )
    messages, _ = run(
        [pay, lookup],
        [ai(("pay", {"card": "1"}, "c1"), ("lookup", {"order_id": 1}, "c2")), AIMessage("")],
        middleware=[ToolguardMiddleware(guard)],
    )

    event = hidden_event(messages, logs)
    answers = tool_messages(messages)
    assert answers["c1"].content == f"Agent default: pay failed ({event['error_id']})."
    assert answers["c2"].content == "Override: orders are offline."


def test_middleware_applies_exact_name_overrides_to_plain_tools_named_external() -> None:
    guard = Dispatcher(
        [],
        external_tools=[lookup.name, finish_report.name],
        overrides={
            "look*": ToolPolicy(on_error="Glob: orders are offline."),
            "lookup": ToolPolicy(on_error=always("Exact: orders are offline.")),  # beats the glob
            "finish_report": ToolPolicy(return_direct=True),
        },
    )
    messages, unused = run(
        [lookup, finish_report],
        [
            ai(("lookup", {"order_id": 1}, "c1")),
            ai(("finish_report", {"text": "r"}, "c2")),
            AIMessage("never asked"),
        ],
        middleware=[ToolguardMiddleware(guard)],
    )

    answers = tool_messages(messages)
    assert (answers["c1"].status, answers["c1"].content) == (
        "error",
        "Exact: orders are offline.",
    )
    assert messages[-1].content == "Report: r"
    assert [m.content for m in unused] == ["never asked"]


def test_an_exact_override_for_a_plain_tool_needs_it_in_external_tools() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="overrides\\['lookup'\\]"):
        Dispatcher([], overrides={"lookup": ToolPolicy(on_error="x")})


def test_middleware_ends_the_loop_after_a_plain_return_direct_tool_succeeds() -> None:
    messages, unused = run(
        [finish_report],
        [ai(("finish_report", {"text": "all good"}, "c")), AIMessage("never asked")],
        middleware=[ToolguardMiddleware(Dispatcher([], overrides=FINISH_STOPS))],
    )

    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage]
    assert messages[-1].content == "Report: all good"
    assert [m.content for m in unused] == ["never asked"]


def test_middleware_keeps_looping_after_a_plain_return_direct_tool_fails() -> None:
    messages, unused = run(
        [finish_report],
        [ai(("finish_report", {"text": ""}, "c")), AIMessage("Let me retry.")],
        middleware=[ToolguardMiddleware(Dispatcher([], overrides=FINISH_STOPS))],
    )

    assert tool_messages(messages)["c"].status == "error"
    assert messages[-1].content == "Let me retry."
    assert unused == []


@pytest.mark.parametrize(("return_direct", "stops"), [(True, False), ("always", True)])
def test_middleware_decides_return_direct_for_an_error_message_langchain_wrote(
    return_direct: Any, stops: bool
) -> None:
    """ToolNode answers a plain tool's bad arguments itself (status="error"); the
    decision still follows the chain: True stops only on success, "always" stops."""
    guard = Dispatcher(
        [],
        external_tools=["finish_report"],
        overrides={"finish_report": ToolPolicy(return_direct=return_direct)},
    )
    messages, unused = run(
        [finish_report],
        [ai(("finish_report", {"txt": "r"}, "c")), AIMessage("more")],
        middleware=[ToolguardMiddleware(guard)],
    )

    answer = tool_messages(messages)["c"]
    assert answer.status == "error"
    assert answer.response_metadata["toolguard"]["return_direct"] is stops
    assert (messages[-1] is answer) is stops
    assert [m.content for m in unused] == (["more"] if stops else [])


@pytest.mark.parametrize(("mode", "stops"), [("any", True), ("all", False)])
def test_middleware_follows_the_dispatchers_return_direct_mode(mode: Any, stops: bool) -> None:
    guard = Dispatcher([], overrides=FINISH_STOPS, return_direct_mode=mode)
    messages, unused = run(
        [finish_report, note],
        [
            ai(("finish_report", {"text": "r"}, "c1"), ("note", {"text": "n"}, "c2")),
            AIMessage("more"),
        ],
        middleware=[ToolguardMiddleware(guard)],
    )

    assert isinstance(messages[-1], ToolMessage) is stops
    assert [m.content for m in unused] == (["more"] if stops else [])


def test_in_a_mixed_round_the_stopping_tools_message_is_the_agents_last_message() -> None:
    """The direct tool is called first, another after it: the round stops ("any"), and
    the agent's last message is the stopping tool's, in the saved state too; every
    message is kept, with its id."""
    agent = create_agent(
        ScriptedModel(
            messages=iter(
                [
                    ai(("finish_report", {"text": "r"}, "c1"), ("note", {"text": "n"}, "c2")),
                    AIMessage("never asked"),
                ]
            )
        ),
        tools=[finish_report, note],
        middleware=[ToolguardMiddleware(Dispatcher([], overrides=FINISH_STOPS))],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}
    messages = agent.invoke({"messages": [HumanMessage("go")]}, config)["messages"]

    assert [type(m) for m in messages] == [HumanMessage, AIMessage, ToolMessage, ToolMessage]
    assert [m.content for m in messages[2:]] == ["noted n", "Report: r"]
    saved = agent.get_state(config).values["messages"]
    assert [(m.id, m.content) for m in saved] == [(m.id, m.content) for m in messages]
    assert len({m.id for m in saved}) == 4


async def test_in_a_mixed_async_round_the_stopping_tools_message_is_last() -> None:
    guard = Dispatcher([submit])
    messages, unused = await arun(
        [*as_langchain_tools(guard), note],
        [ai(("submit", {"text": "s"}, "c1"), ("note", {"text": "n"}, "c2")), AIMessage("no")],
        middleware=[ToolguardMiddleware(guard)],
    )
    assert messages[-1].content == "Submitted: s"
    assert [m.content for m in unused] == ["no"]


def test_middleware_lets_an_interrupt_pause_the_graph(logs: Logs) -> None:
    @lc_tool
    def approve(amount: int) -> str:
        """Ask a human to approve a payment."""
        return f"approved {amount}: {interrupt(f'Approve {amount}?')}"

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("approve", {"amount": 5}, "c")), AIMessage("done")])),
        tools=[approve],
        middleware=[ToolguardMiddleware()],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}

    paused = agent.invoke({"messages": [HumanMessage("pay")]}, config)
    assert [i.value for i in paused["__interrupt__"]] == ["Approve 5?"]
    resumed = agent.invoke(Command(resume="yes"), config)
    assert tool_messages(resumed["messages"])["c"].content == "approved 5: yes"
    assert logs == []


def test_middleware_lets_a_bad_resume_value_fail_the_run(logs: Logs) -> None:
    @lc_tool
    def approve(amount: int) -> str:
        """Ask a human for a number."""
        return f"approved {interrupt('How many?', response_schema=int)}"

    agent = create_agent(
        ScriptedModel(messages=iter([ai(("approve", {"amount": 5}, "c")), AIMessage("")])),
        tools=[approve],
        middleware=[ToolguardMiddleware()],
        checkpointer=InMemorySaver(),
    )
    config: Any = {"configurable": {"thread_id": "1"}}
    agent.invoke({"messages": [HumanMessage("pay")]}, config)

    with pytest.raises(pydantic.ValidationError):
        agent.invoke(Command(resume="not a number"), config)
    assert logs == []


async def test_async_middleware_answers_with_async_handlers(logs: Logs) -> None:
    async def apologise(error: Exception, context: toolguard.HandlerContext) -> str:
        return f"Sorry, {context.tool} is unavailable ({context.error_id})."

    @lc_tool
    async def apay(card: str) -> str:
        """Pay with a card (async)."""
        raise RuntimeError(f"payment backend refused: {SECRET}")

    messages, _ = await arun(
        [apay, finish_report],
        [
            ai(("apay", {"card": "1"}, "c1")),
            ai(("finish_report", {"text": "x"}, "c2")),
            AIMessage(""),
        ],
        middleware=[
            ToolguardMiddleware(Dispatcher([], on_error=apologise, overrides=FINISH_STOPS))
        ],
    )

    event = hidden_event(messages, logs)
    answers = tool_messages(messages)
    assert answers["c1"].content == f"Sorry, apay is unavailable ({event['error_id']})."
    assert messages[-1].content == "Report: x"


# --- a graph of one's own ----------------------------------------------------------


def test_a_custom_graph_uses_the_wrapper_on_toolnode_and_routes_with_stop_requested(
    logs: Logs,
) -> None:
    guard = ToolguardMiddleware(Dispatcher([], overrides=FINISH_STOPS))
    model = ScriptedModel(
        messages=iter(
            [
                ai(("pay", {"card": "1"}, "c1")),
                ai(("finish_report", {"text": "r"}, "c2")),
                AIMessage("x"),
            ]
        )
    )
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([pay, finish_report], wrap_tool_call=guard.wrap_tool_call))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_conditional_edges(
        "tools", lambda state: END if stop_requested(state["messages"]) else "model"
    )

    messages = graph.compile().invoke({"messages": [HumanMessage("go")]})["messages"]

    event = hidden_event(messages, logs)
    answers = tool_messages(messages)
    assert answers["c1"].content == builtin_message("pay", event["error_id"])
    assert messages[-1].content == "Report: r"


def test_stop_requested_only_looks_at_a_round_that_ends_the_conversation() -> None:
    stop = ToolMessage(
        "done", tool_call_id="c", response_metadata={"toolguard": {"return_direct": True}}
    )
    go_on = ToolMessage("more", tool_call_id="d")
    call = ai(("t", {}, "c"), ("u", {}, "d"))

    assert stop_requested([HumanMessage("x"), call, stop, go_on])
    assert not stop_requested([HumanMessage("x"), call, stop, go_on], mode="all")
    assert stop_requested([HumanMessage("x"), call, stop, stop], mode="all")
    assert not stop_requested([call, stop, HumanMessage("next question")])
    assert not stop_requested([HumanMessage("x")])
    assert not stop_requested([call])
