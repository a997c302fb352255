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
from concurrent.futures import Executor
from concurrent.futures import wait as futures_wait
from typing import Any, TypeVar

import tenacity

from toolguard._logging import emit
from toolguard._resilience import Retry
from toolguard.errors import ToolTimeout

__all__ = [
    "Attempts",
    "acall_with_timeout",
    "call_with_timeout",
    "retry_async",
    "retry_sync",
    "timeout_error",
]

T = TypeVar("T")


class Attempts:
    """Counts the attempts of one call (read by the failure log)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 1


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
        emit(
            "debug",
            "tool_retry",
            tool=tool,
            call_id=call_id,
            attempt=state.attempt_number,
            error_type=type(error).__name__,
            wait=round(state.upcoming_sleep, 3),
        )

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
    return tenacity.Retrying(sleep=sleeper, **kwargs)(once)


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

    result: T = await tenacity.AsyncRetrying(sleep=sleeper, **kwargs)(once)
    return result


def timeout_error(tool: str, seconds: float) -> ToolTimeout:
    shown = f"{seconds:g}"
    return ToolTimeout(
        f"The tool '{tool}' did not finish within {shown} s. It may work if you try again "
        "later, or with a smaller request.",
        tool=tool,
        seconds=seconds,
    )


def call_with_timeout(
    executor: Executor,
    function: Callable[..., T],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    *,
    tool: str,
    seconds: float,
) -> T:
    """Run a sync function on a worker thread and stop waiting after ``seconds``.

    The thread cannot be killed: a call that overruns keeps running in the
    background until it returns; its result is discarded.
    """
    future = executor.submit(function, *args, **kwargs)
    # wait() rather than result(timeout=): a TimeoutError the tool raises itself is
    # the same class as the future's own, and must not be taken for an overrun
    done, _ = futures_wait((future,), timeout=seconds)
    if not done:
        future.cancel()  # if it never started, it never will
        raise timeout_error(tool, seconds)
    return future.result()


async def acall_with_timeout(awaitable: Awaitable[T], *, tool: str, seconds: float) -> T:
    """Await with a deadline; an async tool that overruns is cancelled."""
    deadline = asyncio.timeout(seconds)
    try:
        async with deadline:
            return await awaitable
    except TimeoutError:
        if deadline.expired():  # ours, not a TimeoutError the tool raised itself
            raise timeout_error(tool, seconds) from None
        raise
