"""The activity side: the tool runs guarded where it runs, and only the answer crosses.

:func:`tool_activities` makes one activity per tool of a dispatcher (``toolguard.NAME``):
it runs one attempt (``durable.aanswer``) and returns what crossed (a ``Crossing``,
JSON); a failure to retry is raised as a retryable ``ApplicationError`` carrying only
its type and error id. :func:`guard_activity` does the same for an activity function that
is itself the tool (one given to a framework, such as the Agents SDK's
``activity_as_tool``): its value is returned as it is; an answered failure is raised as
a non-retryable ``ApplicationError`` whose message is the model's text and whose
details are the crossing. Nothing raised here chains to the tool's exception.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from datetime import timedelta
from typing import Any, Final, TypeVar, cast

from temporalio import activity
from temporalio.exceptions import ApplicationError

from toolguard import Dispatcher, ToolCall
from toolguard.integrations.durable import (
    CROSSING_VERSION,
    Answered,
    RetryableFailure,
    aanswer,
    aanswer_invocation,
    answer_invocation,
    call_of,
    engine_retries,
    within_total,
)

__all__ = ["PREFIX", "activity_name", "guard_activity", "is_final", "tool_activities"]

F = TypeVar("F", bound=Callable[..., Any])

PREFIX: Final = "toolguard."
"""The activity name of a dispatcher's tool is ``PREFIX + name`` unless told otherwise."""


def activity_name(tool: str, prefix: str = PREFIX) -> str:
    """The name of the activity that runs ``tool``."""
    return f"{prefix}{tool}"


def is_final(dispatcher: Dispatcher, tool: str) -> bool:
    """Whether Temporal will not retry after the current attempt of this activity: the
    last attempt of its retry policy (as Temporal reports it, else as ``tool``'s policy
    compiles it: a test server does not report it), or past ``Retry(total=...)``."""
    info = activity.info()
    retries = engine_retries(dispatcher.scope().policy(tool))
    policy = info.retry_policy
    attempts = policy.maximum_attempts if policy is not None else retries.attempts
    if 0 < attempts <= info.attempt:
        return True
    elapsed = info.current_attempt_scheduled_time - info.scheduled_time
    return not within_total(retries, elapsed / timedelta(seconds=1))


def _retry_error(failure: RetryableFailure) -> ApplicationError:
    return ApplicationError(
        str(failure),
        {
            "toolguard": CROSSING_VERSION,
            "retry": True,
            "error_id": failure.error_id,
            "error_type": failure.error_type,
        },
        type=failure.error_type,
        non_retryable=False,
    )


def _answered_error(answered: Answered) -> ApplicationError:
    crossing = answered.crossing
    return ApplicationError(
        str(crossing.get("content", "")) if not crossing.get("failed") else "ToolCallFailed",
        dict(crossing),
        type=str(crossing.get("error_type") or "Exception"),
        non_retryable=True,
    )


def _tool_activity(dispatcher: Dispatcher, tool: str, name: str) -> Callable[..., Any]:
    async def run(call: dict[str, Any]) -> dict[str, Any]:
        failure: RetryableFailure | None = None
        try:
            crossed = await aanswer(dispatcher, call_of(call), final=is_final(dispatcher, tool))
        except RetryableFailure as retry:
            failure = retry
        if failure is not None:  # raised outside the handler: nothing chained to it
            raise _retry_error(failure)
        return dict(crossed)

    run.__name__ = run.__qualname__ = f"toolguard_{tool}"
    run.__doc__ = f"Run the tool {tool!r} guarded, one attempt; Temporal retries."
    return activity.defn(name=name)(run)


def tool_activities(dispatcher: Dispatcher, *, prefix: str = PREFIX) -> list[Callable[..., Any]]:
    """One activity per tool of ``dispatcher`` (named ``prefix + tool``), to register
    on a worker (``ToolguardPlugin(dispatcher)`` does). Each takes the call as JSON and
    returns what crossed; ``WorkflowTools`` calls them from workflow code."""
    return [
        _tool_activity(dispatcher, tool, activity_name(tool, prefix)) for tool in dispatcher.tools
    ]


def _call(tool: str) -> ToolCall:
    """The call an activity that is itself a tool answers: its input stays Temporal's
    (already in the history); the activity's id is the call's."""
    return ToolCall(name=tool, id=activity.info().activity_id)


def guard_activity(dispatcher: Dispatcher, *, tool: str | None = None) -> Callable[[F], F]:
    """Guard an activity function that is itself a tool (put it under ``@activity.defn``).

    ``tool`` names it for ``dispatcher``'s policy (by default the function's name; list
    it in ``Dispatcher(external_tools=[...])`` for exact-name overrides). Its value is
    returned as it is. A failure the policy retries, before Temporal's last attempt,
    is raised for Temporal to retry carrying only its type and error id; any other is
    answered here (the real exception, its cause logged here once) and raised as a
    non-retryable ``ApplicationError`` with the model's text and the crossing as
    details, which toolguard in workflow code reads back (``ActivityError`` seen through
    to a ``RemoteFailure``). Cancellation and control flow propagate untouched.
    """

    def decorate(function: F) -> F:
        name = tool or function.__name__
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                async def invoke() -> Any:
                    return await function(*args, **kwargs)

                call, final = _call(name), is_final(dispatcher, name)
                try:
                    return await aanswer_invocation(dispatcher, call, invoke, final=final)
                except (RetryableFailure, Answered) as failure:
                    crossed = failure
                raise _error(crossed)  # outside the handler: nothing chained to it

            return cast("F", guarded_async)

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            call, final = _call(name), is_final(dispatcher, name)
            try:
                return answer_invocation(
                    dispatcher, call, lambda: function(*args, **kwargs), final=final
                )
            except (RetryableFailure, Answered) as failure:
                crossed = failure
            raise _error(crossed)  # outside the handler: nothing chained to it

        return cast("F", guarded)

    return decorate


def _error(crossed: RetryableFailure | Answered) -> ApplicationError:
    if isinstance(crossed, RetryableFailure):
        return _retry_error(crossed)
    return _answered_error(crossed)
