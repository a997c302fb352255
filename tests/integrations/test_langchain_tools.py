"""toolguard tools inside LangChain, as LangChain's own tools are (issue 13).

LangChain's decorators accept a toolguard tool; ``as_langchain_tools`` honours
LangChain's injection types and return types and takes LangChain's tool options;
a ``return_direct`` tool without the middleware warns once. Driven by a real
``create_agent`` with LangChain's fake chat model.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from langchain.agents import AgentState, create_agent
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, StructuredTool
from langchain_core.tools import tool as lc_tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.prebuilt import InjectedState, InjectedStore, ToolRuntime
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore
from langgraph.types import Command

import toolguard
from toolguard import Breaker, Dispatcher, Output, RetryWithFeedback, ToolPolicy
from toolguard.integrations.langchain import (
    ToolguardMiddleware,
    ToolguardWarning,
    as_langchain_tool,
    as_langchain_tools,
)

from .langchain_helpers import SECRET, Logs, ScriptedModel, ai, builtin_message, run, tool_messages

THREAD: Any = {"configurable": {"thread_id": "t-1"}}


# --- LangChain's decorators accept a toolguard tool ------------------------------------------


def quote(city: str, nights: int = 1, tags: list[str] | None = None) -> str:
    """Quote a hotel stay.

    Args:
        city: Where to stay.
        nights: How many nights.
    """
    return f"{nights} nights in {city}"


@pytest.mark.parametrize(
    "decorate",
    [lc_tool, StructuredTool.from_function, lc_tool(parse_docstring=True)],
    ids=["tool", "StructuredTool.from_function", "tool(parse_docstring=True)"],
)
def test_langchains_decorators_accept_a_toolguard_tool_like_the_plain_function(
    decorate: Any,
) -> None:
    guarded = toolguard.tool(quote)
    from_plain, from_toolguard = decorate(quote), decorate(guarded)

    assert convert_to_openai_tool(from_toolguard) == convert_to_openai_tool(from_plain)
    assert from_toolguard.invoke({"city": "Oslo", "nights": 2}) == "2 nights in Oslo"


def test_langchains_decorator_keeps_a_toolguard_tools_injected_parameters_out_of_the_schema() -> (
    None
):
    def track(
        parcel: str,
        state: Annotated[dict[str, Any], InjectedState],
        call_id: Annotated[str, InjectedToolCallId],
        runtime: ToolRuntime,
    ) -> str:
        """Track a parcel."""
        return parcel

    schema = convert_to_openai_tool(lc_tool(toolguard.tool(track)))
    assert schema == convert_to_openai_tool(lc_tool(track))
    assert list(schema["function"]["parameters"]["properties"]) == ["parcel"]


# --- as_langchain_tools: LangChain's injection ------------------------------------------------


class Seen:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}


SEEN = Seen()


@toolguard.tool
def inspect_run(
    query: str,
    state: Annotated[dict[str, Any], InjectedState],
    messages: Annotated[list[Any], InjectedState("messages")],
    store: Annotated[BaseStore, InjectedStore()],
    call_id: Annotated[str, InjectedToolCallId],
    runtime: ToolRuntime,
    config: RunnableConfig,
) -> str:
    """Record what LangGraph injected."""
    SEEN.values = {
        "state": state,
        "messages": messages,
        "store": store,
        "call_id": call_id,
        "runtime": runtime,
        "config": config,
    }
    return f"inspected {query}"


def test_langgraph_supplies_a_toolguard_tools_injected_parameters() -> None:
    store = InMemoryStore()
    tool = as_langchain_tool(inspect_run)
    messages, _ = run(
        [tool],
        [ai(("inspect_run", {"query": "q"}, "c1")), AIMessage("done")],
        store=store,
        config=THREAD,
    )

    assert tool_messages(messages)["c1"].content == "inspected q"
    seen = SEEN.values
    assert seen["store"] is store and seen["runtime"].store is store
    assert seen["call_id"] == "c1" == seen["runtime"].tool_call_id
    assert [m.content for m in seen["messages"]] == ["go", ""]
    assert seen["state"]["messages"] == seen["messages"]
    assert seen["config"]["configurable"]["thread_id"] == "t-1"
    assert isinstance(seen["runtime"], ToolRuntime)


def test_the_model_never_sees_nor_sets_injected_parameters() -> None:
    tool = as_langchain_tool(inspect_run)
    assert convert_to_openai_tool(tool)["function"]["parameters"] == {
        "type": "object",
        "properties": {"query": {"type": "string"}},
        "required": ["query"],
        "additionalProperties": False,
    }
    forged = {"query": "q", "state": {"admin": True}, "call_id": "forged", "store": "x"}
    messages, _ = run(
        [tool], [ai(("inspect_run", forged, "c1")), AIMessage("")], store=InMemoryStore()
    )

    assert tool_messages(messages)["c1"].content == "inspected q"
    assert SEEN.values["call_id"] == "c1"  # LangGraph's values, as for its own tools
    assert "admin" not in SEEN.values["state"]


def test_an_injected_parameter_without_langgraph_fails_naming_it(logs: Logs) -> None:
    @toolguard.tool
    def notes(text: str, state: Annotated[dict[str, Any], InjectedState]) -> str:
        """Take a note."""
        return text

    result = as_langchain_tool(notes).invoke({"text": "hi"})

    [event] = logs
    assert result == builtin_message("notes", event["error_id"])
    assert "'state'" in str(event["exc_info"]) and "InjectedState" in str(event["exc_info"])


class RunContext:
    """Stands in for Pydantic AI's ``RunContext`` (found by its qualified name)."""


RunContext.__module__ = "pydantic_ai._run_context"


@toolguard.tool
def lookup_order(order: int, ctx: RunContext) -> str:
    """Look an order up (a Pydantic AI tool)."""
    return str(order)


@toolguard.tool
def portable(order: int, ctx: RunContext | None = None) -> str:
    """Look an order up (any framework: the context is optional)."""
    return f"order {order}, context {ctx}"


def test_another_frameworks_parameter_is_refused_at_conversion() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match=r"'ctx'.*LangChain cannot supply"):
        as_langchain_tool(lookup_order)


def test_another_frameworks_parameter_with_a_default_gets_its_default() -> None:
    messages, _ = run(
        [as_langchain_tool(portable)], [ai(("portable", {"order": 1}, "c")), AIMessage("")]
    )
    assert tool_messages(messages)["c"].content == "order 1, context None"


def test_callbacks_see_the_models_arguments_not_the_injected_values() -> None:
    inputs: list[Any] = []

    class Recorder(BaseCallbackHandler):
        def on_tool_start(self, serialized: Any, input_str: str, **kwargs: Any) -> None:
            inputs.append(kwargs.get("inputs"))

    run(
        [as_langchain_tool(inspect_run)],
        [ai(("inspect_run", {"query": "q"}, "c1")), AIMessage("")],
        store=InMemoryStore(),
        config={"callbacks": [Recorder()]},
    )
    assert inputs == [{"query": "q"}]


# --- as_langchain_tools: LangChain's return values -------------------------------------------


class NotesState(AgentState[Any]):
    notes: list[str]


@toolguard.tool
def add_note(text: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
    """Add a note to the conversation's state."""
    return Command(
        update={
            "notes": [text],
            "messages": [ToolMessage(f"noted {text}", tool_call_id=call_id)],
        }
    )


def test_a_command_reaches_langgraph_untouched_and_updates_the_state() -> None:
    agent = create_agent(
        ScriptedModel(messages=iter([ai(("add_note", {"text": "n1"}, "c1")), AIMessage("ok")])),
        tools=as_langchain_tools(Dispatcher([add_note])),
        state_schema=NotesState,
    )
    start: Any = {"messages": [HumanMessage("go")], "notes": []}
    state = agent.invoke(start)

    assert state["notes"] == ["n1"]
    assert tool_messages(state["messages"])["c1"].content == "noted n1"


@toolguard.tool
def answer_message(text: str, call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
    """Answer with a message of its own."""
    return ToolMessage(text, tool_call_id=call_id, artifact={"raw": text})


@toolguard.tool
def answer_blocks(text: str) -> list[dict[str, Any]]:
    """Answer with content blocks."""
    return [{"type": "text", "text": text}, {"type": "image", "url": "https://x/y.png"}]


@toolguard.tool
def answer_pair(text: str) -> tuple[str, dict[str, Any]]:
    """Answer with content and an artifact."""
    return f"content {text}", {"rows": [1, 2]}


def test_a_tool_message_content_blocks_and_an_artifact_pair_pass_through() -> None:
    tools = [
        as_langchain_tool(answer_message),
        as_langchain_tool(answer_blocks),
        as_langchain_tool(answer_pair, response_format="content_and_artifact"),
    ]
    messages, _ = run(
        tools,
        [
            ai(
                ("answer_message", {"text": "m"}, "c1"),
                ("answer_blocks", {"text": "b"}, "c2"),
                ("answer_pair", {"text": "p"}, "c3"),
            ),
            AIMessage(""),
        ],
    )

    answers = tool_messages(messages)
    assert (answers["c1"].content, answers["c1"].artifact) == ("m", {"raw": "m"})
    assert answers["c2"].content == [
        {"type": "text", "text": "b"},
        {"type": "image", "url": "https://x/y.png"},
    ]
    assert (answers["c3"].content, answers["c3"].artifact) == ("content p", {"rows": [1, 2]})
    for answer in answers.values():  # toolguard decided nothing: it adds nothing
        assert "toolguard" not in answer.response_metadata


def test_a_list_of_strings_is_data_serialised_by_toolguard() -> None:
    @toolguard.tool
    def names(prefix: str) -> list[str]:
        """Names with a prefix."""
        return [f"{prefix}1", f"{prefix}2"]

    messages, _ = run(
        [as_langchain_tool(names)], [ai(("names", {"prefix": "a"}, "c")), AIMessage("")]
    )
    assert tool_messages(messages)["c"].content == '["a1","a2"]'


def test_a_native_value_does_not_bypass_failures(logs: Logs) -> None:
    @toolguard.tool
    def broken(text: str) -> Command[Any]:
        """Fail before returning a command."""
        raise RuntimeError(f"no command: {SECRET}")

    messages, _ = run(
        [as_langchain_tool(broken)], [ai(("broken", {"text": "x"}, "c")), AIMessage("")]
    )
    [event] = logs
    assert tool_messages(messages)["c"].content == builtin_message("broken", event["error_id"])


def test_a_return_direct_tool_answering_with_its_own_message_ends_the_loop() -> None:
    @toolguard.tool(return_direct=True)
    def final(text: str, call_id: Annotated[str, InjectedToolCallId]) -> ToolMessage:
        """Give the final answer."""
        return ToolMessage(f"final: {text}", tool_call_id=call_id)

    dispatcher = Dispatcher([final])
    messages, unused = run(
        as_langchain_tools(dispatcher),
        [ai(("final", {"text": "42"}, "c")), AIMessage("never")],
        middleware=[ToolguardMiddleware(dispatcher)],
    )
    assert messages[-1].content == "final: 42"
    assert messages[-1].response_metadata["toolguard"]["return_direct"] is True
    assert [m.content for m in unused] == ["never"]


class Opaque:
    """An artifact toolguard cannot serialise (a client, a frame, ...)."""


def test_an_artifact_toolguard_cannot_serialise_rides_on_output() -> None:
    """The dispatcher serialises what a tool returns before LangChain sees it; an
    artifact that is not JSON goes in ``Output(artifact=...)``, never serialised."""
    opaque = Opaque()

    @toolguard.tool
    def fetch(text: str) -> Output:
        """Fetch with a raw object beside the text."""
        return Output(content=f"fetched {text}", artifact=opaque)

    messages, _ = run(
        [as_langchain_tool(fetch)], [ai(("fetch", {"text": "x"}, "c")), AIMessage("")]
    )
    answer = tool_messages(messages)["c"]
    assert (answer.content, answer.artifact, answer.status) == ("fetched x", opaque, "success")


# --- LangChain's tool options ------------------------------------------------------------------


def test_langchains_tool_options_are_forwarded() -> None:
    tool = as_langchain_tool(
        answer_pair,
        description="Answer, for the model.",
        tags=["answers"],
        metadata={"team": "search"},
        extras={"cache_control": {"type": "ephemeral"}},
        verbose=False,
        response_format="content_and_artifact",
    )

    assert (tool.description, tool.tags, tool.metadata, tool.extras) == (
        "Answer, for the model.",
        ["answers"],
        {"team": "search"},
        {"cache_control": {"type": "ephemeral"}},
    )
    assert tool.response_format == "content_and_artifact"
    assert tool.invoke({"text": "x"}) == "content x"  # no call id: the content, as LangChain


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("return_direct", "toolguard decides return_direct"),
        ("handle_tool_error", "toolguard answers every failure"),
        ("handle_validation_error", "toolguard validates the model's arguments"),
        ("args_schema", "toolguard builds the schema"),
        ("name", "@tool\\(name=...\\)"),
        ("colour", "unexpected option 'colour'"),
    ],
)
def test_options_that_cannot_apply_are_refused_saying_why(option: str, reason: str) -> None:
    options: Any = {option: True}  # what a caller without type checking could pass
    with pytest.raises(TypeError, match=reason):
        as_langchain_tool(answer_pair, **options)


# --- return_direct without the middleware ----------------------------------------------------


@toolguard.tool(return_direct=True)
def submit(text: str) -> str:
    """Submit the final answer."""
    return f"Submitted: {text}"


def test_return_direct_without_the_middleware_warns_once_and_the_loop_goes_on() -> None:
    tool = as_langchain_tool(submit)
    with pytest.warns(ToolguardWarning, match="without ToolguardMiddleware") as warned:
        messages, unused = run(
            [tool],
            [
                ai(("submit", {"text": "1"}, "c1")),
                ai(("submit", {"text": "2"}, "c2")),
                AIMessage("the model was asked again"),
            ],
        )
    assert len([w for w in warned if issubclass(w.category, ToolguardWarning)]) == 1
    assert messages[-1].content == "the model was asked again"
    assert unused == []


def test_return_direct_with_the_middleware_does_not_warn() -> None:
    dispatcher = Dispatcher([submit])
    messages, _ = run(
        as_langchain_tools(dispatcher),
        [ai(("submit", {"text": "1"}, "c1")), AIMessage("never")],
        middleware=[ToolguardMiddleware(dispatcher)],
    )
    assert messages[-1].content == "Submitted: 1"


# --- sessions for toolguard tools ----------------------------------------------------------


def test_a_toolguard_tools_breaker_counts_per_thread() -> None:
    calls: list[str] = []

    @toolguard.tool(breaker=Breaker(failures=1, cooldown=60))
    def billing(q: str) -> str:
        """Billing (down)."""
        calls.append(q)
        raise RuntimeError("down")

    dispatcher = Dispatcher([billing])
    script = [ai(("billing", {"q": "1"}, "c1")), ai(("billing", {"q": "2"}, "c2")), AIMessage("")]
    messages, _ = run(as_langchain_tools(dispatcher), script, config=THREAD)

    assert calls == ["1"]
    assert str(tool_messages(messages)["c2"].content).startswith(
        "The tool 'billing' is unavailable"
    )
    assert dispatcher.session(id="t-1").state("billing").consecutive_failures == 1


def test_a_toolguard_tools_model_retries_count_once_per_model_message() -> None:
    @toolguard.tool(max_model_retries=1)
    def search(query: str) -> str:
        """Search."""
        raise RetryWithFeedback("Too vague.")

    messages, _ = run(
        as_langchain_tools(Dispatcher([search])),
        [
            ai(("search", {"query": "a"}, "c1"), ("search", {"query": "b"}, "c2")),
            ai(("search", {"query": "c"}, "c3")),
            AIMessage(""),
        ],
        config=THREAD,
    )
    answers = tool_messages(messages)
    assert answers["c1"].content == answers["c2"].content == "Too vague. (retry 1 of 1)"
    assert str(answers["c3"].content).startswith("The tool 'search' was called incorrectly")


def test_the_middlewares_overrides_apply_to_a_toolguard_tool_of_its_dispatcher() -> None:
    dispatcher = Dispatcher([submit], overrides={"submit": ToolPolicy(return_direct=False)})
    messages, unused = run(
        as_langchain_tools(dispatcher),
        [ai(("submit", {"text": "1"}, "c1")), AIMessage("asked again")],
        middleware=[ToolguardMiddleware(dispatcher)],
    )
    assert messages[-1].content == "asked again"
    assert unused == []
