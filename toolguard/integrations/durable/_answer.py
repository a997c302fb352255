"""Where the tool runs (an activity, a step): one attempt, answered there or retried.

:func:`aanswer` (and :func:`answer`) runs one attempt through the dispatcher with
toolguard's own retries (and, unless asked to keep it, its timeout) off: the engine's
apply. A call-level observer, asked first, sees the real exception and declines, so the
tool's own chain answers it there (a hidden cause logged there, once); or, for a failure
the tool's policy retries on an attempt that is not the engine's last, it stops the
chain: :class:`RetryableFailure` is raised for the engine to retry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import attrs

from toolguard import (
    Dispatcher,
    Retry,
    RetryWithFeedback,
    ToolCall,
    ToolCallFailed,
    ToolPolicy,
    ToolResult,
)
from toolguard.errors import ControlFlow
from toolguard.integrations.durable._crossing import CROSSING_VERSION, Crossing, blocks

__all__ = [
    "Answered",
    "RetryableFailure",
    "aanswer",
    "aanswer_invocation",
    "answer",
    "answer_invocation",
]

T = TypeVar("T")


class RetryableFailure(Exception):
    """A failure the engine retries: its exception type's name and error id, nothing of
    its text (the engine persists and logs what an attempt raises)."""

    def __init__(self, error_type: str, error_id: str) -> None:
        super().__init__(f"{error_type} (error id {error_id}), retried by the engine")
        self.error_type = error_type
        self.error_id = error_id

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by an engine's journal (DBOS)
        return (type(self), (self.error_type, self.error_id))


class Answered(Exception):
    """A failure answered where the tool ran, by a unit whose return value is its
    framework's (a tool written as an activity): it crosses raised, carrying only the
    :data:`~toolguard.integrations.durable.Crossing` (the answer, the error id)."""

    def __init__(self, crossing: Crossing) -> None:
        super().__init__(str(crossing.get("content", "")))
        self.crossing = crossing

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.crossing,))


class _Retry(ControlFlow):
    """Raised by the observer to stop the chain: the engine retries this failure."""

    def __init__(self, error: Exception, error_id: str) -> None:
        super().__init__(type(error).__name__)
        self.error = error
        self.error_id = error_id


@attrs.define
class _Observer:
    """Asked first (the call level), on both chains: sees the real exception, then
    declines (the tool's own chain answers), or stops the chain for the engine."""

    retries: Retry | None
    final: bool
    error: Exception | None = None
    message: str | None = None

    def __call__(self, error: Exception, context: Any) -> str | None:
        message: str | None = context.model_message
        self.error, self.message = error, message
        if isinstance(error, RetryWithFeedback):
            return message  # answered in the workflow, where its budget is kept
        if not self.final and self.retries is not None and self.retries.retryable(error):
            raise _Retry(error, context.error_id)
        return None


def _observer(dispatcher: Dispatcher, call: ToolCall, final: bool) -> _Observer:
    retries = dispatcher.scope().policy(str(call.name)).retries
    return _Observer(retries if isinstance(retries, Retry) else None, final)


def _policy(observer: _Observer, keep_timeout: bool) -> ToolPolicy:
    if keep_timeout:
        return ToolPolicy(retries=None, on_error=observer, on_invalid_call=observer)
    return ToolPolicy(retries=None, timeout=None, on_error=observer, on_invalid_call=observer)


def answer(
    dispatcher: Dispatcher,
    call: ToolCall,
    *,
    final: bool,
    keep_timeout: bool = False,
    context: Any = None,
) -> Crossing:
    """One attempt of ``call`` where the tool runs, answered there (see the module).

    ``final``: the engine will not retry after this attempt (its last, or no retries).
    ``keep_timeout``: the tool's own timeout applies here (an engine that cannot time
    this unit out); else the engine's does. Raises :class:`RetryableFailure` for the
    engine to retry.
    """
    observer = _observer(dispatcher, call, final)
    retry: _Retry | None = None
    try:
        result = dispatcher.dispatch(call, policy=_policy(observer, keep_timeout), context=context)
    except _Retry as stopped:
        retry = stopped
    except ToolCallFailed as failed:
        return _failed(failed)
    if retry is not None:  # raised here, outside the handler: nothing chained to it
        raise _retryable(call, retry)
    return _crossing(result, observer)


async def aanswer(
    dispatcher: Dispatcher,
    call: ToolCall,
    *,
    final: bool,
    keep_timeout: bool = False,
    context: Any = None,
) -> Crossing:
    """Async :func:`answer`: an async tool is awaited, a sync one runs on the pool."""
    observer = _observer(dispatcher, call, final)
    retry: _Retry | None = None
    try:
        result = await dispatcher.adispatch(
            call, policy=_policy(observer, keep_timeout), context=context, offload=True
        )
    except _Retry as stopped:
        retry = stopped
    except ToolCallFailed as failed:
        return _failed(failed)
    if retry is not None:  # raised here, outside the handler: nothing chained to it
        raise _retryable(call, retry)
    return _crossing(result, observer)


def _retryable(call: ToolCall, retry: _Retry) -> RetryableFailure:
    """The failure the engine retries; its cause logged here, at DEBUG, under its id."""
    try:
        import structlog

        structlog.get_logger("toolguard").debug(
            "tool_retry",
            tool=str(call.name),
            call_id=call.id,
            error_id=retry.error_id,
            error_type=type(retry.error).__name__,
            retried_by="engine",
            exc_info=retry.error,
        )
    except Exception:  # noqa: BLE001 - the application's logging never breaks a call
        pass
    return RetryableFailure(type(retry.error).__name__, retry.error_id)


def _failed(failed: ToolCallFailed) -> Crossing:
    cause = failed.__cause__
    return {
        "toolguard": CROSSING_VERSION,
        "failed": True,
        "error_id": failed.error_id,
        "error_type": type(cause if cause is not None else failed).__name__,
        "call_id": failed.call_id,
    }


def _crossing(result: ToolResult, observer: _Observer) -> Crossing:
    if not result.is_error:
        return {
            "toolguard": CROSSING_VERSION,
            "content": blocks(result.content),
            "truncated": result.truncated,
        }
    error = observer.error
    return {
        "toolguard": CROSSING_VERSION,
        "content": blocks(result.content),
        "error_kind": result.error_kind or "hidden",
        "error_id": result.error_id,
        "error_type": type(error).__name__ if error is not None else "Exception",
        "message": observer.message,
    }


# --- a framework's own unit (an activity function that is the tool) ------------------------


def answer_invocation(
    dispatcher: Dispatcher, call: ToolCall, invoke: Callable[[], T], *, final: bool
) -> T:
    """``invoke()`` (a tool that is its own unit, under ``dispatcher``'s policy for its
    name), once: its value as it is, or its failure answered here and raised as
    :class:`Answered`, or :class:`RetryableFailure` for the engine to retry. Control
    flow and ``BaseException`` propagate untouched."""
    try:
        return invoke()
    except Exception as error:  # noqa: BLE001 - every failure is answered or retried
        caught = error
    observer = _observer(dispatcher, call, final)
    retry: _Retry | None = None
    try:
        result = dispatcher.scope().failed(call, caught, policy=_policy(observer, True))
    except _Retry as stopped:
        retry = stopped
    except ToolCallFailed as failed:
        raise Answered(_failed(failed)) from None
    if retry is not None:
        raise _retryable(call, retry)
    raise Answered(_crossing(result, observer))


async def aanswer_invocation(
    dispatcher: Dispatcher, call: ToolCall, invoke: Callable[[], Awaitable[T]], *, final: bool
) -> T:
    """Async :func:`answer_invocation`."""
    try:
        return await invoke()
    except Exception as error:  # noqa: BLE001 - every failure is answered or retried
        caught = error
    observer = _observer(dispatcher, call, final)
    retry: _Retry | None = None
    try:
        result = await dispatcher.scope().afailed(call, caught, policy=_policy(observer, True))
    except _Retry as stopped:
        retry = stopped
    except ToolCallFailed as failed:
        raise Answered(_failed(failed)) from None
    if retry is not None:
        raise _retryable(call, retry)
    raise Answered(_crossing(result, observer))
