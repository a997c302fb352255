"""Regressions: core bugs the reliability suites found, each pinned by its repro.

1-2 a tool's own TimeoutError is not an overrun, and crosses threads intact;
3 a raising marker does not log the hidden cause twice; 4 a handler's bad answer is
logged as handler_raised; 5-7 what the model sent is echoed bounded and safely;
8 NaN/Infinity are refused; 10 interrupts stop a sync round at once; 11 the lazy
pools are created once.
"""

from __future__ import annotations

import _thread
import asyncio
import signal
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import toolguard.runner._pools as pools_module
from tests._stuck import Stuck, once_main_waits
from toolguard import Dispatcher, ToolCall, tool


def test_a_sync_tools_own_timeout_error_is_not_reported_as_an_overrun(
    logs: list[dict[str, Any]],
) -> None:
    @tool(timeout=5)
    def lookup(key: str) -> str:
        raise TimeoutError("db socket timed out (password=hunter2)")

    result = Dispatcher([lookup]).dispatch(ToolCall(name="lookup", arguments={"key": "k"}))
    assert "did not finish within" not in result.text
    assert [e["event"] for e in logs] == ["tool_error_hidden"]


def test_an_offloaded_tools_timeout_error_reaches_the_log_intact(
    logs: list[dict[str, Any]],
) -> None:
    raised: list[TimeoutError] = []

    @tool
    def lookup(key: str) -> str:
        error = TimeoutError("socket timed out")
        error.add_note("while calling the vault")
        raised.append(error)
        raise error from ConnectionResetError("peer reset")

    agent = Dispatcher([lookup])
    asyncio.run(agent.adispatch(ToolCall(name="lookup", arguments={"key": "k"}), offload=True))
    [event] = logs
    assert event["exc_info"] is raised[0]
    assert event["exc_info"].__cause__ is not None


def test_a_raising_marker_logs_the_hidden_cause_once(logs: list[dict[str, Any]]) -> None:
    class Broken(Exception):
        def message_for_model(self) -> str:
            raise RuntimeError("marker broke")

    @tool
    def t() -> str:
        raise Broken("SECRET-abc")

    Dispatcher([t]).dispatch(ToolCall(name="t"))
    carrying = [
        e["event"]
        for e in logs
        if "SECRET-abc" in "".join(traceback.format_exception(e["exc_info"]))
    ]
    assert carrying == ["tool_error_hidden"]


def test_a_handler_answering_a_non_content_value_is_logged_as_handler_raised(
    logs: list[dict[str, Any]],
) -> None:
    @tool(on_error=lambda error, context: 42)  # type: ignore[arg-type]  # the bad answer under test
    def t() -> str:
        raise RuntimeError("boom")

    with pytest.raises(TypeError):
        Dispatcher([t]).dispatch(ToolCall(name="t"))
    assert [e["event"] for e in logs] == ["handler_raised"]


def _deep(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = {"a": value}
    return value


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr boom")


@pytest.mark.parametrize(
    "bad", [_deep(10_000), 10**5000, BadRepr()], ids=["deep", "huge-int", "bad-repr"]
)
def test_unrenderable_bad_values_still_get_a_validation_message(
    bad: Any, logs: list[dict[str, Any]]
) -> None:
    @tool
    def t(n: int, name: str = "") -> str:
        return "ran"

    arguments = {"n": 1, "name": bad} if isinstance(bad, int) else {"n": bad}
    result = Dispatcher([t]).dispatch(ToolCall(name="t", arguments=arguments))
    assert result.text.startswith("Invalid arguments for tool 't'")
    assert logs == []


def test_argument_names_are_echoed_bounded() -> None:
    @tool
    def t(n: int) -> str:
        return "ran"

    result = Dispatcher([t]).dispatch(ToolCall(name="t", arguments={"n": 1, "k" * 1_000_000: 1}))
    assert len(result.text) < 1000


def test_an_unknown_tool_name_is_echoed_escaped() -> None:
    result = Dispatcher([tool(name="refund")(lambda: "x")]).dispatch(ToolCall(name="ref\udcffund"))
    result.text.encode("utf-8")


def test_nan_and_infinity_are_refused_for_a_float_argument() -> None:
    ran: list[float] = []

    @tool
    def t(x: float) -> str:
        ran.append(x)
        return "ran"

    result = Dispatcher([t]).dispatch(ToolCall(name="t", arguments='{"x": NaN}'))
    assert result.is_error and ran == []


def test_a_keyboard_interrupt_from_any_call_stops_a_sync_round_at_once() -> None:
    """The interrupt propagates while the sibling is still stuck, not after it ends."""
    stuck = Stuck()

    @tool
    def slow(n: int) -> str:
        stuck.wait()
        return "late"

    @tool
    def ki(n: int) -> str:
        raise KeyboardInterrupt

    agent = Dispatcher([slow, ki])
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.run(
                [
                    ToolCall(name="slow", arguments={"n": 1}),
                    ToolCall(name="ki", arguments={"n": 1}),
                ]
            )
        assert not stuck.finished.is_set()
    finally:
        stuck.release.set()
        agent.close()


@pytest.mark.usefixtures("default_sigint")
def test_interrupt_main_stops_a_waiting_sync_round() -> None:
    """``_thread.interrupt_main()`` while the round waits for stuck calls stops the round
    then, not once they end."""
    stuck = Stuck()

    @tool
    def slow(n: int) -> str:
        stuck.wait()
        return "late"

    agent = Dispatcher([slow])
    interrupter = once_main_waits(_thread.interrupt_main, given_up=stuck.release)
    try:
        with pytest.raises(KeyboardInterrupt):
            interrupter.start()
            agent.run([ToolCall(name="slow", arguments={"n": n}) for n in range(2)])
        assert not stuck.finished.is_set()
    finally:
        stuck.release.set()
        interrupter.join()
        agent.close()


def test_concurrent_first_rounds_share_one_pool_and_close_leaves_no_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class SlowStart(ThreadPoolExecutor):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            time.sleep(0.05)  # widens the check-then-set window in Dispatcher._pool()
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(pools_module, "ThreadPoolExecutor", SlowStart)

    @tool
    def ok(n: int) -> int:
        return n

    before = set(threading.enumerate())
    agent = Dispatcher([ok])
    barrier = threading.Barrier(4)

    def go() -> None:
        barrier.wait()
        agent.run([ToolCall(name="ok", arguments={"n": n}) for n in range(2)])

    threads = [threading.Thread(target=go) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    agent.close()
    time.sleep(0.2)
    assert [t.name for t in threading.enumerate() if t not in before] == []


class _ReprRaises(Exception):
    def __repr__(self) -> str:
        raise RuntimeError("repr() is not supported")


@tool
async def _fails_unprintably() -> str:
    raise _ReprRaises("db down")


@pytest.mark.usefixtures("default_sigint")
@pytest.mark.parametrize("path", ["dispatch", "run", "timeout"])
def test_an_async_tool_s_unprintable_exception_is_its_failure_and_leaves_sigint_alone(
    path: str, logs: list[dict[str, Any]]
) -> None:
    """asyncio.run formats its main task (and its exception) on the way out on the main
    thread; a raising __repr__ there replaced the tool's failure and left asyncio's
    SIGINT handler installed for every later asyncio.run of the process."""
    agent = Dispatcher([_fails_unprintably], timeout=5 if path == "timeout" else None)
    call = ToolCall(name="_fails_unprintably", arguments={}, id="1")
    with agent:
        result = agent.run([call]).results[0] if path == "run" else agent.dispatch(call)
    assert result.is_error and result.error_kind == "hidden"
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert type(event["exc_info"]) is _ReprRaises
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
