"""Temporal's workflow code, as toolguard's core sees it: a ``WorkflowRuntime``.

While workflow code runs (``workflow.in_workflow()``): error ids from
``workflow.random()``, the clock from ``workflow.time()``, nothing logged while
Temporal replays (``workflow.unsafe.is_replaying()``), named sessions kept per workflow
run (the workflow's instance), and an ``ActivityError`` (or ``ChildWorkflowError``) seen
through to its root cause: what toolguard sent across (an answer, the error id of a
retry the engine gave up on), an engine timeout as ``ToolTimeout``, an activity's own
failure as the exception type it names. Registered, with Temporal's own signals as
control flow, when ``toolguard.integrations.temporal`` is imported.
"""

from __future__ import annotations

import builtins
import re
import sys
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any, Final, cast

from temporalio import activity, workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
    TimeoutError,
)

from toolguard import (
    RetryWithFeedback,
    ToolError,
    ToolTimeout,
    register_control_flow,
    register_engine_unit,
    register_workflow_runtime,
)

# Imported in a sandbox without ToolguardPlugin (toolguard re-imported there), toolguard
# imports structlog when it first logs, and structlog imports rich, whose import the
# sandbox refuses: structlog (and rich) come from outside the sandbox instead.
with workflow.unsafe.imports_passed_through():
    import structlog  # noqa: F401 - see above
from toolguard.integrations.durable import (
    Crossing,
    EngineGaveUp,
    call_of,
    crossing_failure,
    is_crossing,
)

__all__ = [
    "RUNTIME",
    "UNIT",
    "TemporalRuntime",
    "TemporalUnit",
    "crossing_of",
    "engine_timeout",
    "find",
    "find_unit",
    "register",
]

_VISIBLE: Final = {"ToolError": ToolError, "RetryWithFeedback": RetryWithFeedback}
"""toolguard's model-visible errors by name: raised in an activity that toolguard did not
guard (a plain function tool of a framework), their message is the model's to read."""


def crossing_of(error: ApplicationError) -> Crossing | None:
    """What toolguard sent across in ``error``'s details, if it did."""
    details = error.details
    if details and is_crossing(details[0]):
        return cast("Crossing", dict(details[0]))
    return None


def engine_timeout(tool: str, timeout: TimeoutError) -> ToolTimeout:
    """Temporal timed an attempt out: the model is told as for toolguard's own timeout."""
    kind = timeout.type.name.lower().replace("_", "-") if timeout.type is not None else "a"
    return ToolTimeout(
        f"The tool '{tool}' did not finish in time (the engine's {kind} timeout). It may "
        "work if you try again later, or with a smaller request.",
        tool=tool,
        seconds=0.0,
    )


_HANDED: Final = re.compile(
    r"^(?P<type>\w+) \(error id (?P<id>[0-9a-f]{8})\), retried by the engine$"
)


def _root(error: ApplicationError) -> Exception:
    """An activity's own failure, not sent by toolguard: an ``EngineRetry`` Temporal gave
    up on (raised in a framework's activity, converted by Temporal); a model-visible
    error of toolguard's (its message was the model's to read); the exception type it
    names when that is a built-in one (its handlers match); else the error itself."""
    if error.type == "EngineRetry":
        handed = _HANDED.match(error.message)
        if handed is not None:
            return EngineGaveUp(handed["type"], handed["id"])
    if error.type in _VISIBLE:
        return _VISIBLE[error.type](error.message)
    found = getattr(builtins, error.type or "", None)
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            rebuilt = found(error.message)
        except Exception:  # noqa: BLE001 - a built-in that takes other arguments
            return error
        rebuilt.__cause__ = error
        return rebuilt
    return error


class TemporalRuntime:
    """The core's view of the Temporal workflow code running now."""

    def __init__(self) -> None:
        self._sessions: weakref.WeakKeyDictionary[Any, dict[Any, Any]] = weakref.WeakKeyDictionary()

    def error_id(self) -> str:
        return f"{workflow.random().getrandbits(32):08x}"

    def now(self) -> float:
        return workflow.time()

    def log(self, emit: Callable[[], None]) -> None:
        if not workflow.unsafe.is_replaying():
            emit()

    def sessions(self) -> MutableMapping[Any, Any]:
        return self._sessions.setdefault(workflow.instance(), {})

    def crossed(self, error: Exception, tool: str) -> Exception:
        if isinstance(error, ActivityError | ChildWorkflowError):
            cause = error.cause
            if isinstance(cause, Exception):
                return self._cause(cause, tool)
            return error
        if isinstance(error, ApplicationError):
            return self._cause(error, tool)
        return error

    def _cause(self, cause: Exception, tool: str) -> Exception:
        if isinstance(cause, TimeoutError):
            return engine_timeout(tool, cause)
        if not isinstance(cause, ApplicationError):
            return cause  # cancelled (control flow), terminated, a server error
        crossed = crossing_of(cause)
        if crossed is None:
            return _root(cause)
        if crossed.get("retry"):  # the engine gave up on a retry toolguard asked for
            return EngineGaveUp(str(crossed.get("error_type")), str(crossed.get("error_id")))
        return crossing_failure(crossed, call_of({"name": tool, "id": crossed.get("call_id")}))


RUNTIME: Final = TemporalRuntime()


def find() -> TemporalRuntime | None:
    """The runtime while Temporal workflow code runs, else ``None``."""
    return RUNTIME if workflow.in_workflow() else None


class TemporalUnit:
    """The activity running now, as the core sees it: one attempt of Temporal's."""

    def attempt(self) -> int:
        return activity.info().attempt

    def maximum(self) -> int | None:
        policy = activity.info().retry_policy  # a test server does not report it: None
        if policy is None:
            return None
        return policy.maximum_attempts or sys.maxsize  # 0: Temporal retries without end

    def elapsed(self) -> float:
        info = activity.info()
        return (info.current_attempt_scheduled_time - info.scheduled_time).total_seconds()

    def times_out(self) -> bool:
        return True  # an activity always has a start-to-close or schedule-to-close timeout


UNIT: Final = TemporalUnit()


def find_unit() -> TemporalUnit | None:
    """The unit while a Temporal activity runs, else ``None``."""
    return UNIT if activity.in_activity() else None


def _cancelled(error: BaseException) -> bool:
    """An activity or child workflow cancelled: the engine's signal, not a failure."""
    return isinstance(error, ActivityError | ChildWorkflowError) and isinstance(
        error.cause, CancelledError
    )


def register() -> None:
    """Register the runtime, and Temporal's own signals as control flow: cancellation,
    and the workflow-task errors (non-determinism, the sandbox's refusals) that must
    fail the task for Temporal to see, never be answered to a model."""
    register_workflow_runtime(find)
    register_engine_unit(find_unit)
    register_control_flow(
        CancelledError,
        workflow.NondeterminismError,
        workflow.ReadOnlyContextError,
        check=_cancelled,
    )
