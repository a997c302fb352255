"""Conformance (issue 27): Strands guarded in place by its one line,
``hooks=[ToolguardHooks(dispatcher)]``, against the same agent unguarded.

Each scenario of :data:`_table.SCENARIOS` (and Strands' own below) runs twice through
a real ``Agent`` on the scripted ``Model`` of tests/integrations/test_strands.py,
with tools made by Strands' own ``@tool``; the tool results the model was sent (text
and status), the agent's messages, its stop reason and final message, what ended the
run, and the tools' runs and state are compared by :func:`_table.conforms`. Runs in
Strands' own environment (.ci/extras).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from strands import Agent
from strands import tool as strands_tool
from strands.hooks import AfterToolsEvent, HookProvider, HookRegistry
from strands.types.tools import AgentTool, ToolContext, ToolSpec, ToolUse
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.strands import ToolguardHooks

from ..test_strands import ScriptedModel, say, text, use
from . import _table
from ._sync_api import no_sync_api  # noqa: F401 - a fixture
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "bad_arguments": (
        "Strands answers the model's arguments itself: a decorated tool validates its "
        "input with its own pydantic model and returns its own error result before the "
        "body runs; that result is the framework's, kept as it wrote it"
    ),
}


class Bump(AgentTool):
    """A Strands AgentTool keeping its own state."""

    def __init__(self) -> None:
        super().__init__()
        self.counter = Counter()

    @property
    def tool_name(self) -> str:
        return "bump"

    @property
    def tool_spec(self) -> ToolSpec:
        return {
            "name": "bump",
            "description": "Count.",
            "inputSchema": {"json": {"type": "object"}},
        }

    @property
    def tool_type(self) -> str:
        return "bump"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> Any:
        from strands.types.events import ToolResultEvent

        body = {"toolUseId": tool_use["toolUseId"], "status": "success"}
        yield ToolResultEvent({**body, "content": [{"text": self.counter.bump()}]})  # type: ignore[typeddict-item]


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Any:
    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return strands_tool(counted)


async def play(
    tools: Sequence[Any],
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    guarded: bool,
    hooks: Sequence[HookProvider] = (),
) -> Observation:
    names = [getattr(t, "tool_name", "") for t in tools]
    all_hooks: list[Any] = [
        *hooks,
        *([ToolguardHooks(Dispatcher([], external_tools=names))] if guarded else []),
    ]
    model = ScriptedModel(
        [[use(name, f"c{i}", **args) for i, (name, args) in enumerate(calls)], say("done")]
    )
    agent = Agent(model=model, tools=list(tools), hooks=all_hooks, callback_handler=None)
    seen = Observation()
    try:
        result = await agent.invoke_async("help")
    except Exception as error:
        seen.raised = type(error).__name__
        return seen
    answered = model.results() if len(model.requests) > 1 else []
    seen.model_saw = [(text(r), r["status"] == "error") for r in answered]
    message = {k: v for k, v in result.message.items() if k != "tracking_id"}  # new every run
    seen.final = (str(result.stop_reason), message)
    seen.shape = [
        (m["role"], sorted(k for block in m["content"] for k in block)) for m in agent.messages
    ]
    return seen


async def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools: list[Any] = (
        [Bump()] if scenario.name == "state" else [_counted(f, runs) for f in scenario.tools]
    )
    with capture_logs() as logs:
        seen = await play(tools, scenario.calls, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls may run at once (the framework's parallel calls): which one
        # got "call 1" is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = tools[0].counter.calls
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
async def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, logs = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    if name == "hidden_failure":
        _table.answered_hidden(guarded, logs)
    elif name == "visible_failure":
        _table.answered_visible(guarded)
    elif name == "unknown_tool":
        _table.answered_unknown(guarded, ["lookup"])


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
async def test_what_cannot_apply_is_left_as_strands_answers(name: str) -> None:
    """A scenario Strands answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, _ = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer


# --- Strands' own scenarios -----------------------------------------------------------------


@strands_tool(context=True)
def remember(note: str, tool_context: ToolContext) -> str:
    """Keep a note in the agent's state.

    Args:
        note: What to keep.
    """
    tool_context.agent.state.set("note", note)
    return f"kept {note} for {tool_context.tool_use['toolUseId']}"


async def test_the_tool_context_and_the_agent_state_are_strands_alike() -> None:
    calls = [("remember", {"note": "blue"})]
    unguarded = await play([remember], calls, guarded=False)
    guarded = await play([remember], calls, guarded=True)
    _table.conforms(Scenario("tool_context", (), ()), unguarded, guarded)
    assert guarded.model_saw == [("kept blue for c0", False)]


class EndsTurn(HookProvider):
    """An app's own AfterToolsEvent hook: ends the turn after any batch."""

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(AfterToolsEvent, self.end)

    def end(self, event: AfterToolsEvent) -> None:
        event.end_turn = "ended by the app"


async def test_an_apps_own_after_tools_hook_ends_the_turn_alike() -> None:
    tools = [_counted(_table.lookup, {}), _counted(_table.crash, {})]
    calls = [("lookup", {"query": "a"}), ("crash", {"query": "b"})]
    unguarded = await play(tools, calls, guarded=False, hooks=[EndsTurn()])
    guarded = await play(tools, calls, guarded=True, hooks=[EndsTurn()])
    assert guarded.final == unguarded.final
    assert guarded.shape == unguarded.shape


@pytest.mark.usefixtures("no_sync_api")
async def test_the_hooks_use_only_the_async_session_api() -> None:
    """Issue 27: ``BeforeToolCallEvent`` admitted through the sync ``Session.admit``
    on the event loop; every hook now awaits the scope's ``a``-methods."""
    guarded = await play(
        [_counted(_table.lookup, {}), _counted(_table.crash, {})],
        [("lookup", {"query": "a"}), ("crash", {"query": "b"})],
        guarded=True,
    )
    assert [is_error for _, is_error in guarded.model_saw] == [False, True]
