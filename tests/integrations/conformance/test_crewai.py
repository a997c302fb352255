"""Conformance (issue 27): CrewAI guarded in place by its one line, ``guard(tools,
dispatcher)``, against the same crew unguarded, under both of CrewAI's tool-calling
loops: native function calling and text (ReAct) tool calling, which CrewAI uses when
the model does not support function calling (``tool.to_structured_tool().invoke``).

Each scenario of :data:`_table.SCENARIOS` (and CrewAI's own below) runs twice
through a real ``Crew`` on the scripted ``BaseLLM`` of tests/integrations/test_crewai.py
(CrewAI's documented way to bring a model), with tools made by CrewAI's own ``@tool``;
what the model was sent, the task's ``tool_failures``, the run's output, and the
tools' runs and state are compared by :func:`_table.conforms`. Runs in CrewAI's own
environment (.ci/extras).
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import pytest

with warnings.catch_warnings():  # CrewAI warns while it imports; the suite makes warnings errors
    warnings.simplefilter("ignore")
    from ..test_crewai import ScriptedLLM, pytestmark  # noqa: F401 - CrewAI's own warnings

from crewai import Agent, Crew, CrewOutput, Task
from crewai.tools import BaseTool
from crewai.tools import tool as crew_tool
from pydantic import ConfigDict, Field
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.crewai import as_crewai_tools, guard

from . import _table
from ._sync_api import no_sync_api  # noqa: F401 - a fixture
from ._table import Counter, Observation, Scenario

MODES = ("native", "text")

NOT_APPLICABLE = {
    "unknown_tool": (
        "CrewAI answers a name it has no tool for itself (its tool usage, before any tool "
        "is reached): a guard on the tools never sees that call; the crew's own answer "
        "reaches the model, guarded or not"
    ),
}


class Bump(BaseTool):
    """A CrewAI tool that keeps its own state."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    name: str = "bump"
    description: str = "Count the calls."
    counter: Counter = Field(default_factory=Counter)

    def _run(self) -> str:
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> BaseTool:
    """CrewAI's ``@tool`` on ``function``, counting its runs."""

    def body(**kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(**kwargs)

    body.__name__ = function.__name__
    body.__doc__ = function.__doc__
    body.__annotations__ = dict(function.__annotations__)
    body.__signature__ = inspect.signature(function)  # type: ignore[attr-defined]  # read by CrewAI
    made: BaseTool = crew_tool(function.__name__)(body)
    return made


def _script(calls: Sequence[tuple[str, dict[str, Any]]], mode: str) -> ScriptedLLM:
    if mode == "native":
        step = [(name, arguments, f"c{i}") for i, (name, arguments) in enumerate(calls)]
        return ScriptedLLM.playing([step, "done"])
    texts: list[Any] = [
        f"Thought: use it\nAction: {name}\nAction Input: {json.dumps(arguments)}"
        for name, arguments in calls
    ]
    return ScriptedLLM.playing([*texts, "Thought: I know\nFinal Answer: done"], native=False)


def _observations(llm: ScriptedLLM, mode: str) -> list[str]:
    """The tool results the model read, in order."""
    if mode == "native":
        answers = llm.tool_messages()
        return [answers[key] for key in sorted(answers)]
    last = llm._seen[-1] if llm._seen else []
    found = []
    for message in last:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            continue
        content = str(message.get("content", ""))
        if "Observation:" in content:
            found.append(content.split("Observation:", 1)[1].strip())
    return found


def play(
    tools: list[BaseTool], calls: Sequence[tuple[str, dict[str, Any]]], mode: str, *, guarded: bool
) -> Observation:
    llm = _script(calls, mode)
    if guarded:
        tools = guard(tools, Dispatcher([], external_tools=[t.name for t in tools]))
    agent = Agent(role="support", goal="help", backstory="a clerk", llm=llm, tools=tools)
    task = Task(description="Answer the customer.", expected_output="an answer", agent=agent)
    seen = Observation()
    try:
        output = Crew(agents=[agent], tasks=[task]).kickoff()
    except Exception as error:
        seen.raised = type(error).__name__
        return seen
    assert isinstance(output, CrewOutput)
    failures = output.tasks_output[0].tool_failures
    failed = {json.dumps([r.tool_name, r.tool_args], sort_keys=True, default=str) for r in failures}
    texts = _observations(llm, mode)
    seen.model_saw = [
        (text, json.dumps([name, args], sort_keys=True) in failed)
        for text, (name, args) in zip(texts, calls, strict=False)
    ]
    seen.final = output.raw
    seen.shape = (len(texts), sorted(r.tool_name for r in failures), type(output).__name__)
    return seen


def observe(scenario: Scenario, mode: str, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    tools: list[BaseTool] = (
        [Bump()] if scenario.name == "state" else [_counted(f, runs) for f in scenario.tools]
    )
    with capture_logs() as logs:
        seen = play(tools, scenario.calls, mode, guarded=guarded)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls may run at once (the framework's parallel calls): which one
        # got "call 1" is the framework's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = tools[0].counter.calls  # type: ignore[attr-defined]  # the Bump above
    return seen, logs


# Under text tool calling CrewAI retries a raising tool silently (up to its max
# attempts) before telling the model; guarded, the failure is answered on the first
# run (a hidden cause must not be retried blindly): the run count is meant to change.
RETRIED_BY_CREWAI = {"hidden_failure", "visible_failure"}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
def test_the_conformance_table(name: str, mode: str) -> None:
    scenario = _table.BY_NAME[name]
    if mode == "text" and name in RETRIED_BY_CREWAI:
        scenario = replace(scenario, changes=scenario.changes | {"runs"})
    unguarded, _ = observe(scenario, mode, guarded=False)
    guarded, logs = observe(scenario, mode, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    if name == "hidden_failure":
        _table.answered_hidden(guarded, logs)
    elif name == "visible_failure":
        _table.answered_visible(guarded)
    elif name == "bad_arguments":
        _table.answered_bad_arguments(guarded)
        # toolguard's answer, not CrewAI's validation text (raised before the guard)
        assert guarded.model_saw[-1][0].startswith("Invalid arguments for tool 'count'")


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
def test_what_cannot_apply_is_left_as_crewai_answers(name: str, mode: str) -> None:
    """A scenario CrewAI answers before any guard sees the call (``NOT_APPLICABLE``
    says why) is not the table's test: played here, guarded changes nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = observe(scenario, mode, guarded=False)
    guarded, _ = observe(scenario, mode, guarded=True)
    _table.conforms(scenario, unguarded, guarded)


# --- CrewAI's own scenarios -------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_a_toolguard_tool_gets_the_models_arguments_on_both_loops(mode: str) -> None:
    """Issue 27: under text tool calling CrewAI validates with ``args_schema`` and hands
    on ``model_dump()``; toolguard's declared schema dropped every argument."""
    calls = [("count", {"number": 2})]
    llm = _script(calls, mode)
    agent = Agent(
        role="support",
        goal="help",
        backstory="a clerk",
        llm=llm,
        tools=as_crewai_tools(Dispatcher([_table.count])),
    )
    task = Task(description="Answer.", expected_output="an answer", agent=agent)
    Crew(agents=[agent], tasks=[task]).kickoff()
    assert _observations(llm, mode)[0].startswith("got 2")


@pytest.mark.parametrize("mode", MODES)
def test_a_failure_of_a_tool_with_result_as_answer_never_ends_the_task_alike(mode: str) -> None:
    @crew_tool("finish", result_as_answer=True)
    def finish(answer: str) -> str:
        """Give the final answer."""
        if answer == "crash":
            raise RuntimeError(f"renderer crashed: {_table.SECRET}")
        return f"FINAL: {answer}"

    for answer, stops in (("42", True), ("crash", False)):
        unguarded = play([finish], [("finish", {"answer": answer})], mode, guarded=False)
        guarded = play([finish], [("finish", {"answer": answer})], mode, guarded=True)
        assert (guarded.final == f"FINAL: {answer}") is stops
        assert (unguarded.final == f"FINAL: {answer}") is stops


@pytest.mark.usefixtures("no_sync_api")
async def test_the_async_path_uses_only_the_async_session_api() -> None:
    """Issue 27: ``arun`` of a guarded tool, inside a task (a conversation), is
    admitted and answered through the ``a``-methods."""
    from crewai.context import reset_current_task_id, set_current_task_id

    class Lookup(BaseTool):
        name: str = "lookup"
        description: str = "Look something up."

        def _run(self, query: str) -> str:
            raise NotImplementedError

        async def _arun(self, query: str) -> str:
            if query == "x":
                raise RuntimeError(_table.SECRET)
            return f"found {query}"

    (guarded,) = guard([Lookup()], Dispatcher([], external_tools=["lookup"]))
    token = set_current_task_id("task-1")
    try:
        assert await guarded.arun(query="a") == "found a"
        failure = await guarded.arun(query="x")
    finally:
        reset_current_task_id(token)
    assert _table.SECRET not in failure.message and "error id" in failure.message
