"""DBOS workflow code, as toolguard's core sees it: a ``WorkflowRuntime``; and a DBOS
step, as the place a tool runs: an ``EngineUnit``.

DBOS runs a workflow's code again when it recovers it (after a crash, on resume), with
its recorded steps answering from the journal. So, while workflow code runs (a DBOS
workflow, not one of its steps), toolguard takes from this runtime:

* error ids drawn in order from the workflow's id: the same ids when it runs again;
* the time, read in a step of its own (``toolguard.now``): on recovery, the recorded
  time, so a breaker decides as it did;
* log events, each logged in a step of its own (``toolguard.log``): on recovery that
  step answers from the journal, and nothing is logged twice;
* named sessions, kept per execution of the workflow (keyed by DBOS's context object);
* a step's failure seen through: ``DBOSMaxStepRetriesExceeded`` to its last attempt's
  error, a step timeout as ``ToolTimeout``, an answered failure to its answer.

A step of an async workflow is recorded from a thread of its own (DBOS's sync
``run_step``, waited for: a database write). Registered, with DBOS's own signals as
control flow, when ``toolguard.integrations.dbos`` is imported.
"""

from __future__ import annotations

import asyncio
import contextvars
import hashlib
import threading
import time
import weakref
from collections.abc import Callable, MutableMapping
from typing import Any, Final, TypeVar, cast

import attrs
from dbos import DBOS
from dbos import error as dbos_errors
from dbos._context import get_local_dbos_context  # the one handle per workflow execution

from toolguard import (
    EngineRetry,
    ToolTimeout,
    register_control_flow,
    register_engine_unit,
    register_workflow_runtime,
)
from toolguard.integrations.durable import Answered, EngineGaveUp, call_of, crossing_failure

T = TypeVar("T")

__all__ = [
    "RUNTIME",
    "UNIT",
    "DBOSRuntime",
    "DBOSUnit",
    "Execution",
    "engine_timeout",
    "find",
    "find_unit",
    "recorded",
    "register",
]


def engine_timeout(tool: str, timeout: dbos_errors.DBOSStepTimeoutError) -> ToolTimeout:
    """DBOS timed a step out: the model is told as for toolguard's own timeout."""
    return ToolTimeout(
        f"The tool '{tool}' did not finish within {timeout.timeout_seconds:g} s. It may "
        "work if you try again later, or with a smaller request.",
        tool=tool,
        seconds=timeout.timeout_seconds,
    )


@attrs.define(eq=False)
class Execution:
    """What one execution of a workflow keeps for toolguard."""

    workflow_id: str
    drawn: int = 0
    sessions: dict[Any, Any] = attrs.Factory(dict)


def recorded(name: str, function: Callable[[], T]) -> T:
    """``function()`` run once, as a step of the running workflow named ``name``: on
    recovery, its recorded result. In an async workflow, DBOS's sync ``run_step`` runs
    on a thread of its own, in the workflow's context, and is waited for."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return DBOS.run_step({"name": name}, function)
    context = contextvars.copy_context()
    outcome: list[Any] = []

    def run() -> T:
        return DBOS.run_step({"name": name}, function)

    def step() -> None:
        try:
            outcome.append((True, context.run(run)))
        except BaseException as error:  # noqa: BLE001 - carried to the workflow's thread
            outcome.append((False, error))

    thread = threading.Thread(target=step, name=f"toolguard-{name}")
    thread.start()
    thread.join()
    succeeded, value = outcome[0]
    if not succeeded:
        raise value
    return cast("T", value)


def _logged(emit: Callable[[], None]) -> Callable[[], int]:
    def log() -> int:
        emit()
        return 1

    return log


class DBOSRuntime:
    """The core's view of the DBOS workflow code running now."""

    def __init__(self) -> None:
        self._executions: weakref.WeakKeyDictionary[Any, Execution] = weakref.WeakKeyDictionary()

    def execution(self) -> Execution:
        """This execution's state (a workflow run anew starts from nothing)."""
        context = get_local_dbos_context()
        found = self._executions.get(context)
        if found is None:
            found = self._executions[context] = Execution(str(DBOS.workflow_id))
        return found

    def error_id(self) -> str:
        execution = self.execution()
        execution.drawn += 1
        seed = f"{execution.workflow_id}:{execution.drawn}".encode()
        return hashlib.blake2b(seed, digest_size=4).hexdigest()

    def now(self) -> float:
        return recorded("toolguard.now", time.time)

    def log(self, emit: Callable[[], None]) -> None:
        recorded("toolguard.log", _logged(emit))

    def sessions(self) -> MutableMapping[Any, Any]:
        return self.execution().sessions

    def crossed(self, error: Exception, tool: str) -> Exception:
        if isinstance(error, dbos_errors.DBOSMaxStepRetriesExceeded) and error.errors:
            error = error.errors[-1]
        if isinstance(error, EngineRetry):  # DBOS gave up on a retry toolguard asked for
            return EngineGaveUp(error.error_type, error.error_id)
        if isinstance(error, dbos_errors.DBOSStepTimeoutError):
            return engine_timeout(tool, error)
        if isinstance(error, Answered):
            crossing = error.crossing
            return crossing_failure(
                crossing, call_of({"name": tool, "id": crossing.get("call_id")})
            )
        return error


RUNTIME: Final = DBOSRuntime()


class DBOSUnit:
    """The step running now, as the core sees it: one attempt of DBOS's. toolguard
    times each attempt out itself (DBOS times out async steps only)."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, int], float] = {}

    def attempt(self) -> int:
        status = DBOS.step_status
        current = None if status is None else status.current_attempt
        return 1 if current is None else current + 1

    def maximum(self) -> int | None:
        status = DBOS.step_status
        if status is None or status.max_attempts is None:
            return 1  # a step without retries: this attempt is the last
        return status.max_attempts

    def elapsed(self) -> float:
        status = DBOS.step_status
        if status is None:
            return 0.0
        key, now = (str(DBOS.workflow_id), status.step_id), time.monotonic()
        if not status.current_attempt:
            self._first[key] = now
            if len(self._first) > _FIRSTS:  # steps left without a last attempt: forget
                self._first.pop(next(iter(self._first)))
        return now - self._first.get(key, now)

    def times_out(self) -> bool:
        return False


_FIRSTS: Final = 4096
UNIT: Final = DBOSUnit()


def find_unit() -> DBOSUnit | None:
    """The unit while a DBOS step runs, else ``None``."""
    return UNIT if DBOS.step_status is not None else None


def find() -> DBOSRuntime | None:
    """The runtime while DBOS workflow code runs (not one of its steps), else ``None``."""
    if DBOS.workflow_id is None or DBOS.step_id is not None:
        return None
    return RUNTIME


def register() -> None:
    """Register the runtime, and DBOS's signals that must reach DBOS untouched (a
    cancelled workflow awaited, non-determinism found on recovery) as control flow."""
    register_workflow_runtime(find)
    register_engine_unit(find_unit)
    register_control_flow(
        dbos_errors.DBOSAwaitedWorkflowCancelledError,
        dbos_errors.DBOSUnexpectedStepError,
        dbos_errors.DBOSStepNondeterminismError,
        dbos_errors.DBOSPatchNondeterminismError,
    )
