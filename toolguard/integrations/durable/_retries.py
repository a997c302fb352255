"""A tool's ``retries`` and ``timeout`` as a durable engine's options."""

from __future__ import annotations

from typing import Final

import attrs

from toolguard import Retry, RetryWithFeedback, ToolError, ToolPolicy

__all__ = ["EngineRetries", "engine_retries", "never_retried"]


@attrs.frozen(kw_only=True)
class EngineRetries:
    """A tool's ``retries`` and ``timeout`` for an engine that retries durably.

    ``attempts`` in all, the first included (1: never retried); waits from
    ``initial_interval`` seconds, times ``backoff_rate`` each time, at most
    ``maximum_interval``; each attempt within ``timeout`` seconds (``None``: the tool
    sets none). ``total``: no retry is asked for once this many seconds have passed
    since the first attempt (that attempt is answered instead). ``notes``: how the
    engine applies what it cannot express itself, in words, for ``explain``.
    """

    attempts: int
    initial_interval: float
    backoff_rate: float
    maximum_interval: float
    timeout: float | None
    total: float | None
    notes: tuple[str, ...] = ()


_NEVER_RETRIED: Final[tuple[type[Exception], ...]] = (ToolError, RetryWithFeedback)


def never_retried() -> tuple[str, ...]:
    """The exception type names an engine must never retry: toolguard's model-visible
    errors, and a handler's decision to fail the invocation."""
    return (*(error_type.__name__ for error_type in _NEVER_RETRIED), "ToolCallFailed")


def engine_retries(policy: ToolPolicy, *, jitter: bool = False) -> EngineRetries:
    """``policy``'s ``retries`` and ``timeout`` (a resolved policy: ``scope.policy(name)``)
    as an engine's options; ``jitter``: whether the engine adds jitter of its own."""
    retry = policy.retries
    timeout = float(policy.timeout) if isinstance(policy.timeout, int | float) else None
    if not isinstance(retry, Retry):
        return EngineRetries(
            attempts=1,
            initial_interval=1.0,
            backoff_rate=2.0,
            maximum_interval=1.0,
            timeout=timeout,
            total=None,
            notes=("retries: none",),
        )
    notes: list[str] = []
    which = retry.on
    if isinstance(which, tuple):
        names = ", ".join(error_type.__name__ for error_type in which)
        notes.append(f"on ({names}): decided where the tool runs, per failure")
    else:
        notes.append("on (a predicate): decided where the tool runs, per failure")
    if retry.total is not None:
        notes.append(f"total {retry.total:g} s: checked where the tool runs, per attempt")
    if retry.jitter and not jitter:
        notes.append(f"jitter {retry.jitter:g} s: the engine has none, dropped")
    return EngineRetries(
        attempts=retry.attempts,
        initial_interval=retry.initial,
        backoff_rate=2.0,
        maximum_interval=max(retry.max_delay, retry.initial),
        timeout=timeout,
        total=retry.total,
        notes=tuple(notes),
    )
