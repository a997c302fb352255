"""Conformance (issue 32): Haystack guarded in place by its one line, ``guard(tools,
dispatcher)``, against the same Agent unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real Haystack ``Agent``
on the scripted chat generator of tests/integrations/test_haystack.py (a Haystack
``@component``), with tools made by Haystack's own ``@tool`` (and, for ``state``, a
``ComponentTool`` whose component keeps the count); the tool results the model read,
the Agent's own result messages and outputs, and the tools' runs and state are
compared by :func:`_table.conforms`, on the Agent's ``run`` and ``run_async`` alike.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest
from haystack import component
from haystack.components.agents import Agent
from haystack.dataclasses import ChatMessage
from haystack.tools import ComponentTool
from haystack.tools.from_function import create_tool_from_function
from haystack.tools.tool import Tool
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.haystack import guard

from ..test_haystack import ScriptedGenerator
from . import _table
from ._table import BY_NAME, Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "Haystack's Agent answers a name it has no tool for itself (ToolNotFoundException, "
        "'Tool ... not found. Available tools: ...'), before any tool is reached: a guard on "
        "the tools never sees that call"
    ),
}

# Haystack validates nothing: unguarded, a function tool runs with whatever the model
# sent (count("many") returns "got many"). Guarded, the function's own signature checks
# the arguments first, and the tool does not run: the run count is the intended change.
PLAYED = {
    **BY_NAME,
    "bad_arguments": replace(BY_NAME["bad_arguments"], changes=_table._ANSWER | {"runs"}),
}


@component
class Bumper:
    """Count the calls."""

    def __init__(self) -> None:
        self.counter = Counter()

    @component.output_types(text=str)
    def run(self) -> dict[str, Any]:
        return {"text": self.counter.bump()}


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Tool:
    """Haystack's own tool-from-function on ``function``, counting its runs."""

    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    functools.update_wrapper(body, function)
    body.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]  # read by Haystack
    made: Tool = create_tool_from_function(body)
    return made


def _tools(scenario: Scenario, runs: dict[str, int]) -> tuple[list[Tool], Bumper | None]:
    if scenario.name == "state":
        bumper = Bumper()
        bump = ComponentTool(component=bumper, name="bump", outputs_to_string={"source": "text"})
        return [bump], bumper
    return [_counted(body, runs) for body in scenario.tools], None


def play(
    tools: list[Tool], calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool, run: str
) -> Observation:
    if guarded:
        tools = guard(tools, Dispatcher([], external_tools=[t.name for t in tools]))
    generator = ScriptedGenerator([list(calls)])
    agent = Agent(chat_generator=generator, tools=tools)
    seen = Observation()
    messages = [ChatMessage.from_user("go")]
    try:
        if run == "sync":
            result = agent.run(messages=messages)
        else:
            result = asyncio.run(agent.run_async(messages=messages))
    except Exception as error:
        seen.raised = type(error).__name__
        result = {}
    seen.model_saw = generator.told()
    if result:
        seen.final = (result["last_message"].text, result["exit_reason"], result["step_count"])
        seen.shape = (
            [
                (
                    type(message).__name__,
                    str(message.role),
                    [(r.origin.tool_name, r.origin.id, r.error) for r in message.tool_call_results],
                    message.meta,
                )
                for message in result["messages"]
            ],
            result["tool_call_counts"],
            sorted(result),
        )
    return seen


def observe(scenario: Scenario, *, guarded: bool, run: str) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools, bumper = _tools(scenario, runs)
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, guarded=guarded, run=run)
    seen.runs = runs
    if bumper is not None:
        # the two calls run at once (the Agent's parallel calls): which one got "call 1"
        # is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = bumper.counter.calls
    return seen, logs


@pytest.mark.parametrize("run", ["sync", "async"])
@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str, run: str) -> None:
    scenario = PLAYED[name]
    unguarded, _ = observe(scenario, guarded=False, run=run)
    guarded, logs = observe(scenario, guarded=True, run=run)
    _table.judge(scenario, unguarded, guarded, logs)


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_haystack_answers(name: str) -> None:
    """A scenario Haystack answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False, run="sync")
    guarded, _ = observe(scenario, guarded=True, run="sync")
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer
