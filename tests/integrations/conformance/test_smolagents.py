"""Conformance (issue 32): smolagents guarded in place by its one line, ``guard(tools,
dispatcher)``, against the same agent unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real
``ToolCallingAgent`` on the scripted ``Model`` of tests/integrations/test_smolagents.py,
with tools made by smolagents' own ``@tool``; the tool results the model read (a
step's observations, or its error), the step's own record, the run's output and the
tools' runs and state are compared by :func:`_table.conforms`. The ``CodeAgent`` is
driven in tests/integrations/test_smolagents.py.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from smolagents import Tool, tool
from smolagents.memory import ActionStep
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.smolagents import guard

from ..test_smolagents import calling
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "smolagents' ToolCallingAgent answers a name it has no tool for itself "
        "(execute_tool_call, 'Unknown tool ...'), before any tool is reached: a guard on "
        "the tools never sees that call"
    ),
    "bad_arguments": (
        "smolagents checks the model's arguments against the tool's inputs itself "
        "(validate_tool_arguments) and answers a wrong type before the tool is called: "
        "that answer is the framework's, kept as it wrote it"
    ),
}

# smolagents' wrapper around a failing tool's text (ToolCallingAgent.execute_tool_call)
_WRAPPED = re.compile(
    r"Error executing tool '(?P<tool>\w+)' with arguments (?P<args>.*?): "
    r"(?P<type>\w+): (?P<text>.*)\nPlease try again or use another tool",
    re.DOTALL,
)


class Bump(Tool):  # type: ignore[misc]  # smolagents is untyped
    """A smolagents Tool keeping its own state."""

    name = "bump"
    description = "Count the calls."
    inputs: dict[str, Any] = {}
    output_type = "string"

    def __init__(self) -> None:
        super().__init__()
        self.counter = Counter()

    def forward(self) -> str:
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Tool:
    """smolagents' ``@tool`` on ``function``, counting its runs."""

    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    functools.update_wrapper(body, function)
    body.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]  # read by smolagents
    made: Tool = tool(body)
    return made


def _told(error: object) -> tuple[str, bool, object]:
    """What the model read of a step's error: the tool's part of smolagents' wrapper
    (the wrapper itself goes to the shape)."""
    found = _WRAPPED.fullmatch(str(error))
    if found is None:
        return str(error), True, (type(error).__name__, None)
    wrapper = (type(error).__name__, found["tool"], found["args"], found["type"])
    return found["text"], True, wrapper


def play(
    tools: list[Tool], calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool
) -> Observation:
    if guarded:
        tools = guard(tools, Dispatcher([], external_tools=[t.name for t in tools]))
    agent, model = calling(tools, [list(calls)])
    seen = Observation()
    try:
        seen.final = agent.run("go")
    except Exception as error:
        seen.raised = type(error).__name__
    step = next(s for s in agent.memory.steps if isinstance(s, ActionStep))
    wrappers: list[object] = []
    if step.error is not None:
        text, is_error, wrapper = _told(step.error)
        seen.model_saw = [(text, is_error)]
        wrappers.append(wrapper)
    else:
        seen.model_saw = [(line, False) for line in (step.observations or "").split("\n")]
    seen.shape = (
        [(c.name, c.id) for c in step.tool_calls or []],
        wrappers,
        type(step.error).__name__,
        [type(s).__name__ for s in agent.memory.steps],
        sorted(str(m.role) for m in model.seen[-1]),
    )
    return seen


def _tools(scenario: Scenario, runs: dict[str, int]) -> list[Tool]:
    if scenario.name == "state":
        return [Bump()]
    return [_counted(body, runs) for body in scenario.tools]


def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools = _tools(scenario, runs)
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls run at once (smolagents' parallel calls): which one got
        # "call 1" is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = tools[0].counter.calls  # the Bump above
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = observe(scenario, guarded=False)
    guarded, logs = observe(scenario, guarded=True)
    _table.judge(scenario, unguarded, guarded, logs)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_smolagents_answers(name: str) -> None:
    """A scenario smolagents answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False)
    guarded, _ = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer
