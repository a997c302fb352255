"""The step side: the tool runs guarded in a DBOS step, and only the answer is recorded.

Inside a step, toolguard runs one attempt (DBOS is the engine's unit, registered by
``_runtime``): a failure the policy retries, before the step's last attempt, is raised as
``EngineRetry`` (its type and error id: what DBOS logs and pickles into the journal); the
tool's own timeout applies to each attempt (DBOS times out async steps only). Anything
else is answered in the step and its answer is the step's recorded output.
:func:`step_options` compiles a tool's policy into DBOS's step options (``max_attempts``,
``interval_seconds``, ``backoff_rate``, and a ``should_retry`` that retries only what
toolguard hands over). :func:`guard_step` guards a function that is itself a step given
to a framework: its value as it is, its answered failure raised as ``Answered``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final, TypeVar

from dbos import DBOS, StepOptions

from toolguard import Dispatcher, EngineRetry, ToolCall
from toolguard.integrations.durable import (
    Crossing,
    aanswer,
    answer,
    call_of,
    engine_retries,
    guard_invocation,
)

__all__ = [
    "PREFIX",
    "arun_tool",
    "compiled",
    "guard_step",
    "run_tool",
    "should_retry",
    "step_options",
]

F = TypeVar("F", bound=Callable[..., Any])

PREFIX: Final = "toolguard."
"""A dispatcher's tool runs as the step ``PREFIX + name`` unless told otherwise."""

_MAX_INTERVAL: Final = 3600.0  # DBOS caps the wait between attempts at an hour


def should_retry(error: BaseException) -> bool:
    """DBOS's ``should_retry`` for a toolguard step: what toolguard hands over, only."""
    return isinstance(error, EngineRetry)


def step_options(dispatcher: Dispatcher, tool: str, *, prefix: str = PREFIX) -> StepOptions:
    """DBOS step options for ``tool``'s policy."""
    compiled = engine_retries(dispatcher.scope().policy(tool))
    return {
        "name": f"{prefix}{tool}",
        "retries_allowed": compiled.attempts > 1,
        "max_attempts": compiled.attempts,
        "interval_seconds": compiled.initial_interval,
        "backoff_rate": compiled.backoff_rate,
        "should_retry": should_retry,
    }


def compiled(dispatcher: Dispatcher, tool: str) -> list[tuple[str, str, str]]:
    """What ``tool``'s policy compiles to, as rows of (option, value, where from): what
    ``toolguard explain --engine dbos`` prints."""
    retries = engine_retries(dispatcher.scope().policy(tool))
    explained = dispatcher.explain(tool, foreign=tool not in dispatcher.tools)
    retries_from = _level(explained.get("retries"), "retries")
    timeout_from = _level(explained.get("timeout"), "timeout")
    timeout = "none" if retries.timeout is None else f"{retries.timeout:g} s"
    rows = [
        ("max_attempts", str(retries.attempts), retries_from),
        ("retries_allowed", str(retries.attempts > 1), retries_from),
        ("interval_seconds", f"{retries.initial_interval:g}", retries_from),
        ("backoff_rate", f"{retries.backoff_rate:g}", retries_from),
        ("should_retry", "toolguard's EngineRetry only", "toolguard"),
        ("timeout (each attempt, in the step)", timeout, timeout_from),
    ]
    if retries.attempts > 1:
        rows.append(
            (
                "note",
                f"max_delay {retries.maximum_interval:g} s: DBOS caps its waits at "
                f"{_MAX_INTERVAL:g} s, not per step",
                "toolguard",
            )
        )
    rows += [("note", note, "toolguard") for note in retries.notes]
    return rows


def _level(setting: object, name: str) -> str:
    level = getattr(setting, "level", None)
    return f"{name} ({level})" if level else name


def run_tool(dispatcher: Dispatcher, call: dict[str, Any]) -> Crossing:
    """The step a sync workflow runs: one attempt, answered in the step."""
    return answer(dispatcher, call_of(call))


async def arun_tool(dispatcher: Dispatcher, call: dict[str, Any]) -> Crossing:
    """The step an async workflow runs: one attempt, answered in the step."""
    return await aanswer(dispatcher, call_of(call))


def guard_step(dispatcher: Dispatcher, *, tool: str | None = None) -> Callable[[F], F]:
    """Guard a function that is itself a tool run as a DBOS step (put it under
    ``@DBOS.step(..., should_retry=should_retry)``, with the options its policy compiles
    to).

    Its value is returned as it is. A failure its policy retries, before the step's
    last attempt, is raised as ``EngineRetry`` (its type and error id); any other is
    answered in the step (the real exception, its cause logged there once) and raised as
    ``Answered``, carrying only the answer, which DBOS records and toolguard in workflow
    code reads back as a ``RemoteFailure``.
    """

    def decorate(function: F) -> F:
        return guard_invocation(dispatcher, function, tool or function.__name__, _call)

    return decorate


def _call(tool: str) -> ToolCall:
    step = DBOS.step_id
    return ToolCall(name=tool, id=None if step is None else f"{DBOS.workflow_id}:{step}")
