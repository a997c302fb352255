"""Hidden-cause events, error ids and redaction.

toolguard logs through ``structlog.get_logger("toolguard")`` and never calls
``structlog.configure()``: the application owns logging. Events (stable names):

``tool_error_hidden``
    A failure was handled and something about it was hidden from the model.
    Logged exactly once per failure, at the policy's ``log_level``, with
    ``exc_info`` set to the exception itself and the fields ``tool``, ``call_id``,
    ``error_id``, ``answered_by`` (the precedence level whose handler answered),
    ``handler``, ``error_type`` and ``arguments`` (redacted).
``tool_call_failed``
    A handler failed the invocation (``ToolCallFailed``), logged once at ERROR.
``handler_raised``
    A handler raised something other than ``ToolCallFailed``; logged at ERROR with
    the original failure, which the raised exception carries as ``__context__``.
``blank_model_message``
    A model-visible exception gave a blank message; it was treated as hidden.
``model_message_failed``
    A model-visible exception's ``message_for_model()`` raised; treated as hidden.
``tool_retry``
    A retryable failure, at DEBUG, before the next attempt (``attempt``, ``wait``).
``breaker_opened`` / ``breaker_closed``
    A session's circuit breaker for a tool changed state (WARNING / INFO).
``session_reset``
    A session forgot its budgets and breakers (INFO).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import re
from collections.abc import Mapping
from typing import Any, Final

import structlog

from toolguard._text import utf8

EVENT_HIDDEN = "tool_error_hidden"
EVENT_FAILED = "tool_call_failed"
EVENT_HANDLER_RAISED = "handler_raised"
EVENT_BLANK_MESSAGE = "blank_model_message"

REDACTED = "[redacted]"
_MAX_DEPTH = 20


_LOGGER: Any = structlog.get_logger("toolguard")


def logger() -> Any:
    """The toolguard logger: a lazy proxy, so the app's current config always applies."""
    return _LOGGER


@functools.lru_cache(maxsize=64)
def _redaction(keys: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern for the normalised keys (see :func:`normalised`)."""
    words = sorted({normalised(k) for k in keys} - {""})
    return re.compile("|".join(map(re.escape, words))) if words else None


_SEPARATORS: Final = re.compile(r"[^0-9a-z]+")


def normalised(key: str) -> str:
    """A key as redaction compares it: lower case, separators gone (``X-Api-Key``,
    ``api_key``, ``apiKey`` and ``API KEY`` are all ``apikey``)."""
    return _SEPARATORS.sub("", key.lower())


# toolguard's own generator: seeded from the OS, re-seeded in a forked child, never the
# application's global `random` (whose seeding would repeat ids across processes, and
# which drawing from would perturb an application's seeded stream)
_ids = random.Random(os.urandom(16))
os.register_at_fork(after_in_child=lambda: _ids.seed(os.urandom(16)))


def new_error_id() -> str:
    """A short random id (8 hex digits) that the model's message can quote.

    Unique enough to find one event among a day's logs; not a secret (it is sent
    to the model), so a fast non-cryptographic generator serves.
    """
    return f"{_ids.getrandbits(32):08x}"


def redact(value: Any, keys: tuple[str, ...]) -> Any:
    """Mask the values of mapping keys that contain any of ``keys``, compared after
    :func:`normalised` (so case and separators do not matter); text is made valid UTF-8."""
    pattern = _redaction(keys)
    if type(value) is dict and (pattern is None or not _needs_work(value, pattern)):
        return dict(value)  # the common case: flat arguments, nothing secret-looking
    return _redact(value, pattern, 0)


_SCALARS: Final = (str, int, float, bool, type(None))


def _needs_work(value: dict[Any, Any], pattern: re.Pattern[str]) -> bool:
    for key, item in value.items():
        if type(item) not in _SCALARS or (type(item) is str and not item.isascii()):
            return True
        if type(key) is not str or not key.isascii() or pattern.search(normalised(key)):
            return True
    return False


def _redact(value: Any, pattern: re.Pattern[str] | None, depth: int) -> Any:
    if depth > _MAX_DEPTH:
        return "[too deep]"
    if isinstance(value, Mapping):
        redacted = {}
        for key, item in value.items():
            shown_key = utf8(key) if isinstance(key, str) else key
            if pattern is not None and isinstance(key, str) and pattern.search(normalised(key)):
                redacted[shown_key] = REDACTED
            else:
                redacted[shown_key] = _redact(item, pattern, depth + 1)
        return redacted
    if isinstance(value, list | tuple):
        return [_redact(item, pattern, depth + 1) for item in value]
    if isinstance(value, str):
        return utf8(value)
    return value


def arguments_for_log(arguments: Any, keys: tuple[str, ...]) -> Any:
    """What of the model's arguments may appear in a log event.

    Parsed arguments pass through :func:`redact`; a raw string that could not be
    parsed cannot be redacted, so only its length is logged.
    """
    if arguments is None or isinstance(arguments, Mapping):
        return redact(arguments, keys) if arguments else {}
    if isinstance(arguments, str):
        import json

        try:
            parsed = json.loads(arguments) if arguments.strip() else {}
        except ValueError:
            return f"[unparsed, {len(arguments)} chars]"
        return redact(parsed, keys)
    return f"[{type(arguments).__name__}]"


def emit(log_level: str, event: str, fields: dict[str, Any] | None = None, /, **more: Any) -> None:
    """Log one event at ``log_level``; a failing logging pipeline never breaks a call.

    ``fields`` is a ready dict (the failure path builds one); ``more`` are keywords.
    """
    if fields is None:
        fields = more
    elif more:
        fields = {**fields, **more}
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
