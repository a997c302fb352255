"""What a hidden cause's event shows of a call's arguments: secrets redacted, text
bounded, the values redacted remembered (so that the traceback's locals hide them
too: ``_locals``).

``redact`` masks the values of keys that look secret (compared normalised: case and
separators do not matter) and cuts long text and long collections, marking each cut;
``arguments_for_log`` does it for what the model sent, a dict or JSON text.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any, Final

import pydantic_core

from toolguard._text import normalised, utf8

__all__ = ["REDACTED", "Secrets", "arguments_for_log", "redact"]

REDACTED = "[redacted]"
_MAX_DEPTH = 20


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
