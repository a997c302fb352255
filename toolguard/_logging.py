"""Hidden-cause events and error ids.

toolguard logs through ``structlog.get_logger("toolguard")`` and never calls
``structlog.configure()``: the application owns logging. Every event toolguard logs,
with its level and fields, is listed in ``docs/logging.md`` (a test keeps the page
and the code in step); the names used here are the ``EVENT_*`` constants below.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
from collections.abc import Iterator
from typing import Any

from toolguard import _engine
from toolguard._marks import read_marker

EVENT_HIDDEN = "tool_error_hidden"
EVENT_FAILED = "tool_call_failed"
EVENT_HANDLER_RAISED = "handler_raised"
EVENT_BLANK_MESSAGE = "blank_model_message"
EVENT_MARKER_FAILED = "model_message_failed"
EVENT_RETURN_DIRECT_FAILED = "return_direct_failed"

_LOGGER: Any = None


def logger() -> Any:
    """The toolguard logger: a lazy proxy, so the app's current config always applies
    (unless the app's ``cache_logger_on_first_use=True`` froze it: see :func:`renewed`).

    structlog is imported when the first event is logged, not when toolguard is: it
    imports ``rich`` where that is installed, whose import calls a global random
    function that Temporal's workflow sandbox refuses (a workflow importing toolguard
    failed validation).
    """
    global _LOGGER
    found = _LOGGER
    if found is None:
        import structlog

        found = _LOGGER = structlog.get_logger("toolguard")
    return found


@contextlib.contextmanager
def renewed() -> Iterator[None]:
    """toolguard's logger made anew for the block, then the application's again.

    With ``cache_logger_on_first_use=True`` (structlog's production advice) the proxy
    keeps the pipeline of its first use for good, so a later ``structlog.configure()``
    (``toolguard.testing.capture_events``) would never see toolguard's events.
    """
    import structlog  # as in logger(): on first use

    global _LOGGER
    previous = _LOGGER
    _LOGGER = structlog.get_logger("toolguard")
    try:
        yield
    finally:
        _LOGGER = previous


# toolguard's own generator: seeded from the OS, re-seeded in a forked child, never the
# application's global `random` (whose seeding would repeat ids across processes, and
# which drawing from would perturb an application's seeded stream)
_ids = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(16)))


def new_error_id() -> str:
    """A short random id (8 hex digits) that the model's message can quote.

    Unique enough to find one event among a day's logs; not a secret (it is sent
    to the model), so a fast non-cryptographic generator serves. In a durable engine's
    workflow code, the engine's deterministic randomness draws it (the same id on replay).
    """
    runtime = _engine.current()
    if runtime is not None:
        return runtime.error_id()
    return f"{_ids.getrandbits(32):08x}"


def emit(log_level: str, event: str, fields: dict[str, Any] | None = None, /, **more: Any) -> None:
    """Log one event at ``log_level``; a failing logging pipeline never breaks a call.

    ``fields`` is a ready dict (the failure path builds one); ``more`` are keywords.
    In a durable engine's workflow code the engine logs it, once: not again when it
    replays that code (``WorkflowRuntime.log``).
    """
    if fields is None:
        fields = more
    elif more:
        fields = {**fields, **more}
    runtime = _engine.current()
    if runtime is not None:
        runtime.log(functools.partial(_emit, log_level, event, fields))
        return
    _emit(log_level, event, fields)


def _emit(log_level: str, event: str, fields: dict[str, Any]) -> None:
    try:
        getattr(logger(), log_level)(event, **fields)
    except Exception:  # noqa: BLE001 - the application's pipeline may raise anything
        _fallback(log_level, event, fields)


def _fallback(log_level: str, event: str, fields: dict[str, Any]) -> None:
    """The event through the standard library, so the cause is not lost with it.

    Some exceptions cannot be rendered at all (one whose ``__getattr__`` raises
    breaks Python 3.11's own ``traceback``): then the event is logged without its
    traceback, naming what failed. Nothing here ever raises into a tool call.
    """
    stdlib = logging.getLogger("toolguard")
    level = logging.getLevelNamesMapping().get(log_level.upper(), logging.WARNING)
    shown = {k: v for k, v in fields.items() if k != "exc_info"}
    error = fields.get("exc_info")
    try:
        stdlib.log(level, "%s (structlog failed on this event) %s", event, shown, exc_info=error)
    except Exception as unrenderable:  # noqa: BLE001 - logging must not break the call
        with contextlib.suppress(Exception):  # a logging system that cannot log at all
            stdlib.log(
                level,
                "%s (structlog failed on this event; its %s could not be rendered: %s) %s",
                event,
                type(error).__name__,
                type(unrenderable).__name__,
                shown,
            )


def model_message(error: BaseException, tool: str) -> str | None:
    """The model-visible message of ``error`` (:func:`~toolguard._marks.read_marker`),
    or ``None`` when it is hidden. A marker that answered blank is logged as
    ``blank_model_message``, one that raised as ``model_message_failed`` (with what it
    raised), both at WARNING, naming the tool and the exception's type."""
    found = read_marker(error)
    if found is None or isinstance(found, str):
        return found
    error_type = type(error).__name__
    if found.failure is None:
        emit("warning", EVENT_BLANK_MESSAGE, tool=tool, error_type=error_type)
    else:
        emit(
            "warning", EVENT_MARKER_FAILED, tool=tool, error_type=error_type, exc_info=found.failure
        )
    return None
