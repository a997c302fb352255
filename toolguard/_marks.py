"""What an exception says about itself: control flow, or a message for the model.

* **Control flow.** :class:`ControlFlow` subclasses, any type passed to
  :func:`register_control_flow`, and every ``BaseException`` that is not an
  ``Exception`` are signals that pass through toolguard untouched.
* **The model-visible marker.** :func:`read_marker` reads ``message_for_model()``
  (the ``VisibleToModel`` protocol) on the exception as thrown, guarded: a marker
  that raises or answers blank hides, it never crashes the failure path. What went
  wrong with it is returned, not logged: ``_logging.model_message`` reports it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Literal, NamedTuple

__all__ = [
    "ControlFlow",
    "Unreadable",
    "has_hidden_cause",
    "is_control_flow",
    "is_interrupt",
    "read_marker",
    "register_control_flow",
]


class ControlFlow(Exception):
    """Base class for signals that must pass through toolguard untouched.

    No handler ever sees a ``ControlFlow``; it propagates out of ``dispatch``,
    ``adispatch``, ``run`` and ``arun`` exactly as raised.
    """


# --- control flow registry -------------------------------------------------------

_control_flow_types: tuple[type[BaseException], ...] = (ControlFlow,)
_control_flow_checks: tuple[Callable[[BaseException], bool], ...] = ()
_registry_lock = threading.Lock()


def register_control_flow(
    *types: type[BaseException], check: Callable[[BaseException], bool] | None = None
) -> None:
    """Treat these exception types (and their subclasses) as control flow.

    Frameworks' own signals (LangGraph's ``GraphInterrupt``, handoffs) register
    here so that they propagate out of toolguard untouched. ``check`` is for
    signals recognised per instance rather than by type (a predicate on the
    exception; it must be cheap and must not raise). Registering twice is harmless.
    """
    global _control_flow_types, _control_flow_checks
    for exc_type in types:
        if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
            raise TypeError(f"register_control_flow() takes exception classes, got {exc_type!r}")
    if check is not None and not callable(check):
        raise TypeError(f"register_control_flow(check=...) takes a predicate, got {check!r}")
    with _registry_lock:
        known = set(_control_flow_types)
        _control_flow_types = _control_flow_types + tuple(t for t in types if t not in known)
        if check is not None and check not in _control_flow_checks:
            _control_flow_checks = (*_control_flow_checks, check)


def is_control_flow(error: BaseException) -> bool:
    """True for exceptions that toolguard must never handle.

    A ``BaseException`` that is not an ``Exception``, a control-flow type or check,
    and an exception group holding any of those (at any depth: an ``asyncio.TaskGroup``
    wraps what its tasks raised) all pass through as raised.
    """
    # _signal's test, inline: a failure asks this a few times on its way
    if not isinstance(error, Exception) or isinstance(error, _control_flow_types):
        return True
    if _control_flow_checks and any(_checked(check, error) for check in _control_flow_checks):
        return True
    if isinstance(error, BaseExceptionGroup):  # its members, by _signal's rule
        return any(_signal(member) for member in _members(error))
    return False


def _signal(error: BaseException) -> bool:
    """Control flow by itself (not by what it holds)."""
    if not isinstance(error, Exception) or isinstance(error, _control_flow_types):
        return True
    return bool(_control_flow_checks) and any(
        _checked(check, error) for check in _control_flow_checks
    )


_EXCEPTIONS = BaseExceptionGroup.__dict__["exceptions"]  # read past any attribute hook


def _members(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    """``group`` and every exception it holds, at any depth, each once: iteratively, so a
    group nested a thousand deep (a recursive ``TaskGroup``'s) costs no recursion."""
    seen: set[int] = set()
    stack: list[BaseException] = [group]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        if isinstance(current, BaseExceptionGroup):
            stack.extend(reversed(_EXCEPTIONS.__get__(current)))


def _checked(check: Callable[[BaseException], bool], error: BaseException) -> bool:
    """A registered check's verdict; a check that raises on a hostile exception (one
    whose ``__getattr__`` raises) says "not control flow" rather than crash."""
    try:
        return bool(check(error))
    except Exception:  # noqa: BLE001 - the exception is answered as a failure instead
        return False


def is_interrupt(error: BaseException) -> bool:
    """``KeyboardInterrupt`` or ``SystemExit``, or a group holding one: what stops a
    round at once, without waiting for its other calls."""
    if not isinstance(error, BaseExceptionGroup):
        return isinstance(error, KeyboardInterrupt | SystemExit)
    return any(isinstance(member, KeyboardInterrupt | SystemExit) for member in _members(error))


def has_hidden_cause(error: BaseException) -> bool:
    """True when the error chains to another exception (``from`` or implicitly)."""
    return error.__cause__ is not None or (
        error.__context__ is not None and not error.__suppress_context__
    )


class Unreadable(NamedTuple):
    """A marker that could not be read: its message was blank, or reading it raised
    (``failure``, with its context, the tool's error, suppressed)."""

    problem: Literal["blank", "raised"]
    failure: Exception | None = None


def read_marker(error: BaseException) -> str | Unreadable | None:
    """The model-visible message of ``error``; ``None`` when it has no marker, or
    :class:`Unreadable` when its marker is blank or raised (both mean hidden).

    The marker is looked for on the exception as thrown, never down its
    ``__cause__``: wrapping a marked exception deliberately hides it. Only the
    exception's type is inspected before the call (an exception whose
    ``__getattr__`` raises is read safely).
    """
    if getattr(type(error), "message_for_model", None) is None:
        return None
    try:
        text = error.message_for_model()  # type: ignore[attr-defined]  # found on its type
    except Exception as failure:  # noqa: BLE001 - a broken marker hides, never crashes
        # its __context__ is the tool's error, which is logged once, by the failure
        failure.__suppress_context__ = True
        return Unreadable("raised", failure)
    if not isinstance(text, str) or not text.strip():
        return Unreadable("blank")
    return text
