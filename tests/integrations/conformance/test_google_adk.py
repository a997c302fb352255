"""Conformance (issue 27): Google ADK guarded in place by its one line,
``plugins=[ToolguardPlugin(dispatcher)]``, against the same runner unguarded.

Each scenario of :data:`_table.SCENARIOS` (and ADK's own below) runs twice through
ADK's real ``InMemoryRunner`` on the scripted ``BaseLlm`` of
tests/integrations/test_google_adk.py, with ADK's own ``FunctionTool`` s; the function
responses the model was sent, the run's events (authors, calls, responses,
``skip_summarization``), what ended the run, and the tools' runs and state are
compared by :func:`_table.conforms`. Runs in ADK's own environment (.ci/extras).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from google.adk.events import Event
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.google_adk import ToolguardPlugin

from ..test_google_adk import ScriptedLlm, call, pytestmark, run, say  # noqa: F401
from . import _table
from ._sync_api import no_sync_api  # noqa: F401 - a fixture
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "bad_arguments": (
        "ADK answers the model's arguments itself, before any hook: a FunctionTool's "
        "missing-argument message is its own error response, kept as the framework "
        "wrote it, and a value of the wrong type reaches the function as ADK passes it"
    ),
}


class Bump(FunctionTool):
    """ADK's FunctionTool keeping its own state."""

    def __init__(self) -> None:
        self.counter = Counter()
        super().__init__(self.counter.bump)
        self.name = "bump"


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Callable[..., Any]:
    @functools.wraps(function)
    def counted(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return counted


def _events(events: Sequence[Event]) -> list[Any]:
    """The run's events, without what differs every run (ids, timestamps)."""
    shape = []
    for event in events:
        parts = event.content.parts if event.content and event.content.parts else []
        shape.append(
            (
                event.author,
                [p.function_call.name for p in parts if p.function_call],
                [p.function_response.name for p in parts if p.function_response],
                event.actions.skip_summarization,
                event.actions.transfer_to_agent,
                event.actions.escalate,
                sorted(event.actions.state_delta),
            )
        )
    return shape


async def play(
    tools: Sequence[Any],
    calls: Sequence[tuple[str, dict[str, Any]]],
    *,
    guarded: bool,
    **agent_options: Any,
) -> tuple[Observation, ScriptedLlm | None]:
    names = [getattr(t, "name", getattr(t, "__name__", "")) for t in tools]
    plugin = ToolguardPlugin(Dispatcher([], external_tools=names)) if guarded else None
    script = [[call(name, **arguments) for name, arguments in calls], say("done")]
    seen = Observation()
    try:
        model, events = await run(tools, script, plugin=plugin, **agent_options)
    except Exception as error:
        seen.raised = type(error).__name__
        return seen, None
    responses = model.responses() if len(model.requests) > 1 else []
    seen.model_saw = [
        (json.dumps(response, sort_keys=True), "error" in response) for response in responses
    ]
    last = events[-1] if events else None
    parts = last.content.parts if last and last.content and last.content.parts else []
    seen.final = [p.text for p in parts if p.text]
    seen.shape = _events(events)
    return seen, model


async def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools: list[Any] = (
        [Bump()]
        if scenario.name == "state"
        else [FunctionTool(_counted(f, runs)) for f in scenario.tools]
    )
    with capture_logs() as logs:
        seen, _ = await play(tools, scenario.calls, guarded=guarded)
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
        assert guarded.model_saw[-1] == (
            json.dumps({"error": "There is no hat. Ask the user for another one."}),
            True,
        )
    elif name == "unknown_tool":
        text = json.loads(guarded.model_saw[-1][0])["error"]
        assert text.startswith("There is no tool named 'lookpu' (did you mean 'lookup'?)")


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
async def test_what_cannot_apply_is_left_as_adk_answers(name: str) -> None:
    """A scenario ADK answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, _ = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)


# --- ADK's own scenarios ------------------------------------------------------------------


def remember(note: str, tool_context: ToolContext) -> dict[str, Any]:
    """Keep a note in the session state.

    Args:
        note: What to keep.
    """
    tool_context.state["note"] = note
    return {"kept": note, "call": bool(tool_context.function_call_id)}


async def test_the_tool_context_and_the_session_state_are_adks_alike() -> None:
    calls = [("remember", {"note": "blue"})]
    unguarded, _ = await play([FunctionTool(remember)], calls, guarded=False)
    guarded, _ = await play([FunctionTool(remember)], calls, guarded=True)
    _table.conforms(Scenario("tool_context", (), ()), unguarded, guarded)
    assert guarded.model_saw == [(json.dumps({"call": True, "kept": "blue"}), False)]


async def test_the_agents_own_tool_callbacks_run_alike() -> None:
    """An agent's ``before_tool_callback``/``after_tool_callback`` run as many times,
    in the same order, with the same arguments and results, guarded or not."""
    seen: dict[bool, list[Any]] = {False: [], True: []}

    for guarded in (False, True):

        def before(tool: Any, args: dict[str, Any], tool_context: ToolContext) -> None:
            seen[guarded].append(("before", tool.name, dict(args)))  # noqa: B023

        def after(
            tool: Any, args: dict[str, Any], tool_context: ToolContext, tool_response: Any
        ) -> None:
            seen[guarded].append(("after", tool.name, tool_response))  # noqa: B023

        await play(
            [FunctionTool(_table.lookup), FunctionTool(_table.count)],
            [("lookup", {"query": "a"}), ("count", {"number": 2})],
            guarded=guarded,
            before_tool_callback=before,
            after_tool_callback=after,
        )
    assert seen[True] == seen[False] and len(seen[True]) == 4


@pytest.mark.usefixtures("no_sync_api")
async def test_the_plugin_uses_only_the_async_session_api() -> None:
    """Issue 27: every callback admits and answers through the ``a``-methods (the
    plugin called the sync ``Session.admit`` on the event loop)."""
    guarded, _ = await play(
        [FunctionTool(_table.lookup), FunctionTool(_table.crash)],
        [("lookup", {"query": "a"}), ("crash", {"query": "b"})],
        guarded=True,
    )
    assert [is_error for _, is_error in guarded.model_saw] == [False, True]
