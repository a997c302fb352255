"""Running one attempt and its retries: timeouts on threads and tasks, tenacity.

Retries use ``tenacity`` underneath, and only after a first attempt failed with a
retryable error: a retry policy that is configured but unused costs nothing on
the success path.
"""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import wait as futures_wait
from typing import Any, Final, TypeVar

import tenacity

from toolguard import _engine
from toolguard._logging import emit, new_error_id
from toolguard.errors import EngineRetry, ToolTimeout
from toolguard.policy._resilience import Retry
from toolguard.runner._pools import Pools, abox, unbox
from toolguard.telemetry import _spans as _telemetry

__all__ = [
    "GRACE",
    "Attempts",
    "acall_with_timeout",
    "athread_with_timeout",
    "call_with_timeout",
    "to_engine",
    "no_running_loop",
    "retry_async",
    "retry_sync",
    "run_loop",
    "timeout_error",
]

T = TypeVar("T")

GRACE: Final = 0.05
"""Seconds past its deadline an async tool run from the sync path (on a thread with
its own event loop) is given to stop once cancelled, before it is abandoned."""


class Attempts:
    """The attempts of one call: how many ran (read by the failure log), and the last
    failed one's error while the call goes on (logged if the call is stopped then)."""

    __slots__ = ("call_id", "count", "pending", "tool")

    def __init__(self, tool: str, call_id: str | None) -> None:
        self.tool = tool
        self.call_id = call_id
        self.count = 1
        self.pending: Exception | None = None

    def abandoned(self) -> None:
        """The call was stopped from outside (cancelled, interrupted) after an attempt
        failed: that failure's cause is answered nowhere, so it is logged here, once."""
        error, self.pending = self.pending, None
        if error is not None:
            emit(
                "debug",
                "tool_call_cancelled",
                tool=self.tool,
                call_id=self.call_id,
                attempt=self.count,
                error_type=type(error).__name__,
                exc_info=error,
            )

    def lost(self, outcome: BaseException | None) -> None:
        """An attempt that ended as its caller was stopped: a failure is logged."""
        if isinstance(outcome, Exception):
            self.pending = outcome
            self.abandoned()


def _tenacity_kwargs(retry: Retry, tool: str, call_id: str | None, counter: Attempts) -> Any:
    clock = retry.clock or time.monotonic
    started = clock()

    def stop(state: tenacity.RetryCallState) -> bool:
        if state.attempt_number >= retry.attempts:
            return True
        return retry.total is not None and clock() - started >= retry.total

    def wait(state: tenacity.RetryCallState) -> float:
        return retry.delay(state.attempt_number) + random.uniform(0, retry.jitter)

    def before_sleep(state: tenacity.RetryCallState) -> None:
        error = state.outcome.exception() if state.outcome else None
        counter.pending = error if isinstance(error, Exception) else None
        wait = round(state.upcoming_sleep, 3)
        emit(
            "debug",
            "tool_retry",
            tool=tool,
            call_id=call_id,
            attempt=state.attempt_number,
            error_type=type(error).__name__,
            wait=wait,
        )
        _telemetry.retry(state.attempt_number, error, wait)  # an event of the call's span, if any

    def after(state: tenacity.RetryCallState) -> None:
        counter.count = state.attempt_number

    return {
        "stop": stop,
        "wait": wait,
        "retry": tenacity.retry_if_exception(retry.retryable),
        "before_sleep": before_sleep,
        "after": after,
        "reraise": True,
    }


def to_engine(retry: Retry, error: Exception, *, tool: str, call_id: str | None) -> None:
    """Where a durable engine retries, a failure ``retry`` retries goes to the engine;
    elsewhere this returns (toolguard retries). Called while ``error`` is handled.

    In workflow code, ``error`` is re-raised (the engine retries what it runs). In one of
    the engine's units (an activity, a step), on its last attempt ``error`` is
    re-raised, to be answered there; before it, :class:`EngineRetry` is raised for the
    engine, the cause logged here at DEBUG under its error id, nothing of the failure
    chained to it.
    """
    if _engine.current() is not None:
        raise error
    unit = _engine.unit()
    if unit is None:
        return
    maximum = unit.maximum() or retry.attempts
    attempt = unit.attempt()
    if attempt >= maximum or (retry.total is not None and unit.elapsed() >= retry.total):
        raise error
    error_id = new_error_id()
    emit(
        "debug",
        "tool_retry",
        tool=tool,
        call_id=call_id,
        attempt=attempt,
        error_type=type(error).__name__,
        error_id=error_id,
        retried_by="engine",
        exc_info=error,
    )
    raise EngineRetry(type(error).__name__, error_id) from None


def retry_sync(
    retry: Retry,
    first_error: Exception,
    attempt: Callable[[], T],
    *,
    tool: str,
    call_id: str | None,
    counter: Attempts,
) -> T:
    """Carry on after a first failed attempt: tenacity replays it, then retries."""
    replay: list[Exception] = [first_error]

    def once() -> T:
        if replay:
            raise replay.pop()
        return attempt()

    kwargs = _tenacity_kwargs(retry, tool, call_id, counter)
    sleeper = retry.sleep or time.sleep
    try:
        return tenacity.Retrying(sleep=sleeper, **kwargs)(once)
    except Exception:
        raise  # the last attempt's failure: answered and logged by the caller
    except BaseException:
        counter.abandoned()
        raise


async def retry_async(
    retry: Retry,
    first_error: Exception,
    attempt: Callable[[], Awaitable[T]],
    *,
    tool: str,
    call_id: str | None,
    counter: Attempts,
) -> T:
    """Async :func:`retry_sync`."""
    replay: list[Exception] = [first_error]

    async def once() -> T:
        if replay:
            raise replay.pop()
        return await attempt()

    kwargs = _tenacity_kwargs(retry, tool, call_id, counter)
    sleeper: Any = asyncio.sleep
    if retry.sleep is not None:
        injected = retry.sleep

        async def sleeper(seconds: float) -> None:
            outcome = injected(seconds)
            if inspect.isawaitable(outcome):
                await outcome

    try:
        result: T = await tenacity.AsyncRetrying(sleep=sleeper, **kwargs)(once)
    except Exception:
        raise  # the last attempt's failure: answered and logged by the caller
    except BaseException:  # cancelled while waiting to retry, or during a retry
        counter.abandoned()
        raise
    return result


def timeout_error(tool: str, seconds: float) -> ToolTimeout:
    shown = f"{seconds:g}"
    return ToolTimeout(
        f"The tool '{tool}' did not finish within {shown} s. It may work if you try again "
        "later, or with a smaller request.",
        tool=tool,
        seconds=seconds,
    )


def call_with_timeout(pools: Pools, function: Callable[[], T], *, tool: str, seconds: float) -> T:
    """Run a sync function on a thread of its own and stop waiting after ``seconds``.

    The thread cannot be killed: a call that overruns keeps running in the
    background until it returns (its result is discarded), counted against the tool
    by ``pools`` until then.
    """
    attempt = pools.start(tool, seconds, function)
    # wait() rather than result(timeout=): a TimeoutError the tool raises itself is
    # the same class as the future's own, and must not be taken for an overrun
    done, _ = futures_wait((attempt,), timeout=seconds)
    if not done:
        pools.abandon(tool, seconds, attempt)
        raise timeout_error(tool, seconds)
    return unbox(attempt.result())  # type: ignore[no-any-return]  # a boxed outcome is untyped


async def acall_with_timeout(
    pools: Pools | None,
    awaitable: Awaitable[T],
    *,
    tool: str,
    seconds: float,
    counter: Attempts | None = None,
) -> T:
    """Await with a deadline, answered at the deadline whatever the tool does.

    The tool runs as a task of its own. At the deadline it is cancelled; a tool that
    does not stop (it caught the cancellation) is left running, counted against the
    tool by ``pools`` and logged (``pools=None``: the caller counts it). Cancelling
    the caller cancels the tool too; a failure the tool had just raised then is
    logged through ``counter``.
    """
    if pools is not None:
        pools.admit(tool, seconds)
    task = asyncio.ensure_future(awaitable)
    try:
        done, _ = await asyncio.wait((task,), timeout=seconds)
    except BaseException:  # the caller was cancelled (or interrupted): so is the tool
        if task.done() and not task.cancelled():  # it had just ended: its outcome is read
            if counter is not None:
                counter.lost(task.exception())
            else:
                task.exception()
        task.cancel()
        if pools is not None:  # one that will not stop is counted, after a moment
            asyncio.get_running_loop().call_later(
                GRACE, pools.abandon_if_running, tool, seconds, task
            )
        raise
    if done:
        return task.result()  # the tool's own exceptions as raised, its TimeoutError too
    task.cancel()
    await asyncio.sleep(0)  # one turn of the loop: a well-behaved tool stops here
    if pools is not None:
        pools.abandon_if_running(tool, seconds, task)
    raise timeout_error(tool, seconds)


async def athread_with_timeout(
    pools: Pools,
    function: Callable[[], T],
    *,
    tool: str,
    seconds: float,
    counter: Attempts | None = None,
) -> T:
    """:func:`call_with_timeout` for an event loop: the loop is never blocked."""
    attempt = pools.start(tool, seconds, function)
    try:
        done, _ = await asyncio.wait((asyncio.wrap_future(attempt),), timeout=seconds)
    except BaseException:  # the caller was cancelled: the thread runs on, counted
        if not attempt.done():
            pools.abandon(tool, seconds, attempt)
        elif counter is not None and not attempt.cancelled():  # it had just ended
            ok, outcome = attempt.result()
            counter.lost(None if ok else outcome)
        raise
    if not done:
        pools.abandon(tool, seconds, attempt)
        raise timeout_error(tool, seconds)
    return unbox(attempt.result())  # type: ignore[no-any-return]  # a boxed outcome is untyped


def run_loop(awaitable: Awaitable[T]) -> T:
    """``asyncio.run(awaitable)``, with what it raised carried out as a value.

    On the main thread ``asyncio.run`` sets a SIGINT handler that holds its main task,
    and on the way out it formats that handler, the task and the task's exception with
    ``repr()``. An exception whose ``__repr__`` raises (a hostile or careless tool's)
    would then replace the tool's failure and leave the handler installed for the rest
    of the process. The main task here never fails with an ``Exception``: it returns it.
    """
    return unbox(asyncio.run(abox(awaitable)))  # type: ignore[no-any-return]  # untyped box


def no_running_loop(what: str) -> None:
    """Refuse to start an event loop on a thread that is already running one."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{what} needs an event loop, and this thread is already running one; "
        "use await adispatch()/arun() instead"
    )
