"""The activity side: the tool runs guarded where it runs, and only the answer crosses.

Inside an activity, toolguard runs one attempt (Temporal is the engine's unit, registered
by ``_runtime``): a failure the policy retries, before Temporal's last attempt, is raised
as a retryable ``ApplicationError`` carrying only its type and error id (``EngineRetry``);
anything else is answered here.

:func:`tool_activities` makes one activity per tool of a dispatcher (``toolguard.NAME``),
which returns what crossed (a ``Crossing``, JSON). :func:`guard_activity` does the same
for an activity function that is itself the tool (one given to a framework, such as the
Agents SDK's ``activity_as_tool``): its value is returned as it is; an answered failure
is raised as a non-retryable ``ApplicationError`` whose message is the model's text and
whose details are the crossing. Nothing raised here chains to the tool's exception.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from toolguard import Dispatcher, EngineRetry, ToolCall
from toolguard.integrations.durable import (
    CROSSING_VERSION,
    Answered,
    aanswer,
    call_of,
    guard_invocation,
)

__all__ = ["PREFIX", "activity_name", "guard_activity", "tool_activities"]

F = TypeVar("F", bound=Callable[..., Any])

PREFIX: Final = "toolguard."
"""The activity name of a dispatcher's tool is ``PREFIX + name`` unless told otherwise."""


def activity_name(tool: str, prefix: str = PREFIX) -> str:
    """The name of the activity that runs ``tool``."""
    return f"{prefix}{tool}"


def _error(crossed: EngineRetry | Answered) -> ApplicationError:
    """What crosses, raised: a retry for Temporal, or an answer it must not retry."""
    if isinstance(crossed, EngineRetry):
        details = {
            "toolguard": CROSSING_VERSION,
            "retry": True,
            "error_id": crossed.error_id,
            "error_type": crossed.error_type,
        }
        return ApplicationError(str(crossed), details, type=crossed.error_type)
    crossing = crossed.crossing
    message = "ToolCallFailed" if crossing.get("failed") else str(crossing.get("content", ""))
    error_type = str(crossing.get("error_type") or "Exception")
    return ApplicationError(message, dict(crossing), type=error_type, non_retryable=True)


def _tool_activity(dispatcher: Dispatcher, tool: str, name: str) -> Callable[..., Any]:
    async def run(call: dict[str, Any]) -> dict[str, Any]:
        try:
            return dict(await aanswer(dispatcher, call_of(call)))
        except EngineRetry as retry:
            handed = retry
        raise _error(handed)  # outside the handler: nothing chained to it

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
    returned as it is. A failure the policy retries, before Temporal's last attempt, is
    raised for Temporal to retry carrying only its type and error id; any other is
    answered here (the real exception, its cause logged here once) and raised as a
    non-retryable ``ApplicationError`` with the model's text and the crossing as
    details, which toolguard in workflow code reads back (``ActivityError`` seen through
    to a ``RemoteFailure``). Cancellation and control flow propagate untouched. Give the
    activity the options its policy compiles to (``activity_options``).
    """

    def decorate(function: F) -> F:
        return guard_invocation(dispatcher, function, tool or function.__name__, _call, _error)

    return decorate
