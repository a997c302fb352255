"""The step side: the tool runs guarded in a DBOS step, and only the answer is recorded.

:func:`step_options` compiles a tool's policy into DBOS's step options (one retry owner:
``max_attempts``, ``interval_seconds``, ``backoff_rate``, ``timeout_seconds`` for an async
step, and ``should_retry``, which retries only what toolguard asked to be retried). The
step itself (:func:`run_tool`, :func:`arun_tool`) runs one attempt (``durable.answer``):
a failure to retry is raised as a ``RetryableFailure`` (its type and error id; DBOS
logs it and pickles it into the journal), anything else is answered in the step and its
answer is the step's recorded output. :func:`guard_step` does the same for a function
that is itself a step given to a framework: its value as it is, its answered failure
raised as ``Answered``.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, Final, TypeVar, cast

from dbos import DBOS, StepOptions
from dbos import error as dbos_errors

from toolguard import Dispatcher, Retry, ToolCall, ToolTimeout
from toolguard.integrations.durable import (
    Crossing,
    RetryableFailure,
    aanswer,
    aanswer_invocation,
    answer,
    answer_invocation,
    call_of,
    engine_retries,
    within_total,
)

__all__ = [
    "PREFIX",
    "arun_tool",
    "compiled",
    "guard_step",
    "is_final",
    "run_tool",
    "should_retry",
    "step_options",
]

F = TypeVar("F", bound=Callable[..., Any])

PREFIX: Final = "toolguard."
"""A dispatcher's tool runs as the step ``PREFIX + name`` unless told otherwise."""

_MAX_INTERVAL: Final = 3600.0  # DBOS caps the wait between attempts at an hour

_started: dict[tuple[str, int], float] = {}  # (workflow, step) -> its first attempt's start


def _should_retry(retries: Retry | None) -> Callable[[BaseException], bool]:
    """Retry what toolguard asked to be retried, and a DBOS step timeout when the
    policy retries timeouts; nothing else."""

    def should_retry(error: BaseException) -> bool:
        if isinstance(error, RetryableFailure):
            return True
        if isinstance(error, dbos_errors.DBOSStepTimeoutError) and retries is not None:
            return retries.retryable(ToolTimeout("timed out", tool="", seconds=0.0))
        return False

    return should_retry


def step_options(
    dispatcher: Dispatcher, tool: str, *, asynchronous: bool, prefix: str = PREFIX
) -> StepOptions:
    """DBOS step options for ``tool``'s policy (``asynchronous``: for an async step,
    the only kind DBOS can time out)."""
    policy = dispatcher.scope().policy(tool)
    compiled = engine_retries(policy)
    retries = policy.retries if isinstance(policy.retries, Retry) else None
    options: StepOptions = {
        "name": f"{prefix}{tool}",
        "retries_allowed": compiled.attempts > 1,
        "max_attempts": compiled.attempts,
        "interval_seconds": compiled.initial_interval,
        "backoff_rate": compiled.backoff_rate,
        "should_retry": _should_retry(retries),
    }
    if asynchronous and compiled.timeout is not None:
        options["timeout_seconds"] = compiled.timeout
    return options


def compiled(dispatcher: Dispatcher, tool: str) -> list[tuple[str, str, str]]:
    """What ``tool``'s policy compiles to, as rows of (option, value, where from): what
    ``toolguard explain --engine dbos`` prints."""
    compiled = engine_retries(dispatcher.scope().policy(tool))
    explained = dispatcher.explain(tool, foreign=tool not in dispatcher.tools)
    retries_from = _level(explained.get("retries"), "retries")
    timeout_from = _level(explained.get("timeout"), "timeout")
    rows = [
        ("max_attempts", str(compiled.attempts), retries_from),
        ("retries_allowed", str(compiled.attempts > 1), retries_from),
        ("interval_seconds", f"{compiled.initial_interval:g}", retries_from),
        ("backoff_rate", f"{compiled.backoff_rate:g}", retries_from),
        ("should_retry", "what toolguard asks to retry (RetryableFailure)", "toolguard"),
    ]
    if compiled.timeout is None:
        rows.append(("timeout_seconds", "none", timeout_from))
    else:
        rows.append(("timeout_seconds", f"{compiled.timeout:g} (async steps)", timeout_from))
        rows.append(("note", "a sync step: toolguard times each attempt out", "toolguard"))
    if compiled.attempts > 1 and compiled.maximum_interval < _MAX_INTERVAL:
        rows.append(
            (
                "note",
                f"max_delay {compiled.maximum_interval:g} s: DBOS caps waits at "
                f"{_MAX_INTERVAL:g} s, not expressible",
                "toolguard",
            )
        )
    rows += [("note", note, "toolguard") for note in compiled.notes]
    return rows


def _level(setting: object, name: str) -> str:
    level = getattr(setting, "level", None)
    return f"{name} ({level})" if level else name


def is_final(dispatcher: Dispatcher, tool: str) -> bool:
    """Whether DBOS will not retry after the current attempt of this step: its last
    attempt, no retries, or past the tool's ``Retry(total=...)``."""
    status = DBOS.step_status
    if status is None or status.max_attempts is None or status.current_attempt is None:
        return True
    key = (str(DBOS.workflow_id), status.step_id)
    now = time.monotonic()
    if status.current_attempt == 0:
        _started[key] = now
    first = _started.get(key, now)
    retries = engine_retries(dispatcher.scope().policy(tool))
    final = status.current_attempt + 1 >= status.max_attempts or not within_total(
        retries, now - first
    )
    if final:
        _started.pop(key, None)
    return final


def run_tool(dispatcher: Dispatcher, tool: str, call: dict[str, Any]) -> Crossing:
    """The step of a sync workflow: one attempt, toolguard's own timeout kept (DBOS
    times out async steps only)."""
    final = is_final(dispatcher, tool)
    return answer(dispatcher, call_of(call), final=final, keep_timeout=True)


async def arun_tool(dispatcher: Dispatcher, tool: str, call: dict[str, Any]) -> Crossing:
    """The step of an async workflow: one attempt, DBOS's timeout."""
    final = is_final(dispatcher, tool)
    return await aanswer(dispatcher, call_of(call), final=final)


def guard_step(dispatcher: Dispatcher, *, tool: str | None = None) -> Callable[[F], F]:
    """Guard a function that is itself a tool run as a DBOS step (put it under
    ``@DBOS.step(...)``, with ``should_retry=should_retry(dispatcher, tool)``).

    Its value is returned as it is. A failure its policy retries, before the step's
    last attempt, is raised as ``RetryableFailure`` (its type and error id); any other
    is answered in the step (the real exception, its cause logged there once) and
    raised as ``Answered``, carrying only the answer, which DBOS records and toolguard
    in workflow code reads back as a ``RemoteFailure``.
    """

    def decorate(function: F) -> F:
        name = tool or function.__name__
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def guarded_async(*args: Any, **kwargs: Any) -> Any:
                async def invoke() -> Any:
                    return await function(*args, **kwargs)

                call = ToolCall(name=name, id=_step_id())
                final = is_final(dispatcher, name)
                return await aanswer_invocation(dispatcher, call, invoke, final=final)

            return cast("F", guarded_async)

        @functools.wraps(function)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            call = ToolCall(name=name, id=_step_id())
            final = is_final(dispatcher, name)
            return answer_invocation(
                dispatcher, call, lambda: function(*args, **kwargs), final=final
            )

        return cast("F", guarded)

    return decorate


def should_retry(dispatcher: Dispatcher, tool: str) -> Callable[[BaseException], bool]:
    """The ``should_retry`` of a step guarded by :func:`guard_step`."""
    retries = dispatcher.scope().policy(tool).retries
    return _should_retry(retries if isinstance(retries, Retry) else None)


def _step_id() -> str | None:
    step = DBOS.step_id
    workflow = DBOS.workflow_id
    return None if step is None else f"{workflow}:{step}"
