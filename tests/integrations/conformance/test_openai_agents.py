"""Conformance driver: the Agents SDK, guarded in place by its one line, and the adapter.

* The table (``_table.SCENARIOS``) and the SDK's own scenarios of issue 27, each played
  twice on the SDK's run loop (``Runner.run`` with the offline ``ScriptModel``, tracing
  off): on the SDK's own ``function_tool`` tools and on the same tools after
  ``guard(tools, dispatcher)``; the runs must be identical except the answer the
  scenario means to change. What cannot apply is in :data:`NOT_APPLICABLE`, with why
  (and in docs/integrations/openai-agents.md).
* One set of functions three ways, for what the table does not cover: ``sdk`` (the
  SDK's ``function_tool`` on the plain functions, the reference), ``in_place`` (the
  SDK's ``function_tool`` on the toolguard ``@tool`` tools, guarded: a toolguard tool is
  accepted by the SDK's own decorator) and ``adapter`` (``as_function_tools``): the same
  schema, injected values (``RunContextWrapper``/``ToolContext``), structured outputs,
  and toolguard's policy on failure.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from agents import (
    Agent,
    FunctionTool,
    RunConfig,
    RunContextWrapper,
    Runner,
    ToolCallOutputItem,
    ToolErrorFormatterArgs,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
    function_tool,
)
from agents import Tool as AgentsTool
from agents.tool_context import ToolContext

import toolguard
from toolguard import Dispatcher, ToolError
from toolguard.integrations.openai_agents import as_function_tools, guard
from toolguard.integrations.openai_agents._adapter import FORMATTER_ANSWERS_EXCEPTIONS
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ..test_openai_agents_support import NO_TRACING, ScriptModel, call, outputs, run, say
from ._table import (
    BY_NAME,
    Counter,
    Observation,
    Scenario,
    answered_bad_arguments,
    answered_hidden,
    answered_visible,
    conforms,
    played,
)

Way = Literal["sdk", "in_place", "adapter"]
WAYS: tuple[Way, ...] = ("sdk", "in_place", "adapter")
SECRET = "token=sk-live-5ecr3t"
SDK_DEFAULT = "An error occurred while running the tool. Please try again."


@dataclass
class App:
    """The run's context object."""

    user: str


# --- the plain functions, written as an SDK user writes them ---------------------------------


def greet(ctx: RunContextWrapper[App], greeting: str, times: int = 1) -> str:
    """Greet the user of this run.

    Args:
        greeting: The word to greet with.
        times: How many times to say it.
    """
    return " ".join([greeting] * times) + f", {ctx.context.user}"


async def who_called(ctx: ToolContext[App], note: str) -> str:
    """Say which call this is.

    Args:
        note: A note to repeat.
    """
    return f"{ctx.tool_name}/{ctx.tool_call_id}/{ctx.context.user}: {note}"


def headline(topic: str) -> ToolOutputText:
    """A headline as the SDK's text output."""
    return ToolOutputText(text=f"News about {topic}")


def gallery(count: int) -> list[ToolOutputImage | ToolOutputText]:
    """Images as the SDK's image outputs, with a caption."""
    return [
        *(ToolOutputImage(image_url=f"https://example.test/{i}.png") for i in range(count)),
        ToolOutputText(text=f"{count} images"),
    ]


def report(name: str) -> ToolOutputFileContent:
    """A file as the SDK's file output."""
    return ToolOutputFileContent(file_url=f"https://example.test/{name}.pdf", filename=name)


def withdraw(amount: int) -> str:
    """Withdraw money (its backend fails)."""
    raise RuntimeError(f"bank said no: {SECRET}")


def lookup(order_id: int) -> str:
    """Look up an order (says what is wrong)."""
    raise ToolError(f"There is no order {order_id}.")


FUNCTIONS: tuple[Callable[..., Any], ...] = (
    greet,
    who_called,
    headline,
    gallery,
    report,
    withdraw,
    lookup,
)


def build(way: Way) -> tuple[list[AgentsTool], Dispatcher | None]:
    """Every function as one of the three ways builds it."""
    if way == "sdk":
        return [function_tool(fn) for fn in FUNCTIONS], None
    tools = [toolguard.tool(fn) for fn in FUNCTIONS]
    if way == "in_place":
        dispatcher = Dispatcher(tools)
        return guard([function_tool(t) for t in tools], dispatcher), dispatcher
    dispatcher = Dispatcher(tools)
    return as_function_tools(dispatcher), dispatcher


def by_name(tools: list[AgentsTool]) -> dict[str, FunctionTool]:
    return {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}


# --- what the model sees ------------------------------------------------------------------------


@pytest.mark.parametrize("way", ["in_place", "adapter"])
def test_the_model_sees_the_same_tools_as_with_the_sdks_own_decorator(way: Way) -> None:
    reference = by_name(build("sdk")[0])
    built = by_name(build(way)[0])

    assert list(built) == list(reference)
    for name, tool in built.items():
        expected = reference[name]
        assert tool.description == expected.description, name
        assert tool.params_json_schema == expected.params_json_schema, name
        assert tool.strict_json_schema == expected.strict_json_schema, name
    # the SDK's context parameter is nowhere in what the model sees
    assert "ctx" not in built["greet"].params_json_schema["properties"]
    assert "ctx" not in built["who_called"].params_json_schema["properties"]


# --- injection and success ------------------------------------------------------------------------

SUCCESS_SCRIPT = [
    [
        call("greet", {"greeting": "hi", "times": 2}, "c1"),
        call("who_called", {"note": "n"}, "c2"),
        call("headline", {"topic": "tea"}, "c3"),
        call("gallery", {"count": 2}, "c4"),
        call("report", {"name": "q3"}, "c5"),
    ],
    say("done"),
]


async def run_way(way: Way, script: list[Any]) -> tuple[dict[str, Any], str]:
    tools, _ = build(way)
    result, model = await run(tools, script, context=App("ann"))
    return {key: item.output for key, item in outputs(result).items()}, model.sent()


@pytest.mark.parametrize("way", ["in_place", "adapter"])
async def test_injected_values_and_successes_are_the_sdks_own(way: Way) -> None:
    expected, expected_sent = await run_way("sdk", SUCCESS_SCRIPT)
    got, sent = await run_way(way, SUCCESS_SCRIPT)

    assert got == expected
    assert got["c1"] == "hi hi, ann"  # RunContextWrapper: the run's context
    assert got["c2"] == "who_called/c2/ann: n"  # ToolContext: this call's
    assert got["c3"] == ToolOutputText(text="News about tea")
    assert isinstance(got["c4"], list)
    assert isinstance(got["c4"][0], ToolOutputImage)
    assert isinstance(got["c5"], ToolOutputFileContent)
    # and the model was sent the same thing: the SDK's structured outputs
    assert sent == expected_sent


# --- failures: toolguard's policy ---------------------------------------------------------------

FAILURE_SCRIPT = [
    [call("withdraw", {"amount": 5}, "c1"), call("lookup", {"order_id": 7}, "c2")],
    say("sorry"),
]


async def test_the_sdk_alone_answers_every_failure_with_its_default() -> None:
    """The reference for failures (before 0.24 the default also appends the
    exception's text, secrets included; from 0.24 it says nothing more)."""
    got, _ = await run_way("sdk", FAILURE_SCRIPT)
    assert str(got["c1"]).startswith(SDK_DEFAULT)
    assert str(got["c2"]).startswith(SDK_DEFAULT)


async def test_failures_of_adapter_tools_follow_toolguards_policy(
    logs: list[dict[str, Any]],
) -> None:
    """(In place, the table's hidden and visible failures play it against the SDK's own.)"""
    got, sent = await run_way("adapter", FAILURE_SCRIPT)

    [event] = [e for e in logs if e["tool"] == "withdraw"]
    assert event["event"] == "tool_error_hidden"
    assert got["c1"] == BUILTIN_MESSAGE.replace("{tool}", "withdraw").replace(
        "{error_id}", event["error_id"]
    )
    assert got["c2"] == "There is no order 7."
    assert SECRET not in sent
    assert sum(SECRET in repr(e) for e in logs) == 1


@pytest.mark.parametrize("way", ["in_place", "adapter"])
async def test_the_tools_own_policy_applies_in_both_toolguard_ways(way: Way) -> None:
    """The decorator's policy (the tool level) holds whichever way the tool is built."""
    polite = toolguard.tool(withdraw, on_error="The bank is closed; try tomorrow.")
    dispatcher = Dispatcher([polite])
    tools = (
        guard([function_tool(polite)], dispatcher)
        if way == "in_place"
        else as_function_tools(dispatcher)
    )
    result, _ = await run(tools, [[call("withdraw", {"amount": 1}, "c1")], say("ok")])
    assert outputs(result)["c1"].output == "The bank is closed; try tomorrow."


# --- the conformance table, played on the SDK's own run loop ------------------------------------
#
# Every scenario of conformance/_table.py runs unguarded and guarded (the documented one
# line: ``guard(tools, dispatcher)``) on the offline ScriptModel; the two runs must be equal
# except where the scenario says toolguard answers. Then the SDK's own bugs of issue 27.

NOT_APPLICABLE: dict[str, str] = {
    "unknown_tool": "the SDK resolves a tool name before any tool's on_invoke_tool runs and "
    "no per-tool hook sees an unknown one; its own handling stays (guarded and not)",
}


def _function_tools(scenario: Scenario, runs: dict[str, int]) -> tuple[list[AgentsTool], Any]:
    """The scenario's bodies as the SDK's own ``function_tool``, counting their runs; for
    ``state``, a hand-built FunctionTool holding a Counter on itself."""
    if scenario.name == "state":
        holder = FunctionTool(
            name="bump",
            description="Count.",
            params_json_schema={"type": "object", "properties": {}, "additionalProperties": False},
            on_invoke_tool=_bump,
        )
        holder.counter = Counter()  # type: ignore[attr-defined]  # the tool's own state
        return [holder], holder

    def counted(body: Callable[..., Any]) -> Callable[..., Any]:
        def run_body(*args: Any, **kwargs: Any) -> Any:
            runs[body.__name__] = runs.get(body.__name__, 0) + 1
            return body(*args, **kwargs)

        functools.update_wrapper(run_body, body)
        return run_body

    return [function_tool(counted(body)) for body in scenario.tools], None


async def _bump(ctx: ToolContext[Any], arguments: str) -> str:
    agent: Any = ctx.agent
    tool: Any = next(t for t in agent.tools if getattr(t, "name", "") == "bump")
    answer: str = tool.counter.bump()
    return answer


async def observe(
    tools: list[AgentsTool],
    steps: list[Any],
    *,
    holder: Any = None,
    runs: dict[str, int] | None = None,
    run_config: RunConfig | None = None,
) -> Observation:
    """One run on the SDK's own loop, as an Observation."""
    agent = Agent(name="assistant", model=ScriptModel([*steps, say("done")]), tools=tools)
    seen = Observation(runs=runs if runs is not None else {})
    try:
        result = await Runner.run(agent, "go", run_config=run_config or NO_TRACING)
    except Exception as error:
        seen.raised = type(error).__name__
        return seen
    for item in result.new_items:
        if isinstance(item, ToolCallOutputItem):
            decided = (item.custom_data or {}).get("toolguard", {})
            text = str(item.output)
            seen.model_saw.append((text, text == SDK_DEFAULT or bool(decided.get("is_error"))))
    seen.final = result.final_output
    seen.shape = [
        (type(item).__name__, type(getattr(item, "output", None)).__name__, item.custom_data)
        for item in result.new_items
        if isinstance(item, ToolCallOutputItem)
    ]
    if holder is not None:
        seen.state = holder.counter.calls
    return seen


def _steps(scenario: Scenario) -> list[Any]:
    return [[call(name, args, f"c{i}") for i, (name, args) in enumerate(scenario.calls)]]


@pytest.mark.parametrize("name", played(NOT_APPLICABLE))
async def test_every_scenario_conforms(name: str, logs: list[dict[str, Any]]) -> None:
    scenario = BY_NAME[name]
    runs: dict[str, int] = {}
    tools, holder = _function_tools(scenario, runs)
    unguarded = await observe(tools, _steps(scenario), holder=holder, runs=runs)
    logs.clear()
    runs = {}
    tools, holder = _function_tools(scenario, runs)
    guarded_tools = guard(tools, Dispatcher([]))
    assert all(a is b for a, b in zip(guarded_tools, tools, strict=True))  # in place
    guarded = await observe(guarded_tools, _steps(scenario), holder=holder, runs=runs)
    conforms(scenario, unguarded, guarded)
    if name == "hidden_failure":
        answered_hidden(guarded, logs)
    elif name == "visible_failure":
        answered_visible(guarded)
    elif name == "bad_arguments":
        answered_bad_arguments(guarded)


# --- the SDK's own bugs of issue 27, each failing on the copy-based guard ------------------------


async def cancelled(query: str) -> str:
    """Cancel itself."""
    raise asyncio.CancelledError


def declined(amount: int) -> str:
    """Fail with the author's own message."""
    raise RuntimeError(f"card declined: {SECRET}")


async def _both(
    make: Callable[[], list[AgentsTool]], steps: list[Any], **options: Any
) -> tuple[Observation, Observation]:
    unguarded = await observe(make(), steps, **options)
    guarded = await observe(guard(make(), Dispatcher([])), steps, **options)
    return unguarded, guarded


async def test_a_tool_that_cancels_itself_is_answered_by_the_sdk_as_unguarded() -> None:
    unguarded, guarded = await _both(
        lambda: [function_tool(cancelled)], [[call("cancelled", {"query": "x"}, "c1")]]
    )
    assert unguarded.raised is None and unguarded.model_saw
    assert guarded.model_saw == unguarded.model_saw and guarded.raised is None


async def test_the_tools_own_failure_error_function_is_kept() -> None:
    def own(ctx: RunContextWrapper[Any], error: Exception) -> str:
        return "The card was declined; ask for another card."

    unguarded, guarded = await _both(
        lambda: [function_tool(declined, failure_error_function=own)],
        [[call("declined", {"amount": 1}, "c1")]],
    )
    assert unguarded.model_saw == [("The card was declined; ask for another card.", False)]
    assert [text for text, _ in guarded.model_saw] == [text for text, _ in unguarded.model_saw]


async def test_the_runs_tool_error_formatter_is_asked_where_the_sdk_asks_it(
    logs: list[dict[str, Any]],
) -> None:
    """The SDK asks the run's formatter about a tool's exception from 0.24 (before, its
    arguments cannot even carry one): guarded, it is asked exactly where unguarded it is."""
    asked: list[str] = []

    def formatter(args: ToolErrorFormatterArgs[Any]) -> str:
        asked.append(args.kind)
        return f"{args.tool_name} failed; the app says: try later."

    config = RunConfig(tracing_disabled=True, tool_error_formatter=formatter)
    steps = [[call("declined", {"amount": 1}, "c1")]]
    unguarded = await observe([function_tool(declined)], steps, run_config=config)
    sdk_asked = list(asked)
    guarded = await observe(
        guard([function_tool(declined)], Dispatcher([])), steps, run_config=config
    )
    assert bool(sdk_asked) == FORMATTER_ANSWERS_EXCEPTIONS  # the guard's reading of the SDK
    assert asked == sdk_asked * 2  # guarded: asked as often, about the same kind
    assert not [event for event in logs if event["event"] == "handler_raised"]
    if sdk_asked:
        assert unguarded.model_saw[0][0] == "declined failed; the app says: try later."
        assert [text for text, _ in guarded.model_saw] == [text for text, _ in unguarded.model_saw]
    else:  # the SDK's own default answers unguarded; toolguard's chain answers guarded
        assert unguarded.model_saw[0][0].startswith(SDK_DEFAULT)
        [hidden] = [event for event in logs if event["event"] == "tool_error_hidden"]
        text, _ = guarded.model_saw[0]
        assert hidden["error_id"] in text and SECRET not in text


async def test_failure_error_function_none_fails_the_run_as_unguarded() -> None:
    unguarded, guarded = await _both(
        lambda: [function_tool(declined, failure_error_function=None)],
        [[call("declined", {"amount": 1}, "c1")]],
    )
    assert unguarded.raised is not None
    assert guarded.raised == unguarded.raised


def test_guard_keeps_the_tool_objects_so_identity_checks_hold() -> None:
    tool = function_tool(declined)
    agent = Agent(name="a", tools=guard([tool], Dispatcher([])))
    assert agent.tools[0] is tool


async def test_a_session_on_an_asyncio_store_is_used_on_the_async_path(redis_server: Any) -> None:
    from toolguard.stores import RedisStore

    store = RedisStore.from_url(redis_server.url, asyncio=True)
    dispatcher = Dispatcher([])
    session = dispatcher.session(id="agents-conformance", store=store)
    tools = guard([function_tool(lookup_text)], dispatcher, session=session)
    seen = await observe(tools, [[call("lookup_text", {"query": "hats"}, "c1")]])
    assert seen.raised is None
    assert seen.model_saw == [("found hats", False)]


def lookup_text(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def test_no_private_name_of_the_sdk_moved() -> None:
    """toolguard's in-place guard reaches a few SDK-private names (see _sdk.py): a release
    that moves one fails here, loudly, instead of the guard degrading."""
    from toolguard.integrations.openai_agents._sdk import missing

    assert missing() == []
