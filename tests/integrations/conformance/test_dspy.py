"""Conformance (issue 32): DSPy guarded in place by its one line, ``guard(tools,
dispatcher)``, against the same ``dspy.ReAct`` unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real ``dspy.ReAct`` on
DSPy's own ``DummyLM`` (the script of tests/integrations/test_dspy.py), with tools made
by DSPy's own ``dspy.Tool``; the observations the trajectory holds (what the model
reads), the trajectory's own record, the run's answer and the tools' runs and state are
compared by :func:`_table.conforms`. ReAct calls one tool per model step: a scenario's
calls of one step are played as successive steps, in order.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

import dspy  # type: ignore[import-untyped]  # dspy is untyped
import pytest
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.dspy import guard

from ..test_dspy import script
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "ReAct declares the tool name as a Literal of its tools: a name the model "
        "invented fails DSPy's parsing of the model's answer (AdapterParseError ends the "
        "run) before any tool is reached, so a guard on the tools never sees that call"
    ),
    "bad_arguments": (
        "dspy.Tool checks the model's arguments against the tool's args schema itself "
        "('Arg number is invalid: ...') before it calls the tool's function: that answer "
        "is the framework's, kept as it wrote it"
    ),
}

# ReAct's wrapper around a failing tool (format_error_for_lm with five frames)
_WRAPPED = re.compile(
    r"Execution error in (?P<tool>\w+): \nTraceback \(most recent call last\):\n"
    r"(?P<frames>(?:  [^\n]*\n)*)(?P<type>[\w.]+): (?P<text>.*)",
    re.DOTALL,
)


class Bump:
    """A callable object keeping its own state, as ReAct takes a tool."""

    def __init__(self) -> None:
        self.counter = Counter()

    def __call__(self) -> str:
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Any:
    """DSPy's own ``dspy.Tool`` on ``function``, counting its runs."""

    @functools.wraps(function)
    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return dspy.Tool(body)


def _told(observation: object) -> tuple[tuple[str, bool], object]:
    """What the model read of one observation, and ReAct's wrapper around it (to the
    shape): a failure's own text, out of ReAct's traceback."""
    if not isinstance(observation, str):
        return (repr(observation), False), type(observation).__name__
    found = _WRAPPED.fullmatch(observation)
    if found is None:
        return (observation, observation.startswith("Execution error in ")), "str"
    return (found["text"], True), ("Execution error", found["tool"], found["type"])


def play(
    tools: list[Any], calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool
) -> Observation:
    if guarded:
        tools = guard(tools, Dispatcher([], external_tools=[t.name for t in tools]))
    react = dspy.ReAct("question -> answer", tools=tools)
    lm = script(calls)
    seen = Observation()
    prediction = None
    with dspy.context(lm=lm):
        try:
            prediction = react(question="go")
        except Exception as error:
            seen.raised = type(error).__name__
    wrappers: list[object] = []
    trajectory: dict[str, Any] = {} if prediction is None else dict(prediction.trajectory)
    for key, value in trajectory.items():
        if key.startswith("observation_") and trajectory[f"tool_name_{key[12:]}"] != "finish":
            told, wrapper = _told(value)
            seen.model_saw.append(told)
            wrappers.append(wrapper)
    if prediction is not None:
        seen.final = prediction.answer
    seen.shape = (
        list(trajectory),
        [(trajectory[k]) for k in trajectory if k.startswith(("tool_name_", "tool_args_"))],
        wrappers,
        None if prediction is None else sorted(prediction.keys()),
        len(lm.history),
    )
    return seen


def _tools(scenario: Scenario, runs: dict[str, int]) -> list[Any]:
    if scenario.name == "state":
        return [dspy.Tool(Bump(), name="bump", desc="Count the calls.")]
    return [_counted(body, runs) for body in scenario.tools]


def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools = _tools(scenario, runs)
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        seen.state = tools[0].func.counter.calls  # the Bump above, on the app's own tool
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = observe(scenario, guarded=False)
    guarded, logs = observe(scenario, guarded=True)
    _table.judge(scenario, unguarded, guarded, logs)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_dspy_answers(name: str) -> None:
    """A scenario DSPy answers before any guard sees the call (``NOT_APPLICABLE`` says
    why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False)
    guarded, _ = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    if name == "unknown_tool":
        assert guarded.raised == "AdapterParseError", guarded  # DSPy's parser refused it
    else:
        assert guarded.model_saw[-1][1] and "Arg number is invalid" in guarded.model_saw[-1][0]
