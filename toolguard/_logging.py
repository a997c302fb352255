"""Hidden-cause events, error ids and redaction.

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
import re
from collections.abc import Iterator, Mapping
from typing import Any, Final

import pydantic_core

from toolguard import _engine
from toolguard._marks import read_marker
from toolguard._text import normalised, utf8

EVENT_HIDDEN = "tool_error_hidden"
EVENT_FAILED = "tool_call_failed"
EVENT_HANDLER_RAISED = "handler_raised"
EVENT_BLANK_MESSAGE = "blank_model_message"
EVENT_MARKER_FAILED = "model_message_failed"
EVENT_RETURN_DIRECT_FAILED = "return_direct_failed"

REDACTED = "[redacted]"
_MAX_DEPTH = 20


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


@functools.lru_cache(maxsize=64)
def _redaction(keys: tuple[str, ...]) -> re.Pattern[str] | None:
    """One pattern for the normalised keys (see :func:`normalised`)."""
    words = sorted({normalised(k) for k in keys} - {""})
    return re.compile("|".join(map(re.escape, words))) if words else None


def _is_secret(pattern: re.Pattern[str], key: str) -> bool:
    """Whether ``key``'s value is redacted under ``pattern``; remembered for short keys
    (a tool's failures show the same few), never for long ones (the model's to choose)."""
    if len(key) > _REMEMBERED_KEY:
        return pattern.search(normalised(key)) is not None
    return _is_secret_remembered(pattern, key)


_REMEMBERED_KEY: Final = 64


@functools.lru_cache(maxsize=1024)
def _is_secret_remembered(pattern: re.Pattern[str], key: str) -> bool:
    return pattern.search(normalised(key)) is not None


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


def redact(
    value: Any, keys: tuple[str, ...], limit: int | None = None, secrets: Secrets | None = None
) -> Any:
    """Mask the values of mapping keys that contain any of ``keys``, compared after
    :func:`normalised` (so case and separators do not matter); text is made valid
    UTF-8; at most ``limit`` characters of text are kept (``None``: all), marked where
    cut. The masked values are remembered in ``secrets``, when given."""
    pattern = _redaction(keys)
    if type(value) is dict and not _needs_work(value, pattern, limit):
        return dict(value)  # the common case: flat, short, nothing secret-looking
    return _Walk(pattern, limit, secrets=secrets).value(value, 0)


_SCALARS: Final = (str, int, float, bool, type(None))
_CUT: Final = "...[toolguard: {count} more characters cut]"
_MORE: Final = "[toolguard: {count} more items cut]"
_CUT_PARTIAL: Final = "...[toolguard: more characters cut]"
_MORE_PARTIAL: Final = "[toolguard: more items cut]"
_REST: Final = "[toolguard: the rest of {size} characters of JSON cut]"
_PREFIX_FACTOR: Final = 6  # JSON characters parsed per character an event can hold
_ENTRY: Final = 4  # what an entry costs beyond its text: quotes, separator, space
_NUMBER: Final = 8  # what a number, a bool or None costs
_DIGITS_PER_BIT: Final = 0.30103  # log10(2): an int's digits from its bit length


def _needs_work(value: dict[Any, Any], pattern: re.Pattern[str] | None, limit: int | None) -> bool:
    size = 0
    for key, item in value.items():
        if type(item) not in _SCALARS or (type(item) is str and not item.isascii()):
            return True
        if type(key) is not str or not key.isascii():
            return True
        if pattern is not None and _is_secret(pattern, key):
            return True
        if type(item) is int and item.bit_length() > 64:
            return True
        if limit is not None:
            size += len(key) + (len(item) if type(item) is str else _NUMBER) + 2 * _ENTRY
            if size > limit:
                return True
    return False


class Secrets:
    """What a call's arguments held under keys toolguard redacts, gathered while their
    logged copy is made, so that the logged traceback's frame locals can be masked too
    (``toolguard.guard._locals``).

    ``texts`` and ``numbers`` are the values found under such keys; ``found`` says a
    redacted key was seen, ``unsearched`` that some of the arguments were not looked at
    (cut from the event, or not parsed): then a secret may be there all the same.
    """

    __slots__ = ("found", "keys", "numbers", "texts", "unsearched")

    def __init__(self, keys: tuple[str, ...]) -> None:
        # built on every logged failure: the sets only once something is found
        self.keys = keys
        self.found = False
        self.unsearched = False

    @property
    def wanted(self) -> bool:
        """Whether a traceback's locals may hold a secret of these arguments."""
        return (self.found or self.unsearched) and bool(self.keys)

    def is_secret_key(self, key: str) -> bool:
        """Whether a value under ``key`` (or a local, an attribute so named) is redacted."""
        pattern = _redaction(self.keys)
        return pattern is not None and _is_secret(pattern, key)

    def add(self, value: Any) -> None:
        """Remember the text and numbers in ``value``, a value under a redacted key."""
        if not self.found:
            self.found = True
            self.texts: set[str] = set()
            self.numbers: set[int | float] = set()
        stack = [(value, 0)]
        while stack:
            item, depth = stack.pop()
            kind = type(item)
            if kind is str:
                if item:
                    self.texts.add(item)
            elif kind is int or kind is float:
                if kind is float or item.bit_length() <= _SECRET_BITS:
                    self.numbers.add(item)
                    self.texts.add(repr(item))
            elif depth < _SECRET_DEPTH and (kind is dict or kind is list or kind is tuple):
                parts = item.values() if kind is dict else item
                stack.extend((part, depth + 1) for part in parts)
            elif depth >= _SECRET_DEPTH:
                self.unsearched = True


_SECRET_BITS: Final = 64
_SECRET_DEPTH: Final = 200


class _Walk:
    """One bounded, redacting copy of a value: ``left`` characters of text remain."""

    __slots__ = ("left", "marked", "partial", "pattern", "secrets")

    def __init__(
        self,
        pattern: re.Pattern[str] | None,
        limit: int | None,
        *,
        partial: bool = False,
        secrets: Secrets | None = None,
    ) -> None:
        self.pattern = pattern
        self.left = limit if limit is not None else -1  # -1: no limit
        self.partial = partial  # a prefix's parse: what follows a cut is not counted
        self.marked = False  # a cut was marked
        self.secrets = secrets  # where the values under redacted keys are remembered

    def value(self, value: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            if self.secrets is not None:
                self.secrets.unsearched = True
            return "[too deep]"
        kind = type(value)
        if kind is str:
            return self.text(value)
        if kind is dict or (kind is not list and isinstance(value, Mapping)):
            return self.mapping(value, depth)
        if kind is list or kind is tuple:
            return self.items(value, depth)
        if kind is int and value.bit_length() > 64:
            return self.number(value)
        self.spend(_NUMBER)
        return value

    def spend(self, count: int) -> None:
        if self.left > 0:
            self.left = max(0, self.left - count)

    def number(self, value: int) -> int | str:
        digits = int(value.bit_length() * _DIGITS_PER_BIT) + 1
        if 0 <= self.left < digits:
            self.left = 0
            self.marked = True
            return f"[toolguard: a number of about {digits} digits cut]"
        self.spend(digits)
        return value

    def text(self, text: str) -> str:
        text = utf8(text)
        if self.left < 0:
            return text
        if len(text) > self.left:
            marker = _CUT_PARTIAL if self.partial else _CUT.format(count=len(text) - self.left)
            cut = text[: self.left] + marker
            self.left = 0
            self.marked = True
            return cut
        self.left -= len(text)
        return text

    def more(self, count: int) -> str:
        self.marked = True
        if self.secrets is not None:
            self.secrets.unsearched = True
        return _MORE_PARTIAL if self.partial else _MORE.format(count=count)

    def mapping(self, value: Mapping[Any, Any], depth: int) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for position, (key, item) in enumerate(value.items()):
            if self.left == 0:
                out["..."] = self.more(len(value) - position)
                break
            self.spend(2 * _ENTRY)
            shown_key = self.text(key) if isinstance(key, str) else key
            if self.pattern is not None and isinstance(key, str) and _is_secret(self.pattern, key):
                out[shown_key] = REDACTED
                if self.secrets is not None:
                    self.secrets.add(item)
            else:
                out[shown_key] = self.value(item, depth + 1)
        return out

    def items(self, value: list[Any] | tuple[Any, ...], depth: int) -> list[Any]:
        out: list[Any] = []
        for position, item in enumerate(value):
            if self.left == 0:
                out.append(self.more(len(value) - position))
                break
            self.spend(_ENTRY)
            out.append(self.value(item, depth + 1))
        return out


def arguments_for_log(
    arguments: Any,
    keys: tuple[str, ...],
    limit: int | None = None,
    secrets: Secrets | None = None,
) -> Any:
    """What of the model's arguments may appear in a log event: redacted, bounded.

    Parsed arguments pass through :func:`redact`; a JSON string is parsed by
    pydantic-core, and when the event is bounded, only the prefix it could show: at
    most ``6 * limit`` characters, so a megabyte of arguments is not parsed twice. A
    raw string that could not be parsed cannot be redacted, so only its length is
    logged. ``secrets``, when given, learns what was redacted and what was not looked at.
    """
    if arguments is None or isinstance(arguments, Mapping):
        return redact(arguments, keys, limit, secrets) if arguments else {}
    if isinstance(arguments, str):
        if not arguments or arguments.isspace():
            return {}
        if limit is not None and len(arguments) > _PREFIX_FACTOR * limit:
            if secrets is not None:  # the rest is not parsed again
                secrets.unsearched = True
            return _prefix_for_log(arguments, keys, limit, secrets)
        try:
            parsed = pydantic_core.from_json(arguments)
        except ValueError:
            if secrets is not None:  # what the tool's own parse made of it is unknown
                secrets.unsearched = True
            return _unparsed(arguments)
        return redact(parsed, keys, limit, secrets)
    if secrets is not None:
        secrets.unsearched = True
    return f"[{type(arguments).__name__}]"


def _prefix_for_log(
    arguments: str, keys: tuple[str, ...], limit: int, secrets: Secrets | None = None
) -> Any:
    """:func:`redact` of what the first ``6 * limit`` characters of JSON parse to.

    The prefix's last value may be cut short, and what follows it is not counted:
    cuts are marked without counts, and when the walk's own bound cut nothing (a
    prefix of mostly white space or escapes), the whole is marked.
    """
    try:
        parsed = pydantic_core.from_json(
            arguments[: _PREFIX_FACTOR * limit], allow_partial="trailing-strings"
        )
    except ValueError:
        return _unparsed(arguments)
    walk = _Walk(_redaction(keys), limit, partial=True, secrets=secrets)
    shown = walk.value(parsed, 0)
    if walk.marked:
        return shown
    rest = _REST.format(size=len(arguments))
    if type(shown) is dict:
        return {**shown, "...": rest}
    if type(shown) is list:
        return [*shown, rest]
    return f"{shown}{rest}" if type(shown) is str else rest


def _unparsed(arguments: str) -> str:
    return f"[unparsed, {len(arguments)} chars]"


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
