"""Conformance (issue 32): AG2 guarded in place by its one line,
``Agent(..., middleware=[guard(dispatcher)])``, against the same agent unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real AG2 ``Agent`` on
AG2's own offline test model (``ag2.testing.TestConfig`` in its ``TrackingConfig``,
as in tests/integrations/test_ag2.py), with tools made by AG2's own ``tool``; the
tool results the model was sent, the result events themselves (types, ids, names,
``final``, metadata), the conversation's events, the reply and the tools' runs and
state are compared by :func:`_table.conforms`.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from ag2 import Agent
from ag2 import tool as ag2_tool
from ag2.events import ToolCallEvent, ToolResultsEvent
from ag2.tools.types import FunctionTool
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.ag2 import guard

from ..test_ag2 import call, scripted, told
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "AG2 answers a name it has no tool for itself (its executor's fallback sends a "
        "ToolNotFoundEvent), before any tool or middleware is reached: a guard on the "
        "agent's tool executions never sees that call"
    ),
}


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> FunctionTool:
    """AG2's own ``tool`` on ``function``, counting its runs."""

    @functools.wraps(function)
    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return ag2_tool(body)


def play(
    tools: list[FunctionTool], calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool
) -> Observation:
    config = scripted(
        [call(name, f"c{i}", **arguments) for i, (name, arguments) in enumerate(calls)]
    )
    middleware = [guard(Dispatcher([], external_tools=[t.name for t in tools]))] if guarded else []
    agent = Agent("conformance", config=config, tools=tools, middleware=middleware)
    seen = Observation()
    try:
        reply = asyncio.run(agent.ask("go"))
    except Exception as error:
        seen.raised = type(error).__name__
    else:
        seen.final = reply.body
        events = asyncio.run(reply.history.get_events())
        results = [r for e in events if isinstance(e, ToolResultsEvent) for r in e.results]
        seen.shape = (
            [
                (type(r).__name__, r.parent_id, r.name, r.result.final, r.result.metadata)
                for r in results
            ],
            [type(e).__name__ for e in events if not isinstance(e, ToolCallEvent)],
            [type(getattr(r, "error", None)).__name__ for r in results],
        )
    seen.model_saw = told(config)
    return seen


def _tools(scenario: Scenario, runs: dict[str, int], counter: Counter) -> list[FunctionTool]:
    if scenario.name == "state":
        return [ag2_tool(counter.bump, name="bump", description="Count the calls.")]
    return [_counted(body, runs) for body in scenario.tools]


def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    counter = Counter()
    tools = _tools(scenario, runs, counter)
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls run at once (AG2 gathers a response's calls): which one got
        # "call 1" is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = counter.calls
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = observe(scenario, guarded=False)
    guarded, logs = observe(scenario, guarded=True)
    _table.judge(scenario, unguarded, guarded, logs)
    if name == "hidden_failure":
        assert _table.SECRET in repr(unguarded.model_saw)  # AG2's own traceback leaked it


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_ag2_answers(name: str) -> None:
    """A scenario AG2 answers before any guard sees the call (``NOT_APPLICABLE`` says
    why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False)
    guarded, _ = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer
