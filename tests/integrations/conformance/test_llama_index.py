"""Conformance (issue 27): LlamaIndex guarded in place by its one line, ``guard(tools,
dispatcher)``, against the same agent unguarded.

Each scenario of :data:`_table.SCENARIOS` (and LlamaIndex's own below) runs twice
through a real ``FunctionAgent`` on LlamaIndex's offline ``MockFunctionCallingLLM``,
with ``FunctionTool`` s made by LlamaIndex's own ``FunctionTool.from_defaults``; what
the agent streamed (``ToolCallResult`` events), the memory the model read and the run's
output are observed and compared by :func:`_table.conforms`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from llama_index.core.agent.workflow import AgentOutput, FunctionAgent, ToolCallResult
from llama_index.core.base.llms.types import ChatMessage, ToolCallBlock
from llama_index.core.llms.mock import MockFunctionCallingLLM
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.types import BaseTool
from llama_index.core.workflow import Context
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.llama_index import guard

from . import _table
from ._sync_api import no_sync_api  # noqa: F401 - a fixture
from ._table import BY_NAME, SCENARIOS, Counter, Observation, Scenario

pytestmark = [
    pytest.mark.filterwarnings("ignore::pydantic.warnings.PydanticDeprecationWarning"),
    pytest.mark.filterwarnings("ignore::workflows.context.state_store.UnserializableKeyWarning"),
]

NOT_APPLICABLE = {
    "unknown_tool": (
        "LlamaIndex's agent answers a name it has no tool for itself, in its call_tool "
        "step, before any tool is reached: a guard on the tools never sees that call "
        "(the agent's own answer reaches the model, guarded or not)"
    ),
}

# LlamaIndex validates nothing: unguarded, a FunctionTool runs with whatever the model
# sent (count("many") returns "got many"). Guarded, the tool's own fn_schema checks the
# arguments first, and the tool does not run: the run count is the intended change.
PLAYED = {
    **{s.name: s for s in SCENARIOS},
    "bad_arguments": replace(BY_NAME["bad_arguments"], changes=_table._ANSWER | {"runs"}),
}


class Script:
    """``MockFunctionCallingLLM``'s response generator: one step of tool calls, then a
    final text; every list of messages it is sent is recorded."""

    def __init__(self, calls: Sequence[tuple[str, dict[str, Any]]]) -> None:
        self.calls = list(calls)
        self.seen: list[list[ChatMessage]] = []

    def __call__(self, messages: Sequence[ChatMessage], **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        if len(self.seen) > 1:
            return ChatMessage(role="assistant", content="done")
        return ChatMessage(
            role="assistant",
            blocks=[
                ToolCallBlock(tool_call_id=f"c{i}", tool_name=name, tool_kwargs=arguments)
                for i, (name, arguments) in enumerate(self.calls)
            ],
        )


class Bump(FunctionTool):
    """A FunctionTool subclass that keeps its own state."""

    def __init__(self) -> None:
        self.counter = Counter()
        super().__init__(
            fn=self.counter.bump, metadata=ToolMetadata(name="bump", description="Count.")
        )


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Callable[..., Any]:
    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return counted


def _output_shape(output: ToolOutput) -> tuple[Any, ...]:
    return (
        type(output).__name__,
        output.tool_name,
        output.raw_input,
        type(output.raw_output).__name__,
        output.is_error,
        [type(block).__name__ for block in output.blocks],
    )


async def play(
    tools: Sequence[BaseTool],
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    guarded: bool,
    ctx: Callable[[FunctionAgent], Context] | None = None,
) -> Observation:
    script = Script(calls)
    names = [getattr(t, "__name__", None) or t.metadata.get_name() for t in tools]
    if guarded:
        tools = guard(tools, Dispatcher([], external_tools=names))
    agent = FunctionAgent(
        tools=list[Any](tools), llm=MockFunctionCallingLLM(response_generator=script)
    )
    seen = Observation()
    results: list[ToolCallResult] = []
    try:
        handler = agent.run("go", ctx=ctx(agent) if ctx else None)
        async for event in handler.stream_events():
            if isinstance(event, ToolCallResult):
                results.append(event)
        output: Any = await handler
    except Exception as error:
        seen.raised = type(error).__name__
    else:
        assert isinstance(output, AgentOutput)
        seen.final = (output.response.content, output.current_agent_name)
    results.sort(key=lambda event: event.tool_id)
    seen.model_saw = [(r.tool_output.content, r.tool_output.is_error) for r in results]
    seen.shape = (
        [(r.tool_name, r.tool_id, r.return_direct, _output_shape(r.tool_output)) for r in results],
        # what the model read next (the agent writes parallel results as they finish)
        sorted(
            (str(m.role), str(m.additional_kwargs.get("tool_call_id")))
            for m in (script.seen[-1] if script.seen else [])
        ),
    )
    return seen


def _tools(scenario: Scenario, runs: dict[str, int]) -> list[BaseTool]:
    if scenario.name == "state":
        return [Bump()]
    return [FunctionTool.from_defaults(fn=_counted(body, runs)) for body in scenario.tools]


async def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools = _tools(scenario, runs)
    with capture_logs() as logs:
        seen = await play(tools, scenario.calls, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls may run at once (the framework's parallel calls): which one
        # got "call 1" is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = tools[0].counter.calls  # type: ignore[attr-defined]  # the Bump above
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
async def test_the_conformance_table(name: str) -> None:
    scenario = PLAYED[name]
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, logs = await observe(scenario, guarded=True)
    _table.judge(scenario, unguarded, guarded, logs)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
async def test_what_cannot_apply_is_left_as_llama_index_answers(name: str) -> None:
    """A scenario LlamaIndex answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, _ = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer


# --- LlamaIndex's own scenarios -------------------------------------------------------------


async def remember(ctx: Context, note: str) -> str:
    """Keep a note in the workflow's state.

    Args:
        note: What to keep.
    """
    notes = await ctx.store.get("notes", default=[])
    await ctx.store.set("notes", [*notes, note])
    return f"kept {note}"


# LlamaIndex recognises ``Context`` by the annotation object itself, which this
# module's ``from __future__ import annotations`` turns into a string.
remember.__annotations__["ctx"] = Context


def finish(answer: str) -> str:
    """Give the final answer."""
    return f"FINAL: {answer}"


def look(query: str) -> str:
    """Look something up."""
    return f"nothing for {query}"


def _own_error(raw: Any) -> ToolOutput:
    """A FunctionTool's callback answering a problem itself: its own error output."""
    return ToolOutput(content=raw, tool_name="look", raw_input={}, raw_output=raw, is_error=True)


async def test_the_agents_context_reaches_a_tool_that_takes_it_and_keeps_its_state() -> None:
    contexts: dict[bool, Context] = {}

    def make(agent: FunctionAgent, guarded: bool) -> Context:
        contexts[guarded] = Context(agent)
        return contexts[guarded]

    calls = [("remember", {"note": "a"}), ("remember", {"note": "b"})]
    tool = FunctionTool.from_defaults(async_fn=remember)
    unguarded = await play([tool], calls, guarded=False, ctx=lambda a: make(a, False))
    guarded = await play([tool], calls, guarded=True, ctx=lambda a: make(a, True))
    _table.conforms(Scenario("context", (), ()), unguarded, guarded)
    assert await contexts[True].store.get("notes") == await contexts[False].store.get("notes")


async def test_llama_indexs_own_return_direct_ends_the_run_alike() -> None:
    tool = FunctionTool.from_defaults(fn=finish, return_direct=True)
    calls = [("finish", {"answer": "42"})]
    unguarded = await play([tool], calls, guarded=False)
    guarded = await play([tool], calls, guarded=True)
    _table.conforms(Scenario("return_direct", (), ()), unguarded, guarded)
    assert guarded.final == ("FINAL: 42", "Agent")


async def test_a_tools_own_error_output_is_kept_as_it_wrote_it() -> None:
    calls = [("look", {"query": "x"})]
    with capture_logs() as logs:
        tool = FunctionTool.from_defaults(fn=look, callback=_own_error)
        unguarded = await play([tool], calls, guarded=False)
        guarded = await play([tool], calls, guarded=True)
    _table.conforms(Scenario("own_error", (), ()), unguarded, guarded)
    assert guarded.model_saw == [("nothing for x", True)]
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


def test_the_sync_call_stays_sync_and_answers_alike() -> None:
    """``tool.call`` (outside an agent) runs the tool's own sync ``call`` on the caller's
    thread, guarded or not: no event loop is started for it."""
    threads: list[str] = []

    def where(query: str) -> str:
        import threading

        threads.append(threading.current_thread().name)
        return json.dumps({"query": query})

    plain = FunctionTool.from_defaults(fn=where)
    (guarded,) = guard([plain], Dispatcher([]))
    assert isinstance(guarded, FunctionTool)
    assert guarded.call(query="q").content == plain.call(query="q").content
    assert threads == ["MainThread", "MainThread"]


@pytest.mark.usefixtures("no_sync_api")
async def test_the_async_path_uses_only_the_async_session_api() -> None:
    """Issue 27: in a conversation (a ``Context``), every call is admitted and answered
    through the ``a``-methods; the sync ones would fail an asyncio store."""
    runs: dict[str, int] = {}
    tools = [
        FunctionTool.from_defaults(fn=_counted(f, runs)) for f in (_table.lookup, _table.crash)
    ]
    calls = [("lookup", {"query": "a"}), ("crash", {"query": "b"})]
    guarded = await play(tools, calls, guarded=True, ctx=Context)
    assert [saw[1] for saw in guarded.model_saw] == [False, True]


async def test_plain_functions_are_guarded_as_the_agent_makes_them() -> None:
    """An agent's ``tools=`` takes plain functions (``FunctionTool.from_defaults``);
    ``guard`` takes them too, and the run is the same but the intended answer."""
    calls = [("lookup", {"query": "a"}), ("crash", {"query": "b"})]
    unguarded = await play([_table.lookup, _table.crash], calls, guarded=False)  # type: ignore[list-item]  # callables, as tools= takes them
    guarded = await play([_table.lookup, _table.crash], calls, guarded=True)  # type: ignore[list-item]  # callables, as tools= takes them
    assert guarded.model_saw[0] == unguarded.model_saw[0] == ("found a", False)
    assert guarded.model_saw[1][1] and "error id" in guarded.model_saw[1][0]
