"""Conformance: LangChain's ``create_agent`` guarded in place, scenario by scenario.

Every scenario of the table (:data:`._table.SCENARIOS`) and every LangChain one below
is played twice on LangChain's own offline chat model (``GenericFakeChatModel``
playing a script) through a real ``create_agent``: unguarded, and with the documented
one line first in ``middleware=[...]``::

    ToolguardMiddleware(Dispatcher([], external_tools=names), tools=tools)

on the sync path (``invoke``) and the async one (``ainvoke``). The two runs must be
identical (:func:`._table.conforms`) except for what the scenario says toolguard is
meant to change; where it changes the answer, the answer is checked
(``answered_*``). The LangChain scenarios (``_langchain_cases.LANGCHAIN``) pin the
bugs of issue 27; every one of them, and the table's ``success``, ``parallel`` and
``state``, failed on the code before the port.

toolguard's own LangChain tool (``as_langchain_tool``) is compared with LangChain's
native one in ``tests/integrations/test_langchain_tool_ways.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, cast

import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool
from langchain_core.tools import tool as lc_tool

from toolguard import Dispatcher
from toolguard.integrations.langchain import ToolguardMiddleware

from ..langchain_helpers import ScriptedModel
from . import _table
from ._langchain_cases import LANGCHAIN, Case, Counted
from ._table import BY_NAME, SCENARIOS, Observation, Scenario, conforms

NOT_APPLICABLE: Final[dict[str, str]] = {}
"""Every table scenario plays on LangChain."""


# --- one run ---------------------------------------------------------------------------


@dataclass
class Run:
    """What a run needs: the tools, the script, the agent's other options."""

    tools: list[BaseTool]
    script: list[AIMessage]
    counted: Counted
    inner: Sequence[AgentMiddleware[Any, Any, Any]] = ()
    options: dict[str, Any] = field(default_factory=dict)
    start: dict[str, Any] = field(default_factory=dict)
    state: Callable[[], object] = lambda: None


def play(run: Run, *, guarded: bool, is_async: bool) -> Observation:
    """Run one agent (the documented one line first, when ``guarded``) and observe it."""
    middleware = list(run.inner)
    if guarded:
        names = [tool.name for tool in run.tools]
        guard = ToolguardMiddleware(Dispatcher([], external_tools=names), tools=run.tools)
        middleware = [guard, *middleware]
    agent = create_agent(
        ScriptedModel(messages=iter(run.script)),
        tools=run.tools,
        middleware=middleware,
        **run.options,
    )
    start: Any = {"messages": [HumanMessage("go")], **run.start}
    seen = Observation()
    try:
        final = asyncio.run(agent.ainvoke(start)) if is_async else agent.invoke(start)
    except Exception as error:  # what ended the run is observed
        seen.raised = type(error).__name__
        final = {"messages": []}
    messages: list[AnyMessage] = final["messages"]
    answers = [m for m in messages if isinstance(m, ToolMessage)]
    seen.model_saw = [(m.text, m.status == "error") for m in answers]
    seen.runs = dict(run.counted.runs)
    seen.state = run.state()
    seen.final = [_said(m) for m in messages]
    seen.shape = [
        (m.name, m.tool_call_id, m.status, m.artifact, m.response_metadata, m.additional_kwargs)
        for m in answers
    ]
    return seen


def _said(message: AnyMessage) -> tuple[Any, ...]:
    calls = [(c["name"], c["id"]) for c in getattr(message, "tool_calls", ())]
    return (message.type, message.text, calls)


def _script(calls: Sequence[tuple[str, dict[str, Any]]]) -> list[AIMessage]:
    step = AIMessage(
        "",
        tool_calls=[
            {"name": name, "args": args, "id": f"call_{i}"} for i, (name, args) in enumerate(calls)
        ],
    )
    return [step, AIMessage("done")]


# --- the table's scenarios ------------------------------------------------------------------


class Bump(BaseTool):
    """LangChain's own class-based tool, with state on itself (a field it assigns)."""

    name: str = "bump"
    description: str = "Count a call."
    calls: int = 0

    def _run(self) -> str:
        self.calls += 1
        return f"call {self.calls}"


def table_run(scenario: Scenario) -> Run:
    counted = Counted()
    tools: list[BaseTool] = [
        lc_tool(parse_docstring=True)(counted.wrap(function)) for function in scenario.tools
    ]
    if scenario.name != "state":
        return Run(tools, _script(scenario.calls), counted)
    bump = Bump()
    # one call a step: ToolNode runs one step's sync calls on a thread pool, so which
    # call is "call 1" would be the scheduler's choice (the scenario is about the state)
    script = [
        AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{i}"}])
        for i, (name, args) in enumerate(scenario.calls)
    ]
    return Run([bump], [*script, AIMessage("done")], counted, state=lambda: bump.calls)


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_table_plays_guarded_as_unguarded(
    scenario: Scenario, is_async: bool, logs: list[dict[str, Any]]
) -> None:
    unguarded = play(table_run(scenario), guarded=False, is_async=is_async)
    assert logs == []  # toolguard is not there
    guarded = play(table_run(scenario), guarded=True, is_async=is_async)
    conforms(scenario, unguarded, guarded)
    if scenario.name == "hidden_failure":
        assert unguarded.raised == "RuntimeError"  # LangChain's default: the run fails
        _table.answered_hidden(guarded, logs)
    elif scenario.name == "visible_failure":
        _table.answered_visible(guarded)
    elif scenario.name == "bad_arguments":
        assert unguarded.model_saw[-1][0].startswith("Error invoking tool 'count'")  # ToolNode's
        _table.answered_bad_arguments(guarded)
    elif scenario.name == "unknown_tool":
        _table.answered_unknown(guarded, ["lookup"])
    elif scenario.name == "state":
        assert guarded.state == unguarded.state == 2
    if not scenario.changes:
        assert guarded.raised is None
        shapes = cast("list[tuple[Any, ...]]", guarded.shape)
        assert all("toolguard" not in shape[4] for shape in shapes)


def test_every_table_scenario_is_played_or_said_not_to_apply() -> None:
    assert set(NOT_APPLICABLE) <= set(BY_NAME)
    assert all(why for why in NOT_APPLICABLE.values())


# --- LangChain's own scenarios ------------------------------------------------------------


def case_run(case: Case) -> Run:
    counted = Counted()
    built = case.build(counted)
    return Run(
        built.tools,
        _script(case.calls) if built.script is None else built.script,
        counted,
        inner=built.inner,
        options=built.options,
        start=built.start,
        state=built.state,
    )


PLAYED: Final = [(case, is_async) for case in LANGCHAIN for is_async in case.paths]


@pytest.mark.parametrize(
    ("case", "is_async"),
    PLAYED,
    ids=[f"{case.scenario.name}-{'async' if is_async else 'sync'}" for case, is_async in PLAYED],
)
def test_langchain_scenarios_play_guarded_as_unguarded(
    case: Case, is_async: bool, logs: list[dict[str, Any]]
) -> None:
    """(A case played on one path only is a bug of that path: a sync-only middleware on
    the async path, an async-only tool on the sync one.)"""
    unguarded = play(case_run(case), guarded=False, is_async=is_async)
    assert logs == []
    guarded = play(case_run(case), guarded=True, is_async=is_async)
    conforms(case.scenario, unguarded, guarded)
    if case.unguarded is not None:
        case.unguarded(unguarded)
    if case.guarded is not None:
        case.guarded(guarded, logs)


# --- what toolguard cannot make identical (docs/integrations/langchain.md, "Limits") -------


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
def test_a_tool_a_middleware_offers_that_nothing_runs_is_answered_not_refused(
    is_async: bool,
) -> None:
    """The one residual difference in ``create_agent``: it checks, at each model call,
    that every tool a middleware adds to the request can be run, but skips the check
    when any middleware has ``wrap_tool_call``, as ``ToolguardMiddleware`` has for an
    agent with tools. Unguarded the developer gets LangChain's ``ValueError``; guarded,
    the model's call of that tool gets toolguard's unknown-tool answer."""

    class OffersAnother(AgentMiddleware[Any, Any, Any]):
        def wrap_model_call(self, request: Any, handler: Any) -> Any:
            return handler(request.override(tools=[*request.tools, extra]))

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            return await handler(request.override(tools=[*request.tools, extra]))

    @lc_tool
    def extra(query: str) -> str:
        """Not given to create_agent."""
        return "never"

    def run(guarded: bool) -> Observation:
        counted = Counted()
        tools = [lc_tool(parse_docstring=True)(counted.wrap(_table.lookup))]
        case = Run(tools, _script([("extra", {"query": "x"})]), counted, inner=[OffersAnother()])
        return play(case, guarded=guarded, is_async=is_async)

    assert run(False).raised == "ValueError"
    guarded = run(True)
    assert guarded.raised is None
    assert guarded.model_saw[0][0].startswith("There is no tool named 'extra'")
