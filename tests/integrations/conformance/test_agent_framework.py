"""Conformance (issue 32): Microsoft Agent Framework guarded in place by its one line,
``Agent(..., middleware=[ToolguardMiddleware(dispatcher)])``, against the same agent
unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real ``Agent`` on the
scripted chat client of tests/integrations/test_agent_framework.py, with tools made by
Agent Framework's own ``@tool`` (and, for ``state``, a ``FunctionTool`` subclass holding
its counter); the function results the model was sent, the run's messages, its text
and the tools' runs and state are compared by :func:`_table.conforms`.

What the model reads of a result is its text and whether Agent Framework marks it an
error (its ``exception`` field, which a provider such as Anthropic sends as
``is_error``). Only Agent Framework's own error path sets that field; a function
middleware hands back a result, never an error (docs/integrations/agent-framework.md
says so), so toolguard's answers arrive as results whose text says what failed, and the
guarded checks below are the table's with that one difference, asserted.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from agent_framework import Agent, FunctionTool, tool
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.agent_framework import ToolguardMiddleware

from ..test_agent_framework import ScriptedClient, finish, shape
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "Agent Framework's function loop answers a name it has no tool for itself "
        "('Error: Requested function ... not found.'), before any function middleware "
        "runs: a guard in the middleware never sees that call"
    ),
}


class Bump(FunctionTool):
    """An Agent Framework ``FunctionTool`` keeping its own state."""

    def __init__(self) -> None:
        super().__init__(name="bump", description="Count the calls.", func=self.bump)
        self.counter = Counter()

    def bump(self) -> str:
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> FunctionTool:
    """Agent Framework's ``@tool`` on ``function``, counting its runs."""

    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    functools.update_wrapper(body, function)
    body.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]  # read by @tool
    made: FunctionTool = tool(body)
    return made


def _shape(messages: Sequence[Mapping[str, Any]]) -> object:
    """The run's messages as Agent Framework made them, their ids (new each run) left
    out, and each function result's text left to ``model_saw``: its fields, its error
    marker's presence."""
    found = shape(list(messages))
    for message in found:
        for content in message.get("contents", ()):
            if content.get("type") == "function_result":
                content.pop("result", None)
                content.pop("items", None)
                content["exception"] = content.get("exception") is not None
    return found


def play(
    tools: list[FunctionTool], calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool
) -> Observation:
    middleware = []
    if guarded:
        middleware = [ToolguardMiddleware(Dispatcher([], external_tools=[t.name for t in tools]))]
    client = ScriptedClient([list(calls)])
    agent = Agent(client, tools=list(tools), middleware=middleware)
    seen = Observation()
    try:
        response = finish(agent.run("go"))
    except Exception as error:
        seen.raised = type(error).__name__
    else:
        seen.final = response.text
        seen.shape = (_shape([m.to_dict() for m in response.messages]), len(client.seen))
    seen.model_saw = [(str(c.result), c.exception is not None) for c in client.results()]
    return seen


def _tools(scenario: Scenario, runs: dict[str, int]) -> list[FunctionTool]:
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
        # the two calls run at once (Agent Framework's concurrent calls, each sync tool
        # on a thread): which one got "call 1" is its scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        bump = tools[0]
        assert isinstance(bump, Bump)
        seen.state = bump.counter.calls
    return seen, logs


def _answer(guarded: Observation) -> str:
    """The guarded answer's text, asserted to come as a result (see the module)."""
    text, is_error = guarded.model_saw[-1]
    assert not is_error, "Agent Framework now marks a middleware's answer: use _table's checks"
    return text


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = observe(scenario, guarded=False)
    guarded, logs = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    if name == "hidden_failure":
        text = _answer(guarded)
        assert _table.SECRET not in repr(guarded.model_saw) + repr(guarded.final)
        hidden = [event for event in logs if event["event"] == "tool_error_hidden"]
        assert len(hidden) == 1 and hidden[0]["error_id"] in text
    elif name == "visible_failure":
        assert _answer(guarded) == "There is no hat. Ask the user for another one."
    elif name == "bad_arguments":
        assert "number" in _answer(guarded) and guarded.runs.get("count", 0) == 0
    else:
        assert all(e["log_level"] != "warning" for e in logs), logs
    if name in ("hidden_failure", "visible_failure", "bad_arguments"):
        assert unguarded.model_saw[-1][1]  # Agent Framework's own answer: an error


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_agent_framework_answers(name: str) -> None:
    """A scenario Agent Framework answers before any middleware sees the call
    (``NOT_APPLICABLE`` says why) is not the table's test: played here, guarded changes
    nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, guarded=False)
    guarded, _ = observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer
