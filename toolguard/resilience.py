"""Retries, timeouts and circuit breakers: the policy values and how they run.

Order of operations for one call::

    validate ─▶ breaker ─▶ attempt (timeout) ─▶ retry? ─▶ handler chain ─▶ result
                  │ open                              │ exhausted: the last error
                  ▼                                   ▼
          ToolUnavailable (visible)           the handler chain, once

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
from typing import Any, Final, TypeVar

import attrs
import tenacity

from toolguard._logging import emit
from toolguard.errors import (
    RetryWithFeedback,
    ToolError,
    ToolTimeout,
    is_control_flow,
)

__all__ = ["Breaker", "Retry"]

T = TypeVar("T")

#: Retried unless a policy says otherwise: failures that are usually transient.
TRANSIENT: Final[tuple[type[Exception], ...]] = (ConnectionError, TimeoutError)


def _exception_types(value: Any) -> tuple[type[Exception], ...] | Callable[[Exception], bool]:
    if isinstance(value, type):
        value = (value,)
    if isinstance(value, tuple):
        if not value or not all(isinstance(t, type) and issubclass(t, Exception) for t in value):
            raise ValueError(f"Retry(on={value!r}): use exception classes or a predicate")
        return value
    if callable(value):
        return value  # type: ignore[no-any-return]
    raise ValueError(f"Retry(on={value!r}): use exception classes or a predicate")


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"{type(instance).__name__}({attribute.name}={value!r}): use a number > 0")


def _at_least_one(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{type(instance).__name__}({attribute.name}={value!r}): use an int >= 1")


@attrs.frozen(kw_only=True)
class Retry:
    """Retry transient failures: ``Retry(attempts=3, on=(ConnectionError,))``.

    * ``attempts``: total attempts, the first included (``retries=2`` on a policy is
      ``Retry(attempts=3)``).
    * ``on``: retryable exception types, or a predicate ``(error) -> bool``. Never
      retried whatever it says: control flow, ``BaseException``s, model-visible
      errors (``ToolError``, ``RetryWithFeedback``), and timeouts unless ``on``
      names ``TimeoutError``/``ToolTimeout`` explicitly (the default does).
    * backoff: exponential from ``initial`` seconds, doubling, capped at ``max_delay``,
      plus up to ``jitter`` seconds of random jitter.
    * ``total``: stop retrying once this many seconds have passed since the first
      attempt started (each attempt's own limit is the policy's ``timeout``).
    * ``sleep`` and ``clock`` replace ``time.sleep`` and ``time.monotonic`` (tests).
    """

    attempts: int = attrs.field(default=3, validator=_at_least_one)
    on: tuple[type[Exception], ...] | Callable[[Exception], bool] = attrs.field(
        default=TRANSIENT, converter=_exception_types
    )
    initial: float = attrs.field(default=0.5, validator=_positive)
    max_delay: float = attrs.field(default=10.0, validator=_positive)
    jitter: float = attrs.field(default=0.5, validator=attrs.validators.ge(0))
    total: float | None = attrs.field(default=None, validator=_positive)
    sleep: Callable[[float], Any] | None = attrs.field(default=None, eq=False, repr=False)
    clock: Callable[[], float] | None = attrs.field(default=None, eq=False, repr=False)

    def retryable(self, error: BaseException) -> bool:
        if is_control_flow(error) or not isinstance(error, Exception):
            return False
        if isinstance(error, RetryWithFeedback):
            return False
        if isinstance(error, ToolError) and not isinstance(error, ToolTimeout):
            return False
        if isinstance(self.on, tuple):
            return isinstance(error, self.on)
        return bool(self.on(error))

    def delay(self, attempt: int) -> float:
        """The wait after failed attempt number ``attempt`` (1-based), before jitter."""
        return float(min(self.max_delay, self.initial * 2 ** (attempt - 1)))


def to_retry(value: Any) -> Retry | None:
    """What ``retries=`` accepts: an int (retries after the first attempt), a
    :class:`Retry`, or ``None`` (explicitly no retries)."""
    if value is None or isinstance(value, Retry):
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return None if value == 0 else Retry(attempts=value + 1)
    raise ValueError(
        f"retries={value!r} is not allowed; use an int >= 0 (retries after the first "
        "attempt), toolguard.Retry(...), or None"
    )


@attrs.frozen(kw_only=True)
class Breaker:
    """Open after ``failures`` consecutive failures; stay open for ``cooldown`` seconds.

    While open, calls are not run: the model is told the tool is unavailable. After
    the cool-down one trial call runs; success closes the breaker, failure re-opens
    it. Breakers count per tool per :class:`~toolguard.Session`. What counts as a
    failure: an unmarked exception or a timeout (not a model-visible ``ToolError``,
    not bad arguments).
    """

    failures: int = attrs.field(default=5, validator=_at_least_one)
    cooldown: float = attrs.field(default=60.0, validator=_positive)


def to_breaker(value: Any) -> Breaker | None:
    if value is None or isinstance(value, Breaker):
        return value
    raise ValueError(f"breaker={value!r} is not allowed; use toolguard.Breaker(...) or None")


def to_timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"timeout={value!r} is not allowed; use seconds > 0, or None")
    return float(value)


# --- running -----------------------------------------------------------------------


class _Attempts:
    """Counts the attempts of one call (read by the failure log)."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 1


def _tenacity_kwargs(retry: Retry, tool: str, call_id: str | None, counter: _Attempts) -> Any:
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
    counter: _Attempts,
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
    counter: _Attempts,
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
