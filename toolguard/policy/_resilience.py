"""Retries, timeouts and circuit breakers: the policy values (how they run is
``runner._attempts``'s and ``sessions._steps``').

Order of operations for one call::

    validate ─▶ breaker ─▶ attempt (timeout) ─▶ retry? ─▶ handler chain ─▶ result
                  │ open                              │ exhausted: the last error
                  ▼                                   ▼
          ToolUnavailable (visible)           the handler chain, once
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeAlias

import attrs

from toolguard._marks import is_control_flow
from toolguard.errors import InvalidOption, RetryWithFeedback, ToolError, ToolTimeout
from toolguard.policy._options import named_options

__all__ = ["TRANSIENT", "Breaker", "Retry", "to_breaker", "to_retry", "to_timeout"]

#: Retried unless a policy says otherwise: failures that are usually transient.
TRANSIENT: Final[tuple[type[Exception], ...]] = (ConnectionError, TimeoutError)


RetryOn: TypeAlias = "type[Exception] | tuple[type[Exception], ...] | Callable[[Exception], bool]"
"""What ``Retry(on=...)`` accepts: exception classes, or a predicate on the error."""


def _exception_types(value: RetryOn) -> tuple[type[Exception], ...] | Callable[[Exception], bool]:
    if isinstance(value, type):
        value = (value,)
    if isinstance(value, tuple):
        if not value or not all(isinstance(t, type) and issubclass(t, Exception) for t in value):
            raise InvalidOption(f"Retry(on={value!r}): use exception classes or a predicate")
        return value
    if callable(value):
        return value
    raise InvalidOption(f"Retry(on={value!r}): use exception classes or a predicate")


def _positive(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidOption(
            f"{type(instance).__name__}({attribute.name}={value!r}): use a number > 0"
        )


def _at_least_one(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidOption(
            f"{type(instance).__name__}({attribute.name}={value!r}): use an int >= 1"
        )


def _not_negative(instance: Any, attribute: attrs.Attribute[Any], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise InvalidOption(
            f"{type(instance).__name__}({attribute.name}={value!r}): use a number >= 0"
        )


@named_options
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
    jitter: float = attrs.field(default=0.5, validator=_not_negative)
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
    raise InvalidOption(
        f"retries={value!r} is not allowed; use an int >= 0 (retries after the first "
        "attempt), toolguard.Retry(...), or None"
    )


@named_options
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
    raise InvalidOption(f"breaker={value!r} is not allowed; use toolguard.Breaker(...) or None")


def to_timeout(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InvalidOption(f"timeout={value!r} is not allowed; use seconds > 0, or None")
    return float(value)
