"""Where a key is written in a TOML text: ``tomllib`` gives no positions.

Policy-file errors name the line of the key they are about; this module finds it.
"""

from __future__ import annotations

import contextlib
import re
from typing import Final, TypeAlias

__all__ = ["KeyLines", "KeyPath", "format_path"]

KeyPath: TypeAlias = tuple[str | int, ...]

_BARE_KEY: Final = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPE: Final = re.compile(r"\\(U[0-9A-Fa-f]{8}|u[0-9A-Fa-f]{4}|x[0-9A-Fa-f]{2}|.)")
_SCALAR: Final = re.compile(r"[^,\]}\n#]*")
_ESCAPES: Final = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", "e": "\x1b"}


def format_path(path: KeyPath) -> str:
    """A key path as a TOML reader writes it: ``tools."search_*".rules[0].exception``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            text = part if _BARE_KEY.fullmatch(part) else '"' + _quote(part) + '"'
            out += f".{text}" if out else text
    return out


def _quote(text: str) -> str:
    """``text`` as the inside of a TOML basic string."""
    return "".join(_quote_char(char) for char in text)


def _quote_char(char: str) -> str:
    if char in '"\\':
        return "\\" + char
    if char.isprintable():
        return char
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"


def _unescape(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "uUx" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _ESCAPES.get(code, code)

    return _ESCAPE.sub(one, text)


class KeyLines:
    """The line where each key path of a valid TOML text is first written.

    A small scanner that follows TOML's structure (tables, arrays of tables, dotted
    and quoted keys, inline tables, arrays, every kind of string) only far enough
    to know where keys are. It never raises: on anything unexpected it keeps what
    it found so far, and :meth:`line_of` falls back to the nearest enclosing key.
    """

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0
        self.line = 1
        self.lines: dict[KeyPath, int] = {(): 1}
        self.arrays: dict[KeyPath, int] = {}
        with contextlib.suppress(Exception):  # best effort: keep what was found
            self._document()

    def line_of(self, path: KeyPath) -> int:
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return 1  # pragma: no cover - the root is always known

    # scanning primitives

    def _peek(self, size: int = 1) -> str:
        return self.text[self.i : self.i + size]

    def _advance(self, to: int) -> None:
        self.line += self.text.count("\n", self.i, to)
        self.i = to

    def _skip(self, newlines: bool) -> None:
        """Skip blanks (and newlines and comments when ``newlines``)."""
        while self.i < len(self.text):
            char = self.text[self.i]
            if char in " \t" or (newlines and char in "\r\n"):
                self._advance(self.i + 1)
            elif char == "#":
                end = self.text.find("\n", self.i)
                self._advance(len(self.text) if end < 0 else end)
            else:
                return

    def _expect(self, token: str) -> None:
        if not self.text.startswith(token, self.i):
            raise ValueError(f"expected {token!r} at line {self.line}")
        self._advance(self.i + len(token))

    def _record(self, path: KeyPath) -> None:
        self.lines.setdefault(path, self.line)

    # the grammar, as far as keys go

    def _document(self) -> None:
        table: KeyPath = ()
        while True:
            self._skip(newlines=True)
            if self.i >= len(self.text):
                return
            if self._peek(2) == "[[":
                self._advance(self.i + 2)
                table = self._header(array=True)
                self._expect("]]")
            elif self._peek() == "[":
                self._advance(self.i + 1)
                table = self._header(array=False)
                self._expect("]")
            else:
                self._pair(table)

    def _header(self, *, array: bool) -> KeyPath:
        self._skip(newlines=False)
        keys = self._key()
        resolved: list[str | int] = []
        for index, key in enumerate(keys):
            resolved.append(key)
            here = tuple(resolved)
            if array and index == len(keys) - 1:
                self.arrays[here] = self.arrays.get(here, 0) + 1
                self._record(here)
                resolved.append(self.arrays[here] - 1)
            elif here in self.arrays:
                resolved.append(self.arrays[here] - 1)
            self._record(tuple(resolved))
        self._skip(newlines=False)
        return tuple(resolved)

    def _pair(self, table: KeyPath) -> None:
        line = self.line
        keys = self._key()
        for end in range(1, len(keys) + 1):
            self.lines.setdefault((*table, *keys[:end]), line)
        self._skip(newlines=False)
        self._expect("=")
        self._skip(newlines=False)
        self._value((*table, *keys))

    def _key(self) -> list[str]:
        keys = [self._simple_key()]
        while True:
            self._skip(newlines=False)
            if self._peek() != ".":
                return keys
            self._advance(self.i + 1)
            self._skip(newlines=False)
            keys.append(self._simple_key())

    def _simple_key(self) -> str:
        char = self._peek()
        if char in ('"', "'"):
            start = self.i + 1
            self._string(char)
            raw = self.text[start : self.i - 1]
            return _unescape(raw) if char == '"' else raw
        match = _BARE_KEY.match(self.text, self.i)
        if match is None:
            raise ValueError(f"no key at line {self.line}")
        self._advance(match.end())
        return match.group()

    def _string(self, quote: str) -> None:
        """Skip a string starting at ``self.i`` (any of the four kinds)."""
        size = 3 if self._peek(3) == quote * 3 else 1
        end = self._close(quote, self.i + size, size)
        if size == 3:  # up to two quotes may end the content: """a""""" is 'a""'
            run = len(self.text[end : end + 5]) - len(self.text[end : end + 5].lstrip(quote))
            end += run - 3
        self._advance(end + size)

    def _close(self, quote: str, start: int, size: int) -> int:
        """The index of the closing delimiter of a string whose content starts at ``start``."""
        end = start
        while True:
            end = self.text.index(quote * size, end)
            if quote == "'":
                return end
            content = self.text[start:end]
            if (len(content) - len(content.rstrip("\\"))) % 2 == 0:
                return end
            end += 1

    def _value(self, path: KeyPath) -> None:
        char = self._peek()
        if char in ('"', "'"):
            self._string(char)
        elif char == "[":
            self._advance(self.i + 1)
            index = 0
            while True:
                self._skip(newlines=True)
                if self._peek() == "]":
                    self._advance(self.i + 1)
                    return
                self._record((*path, index))
                self._value((*path, index))
                self._skip(newlines=True)
                if self._peek() == ",":
                    self._advance(self.i + 1)
                    index += 1
        elif char == "{":
            self._advance(self.i + 1)
            while True:
                self._skip(newlines=True)
                if self._peek() == "}":
                    self._advance(self.i + 1)
                    return
                if self._peek() == ",":
                    self._advance(self.i + 1)
                    continue
                self._pair(path)
        else:
            match = _SCALAR.match(self.text, self.i)
            assert match is not None
            self._advance(match.end())
            if not match.group().strip():
                raise ValueError(f"no value at line {self.line}")
