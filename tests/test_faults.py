"""Faults inside toolguard's own path: the application gets a clear, typed error or a
safe fallback result; the original failure is never lost (logged or chained); no
secret leaks through a fallback; interrupts and cancellation stop a round promptly
and leave nothing running.
"""

from __future__ import annotations

import asyncio
import io
import json
import logging
import math
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
import structlog

from tests._stuck import STUCK, Stuck, once_main_waits
from toolguard import (
    ControlFlow,
    Dispatcher,
    Round,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolResult,
    tool,
)
from toolguard.handlers import fail, generic_unless_visible, send_exception_message

SECRET = "sk-fault-2b9e61d0c4a7"


def leaked(value: Any) -> bool:
    """Whether the secret is anywhere in what the model could be sent."""
    if isinstance(value, Round):
        value = value.results
    if isinstance(value, ToolResult):
        value = [value]
    return SECRET in json.dumps([attrs.asdict(r) for r in value], default=repr)


def rendered(error: BaseException) -> str:
    return "".join(traceback.format_exception(error))


def mentions(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events whose rendering (fields, exc_info with its chain) holds the secret."""
    found = []
    for event in events:
        text = " ".join(str(v) for k, v in event.items() if k != "exc_info")
        if isinstance(event.get("exc_info"), BaseException):
            text += rendered(event["exc_info"])
        if SECRET in text:
            found.append(event)
    return found


@tool
def broken(n: int) -> str:
    """Fail with a secret in the message."""
    raise RuntimeError(f"db login failed with {SECRET}")


@tool
async def abroken(n: int) -> str:
    """Fail with a secret in the message, asynchronously."""
    await asyncio.sleep(0)
    raise RuntimeError(f"db login failed with {SECRET}")


@tool
def fine(n: int) -> int:
    """Succeed."""
    return n


def call(name: str = "broken", call_id: str = "c1", n: int = 1) -> ToolCall:
    return ToolCall(name=name, arguments={"n": n}, id=call_id)


# --- a handler that raises -------------------------------------------------------------


class HandlerBug(Exception):
    pass


def buggy_handler(error: Exception, context: Any) -> str:
    raise HandlerBug("the handler itself is broken")


async def abuggy_handler(error: Exception, context: Any) -> str:
    await asyncio.sleep(0)
    raise HandlerBug("the async handler itself is broken")


def test_a_handler_that_raises_propagates_with_the_original_as_its_context(
    logs: list[dict[str, Any]],
) -> None:
    with pytest.raises(HandlerBug) as caught:
        Dispatcher([broken], on_error=buggy_handler).dispatch(call())
    original = caught.value.__context__
    assert isinstance(original, RuntimeError)
    assert SECRET in str(original)  # the application still has the cause
    assert SECRET not in str(caught.value)
    [event] = logs
    assert event["event"] == "handler_raised"
    assert event["exc_info"] is original
    assert event["handler_error"] == "HandlerBug"
    assert event["error_id"]
    assert mentions(logs) == [event]


async def test_an_async_handler_that_raises_is_chained_and_logged_the_same_way(
    logs: list[dict[str, Any]],
) -> None:
    with pytest.raises(HandlerBug) as caught:
        await Dispatcher([abroken], on_error=abuggy_handler).adispatch(call("abroken"))
    assert isinstance(caught.value.__context__, RuntimeError)
    [event] = logs
    assert event["event"] == "handler_raised"
    assert event["exc_info"] is caught.value.__context__


def test_a_handler_that_raises_inside_a_round_lets_the_siblings_finish(
    logs: list[dict[str, Any]],
) -> None:
    finished: list[int] = []

    @tool
    def slow_ok(n: int) -> int:
        time.sleep(0.05)
        finished.append(n)
        return n

    with (
        Dispatcher([broken, slow_ok], on_error=buggy_handler) as agent,
        pytest.raises(HandlerBug) as caught,
    ):
        agent.run([call("slow_ok", "a", 1), call("broken", "b"), call("slow_ok", "c", 3)])
    assert sorted(finished) == [1, 3]
    assert isinstance(caught.value.__context__, RuntimeError)
    assert [e["event"] for e in logs] == ["handler_raised"]


def test_a_handler_that_answers_something_else_is_a_type_error_naming_it(
    logs: list[dict[str, Any]],
) -> None:
    def answers_a_number(error: Exception, context: Any) -> Any:
        return 42

    with pytest.raises(TypeError, match="answers_a_number answered int") as caught:
        Dispatcher([broken], on_error=answers_a_number).dispatch(call())
    assert isinstance(caught.value.__context__, RuntimeError)  # the original: chained
    assert not any(SECRET in str(e.get(k)) for e in logs for k in e if k != "exc_info")


def test_a_handler_raising_tool_call_failed_by_hand_gets_the_original_as_cause(
    logs: list[dict[str, Any]],
) -> None:
    def fails_by_hand(error: Exception, context: Any) -> str:
        raise ToolCallFailed(
            "no", tool=context.tool, call_id=context.call.id, error_id=context.error_id
        )

    with pytest.raises(ToolCallFailed) as caught:
        Dispatcher([broken], on_error=fails_by_hand).dispatch(call())
    assert isinstance(caught.value.__cause__, RuntimeError)
    [event] = logs
    assert event["event"] == "tool_call_failed"
    assert event["error_id"] == caught.value.error_id


def test_tool_call_failed_in_a_round_keeps_every_result_and_leaks_nothing(
    logs: list[dict[str, Any]],
) -> None:
    with Dispatcher([broken, fine], on_error=fail) as agent, pytest.raises(ToolCallFailed) as c:
        agent.run([call("fine", "a"), call("broken", "b"), call("fine", "c", 3)])
    round_ = c.value.round
    assert round_ is not None
    assert [r.call_id for r in round_.results] == ["a", "b", "c"]
    assert round_.results[1].error_id == c.value.error_id
    assert not leaked(round_)
    assert SECRET not in str(c.value)
    assert SECRET in str(c.value.__cause__)
    assert [e["event"] for e in mentions(logs)] == ["tool_call_failed"]


def _explodes(result: ToolResult) -> bool:
    raise ZeroDivisionError("predicate bug")


@tool(return_direct=_explodes)
def unlucky(n: int) -> str:
    """Fail with a secret, under a predicate that raises."""
    raise RuntimeError(f"cause {SECRET}")


@tool(return_direct=_explodes)
def lucky(n: int) -> int:
    """Succeed, under a predicate that raises."""
    return n


def test_a_return_direct_predicate_that_raises_answers_do_not_stop_and_is_logged(
    logs: list[dict[str, Any]],
) -> None:
    """The predicate is the application's code, asked on the way out: like a handler that
    raises, it never hides the call's outcome. The result stays as it is (it used to be
    lost: the predicate's error propagated out of dispatch), and its error is logged."""
    agent = Dispatcher([unlucky, lucky])
    failed = agent.dispatch(call("unlucky"))
    assert failed.is_error and not failed.return_direct and failed.error_id is not None
    succeeded = agent.dispatch(call("lucky", "c2", 7))
    assert succeeded.content == "7" and not succeeded.return_direct
    assert [e["event"] for e in logs] == [
        "tool_error_hidden",
        "return_direct_failed",
        "return_direct_failed",
    ]
    _, first, second = logs
    assert (first["tool"], first["call_id"], first["error_id"]) == (
        "unlucky",
        "c1",
        failed.error_id,
    )
    assert (second["tool"], second["call_id"], second["error_id"]) == ("lucky", "c2", None)
    assert first["log_level"] == "error" and "_explodes" in first["predicate"]
    assert isinstance(first["exc_info"], ZeroDivisionError)
    assert [e["event"] for e in mentions(logs)] == ["tool_error_hidden"]  # logged once


async def test_a_raising_predicate_loses_no_result_of_a_round(logs: list[dict[str, Any]]) -> None:
    calls = [call("unlucky", "a"), call("lucky", "b", 2), call("fine", "c", 3)]
    with Dispatcher([unlucky, lucky, fine]) as agent:
        for round_ in (agent.run(calls), await agent.arun(calls)):
            assert [r.call_id for r in round_.results] == ["a", "b", "c"]
            assert [r.content for r in round_.results][1:] == ["2", "3"]
            assert not round_.stop and not leaked(round_)
    assert sum(e["event"] == "return_direct_failed" for e in logs) == 4


def test_control_flow_from_a_predicate_propagates() -> None:
    class Handoff(ControlFlow):
        pass

    def hands_off(result: ToolResult) -> bool:
        raise Handoff

    @tool(return_direct=hands_off)
    def handing(n: int) -> int:
        """Succeed; the predicate hands off."""
        return n

    with pytest.raises(Handoff):
        Dispatcher([handing]).dispatch(call("handing"))


# --- an async handler that is cancelled ---------------------------------------------------


async def test_cancelling_an_async_handler_propagates_and_keeps_the_original_chained(
    logs: list[dict[str, Any]],
) -> None:
    entered = asyncio.Event()

    async def slow_handler(error: Exception, context: Any) -> str:
        entered.set()
        await asyncio.sleep(30)
        return "never"

    agent = Dispatcher([abroken], on_error=slow_handler)
    task = asyncio.create_task(agent.adispatch(call("abroken")))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError) as caught:
        await task
    original = caught.value.__context__
    assert isinstance(original, RuntimeError)
    assert SECRET in str(original)  # not lost: the cancellation carries it
    assert logs == []  # nothing answered, so nothing was logged as handled
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_arun_while_a_handler_awaits_cancels_the_whole_round() -> None:
    entered = asyncio.Event()

    async def slow_handler(error: Exception, context: Any) -> str:
        entered.set()
        await asyncio.sleep(30)
        return "never"

    agent = Dispatcher([abroken, fine], on_error=slow_handler)
    task = asyncio.create_task(agent.arun([call("fine", "a"), call("abroken", "b")]))
    await asyncio.wait_for(entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert asyncio.all_tasks() == {asyncio.current_task()}
    agent.close()


# --- a logging pipeline that raises --------------------------------------------------------


def _raising_processor(logger: Any, method: str, event_dict: Any) -> Any:
    raise RuntimeError("the log pipeline is down")


@pytest.fixture
def broken_structlog() -> Iterator[None]:
    structlog.configure(processors=[_raising_processor])
    try:
        yield
    finally:
        structlog.reset_defaults()


@pytest.mark.usefixtures("broken_structlog")
def test_a_structlog_processor_that_raises_falls_back_to_stdlib_logging(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolguard"):
        result = Dispatcher([broken]).dispatch(call())
    assert result.is_error and result.error_id
    assert not leaked(result)
    [record] = [r for r in caplog.records if r.name == "toolguard"]
    assert record.levelno == logging.WARNING
    assert "tool_error_hidden" in record.getMessage()
    assert result.error_id in record.getMessage()
    assert record.exc_info is not None
    assert isinstance(record.exc_info[1], RuntimeError)
    assert SECRET in str(record.exc_info[1])  # the cause reaches the log, not the model


@pytest.mark.usefixtures("broken_structlog")
def test_a_broken_log_pipeline_never_breaks_a_round_or_a_failed_invocation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolguard"):
        with Dispatcher([broken, fine]) as agent:
            round_ = agent.run([call("fine", "a"), call("broken", "b")])
        with pytest.raises(ToolCallFailed) as caught:
            Dispatcher([broken], on_error=fail).dispatch(call("broken", "c"))
    assert [r.is_error for r in round_.results] == [False, True]
    assert isinstance(caught.value.__cause__, RuntimeError)
    messages = [r.getMessage() for r in caplog.records if r.name == "toolguard"]
    assert any("tool_error_hidden" in m for m in messages)
    assert any("tool_call_failed" in m for m in messages)


# --- results that cannot be serialised ----------------------------------------------------


class SecretRepr:
    def __repr__(self) -> str:
        return f"SecretRepr({SECRET})"


class BrokenModel:
    """Looks like a pydantic model; dumping it fails with a secret."""

    def model_dump(self, **kwargs: Any) -> Any:
        raise ValueError(f"cannot dump {SECRET}")


def _circular() -> list[Any]:
    items: list[Any] = [SECRET]
    items.append(items)
    return items


UNSERIALISABLE: dict[str, Callable[[], Any]] = {
    "object": SecretRepr,
    "nan": lambda: {"score": math.nan, "who": SECRET},
    "infinity": lambda: [math.inf, SECRET],
    "circular": _circular,
    "tuple-key": lambda: {(1, 2): SECRET},
    "model-dump-raises": BrokenModel,
    "mixed-set": lambda: {1, "a", SECRET, SecretRepr()},
}


@pytest.mark.parametrize("kind", list(UNSERIALISABLE))
def test_a_result_that_cannot_be_serialised_is_a_hidden_failure_not_a_repr(
    kind: str, logs: list[dict[str, Any]]
) -> None:
    make = UNSERIALISABLE[kind]

    @tool
    def odd(n: int) -> Any:
        return make()

    result = Dispatcher([odd]).dispatch(call("odd"))
    assert result.is_error and result.error_id
    assert not leaked(result)
    [event] = logs
    assert event["event"] == "tool_error_hidden"
    assert event["error_id"] == result.error_id
    assert isinstance(event["exc_info"], Exception)


@pytest.mark.parametrize("kind", ["object", "nan", "circular"])
async def test_an_unserialisable_foreign_result_is_a_hidden_failure_too(
    kind: str, logs: list[dict[str, Any]]
) -> None:
    agent = Dispatcher([fine])
    value = UNSERIALISABLE[kind]()
    for result in (
        agent.handle_result(call("elsewhere"), value),
        await agent.ahandle_result(call("elsewhere"), value),
    ):
        assert result.is_error and result.error_id
        assert not leaked(result)
    assert [e["event"] for e in logs] == ["tool_error_hidden"] * 2


# --- exceptions that fight back --------------------------------------------------------


class StrRaises(Exception):
    def __str__(self) -> str:
        raise RuntimeError(f"__str__ exploded near {SECRET}")


class MarkerRaises(Exception):
    def message_for_model(self) -> str:
        raise RuntimeError("the marker is broken")


class MarkerNotStr(Exception):
    def message_for_model(self) -> Any:
        return {"text": "not a string"}


class MarkerNone(Exception):
    def message_for_model(self) -> Any:
        return None


@pytest.mark.parametrize("handler", [None, send_exception_message, generic_unless_visible("x")])
def test_an_exception_whose_str_raises_gets_a_safe_answer(
    handler: Any, logs: list[dict[str, Any]]
) -> None:
    @tool
    def nasty(n: int) -> str:
        raise StrRaises(f"payload {SECRET}")

    options = {} if handler is None else {"on_error": handler}
    result = Dispatcher([nasty], **options).dispatch(call("nasty"))
    assert result.is_error
    assert not leaked(result)
    if handler is send_exception_message:
        assert result.content == "StrRaises"  # the type name, as documented
    [event] = logs
    assert event["event"] == "tool_error_hidden"
    assert isinstance(event["exc_info"], StrRaises)
    assert "<exception str() failed>" in rendered(event["exc_info"])


def test_an_exception_whose_str_raises_renders_through_a_real_structlog_pipeline() -> None:
    @tool
    def nasty(n: int) -> str:
        raise StrRaises(f"payload {SECRET}")

    out = io.StringIO()
    structlog.configure(
        processors=[structlog.processors.format_exc_info, structlog.processors.JSONRenderer()],
        logger_factory=structlog.PrintLoggerFactory(file=out),
    )
    try:
        result = Dispatcher([nasty]).dispatch(call("nasty"))
    finally:
        structlog.reset_defaults()
    [line] = out.getvalue().splitlines()
    event = json.loads(line)
    assert event["event"] == "tool_error_hidden"
    assert event["error_id"] == result.error_id
    assert "StrRaises" in event["exception"]


@pytest.mark.parametrize("kind", [MarkerRaises, MarkerNotStr, MarkerNone])
@pytest.mark.parametrize("path", ["dispatch", "adispatch"])
async def test_a_broken_model_message_hides_the_error_reports_it_and_logs_the_cause(
    kind: type[Exception], path: str, logs: list[dict[str, Any]]
) -> None:
    """A marker that raises or answers a non-str counts as unmarked: hidden, with a
    warning naming the tool, and the original logged as the hidden cause."""

    @tool
    def marked(n: int) -> str:
        raise kind(f"internal {SECRET}")

    agent = Dispatcher([marked])
    if path == "dispatch":
        result = agent.dispatch(call("marked"))
    else:
        result = await agent.adispatch(call("marked"))
    assert result.is_error and result.error_id
    assert "(error id " in result.text
    assert not leaked(result)
    [hidden] = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert type(hidden["exc_info"]) is kind
    assert hidden["error_id"] == result.error_id
    warnings = [e for e in logs if e["event"] != "tool_error_hidden"]
    assert warnings, "a broken marker is reported"
    assert all(e["tool"] == "marked" and e["log_level"] == "warning" for e in warnings)


# --- timeouts: what holds for a tool's own TimeoutError -----------------------------------


@pytest.mark.parametrize("path", ["dispatch", "adispatch", "run"])
@pytest.mark.parametrize("is_async", [False, True])
def test_a_tools_own_timeout_error_is_an_ordinary_hidden_failure(
    path: str, is_async: bool, logs: list[dict[str, Any]]
) -> None:
    """Without a timeout policy (and async tools with one), a TimeoutError the tool raises
    itself is hidden and logged as itself, never mistaken for toolguard's ToolTimeout."""

    def raise_it() -> str:
        error = TimeoutError(f"socket timed out talking to {SECRET}")
        error.add_note("a note")
        raise error

    async def araise_it() -> str:
        return raise_it()

    options: dict[str, Any] = {"timeout": 5} if is_async else {}
    own = tool(name="own", check_docstring=False, **options)(araise_it if is_async else raise_it)
    with Dispatcher([own]) as agent:
        the_call = ToolCall(name="own", id="c1")
        if path == "dispatch":
            result = agent.dispatch(the_call)
        elif path == "adispatch":
            result = asyncio.run(agent.adispatch(the_call))
        else:
            [result] = agent.run([the_call]).results
    assert result.is_error and result.error_id
    assert "did not finish" not in result.text
    assert not leaked(result)
    [event] = logs
    assert type(event["exc_info"]) is TimeoutError
    assert event["exc_info"].__notes__ == ["a note"]


# --- interrupts and cancellation ---------------------------------------------------------


def test_a_tool_raising_keyboard_interrupt_stops_a_sync_round_at_once() -> None:
    """The interrupt propagates while the sibling is still stuck, not after it ends."""
    stuck = Stuck()

    @tool
    def interrupts(n: int) -> str:
        raise KeyboardInterrupt

    @tool
    def waits(n: int) -> str:
        stuck.wait()
        return "late"

    agent = Dispatcher([interrupts, waits])
    try:
        with pytest.raises(KeyboardInterrupt):
            agent.run([call("interrupts", "a"), call("waits", "b")])
        assert not stuck.finished.is_set()
    finally:
        stuck.release.set()
        agent.close()


def test_keyboard_interrupt_from_a_single_call_propagates_untouched(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def interrupts(n: int) -> str:
        raise KeyboardInterrupt("stop")

    agent = Dispatcher([interrupts], on_error="never asked")
    with pytest.raises(KeyboardInterrupt, match="stop"):
        agent.dispatch(call("interrupts"))
    with pytest.raises(KeyboardInterrupt, match="stop"):
        agent.run([call("interrupts")])
    assert logs == []


def test_keyboard_interrupt_from_an_async_tool_stops_the_round() -> None:
    """The interrupt propagates while the sibling still sleeps, not after it wakes."""
    finished: list[int] = []

    @tool
    async def interrupts(n: int) -> str:
        raise KeyboardInterrupt

    @tool
    async def sleeps(n: int) -> str:
        await asyncio.sleep(STUCK)
        finished.append(n)
        return "late"

    agent = Dispatcher([interrupts, sleeps])
    with pytest.raises(KeyboardInterrupt):
        agent.run([call("sleeps", "a"), call("interrupts", "b")])
    assert finished == []


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT is POSIX")
@pytest.mark.usefixtures("default_sigint")
def test_ctrl_c_while_run_waits_for_its_pool_stops_it_promptly() -> None:
    """A real SIGINT reaches the main thread waiting on the round's futures.

    (``_thread.interrupt_main()`` only sets a flag that the waiting thread does not
    check until every tool has finished: reported as a core bug, not pinned here.)
    """
    if threading.current_thread() is not threading.main_thread():  # pragma: no cover
        pytest.skip("signals are delivered to the main thread only")
    stuck = Stuck()

    @tool
    def waits(n: int) -> str:
        stuck.wait()
        return "late"

    baseline = frozenset(threading.enumerate())
    agent = Dispatcher([waits])
    sigint = once_main_waits(lambda: os.kill(os.getpid(), signal.SIGINT), given_up=stuck.release)
    try:
        with pytest.raises(KeyboardInterrupt):
            sigint.start()
            agent.run([call("waits", "a"), call("waits", "b"), call("waits", "c")])
        assert not stuck.finished.is_set()  # stopped while its calls were stuck
    finally:
        stuck.release.set()
        sigint.join()
        agent.close()
    assert not [t for t in threading.enumerate() if t not in baseline]


async def test_cancelling_arun_cancels_the_running_tools_and_leaves_no_task() -> None:
    started = asyncio.Event()
    cancelled: list[str] = []

    @tool
    async def sleeps(n: int) -> str:
        started.set()
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(f"tool {n}")
            raise
        return "late"

    agent = Dispatcher([sleeps, fine])
    task = asyncio.create_task(
        agent.arun([call("sleeps", "a", 1), call("fine", "b"), call("sleeps", "c", 3)])
    )
    await asyncio.wait_for(started.wait(), STUCK)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert sorted(cancelled) == ["tool 1", "tool 3"]  # cancelled, not awaited to their end
    assert asyncio.all_tasks() == {asyncio.current_task()}
    agent.close()


async def test_cancelling_arun_does_not_wait_for_an_offloaded_sync_tool() -> None:
    """Threads cannot be cancelled: arun still propagates at once; close() waits for them."""
    stuck = Stuck()

    @tool
    def blocks(n: int) -> str:
        stuck.wait()
        return "late"

    baseline = frozenset(threading.enumerate())
    agent = Dispatcher([blocks, fine])
    task = asyncio.create_task(agent.arun([call("blocks", "a"), call("fine", "b")]))
    await stuck.until_entered()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert not stuck.finished.is_set()  # propagated while the thread was still stuck
    assert asyncio.all_tasks() == {asyncio.current_task()}
    stuck.release.set()
    agent.close()
    assert not [t for t in threading.enumerate() if t not in baseline]


async def test_an_asyncio_timeout_around_arun_cancels_the_tools() -> None:
    cancelled: list[int] = []

    @tool
    async def sleeps(n: int) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(n)
            raise
        return "late"

    agent = Dispatcher([sleeps])
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.1):
            await agent.arun([call("sleeps", str(i), i) for i in range(5)])
    assert sorted(cancelled) == [0, 1, 2, 3, 4]
    assert asyncio.all_tasks() == {asyncio.current_task()}


async def test_cancelling_an_async_tool_with_a_timeout_is_not_a_timeout(
    logs: list[dict[str, Any]],
) -> None:
    """The caller's cancellation propagates; it is not reported as the tool's timeout."""
    started = asyncio.Event()

    @tool(timeout=30)
    async def sleeps(n: int) -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    task = asyncio.create_task(Dispatcher([sleeps]).adispatch(call("sleeps")))
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert logs == []


def test_a_tool_error_with_a_secret_cause_keeps_the_cause_for_the_application(
    logs: list[dict[str, Any]],
) -> None:
    """The model gets the visible message; the cause stays reachable and is logged once."""

    @tool
    def lookup(n: int) -> str:
        try:
            raise KeyError(SECRET)
        except KeyError as error:
            raise ToolError("No such order.") from error

    result = Dispatcher([lookup]).dispatch(call("lookup"))
    assert result.content == "No such order."
    assert not leaked(result)
    [event] = mentions(logs)
    assert event["error_id"] == result.error_id
