"""The LlamaIndex integration, driven through LlamaIndex's own agent workflows.

The model is LlamaIndex's own offline test double, ``MockFunctionCallingLLM``, with
a response generator playing a script of tool calls and recording every message it
is sent; the agents (``FunctionAgent``, ``ReActAgent``), the workflow runtime, the
``Context``, memory and tool calling are LlamaIndex's own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from llama_index.core.agent.workflow import AgentOutput, FunctionAgent, ReActAgent
from llama_index.core.base.llms.types import ChatMessage, ImageBlock, TextBlock, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.memory import BaseMemory
from llama_index.core.tools import FunctionTool
from llama_index.core.tools.types import BaseTool
from llama_index.core.workflow import Context

from toolguard import (
    Dispatcher,
    Image,
    Injected,
    InjectedCallId,
    Output,
    RetryWithFeedback,
    Text,
    ToolError,
    ToolPolicy,
    load_policy,
    tool,
)
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.llama_index import (
    SESSION_KEY,
    as_llama_index_tool,
    as_llama_index_tools,
    guard,
)
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ..test_bad_input import CASES, Shop, decode, runs, search_orders

# LlamaIndex's workflows list an agent's members with inspect.getmembers, which
# touches pydantic's deprecated attributes (``__fields__``, ``model_fields`` on an
# instance); a second run on one Context skips the memory it cannot serialise;
# ReActAgent asks ``ctx.is_running`` inside a step: LlamaIndex's warnings, not toolguard's.
pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
    pytest.mark.filterwarnings("ignore::workflows.context.state_store.UnserializableKeyWarning"),
    pytest.mark.filterwarnings("ignore:is_running called from within a step:DeprecationWarning"),
]

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"
Call = tuple[str, dict[str, Any], str]


class Script:
    """A response generator for ``MockFunctionCallingLLM``: each step is a list of
    tool calls or a final text; every message the model is sent is recorded."""

    def __init__(self, steps: Sequence[list[Call] | str]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        if not self.steps:
            return ChatMessage(role="assistant", content="all done")
        step = self.steps.pop(0)
        if isinstance(step, str):
            return ChatMessage(role="assistant", content=step)
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=call_id, tool_name=name, tool_kwargs=arguments)
                for name, arguments, call_id in step
            ],
        )

    def sent(self) -> str:
        """Everything the model was sent, over the whole run, as text."""
        return json.dumps([[m.model_dump(mode="json") for m in seen] for seen in self.seen])

    def tool_messages(self) -> dict[str, str]:
        """The tool results the model was sent, by call id (the last time it saw each)."""
        answers: dict[str, str] = {}
        for seen in self.seen:
            for message in seen:
                if message.role == "tool":
                    answers[message.additional_kwargs["tool_call_id"]] = message.content or ""
        return answers


def function_agent(tools: Sequence[BaseTool], script: Script) -> FunctionAgent:
    return FunctionAgent(tools=list(tools), llm=MockFunctionCallingLLM(response_generator=script))


async def run(
    tools: Sequence[BaseTool], script: Script, ctx: Context | None = None
) -> tuple[AgentOutput, Context]:
    agent = function_agent(tools, script)
    ctx = ctx if ctx is not None else Context(agent)
    output = await agent.run("go", ctx=ctx)
    assert isinstance(output, AgentOutput)
    return output, ctx


def hidden_event(script: Script, output: AgentOutput, logs: Logs) -> dict[str, Any]:
    """Assert SECRET is in nothing the model saw or the run produced, and in exactly
    one log event; return that event."""
    assert SECRET not in script.sent()
    assert SECRET not in output.model_dump_json()
    carrying = [event for event in logs if SECRET in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]


def builtin_message(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


# --- an existing app's tools --------------------------------------------------------------

ran: list[str] = []


def lookup_order(order_id: int) -> str:
    """Look up an order."""
    ran.append(f"lookup_order {order_id}")
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 13:
        raise RetryWithFeedback("Order numbers here are even; send the number again.")
    if order_id < 0:
        raise ConnectionError(f"orders-db refused: {SECRET}")
    return f"order {order_id}: shipped"


async def remember(ctx: Context, note: str) -> str:
    """Keep a note in the agent's state."""
    await ctx.store.set("note", note)
    return f"noted {note}"


# LlamaIndex recognises ``Context`` by the annotation object itself, which this
# module's ``from __future__ import annotations`` turns into a string.
remember.__annotations__["ctx"] = Context


def finish(answer: str) -> str:
    """Give the final answer."""
    if answer == "crash":
        raise RuntimeError(f"renderer crashed: {SECRET}")
    return f"FINAL: {answer}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def app_tools() -> list[BaseTool]:
    """The app as written for LlamaIndex, no toolguard in it."""
    return [
        FunctionTool.from_defaults(lookup_order),
        FunctionTool.from_defaults(async_fn=remember),
        FunctionTool.from_defaults(finish, return_direct=True),
    ]


# Success, parallel calls, a tool's state, hidden and visible failures, bad arguments,
# the Context and a tool's own error output, guarded against unguarded: the
# conformance driver, tests/integrations/conformance/test_llama_index.py.


async def test_guarded_tools_keep_their_context_schema_and_success_output() -> None:
    script = Script(
        [[("remember", {"note": "blue"}, "c1"), ("lookup_order", {"order_id": 7}, "c2")], "ok"]
    )
    guarded = guard(app_tools(), Dispatcher([]))
    assert [t.metadata.to_openai_tool() for t in guarded] == [
        t.metadata.to_openai_tool() for t in app_tools()
    ]
    _, ctx = await run(guarded, script)
    assert await ctx.store.get("note") == "blue"  # the tool got the agent's Context
    assert script.tool_messages() == {"c1": "noted blue", "c2": "order 7: shipped"}


async def test_overrides_by_glob_and_policy_files_answer_guarded_tools(
    tmp_path: Path, logs: Logs
) -> None:
    policy = tmp_path / "agent.toml"
    policy.write_text(
        'version = 1\n[tools."lookup_*"]\n'
        'on_error = "generic_unless_visible"\n'
        'message = "Orders are down ({error_id}); tell the user."\n'
    )
    script = Script(
        [[("lookup_order", {"order_id": -1}, "c1"), ("finish", {"answer": "crash"}, "c2")]]
    )
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order", "finish"],
        policy=load_policy(policy),
        overrides={"finish": ToolPolicy(on_error="Rendering failed; answer in plain text.")},
    )
    output, _ = await run(guard(app_tools(), dispatcher), script)
    answers = script.tool_messages()
    events = [event for event in logs if event["event"] == "tool_error_hidden"]
    by_tool = {event["tool"]: event for event in events}
    assert (
        answers["c1"] == f"Orders are down ({by_tool['lookup_order']['error_id']}); tell the user."
    )
    assert answers["c2"] == "Rendering failed; answer in plain text."
    assert SECRET not in script.sent()
    assert output.response.content == "all done"  # the failed direct tool did not end the run


async def test_a_direct_tool_ends_the_run_on_success_with_its_output() -> None:
    script = Script([[("finish", {"answer": "42 apples"}, "c1")], "never asked"])
    output, _ = await run(guard(app_tools(), Dispatcher([])), script)
    assert output.response.content == "FINAL: 42 apples"
    assert len(script.seen) == 1


async def test_a_failed_direct_tool_never_ends_the_run_and_every_call_is_answered(
    logs: Logs,
) -> None:
    """LlamaIndex's own flag, on a failure, also drops the results after it from the
    conversation; guarded, the failure does not stop and every call is answered."""
    calls: list[Call] = [
        ("finish", {"answer": "crash"}, "c1"),
        ("lookup_order", {"order_id": 7}, "c2"),
    ]
    script = Script([calls, "recovered"])
    output, _ = await run(guard(app_tools(), Dispatcher([])), script)
    assert output.response.content == "recovered"
    answers = script.tool_messages()
    assert set(answers) == {"c1", "c2"}
    assert answers["c2"] == "order 7: shipped"
    assert SECRET not in script.sent()


async def test_the_dispatchers_return_direct_stops_a_guarded_tool_on_success_only() -> None:
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(return_direct=True)},
    )
    stopped = Script([[("lookup_order", {"order_id": 8}, "c1")], "never"])
    output, _ = await run(guard(app_tools(), dispatcher), stopped)
    assert output.response.content == "order 8: shipped"
    failed = Script([[("lookup_order", {"order_id": -1}, "c1")], "went on"])
    output, _ = await run(guard(app_tools(), dispatcher), failed)
    assert output.response.content == "went on"


async def test_one_context_is_one_session_and_calls_of_one_message_are_one_step() -> None:
    """A ``Context`` reused across runs is one toolguard session; two feedback
    failures in one model message use one model retry, a second message another."""
    dispatcher = Dispatcher([], external_tools=["lookup_order"], max_model_retries=5)
    tools = guard(app_tools(), dispatcher)
    first = Script(
        [[("lookup_order", {"order_id": 13}, "a"), ("lookup_order", {"order_id": 13}, "b")], "ok"]
    )
    _, ctx = await run(tools, first)
    session_id = await ctx.store.get(SESSION_KEY)
    assert dispatcher.session(id=session_id).state("lookup_order").model_retries == 1
    second = Script([[("lookup_order", {"order_id": 13}, "c")], "ok"])
    await run(tools, second, ctx)
    assert await ctx.store.get(SESSION_KEY) == session_id
    assert dispatcher.session(id=session_id).state("lookup_order").model_retries == 2
    assert script_answers_all(first, {"a", "b"})
    answers = second.tool_messages()
    assert answers["c"] == "Order numbers here are even; send the number again. (retry 2 of 5)"
    # the reused Context may bring the first run's messages along (its memory is kept
    # under pydantic < 2.14, skipped as unserialisable from 2.14): never other ones
    assert set(answers) <= {"a", "b", "c"}


def script_answers_all(script: Script, ids: set[str]) -> bool:
    answers = script.tool_messages()
    return set(answers) == ids and all(
        answer.startswith("Order numbers here are even; send the number again.")
        for answer in answers.values()
    )


def test_settings_that_cannot_apply_to_a_tool_llama_index_runs_are_refused() -> None:
    dispatcher = Dispatcher(
        [], external_tools=["lookup_order"], overrides={"lookup_*": ToolPolicy(timeout=3)}
    )
    with pytest.raises(ToolDefinitionError, match="timeout"):
        guard(app_tools(), dispatcher)


async def test_guard_under_a_react_agent() -> None:
    """ReActAgent: the model writes its action as text; the observation is toolguard's."""
    texts = iter(
        [
            'Thought: look it up.\nAction: lookup_order\nAction Input: {"order_id": -1}',
            "Thought: I can answer.\nAnswer: it failed",
        ]
    )
    seen: list[str] = []

    def react(messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        seen.append(json.dumps([m.model_dump(mode="json") for m in messages]))
        return ChatMessage(role="assistant", content=next(texts))

    agent = ReActAgent(
        tools=[*guard(app_tools(), Dispatcher([]))],
        llm=MockFunctionCallingLLM(response_generator=react),
    )
    output: object = await agent.run("go")
    assert isinstance(output, AgentOutput)
    assert output.response.content == "it failed"
    assert SECRET not in "".join(seen)
    assert "error id" in seen[-1]


# --- toolguard tools as LlamaIndex tools ------------------------------------------------


@tool
def search(query: str, limit: int = 3) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    ran.append(f"search {query}")
    if query == "boom":
        raise OSError(f"index unreachable: {SECRET}")
    return f"{limit} results for {query}"


@tool
async def note(ctx: Context, text: str) -> str:
    """Keep a note in the agent's state."""
    await ctx.store.set("note", text)
    return f"kept {text}"


@tool(return_direct=True)
def final_answer(answer: str) -> str:
    """Give the final answer."""
    if answer == "crash":
        raise RuntimeError(f"renderer crashed: {SECRET}")
    return f"FINAL: {answer}"


@tool(return_direct=lambda result: "stop" in result.text)
def maybe_stop(word: str) -> str:
    """Stop when the word says so."""
    return word


@tool
def picture(caption: str) -> list[Text | Image]:
    """A captioned picture."""
    return [Text(text=caption), Image(data="iVBORw0KGgo=", media_type="image/png")]


@tool
def with_artifact(key: str) -> Output:
    """Data for the app beside the text for the model."""
    return Output(content=f"found {key}", artifact={"rows": [1, 2]})


def toolguard_tools() -> Dispatcher:
    return Dispatcher([search, note, final_answer, maybe_stop, picture, with_artifact])


def test_the_model_sees_toolguards_schema_without_the_context_parameter() -> None:
    tools = {t.metadata.name: t for t in as_llama_index_tools(toolguard_tools())}
    declared = tools["note"].metadata.to_openai_tool()["function"]
    # LlamaIndex keeps type, properties, required and $defs of a schema
    kept = ("type", "properties", "required", "$defs")
    assert declared["parameters"] == {k: v for k, v in note.parameters.items() if k in kept}
    assert "ctx" not in json.dumps(declared)
    assert tools["search"].metadata.get_parameters_dict() == {
        k: v for k, v in search.parameters.items() if k in kept
    }
    assert tools["search"].metadata.description == search.description


async def test_toolguard_tool_gets_the_agents_context_and_the_model_cannot_set_it() -> None:
    script = Script([[("note", {"text": "red", "ctx": "forged"}, "c1")], "ok"])
    _, ctx = await run(as_llama_index_tools(toolguard_tools()), script)
    assert await ctx.store.get("note") == "red"
    assert script.tool_messages()["c1"] == "kept red"


async def test_toolguard_tool_failure_is_hidden_logged_once_and_quoted(logs: Logs) -> None:
    script = Script([[("search", {"query": "boom"}, "c1")], "sorry"])
    output, _ = await run(as_llama_index_tools(toolguard_tools()), script)
    event = hidden_event(script, output, logs)
    assert script.tool_messages()["c1"] == builtin_message("search", event["error_id"])


async def test_bad_arguments_get_toolguards_message_and_the_tool_never_runs() -> None:
    script = Script([[("search", {"query": "x", "limit": "lots"}, "c1"), ("search", {}, "c2")]])
    await run(as_llama_index_tools(toolguard_tools()), script)
    answers = script.tool_messages()
    assert "limit" in answers["c1"] and "query" in answers["c2"]
    assert ran == []


async def test_toolguard_return_direct_ends_the_run_on_success_only() -> None:
    tools = as_llama_index_tools(toolguard_tools())
    output, _ = await run(tools, Script([[("final_answer", {"answer": "7"}, "c1")], "never"]))
    assert output.response.content == "FINAL: 7"
    failed = Script([[("final_answer", {"answer": "crash"}, "c1")], "went on"])
    output, _ = await run(tools, failed)
    assert output.response.content == "went on"
    assert SECRET not in failed.sent()


async def test_a_return_direct_predicate_decides_per_call() -> None:
    tools = as_llama_index_tools(toolguard_tools())
    going = Script([[("maybe_stop", {"word": "go"}, "c1")], "went on"])
    output, _ = await run(tools, going)
    assert output.response.content == "went on"
    output, _ = await run(tools, Script([[("maybe_stop", {"word": "stop"}, "c1")], "never"]))
    assert output.response.content == "stop"


async def test_content_blocks_and_artifacts_map_to_llama_index() -> None:
    tools = {t.metadata.name: t for t in as_llama_index_tools(toolguard_tools())}
    shown = await tools["picture"].acall(caption="a cat")
    assert isinstance(shown.blocks[0], TextBlock) and shown.blocks[0].text == "a cat"
    assert isinstance(shown.blocks[1], ImageBlock)
    assert shown.blocks[1].image_mimetype == "image/png"
    kept = await tools["with_artifact"].acall(key="k")
    assert kept.content == "found k"
    assert kept.raw_output == {"rows": [1, 2]}


# Pydantic AI's RunContext as toolguard knows it: by qualified name (no import).
RunContext = type("RunContext", (), {"__module__": "pydantic_ai._run_context"})


@tool
def needs_run_context(ctx: RunContext, x: int) -> int:  # type: ignore[valid-type]
    """Uses Pydantic AI's context."""
    return x


def test_another_frameworks_parameter_is_refused_at_conversion() -> None:
    with pytest.raises(ToolDefinitionError, match="'ctx'"):
        as_llama_index_tool(needs_run_context)


def test_a_tool_not_in_the_dispatcher_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="search"):
        as_llama_index_tool("search", dispatcher=Dispatcher([note]))


async def test_memory_holds_every_call_and_its_answer() -> None:
    script = Script(
        [[("search", {"query": "a"}, "c1"), ("search", {"query": "boom"}, "c2")], "fine"]
    )
    _, ctx = await run(as_llama_index_tools(toolguard_tools()), script)
    memory = await ctx.store.get("memory")
    assert isinstance(memory, BaseMemory)
    answered = [
        m.additional_kwargs.get("tool_call_id") for m in memory.get_all() if m.role == "tool"
    ]
    assert answered == ["c1", "c2"]


@tool
def wants_call_id(x: int, call_id: Annotated[str, InjectedCallId]) -> int:
    """Needs the call id."""
    return x


@tool
def wants_context(x: int, user: Annotated[str, Injected]) -> int:
    """Needs application context."""
    return x


@pytest.mark.parametrize(
    ("guarded", "parameter"), [(wants_call_id, "'call_id'"), (wants_context, "'user'")]
)
def test_call_ids_and_application_context_which_llamaindex_never_hands_over_are_refused(
    guarded: Any, parameter: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=parameter):
        as_llama_index_tool(guarded)


# --- the bad-input corpus through LlamaIndex's agent ------------------------------------


def _through_llama_index(case: dict[str, Any]) -> bool:
    """Cases LlamaIndex can hand a tool: a JSON object of string keys for a known tool."""
    arguments = decode(case.get("arguments"))
    return (
        case["name"] in ("refund", "search_orders", "buy")
        and isinstance(arguments, dict)
        and all(isinstance(key, str) for key in arguments)
    )


@tool(name="refund")
def refund_here(order_id: int, reason: str) -> str:
    """Refund an order (the corpus' refund, without the injected parameters the
    framework cannot supply).

    Args:
        order_id: The order to refund.
        reason: Why, in the customer's words.
    """
    runs.append("refund")
    return f"refunded {order_id}"


# The corpus' attempts to set refund's injected parameters: this refund has none.
INJECTED_CASES = {"inject-context", "inject-call-id"}

CORPUS_CASES = [
    case for case in CASES if _through_llama_index(case) and case["id"] not in INJECTED_CASES
]


async def test_the_bad_input_corpus_through_a_function_agent_is_answered_bounded() -> None:
    assert len(CORPUS_CASES) >= 20
    calls: list[Call] = [
        (case["name"], decode(case["arguments"]), f"call_{index}")
        for index, case in enumerate(CORPUS_CASES)
    ]
    script = Script([calls, "done"])
    tools = as_llama_index_tools(Dispatcher([refund_here, search_orders, Shop().buy]))
    runs.clear()
    await run(tools, script)
    answers = script.tool_messages()
    assert set(answers) == {call_id for _, _, call_id in calls}
    for (_, _, call_id), case in zip(calls, CORPUS_CASES, strict=True):
        answer = answers[call_id]
        assert len(answer) <= case["max_chars"], case["id"]
        for fragment in case["expect"]:
            assert fragment in answer, (case["id"], fragment, answer[:300])
    assert runs == []


# --- the LlamaIndex-private names toolguard reads ---------------------------------------


def test_the_workflows_pause_is_where_toolguard_registers_it_as_control_flow() -> None:
    """A release that moves ``WaitingForEvent`` fails here, not silently: a paused
    workflow would otherwise be answered as a tool failure."""
    from workflows.runtime.types.results import WaitingForEvent

    from toolguard.errors import is_control_flow

    assert is_control_flow(WaitingForEvent.__new__(WaitingForEvent))


async def test_a_tool_call_sees_the_run_id_tag_and_the_agents_iteration() -> None:
    """The model step toolguard reads (the run's id in LlamaIndex's instrumentation
    tags, the agent's ``num_iterations`` in the context's store) is there inside a
    tool call: a release that moves either fails here, not silently."""
    from toolguard.integrations.llama_index._conversation import RUN_ID_TAG, run_tags

    seen: list[Any] = []

    async def probe(ctx: Context, query: str) -> str:
        """Probe."""
        seen.append((run_tags.get().get(RUN_ID_TAG), await ctx.store.get("num_iterations")))
        return "ok"

    probe.__annotations__["ctx"] = Context
    await run(
        [FunctionTool.from_defaults(async_fn=probe)],
        Script([[("probe", {"query": "q"}, "c1")], "ok"]),
    )
    ((run_id, iteration),) = seen
    assert isinstance(run_id, str) and run_id and isinstance(iteration, int)


def test_guard_refuses_what_is_not_a_dispatcher_or_a_list_of_tools() -> None:
    """A wrong argument fails at the entry point, saying what it takes, never inside
    LlamaIndex on the first call: an agent for the dispatcher, one tool for the list,
    something that is neither a tool nor a function in the list."""
    lookup = FunctionTool.from_defaults(search_orders)
    agent = FunctionAgent(tools=[lookup], llm=MockFunctionCallingLLM())
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher, got FunctionAgent"):
        guard([lookup], agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"takes a list of LlamaIndex tools .*got FunctionTool"):
        guard(lookup, Dispatcher([]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 1 is str"):
        guard([lookup, "search_orders"], Dispatcher([]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"as_llama_index_tools\(dispatcher\) takes a toolguard"):
        as_llama_index_tools([search_orders])  # type: ignore[arg-type]
    assert len(guard([search_orders], Dispatcher([]))) == 1  # a plain function is a tool
