"""Text toolguard sends or logs: bounded, escaped where it echoes the model, valid UTF-8.

* :func:`shown` renders a value the model supplied (a tool name, a call id) for a
  message or a log field: at most ``limit`` characters of it, control characters
  and other non-printables escaped, and anything that is not a ``str`` named by its
  type. The common case (a short, printable name) is returned as it is.
* :func:`excerpt` is the short rendering of an argument value in a validation
  message, bounded at any size or depth.
* :func:`normalised` is a key as redaction compares it (``X-Api-Key`` is ``apikey``).
* :func:`utf8` makes text encodable as UTF-8: a lone surrogate (what
  ``os.listdir`` gives for a file name that is not UTF-8, or JSON's ``"\\ud800"``)
  becomes U+FFFD, so no writer of the result, the log or a protocol stream fails
  on it.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any, Final

__all__ = [
    "EXCERPT",
    "ID_LIMIT",
    "NAME_LIMIT",
    "TOOL_NAME",
    "TOOL_NAME_RULE",
    "bounded",
    "excerpt",
    "normalised",
    "shown",
    "utf8",
]

NAME_LIMIT: Final = 64  # what every provider allows for a tool name
TOOL_NAME: Final = re.compile(rf"[A-Za-z0-9_-]{{1,{NAME_LIMIT}}}")  # use fullmatch
TOOL_NAME_RULE: Final = f"1-{NAME_LIMIT} characters of A-Z a-z 0-9 _ -"
"""What every provider accepts as a tool name, as the pattern and as words."""
ID_LIMIT: Final = 128  # characters of a model's call id that toolguard logs or records
EXCERPT: Final = 40

_REPR = reprlib.Repr()  # bounded at any depth and size (keyword options need 3.12)
_REPR.maxlevel = 3
_REPR.maxdict = _REPR.maxlist = _REPR.maxtuple = _REPR.maxset = 4
_REPR.maxstring = _REPR.maxlong = _REPR.maxother = EXCERPT


def shown(value: object, limit: int = NAME_LIMIT) -> str:
    """``value`` as toolguard may echo it: bounded, printable, a ``str``."""
    if type(value) is not str:
        return f"<{type(value).__name__}>" if value is not None else "<none>"
    if len(value) <= limit and value.isprintable():
        return value
    cut = value[:limit]
    escaped = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in cut)
    if len(value) > limit:
        escaped += f"...(+{len(value) - limit} characters)"
    return utf8(escaped)


def excerpt(value: Any) -> str:
    """A short, safe rendering of what the model sent (bounded at any size or depth)."""
    try:
        if isinstance(value, str):  # the common case, and cheap: cut before repr
            text = repr(value[: EXCERPT + 1])
        elif value is None or isinstance(value, bool | int | float):
            text = repr(value)  # an int too long to print raises: handled below
        else:
            text = _REPR.repr(value)  # containers: bounded depth and width
    except Exception:  # noqa: BLE001 - a huge int, a repr that raises: say what it was
        text = f"<{type(value).__name__}>"
    return utf8(text if len(text) <= EXCERPT else text[: EXCERPT - 3] + "...")


def utf8(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a pair stays a character)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}...(+{len(text) - limit} characters)"


_SEPARATORS: Final = re.compile(r"[^0-9a-z]+")


def normalised(key: str) -> str:
    """A key as redaction compares it: lower case, separators gone (``X-Api-Key``,
    ``api_key``, ``apiKey`` and ``API KEY`` are all ``apikey``)."""
    return _SEPARATORS.sub("", key.lower())
