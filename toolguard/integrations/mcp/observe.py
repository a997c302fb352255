"""A framework's own failure log of a tool, observed and taken over by toolguard.

Shared by the MCP SDK's ``MCPServer`` middleware and FastMCP's. Both frameworks catch a
tool's exception themselves, log it (with its traceback) and answer the client; neither
hands the exception to its middleware as it was raised, and neither offers a public
hook for it. Both log it from inside the ``except`` block that caught it. So while a
guarded ``tools/call`` runs, the framework's logger is observed: a record it emits
about the failure carries the exception (``sys.exc_info()``), which toolguard takes for
its policy, and the record itself is held: dropped where toolguard logs the failure
(a hidden cause, once, under the error id the client sees: the framework's traceback
would log it a second time), logged as the framework logged it where toolguard logs
nothing (a model-visible error, bad arguments, an unknown tool:
:meth:`Capture.replay`).

Nothing else of the logger changes: outside a guarded call (other tasks, other
requests, records from other loggers) it behaves exactly as configured. While a
guarded call runs, its records are taken whatever its level or ``disabled`` flag,
so capture never depends on the application's logging configuration.
"""

from __future__ import annotations

import logging
import sys
import threading
from contextvars import ContextVar
from typing import Any, Final

__all__ = ["Capture", "capturing", "observe", "reset"]


class Capture:
    """The exception a framework logged during one guarded call (the first one), and
    the records it logged about it, held until toolguard has answered."""

    __slots__ = ("error", "held")

    def __init__(self) -> None:
        self.error: Exception | None = None
        self.held: list[tuple[logging.Logger, logging.LogRecord]] = []

    def take(self, logger: logging.Logger, record: logging.LogRecord) -> bool:
        """Take the record's exception and hold the record; ``True`` when the record
        is toolguard's now."""
        error = sys.exc_info()[1]
        if error is None and record.exc_info:
            error = record.exc_info[1]
        if not isinstance(error, Exception):
            return False
        if self.error is None:
            self.error = error
        self.held.append((logger, record))
        return True

    def replay(self) -> None:
        """Log the held records as the framework's logger would have: for a failure
        toolguard answered without logging it (the framework's own line for it stays)."""
        held, self.held = self.held, []
        for logger, record in held:
            base = _base(logger)
            if base.isEnabledFor(logger, record.levelno):
                base.handle(logger, record)


_CAPTURE: ContextVar[Capture | None] = ContextVar("toolguard_mcp_capture", default=None)
_LOCK: Final = threading.Lock()
_OBSERVED: dict[type[logging.Logger], type[logging.Logger]] = {}


def capturing(capture: Capture | None) -> Any:
    """Set the current task's capture (``None`` ends it); returns the reset token."""
    return _CAPTURE.set(capture)


def reset(token: Any) -> None:
    """End the capture :func:`capturing` started."""
    _CAPTURE.reset(token)


def observe(name: str) -> None:
    """Observe the logger ``name`` during guarded calls (idempotent)."""
    logger = logging.getLogger(name)
    with _LOCK:
        cls = type(logger)
        if getattr(cls, "_toolguard_observed", False):
            return
        observed = _OBSERVED.get(cls)
        if observed is None:
            observed = type(f"Observed{cls.__name__}", (cls,), {**_METHODS, "_toolguard_base": cls})
            _OBSERVED[cls] = observed
        logger.__class__ = observed


def _base(logger: logging.Logger) -> type[logging.Logger]:
    base: type[logging.Logger] = getattr(type(logger), "_toolguard_base", logging.Logger)
    return base


def _is_enabled_for(self: logging.Logger, level: int) -> bool:
    if _CAPTURE.get() is not None:
        return True
    return _base(self).isEnabledFor(self, level)


def _handle(self: logging.Logger, record: logging.LogRecord) -> None:
    capture = _CAPTURE.get()
    if capture is not None and capture.take(self, record):
        return  # held until toolguard has answered (Capture.replay)
    if capture is not None and not _base(self).isEnabledFor(self, record.levelno):
        return  # created only because a call was observed: as the logger was configured
    _base(self).handle(self, record)


_METHODS: Final[dict[str, Any]] = {
    "_toolguard_observed": True,
    "isEnabledFor": _is_enabled_for,
    "handle": _handle,
}
