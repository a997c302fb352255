"""Conformance (issue 32): Agno guarded in place by its one line,
``Agent(..., tool_hooks=[toolguard_hook(dispatcher)])``, against the same agent unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real Agno ``Agent`` on
the scripted ``Model`` of tests/integrations/test_agno.py, with the table's plain
functions as the agent's tools (Agno makes each a ``Function``, with its own
``validate_call``); the tool messages the model read, Agno's own record of the run
(its tool executions, its messages), the run's output and the tools' runs and state
are compared by :func:`_table.conforms`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from agno.tools import Toolkit
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.agno import toolguard_hook

from ..test_agno import run
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "Agno answers a tool name it has no function for itself (get_function_call_for_"
        "tool_call: the call never becomes a FunctionCall), before any tool hook runs: a "
        "guard on the tools never sees that call"
    ),
}


class Bump(Toolkit):
    """An Agno toolkit keeping its own state."""

    def __init__(self) -> None:
        super().__init__(name="bump_kit", tools=[self.bump])
        self.counter = Counter()

    def bump(self) -> str:
        """Count the calls."""
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Callable[..., Any]:
    """``function`` (Agno makes it its own ``Function``), counting its runs."""

    @functools.wraps(function)
    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return body


def play(
    tools: list[Any],
    calls: Sequence[tuple[str, dict[str, Any]]],
    names: list[str],
    *,
    guarded: bool,
) -> Observation:
    hooks = [toolguard_hook(Dispatcher([], external_tools=names))] if guarded else None
    seen = Observation()
    try:
        output, model = run(tools, [list(calls)], hooks=hooks)
    except Exception as error:
        seen.raised = type(error).__name__
        return seen
    seen.final = output.content
    seen.model_saw = model.tool_messages()
    seen.shape = (
        [(t.tool_name, t.tool_call_id, t.tool_call_error) for t in output.tools or ()],
        [
            (m.role, m.tool_call_id, m.tool_name, m.tool_call_error, m.stop_after_tool_call)
            for m in model.seen[-1]
        ],
        len(model.seen),
        str(output.status),
    )
    return seen


def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    if scenario.name == "state":
        kit = Bump()
        tools: list[Any] = [kit]
        names = ["bump"]
    else:
        tools = [_counted(body, runs) for body in scenario.tools]
        names = [body.__name__ for body in scenario.tools]
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, names, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        seen.state = kit.counter.calls
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = observe(scenario, guarded=False)
    guarded, logs = observe(scenario, guarded=True)
    _table.judge(scenario, unguarded, guarded, logs)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_agno_answers(name: str) -> None:
    """A scenario Agno answers before any hook sees the call (``NOT_APPLICABLE`` says
    why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False)
    guarded, _ = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    # Agno's own answer (a tool message it does not flag as an error)
    assert guarded.model_saw == [
        ("Error: The requested tool does not exist or is not available.", False)
    ], guarded
