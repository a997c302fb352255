"""What the core guarantees to a durable engine's workflow code, with no engine installed.

Temporal runs workflow code in a sandbox that re-imports modules with a ``sys.modules``
of its own and refuses, at run time, threads, locks made through ``threading``, the
system clock and the global random functions; both Temporal and DBOS run workflow code
again on replay or recovery. The engines themselves are exercised in
``tests/integrations/test_temporal*.py`` and ``test_dbos*.py``; these tests pin the
core's side of the contract.
"""

from __future__ import annotations

import pickle
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

import toolguard
from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    EngineRetry,
    EngineUnit,
    RemoteFailure,
    Retry,
    ToolCall,
    ToolCallFailed,
    ToolDefinitionError,
    ToolPolicy,
    WorkflowRuntime,
    tool,
)
from toolguard.stores import MemoryStore

from ._fake_engine import RUNNING, EngineWrapper, FakeRuntime, FakeUnit, in_unit
from ._otel import attributes, install, tool_spans


@tool
def add(a: int, b: int) -> int:
    return a + b


def test_an_agent_follows_configure_without_its_module_in_sys_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process-wide telemetry switch is an object an agent holds, not the telemetry
    module looked up in ``sys.modules`` (a sandbox's ``sys.modules`` is its own)."""
    install()
    monkeypatch.delitem(sys.modules, "toolguard.telemetry._switch")
    agent = Dispatcher([add])
    toolguard.configure(telemetry=True)
    agent.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1"))
    toolguard.configure(telemetry=False)
    agent.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c2"))
    assert [attributes(span)["gen_ai.tool.call.id"] for span in tool_spans()] == ["c1"]


def test_making_a_dispatcher_and_its_sessions_makes_no_lock_through_threading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Temporal's sandbox refuses ``threading.Lock()`` in workflow code: a workflow that
    makes a dispatcher, opens sessions and runs calls takes no lock from ``threading``."""

    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("threading.Lock() called")

    monkeypatch.setattr(threading, "Lock", refused)
    monkeypatch.setattr(threading, "RLock", refused)
    agent = Dispatcher([add], breaker=Breaker(failures=2))
    for session in (agent.session(), agent.session(id="conversation-1")):
        result = session.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1"))
        assert result.content == "3"
        assert session.state("add").consecutive_failures == 0


def test_importing_toolguard_and_a_success_import_neither_structlog_nor_rich() -> None:
    """structlog imports rich (where installed), whose import calls a global random
    function Temporal's sandbox refuses: toolguard imports structlog when it first logs."""
    code = (
        "import sys, toolguard\n"
        "def echo(a: int) -> int:\n"
        "    return a\n"
        "agent = toolguard.Dispatcher([echo])\n"
        "result = agent.dispatch(toolguard.ToolCall(name='echo', arguments={'a': 1}))\n"
        "assert result.content == '1'\n"
        "print(sorted({'structlog', 'rich'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_the_first_event_imports_structlog_and_is_logged(logs: list[dict[str, Any]]) -> None:
    @tool
    def broken() -> None:
        raise ValueError("db-password=hunter2")

    result = Dispatcher([broken]).dispatch(ToolCall(name="broken", id="c1"))
    [event] = logs
    assert event["event"] == "tool_error_hidden" and event["error_id"] == result.error_id


# --- a durable engine's workflow code: the runtime it registers ---------------------------


@pytest.fixture
def workflow() -> Iterator[FakeRuntime]:
    """The test's body runs as workflow code of a fake engine."""
    runtime = FakeRuntime()
    token = RUNNING.set(runtime)
    yield runtime
    RUNNING.reset(token)


@tool
def leaky() -> None:
    raise ValueError("db-password=hunter2")


def test_the_fake_is_a_workflow_runtime() -> None:
    assert isinstance(FakeRuntime(), WorkflowRuntime)


def test_in_workflow_code_error_ids_come_from_the_engine_and_a_replay_logs_nothing(
    workflow: FakeRuntime, logs: list[dict[str, Any]]
) -> None:
    agent = Dispatcher([leaky])
    first = agent.dispatch(ToolCall(name="leaky", id="c1"))
    assert first.error_id == f"{random.Random(7).getrandbits(32):08x}"
    [event] = logs
    assert event["event"] == "tool_error_hidden" and event["error_id"] == first.error_id
    # the engine replays the same code: the same id, the same answer, no second event
    replay = FakeRuntime()
    replay.replay = True
    token = RUNNING.set(replay)
    try:
        again = agent.dispatch(ToolCall(name="leaky", id="c1"))
    finally:
        RUNNING.reset(token)
    assert again == first
    assert len(logs) == 1


def test_a_workflow_session_reads_the_engines_clock(workflow: FakeRuntime) -> None:
    agent = Dispatcher([leaky], breaker=Breaker(failures=1, cooldown=30))
    session = agent.session()
    session.dispatch(ToolCall(name="leaky"))
    assert session.state("leaky").open_until == 1030.0
    assert session.dispatch(ToolCall(name="leaky")).error_kind == "unavailable"
    workflow.time += 30  # only the engine's clock moves the breaker on
    assert session.dispatch(ToolCall(name="leaky")).error_kind == "hidden"


def test_named_sessions_live_in_the_workflow_run_not_in_the_process(
    workflow: FakeRuntime,
) -> None:
    agent = Dispatcher([leaky], breaker=Breaker(failures=1))
    session = agent.session(id="conversation-1")
    assert agent.session(id="conversation-1") is session  # found again in the run
    session.dispatch(ToolCall(name="leaky"))
    assert list(workflow.kept.values()) == [session]
    other_run = FakeRuntime()
    token = RUNNING.set(other_run)
    try:  # another run (or the replay of this one) starts from its own state
        assert agent.session(id="conversation-1").state("leaky").consecutive_failures == 0
    finally:
        RUNNING.reset(token)


def test_a_store_outside_the_workflow_is_refused_in_workflow_code(workflow: FakeRuntime) -> None:
    class Remote:
        name = "redis"
        on_unavailable = "fail-open"

        def open(self, id: str | None, **kwargs: Any) -> Any:
            raise AssertionError("never opened")

        def describe(self) -> str:
            return "redis"

    agent = Dispatcher([leaky])
    with pytest.raises(ToolDefinitionError, match="workflow's own state"):
        agent.session(id="c", store=Remote())
    assert agent.session(store=MemoryStore()).state("leaky").consecutive_failures == 0


# --- failures answered where the tool ran ------------------------------------------------


def test_a_remote_failure_is_answered_as_it_crossed_and_logged_nowhere_here(
    logs: list[dict[str, Any]],
) -> None:
    agent = Dispatcher([], external_tools=["charge"], on_error="never asked")
    call = ToolCall(name="charge", id="c1")
    hidden = RemoteFailure(
        "The tool 'charge' failed (error id 0badc0de).",
        error_type="ValueError",
        error_id="0badc0de",
    )
    result = agent.handle_error(call, hidden)
    assert (result.content, result.error_id, result.error_kind) == (
        "The tool 'charge' failed (error id 0badc0de).",
        "0badc0de",
        "hidden",
    )
    visible = agent.handle_error(call, RemoteFailure("No such order.", error_type="ToolError"))
    assert (visible.content, visible.error_id, visible.error_kind) == (
        "No such order.",
        None,
        "visible",
    )
    assert logs == []


def test_a_hidden_remote_failure_counts_for_the_breaker_and_a_visible_one_does_not() -> None:
    agent = Dispatcher([], external_tools=["charge"], breaker=Breaker(failures=2))
    session = agent.session()
    call = ToolCall(name="charge")
    session.handle_error(call, RemoteFailure("failed", error_type="OSError", error_id="00000001"))
    assert session.state("charge").consecutive_failures == 1
    session.handle_error(call, RemoteFailure("No such order.", error_type="ToolError"))
    assert session.state("charge").consecutive_failures == 0
    for kind in ("timeout", "arguments", "unavailable"):
        result = session.handle_error(
            call, RemoteFailure("said so", error_type="ToolError", error_kind=kind)
        )
        assert result.error_kind == kind
    # a timeout counts; the model's arguments and an open breaker change nothing
    assert session.state("charge").consecutive_failures == 1


async def test_in_workflow_code_an_engines_wrapper_is_seen_through(workflow: FakeRuntime) -> None:
    agent = Dispatcher([], external_tools=["charge"])
    call = ToolCall(name="charge", id="c1")
    carried = RemoteFailure("Card declined.", error_type="ValueError", error_id="12345678")
    for result in (
        agent.handle_error(call, EngineWrapper(carried)),
        await agent.ahandle_error(call, EngineWrapper(carried)),
    ):
        assert (result.content, result.error_id) == ("Card declined.", "12345678")


def test_a_crossed_tool_call_failed_or_control_flow_propagates(workflow: FakeRuntime) -> None:
    agent = Dispatcher([], external_tools=["charge"])
    call = ToolCall(name="charge", id="c1")
    failed = ToolCallFailed("failed", tool="charge", call_id="c1", error_id="12345678")
    with pytest.raises(ToolCallFailed) as raised:
        agent.handle_error(call, EngineWrapper(failed))
    assert raised.value is failed
    signal = ControlFlow()
    with pytest.raises(ControlFlow) as stopped:
        agent.handle_error(call, EngineWrapper(signal))
    assert stopped.value is signal


def test_outside_workflow_code_a_wrapper_is_an_ordinary_hidden_failure(
    logs: list[dict[str, Any]],
) -> None:
    carried = RemoteFailure("Card declined.", error_type="ValueError", error_id="12345678")
    result = Dispatcher([], external_tools=["charge"]).handle_error(
        ToolCall(name="charge"), EngineWrapper(carried)
    )
    assert result.error_kind == "hidden" and result.error_id != "12345678"
    assert [event["error_type"] for event in logs] == ["EngineWrapper"]


# --- the engine owns retries and timeouts in workflow code -------------------------------


async def test_in_workflow_code_toolguard_neither_retries_nor_times_out(
    workflow: FakeRuntime,
) -> None:
    """A workflow may not sleep or start threads, and the engine retries and times out
    what it runs: a tool run in workflow code runs once, on the workflow's own thread."""
    threads: list[str] = []

    @tool(retries=3, timeout=5)
    def flaky() -> str:
        threads.append(threading.current_thread().name)
        raise ConnectionError("db-password=hunter2")

    @tool(retries=3, timeout=5)
    async def aflaky() -> str:
        threads.append(threading.current_thread().name)
        raise ConnectionError("db-password=hunter2")

    agent = Dispatcher([flaky, aflaky])
    here = threading.current_thread().name
    assert agent.dispatch(ToolCall(name="flaky")).error_kind == "hidden"
    assert (await agent.adispatch(ToolCall(name="flaky"), offload=True)).error_kind == "hidden"
    assert (await agent.adispatch(ToolCall(name="aflaky"))).error_kind == "hidden"
    assert threads == [here, here, here]
    invoked: list[int] = []

    def invoke() -> str:
        invoked.append(1)
        raise ConnectionError("again")

    async def ainvoke() -> str:
        return invoke()

    with pytest.raises(ConnectionError):  # a framework's invocation in workflow code
        await agent.scope().arun(ToolCall(name="flaky"), ainvoke)
    with pytest.raises(ConnectionError):
        agent.scope().run(ToolCall(name="flaky"), invoke)
    assert len(invoked) == 2


# --- rounds whose calls ran elsewhere ----------------------------------------------------


def test_a_round_of_outcomes_gathered_elsewhere_is_assembled_as_run_assembles_one() -> None:
    agent = Dispatcher([add], return_direct=True)
    calls = [ToolCall(name="add", arguments={"a": 1, "b": 2}, id=f"c{n}") for n in (1, 2)]
    ran = agent.run(calls)
    assert agent.round_of(calls, ran.results) == ran
    failed = ToolCallFailed("failed", tool="add", call_id="c2", error_id="0000abcd")
    with pytest.raises(ToolCallFailed) as raised:
        agent.round_of(calls, [ran.results[0], failed])
    assert raised.value.round is not None
    assert [r.call_id for r in raised.value.round.results] == ["c1", "c2"]
    assert "0000abcd" in raised.value.round.results[1].text
    with pytest.raises(ControlFlow):
        agent.round_of(calls, [failed, ControlFlow()])


# --- where the tool runs: one attempt of a durable engine's unit ------------------------


def test_the_fake_is_an_engine_unit() -> None:
    assert isinstance(FakeUnit(1), EngineUnit)


@tool(retries=2)
def reset_by_peer() -> str:
    raise ConnectionError("reset by 10.0.0.7 (db-password=hunter2)")


async def test_in_an_engines_unit_a_retry_is_the_engines(logs: list[dict[str, Any]]) -> None:
    """One attempt per unit: a retryable failure before the last attempt is handed to the
    engine carrying its type and an error id, nothing chained; the last is answered."""
    agent = Dispatcher([reset_by_peer])
    call = ToolCall(name="reset_by_peer", id="c1")
    with in_unit(FakeUnit(1)), pytest.raises(EngineRetry) as raised:
        await agent.adispatch(call)
    retry = raised.value
    assert retry.error_type == "ConnectionError" and "hunter2" not in str(retry)
    assert retry.__cause__ is None and retry.__suppress_context__
    assert "hunter2" not in repr(pickle.loads(pickle.dumps(retry)))
    [event] = logs
    assert (event["event"], event["error_id"], event["retried_by"]) == (
        "tool_retry",
        retry.error_id,
        "engine",
    )
    with in_unit(FakeUnit(3)):  # retries=2: the third attempt is the last
        answered = agent.dispatch(call)
    assert answered.error_kind == "hidden" and logs[-1]["event"] == "tool_error_hidden"
    with in_unit(FakeUnit(2, maximum=2)):  # the engine says its last attempt is 2
        assert agent.dispatch(call).error_kind == "hidden"
    with in_unit(FakeUnit(1)) as unit:
        unit.started = 31.0  # past Retry(total=30): answered, not retried
        total = ToolPolicy(retries=Retry(attempts=5, total=30))
        timed = Dispatcher([reset_by_peer], overrides={"reset_by_peer": total})
        assert timed.dispatch(call).error_kind == "hidden"


def test_in_an_engines_unit_a_framework_invocation_is_handed_over_too() -> None:
    def invoke() -> str:
        raise ConnectionError("reset")

    scope = Dispatcher([], external_tools=["remote"], retries=2).scope()
    with in_unit(FakeUnit(1)), pytest.raises(EngineRetry):
        scope.run(ToolCall(name="remote"), invoke)
    with in_unit(FakeUnit(3)), pytest.raises(ConnectionError):
        scope.run(ToolCall(name="remote"), invoke)


async def test_in_a_unit_the_engine_times_out_unless_it_cannot() -> None:
    """A unit the engine times out runs the tool without toolguard's timeout (no thread);
    one it cannot (a DBOS sync step) keeps toolguard's."""

    @tool(timeout=0.05, retries=None)
    def sleepy() -> str:
        time.sleep(0.3)
        return threading.current_thread().name

    agent = Dispatcher([sleepy])
    with in_unit(FakeUnit(1, times_out=True)):
        assert agent.dispatch(ToolCall(name="sleepy")).content == threading.current_thread().name
    with in_unit(FakeUnit(1, times_out=False)):
        assert agent.dispatch(ToolCall(name="sleepy")).error_kind == "timeout"
