"""Where the tool runs (an activity, a step): one attempt, answered there or retried.

Inside an engine's unit (registered by the engine's integration: ``EngineUnit``) the core
runs one attempt and raises ``EngineRetry`` for a failure the engine is to retry (its type
and an error id, nothing else). Anything else is answered here: :func:`aanswer` (and
:func:`answer`) runs the call through the dispatcher; a call-level observer, asked first,
sees the real exception and declines, so the tool's own chain answers it here (a hidden
cause logged here, once), and the answer crosses as a :data:`Crossing`. For a tool that
is its framework's own unit, :func:`aanswer_invocation` keeps its value as it is and
raises its answered failure as :class:`Answered`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import attrs

from toolguard import (
    Dispatcher,
    EngineRetry,
    RetryWithFeedback,
    ToolCall,
    ToolCallFailed,
    ToolPolicy,
    ToolResult,
)
from toolguard.errors import is_control_flow
from toolguard.integrations.durable._crossing import CROSSING_VERSION, Crossing, blocks

__all__ = [
    "Answered",
    "EngineGaveUp",
    "aanswer",
    "aanswer_invocation",
    "answer",
    "answer_invocation",
    "guard_invocation",
]

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


class Answered(Exception):
    """A failure answered where the tool ran, by a unit whose return value is its
    framework's (a tool written as an activity): it crosses raised, carrying only the
    :data:`~toolguard.integrations.durable.Crossing` (the answer, the error id)."""

    def __init__(self, crossing: Crossing) -> None:
        super().__init__(str(crossing.get("content", "")))
        self.crossing = crossing

    def __reduce__(self) -> tuple[Any, ...]:  # pickled by an engine's journal (DBOS)
        return (type(self), (self.crossing,))


class EngineGaveUp(Exception):
    """In workflow code: the engine stopped retrying a failure handed to it
    (``EngineRetry``) before an attempt answered it. A hidden failure, answered there;
    ``error_id`` is the id its last cause was logged under, at DEBUG, where it ran."""

    def __init__(self, error_type: str, error_id: str) -> None:
        super().__init__(f"{error_type} (error id {error_id}): the engine stopped retrying it")
        self.error_type = error_type
        self.error_id = error_id


@attrs.define
class _Observer:
    """Asked first (the call level), on both chains: keeps the real exception's type and
    model-visible message, then declines: the tool's own chain answers."""

    error: Exception | None = None
    message: str | None = None

    def __call__(self, error: Exception, context: Any) -> str | None:
        message: str | None = context.model_message
        self.error, self.message = error, message
        if isinstance(error, RetryWithFeedback):
            return message  # answered in the workflow, where its budget is kept
        return None


def _policy(observer: _Observer) -> ToolPolicy:
    return ToolPolicy(on_error=observer, on_invalid_call=observer)


def answer(dispatcher: Dispatcher, call: ToolCall, *, context: Any = None) -> Crossing:
    """``call`` where the tool runs, answered there (see the module); ``EngineRetry``
    propagates for the engine."""
    observer = _Observer()
    try:
        result = dispatcher.dispatch(call, policy=_policy(observer), context=context)
    except ToolCallFailed as failed:
        return _failed(failed)
    return _crossing(result, observer)


async def aanswer(dispatcher: Dispatcher, call: ToolCall, *, context: Any = None) -> Crossing:
    """Async :func:`answer`: an async tool is awaited, a sync one runs on the pool."""
    observer = _Observer()
    try:
        result = await dispatcher.adispatch(
            call, policy=_policy(observer), context=context, offload=True
        )
    except ToolCallFailed as failed:
        return _failed(failed)
    return _crossing(result, observer)


def answer_invocation(dispatcher: Dispatcher, call: ToolCall, invoke: Callable[[], T]) -> T:
    """``invoke()`` (a tool that is its own unit, under ``dispatcher``'s policy for its
    name), one attempt: its value as it is, or its failure answered here and raised as
    :class:`Answered`; ``EngineRetry``, control flow and ``BaseException`` propagate."""
    scope = dispatcher.scope()
    try:
        return scope.run(call, invoke)
    except ToolCallFailed as failed:
        crossed: Crossing | None = _failed(failed)
    except Exception as error:
        if not _answerable(error):
            raise
        crossed, caught = None, error
    if crossed is None:
        observer = _Observer()
        try:
            crossed = _crossing(scope.failed(call, caught, policy=_policy(observer)), observer)
        except ToolCallFailed as failed:
            crossed = _failed(failed)
    raise Answered(crossed)


async def aanswer_invocation(
    dispatcher: Dispatcher, call: ToolCall, invoke: Callable[[], Awaitable[T]]
) -> T:
    """Async :func:`answer_invocation`."""
    scope = dispatcher.scope()
    try:
        return await scope.arun(call, invoke)
    except ToolCallFailed as failed:
        crossed: Crossing | None = _failed(failed)
    except Exception as error:
        if not _answerable(error):
            raise
        crossed, caught = None, error
    if crossed is None:
        observer = _Observer()
        try:
            result = await scope.afailed(call, caught, policy=_policy(observer))
            crossed = _crossing(result, observer)
        except ToolCallFailed as failed:
            crossed = _failed(failed)
    raise Answered(crossed)


def guard_invocation(
    dispatcher: Dispatcher,
    function: F,
    name: str,
    call: Callable[[str], ToolCall],
    raised: Callable[[EngineRetry | Answered], Exception] | None = None,
) -> F:
    """``function`` (sync or async), a tool that is its own unit, guarded: each call is
    :func:`answer_invocation` (or :func:`aanswer_invocation`) of ``call(name)``, the
    engine's call for this unit. What crosses raised (``EngineRetry``, :class:`Answered`)
    propagates as it is, or as ``raised(it)``, the engine's own error, raised outside
    the handler so that nothing chains to it."""
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def guarded_async(*args: Any, **kwargs: Any) -> Any:
            async def invoke() -> Any:
                return await function(*args, **kwargs)

            try:
                return await aanswer_invocation(dispatcher, call(name), invoke)
            except (EngineRetry, Answered) as failure:
                if raised is None:
                    raise
                crossed = failure
            raise raised(crossed)

        return cast("F", guarded_async)

    @functools.wraps(function)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return answer_invocation(dispatcher, call(name), lambda: function(*args, **kwargs))
        except (EngineRetry, Answered) as failure:
            if raised is None:
                raise
            crossed = failure
        raise raised(crossed)

    return cast("F", guarded)


def _answerable(error: Exception) -> bool:
    return not is_control_flow(error)


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
