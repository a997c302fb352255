"""Durable engines' workflow code: what toolguard takes from the engine there.

Temporal and DBOS run workflow code again when they replay a history or recover a
workflow, and it must then decide exactly what it decided the first time; Temporal
also runs it in a sandbox that refuses threads, locks made through ``threading``, the
system clock and the global random functions. An integration registers how to find its
engine's workflow code (:func:`register_workflow_runtime`); while a
:class:`WorkflowRuntime` is current, toolguard takes from it:

* error ids (the engine's deterministic randomness): the same id on replay;
* how to log an event once: not again when the engine replays the code that logged it;
* the time a session's breakers read (the engine's clock), and where named sessions
  live (the workflow run's own state, not the process);
* what a failure that crossed back from an activity or step carries: the engine's
  wrapper seen through to what the integration sent across (a
  :class:`~toolguard.RemoteFailure`, one of toolguard's own errors, control flow).

Where a tool runs, inside one of the engine's units of work (a Temporal activity, a DBOS
step, each attempt of which the engine starts), the engine owns retries: an integration
registers how to find the unit running now (:func:`register_engine_unit`); while an
:class:`EngineUnit` is current, toolguard runs one attempt, hands a failure its policy
retries back to the engine (``EngineRetry``) unless this is the unit's last attempt, and
leaves the timeout to the engine when the engine times the unit out.

Outside workflow code and units (nothing current, the common case) nothing changes. A
dispatcher or session made in workflow code takes its locks from :func:`new_lock`.
"""

from __future__ import annotations

import _thread
from collections.abc import Callable, MutableMapping
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EngineUnit",
    "WorkflowRuntime",
    "current",
    "engine_times_out",
    "new_lock",
    "register_engine_unit",
    "register_workflow_runtime",
    "unit",
]


@runtime_checkable
class WorkflowRuntime(Protocol):
    """What toolguard needs of a durable engine while workflow code runs."""

    def error_id(self) -> str:
        """A new error id (8 hex digits) from the engine's deterministic randomness."""
        ...

    def now(self) -> float:
        """The engine's clock, in seconds (what a session's breakers read)."""
        ...

    def log(self, emit: Callable[[], None]) -> None:
        """Log one event (``emit()`` does) exactly once: not while the engine replays
        code that already logged it (Temporal), or in a step of its own that the engine
        records (DBOS)."""
        ...

    def sessions(self) -> MutableMapping[Any, Any]:
        """Where this workflow run keeps the named sessions it opens."""
        ...

    def crossed(self, error: Exception, tool: str) -> Exception:
        """What ``error`` carries when it is an engine's wrapper around a failure of the
        tool ``tool`` that crossed back from an activity or step; else ``error`` itself."""
        ...


Find = Callable[[], "WorkflowRuntime | None"]

_finders: tuple[Find, ...] = ()


def register_workflow_runtime(find: Find) -> None:
    """Register how to find a durable engine's workflow code: ``find()`` returns the
    :class:`WorkflowRuntime` while workflow code runs, ``None`` elsewhere. It must be
    cheap: it is asked when a failure is answered, an event logged, a session opened.
    Registering the same function twice is harmless."""
    global _finders
    if not callable(find):
        raise TypeError(f"register_workflow_runtime() takes a function, got {find!r}")
    if find not in _finders:
        _finders = (*_finders, find)


def current() -> WorkflowRuntime | None:
    """The runtime of the workflow code running now, or ``None`` (not in a workflow)."""
    for find in _finders:
        runtime = find()
        if runtime is not None:
            return runtime
    return None


@runtime_checkable
class EngineUnit(Protocol):
    """A durable engine's unit of work running now (an activity, a step): one attempt."""

    def attempt(self) -> int:
        """This attempt's number, the first being 1."""
        ...

    def maximum(self) -> int | None:
        """The engine's last attempt, when it says (``None``: the tool's ``retries``
        compiled into the engine's options say, ``Retry.attempts``)."""
        ...

    def elapsed(self) -> float:
        """Seconds since the unit's first attempt (``Retry(total=...)``)."""
        ...

    def times_out(self) -> bool:
        """Whether the engine times this unit out (else the tool's own timeout applies)."""
        ...


FindUnit = Callable[[], "EngineUnit | None"]

_units: tuple[FindUnit, ...] = ()


def register_engine_unit(find: FindUnit) -> None:
    """Register how to find a durable engine's unit of work running now: ``find()``
    returns the :class:`EngineUnit` inside one, ``None`` elsewhere. It is asked when a
    tool fails or has a timeout. Registering the same function twice is harmless."""
    global _units
    if not callable(find):
        raise TypeError(f"register_engine_unit() takes a function, got {find!r}")
    if find not in _units:
        _units = (*_units, find)


def unit() -> EngineUnit | None:
    """The engine's unit of work running now, or ``None``."""
    for find in _units:
        found = find()
        if found is not None:
            return found
    return None


def engine_times_out() -> bool:
    """Whether the engine, not toolguard, times out the code running now: workflow code,
    or a unit the engine times out."""
    if current() is not None:
        return True
    found = unit()
    return found is not None and found.times_out()


def new_lock() -> Any:
    """A new ``threading.Lock``, made without the ``threading`` module.

    ``threading.Lock`` is ``_thread.allocate_lock``; Temporal's sandbox refuses every
    use of ``threading`` in workflow code at run time, so a dispatcher or session made
    there takes its locks from here. A lock guarding a short critical section decides
    nothing: it is as deterministic in a workflow as anywhere.
    """
    return _thread.allocate_lock()
