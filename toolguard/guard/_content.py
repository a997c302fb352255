"""A tool's return value, or a handler's answer, as content for the model.

Strings pass through; content blocks stay blocks; everything else becomes JSON
text (``add(1, 2)`` gives ``"3"``). Text longer than a policy's
``max_result_chars`` is cut, with a note telling the model.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import decimal
import enum
import inspect
import json
import uuid
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, Final, overload

import attrs

from toolguard._text import utf8
from toolguard._values import Content, ContentBlock, Image, Output, Text
from toolguard.errors import ResultNotSerializable

__all__ = ["ERROR_LIMIT", "TRUNCATED", "checked", "sendable", "to_content", "truncate"]

TRUNCATED: Final = (
    "\n[toolguard: output truncated: showing the first {shown} of {total} characters]"
)
ERROR_LIMIT: Final = 8_000
"""How long an answer to a failure may be when ``max_result_chars`` is not set: a
message is written for a model, and no exception's text should flood its context."""


def _jsonable(value: Any) -> Any:
    """``json.dumps`` fallback: the common rich types, deterministically."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, _dt.datetime | _dt.date | _dt.time):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, set | frozenset):
        return sorted(value, key=_sort_key)
    if isinstance(value, decimal.Decimal | uuid.UUID | PurePath):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if attrs.has(type(value)):
        return attrs.asdict(value, recurse=False)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    dump = getattr(value, "model_dump", None)  # pydantic v2 models
    if callable(dump):
        return dump(mode="json")
    if isinstance(value, tuple | Sequence) and not isinstance(value, str):
        return list(value)
    if inspect.isawaitable(value):
        raise ResultNotSerializable(
            f"the tool returned a {type(value).__qualname__} that nobody awaited: an async "
            "function called without await (await it in an async tool), or an async "
            "framework invocation run on a sync path (an integration awaits it with "
            "aguard_call or scope.arun)"
        )
    raise ResultNotSerializable(
        f"cannot serialise a {type(value).__module__}.{type(value).__qualname__} for the model; "
        "return a str, a JSON-compatible value, a dataclass, attrs class or pydantic model, "
        "or toolguard.Output(content=..., artifact=...)"
    )


def _sort_key(item: Any) -> tuple[str, str]:
    return (type(item).__name__, json.dumps(item, default=_jsonable, sort_keys=True))


_encode = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), default=_jsonable, allow_nan=False
).encode


def to_content(value: Any) -> tuple[Content, Any]:
    """Turn a tool's return value into ``(content, artifact)``.

    Strings pass through; lists of content blocks become block tuples; everything
    else is serialised to a JSON string (``add(1, 2)`` gives ``"3"``).
    """
    kind = type(value)
    if kind is str:
        return utf8(value), None
    if kind is int:
        return str(value), None
    if kind is Output:
        content, _ = to_content(value.content)
        return content, value.artifact
    if kind is Text or kind is Image:
        return _valid_blocks((value,)), None
    if (
        (kind is list or kind is tuple)
        and value
        and all(type(block) is Text or type(block) is Image for block in value)
    ):
        return _valid_blocks(value), None
    try:
        return utf8(_encode(value)), None
    except ValueError as error:  # NaN / Infinity, circular references
        raise ResultNotSerializable(
            f"cannot serialise the tool's result as JSON: {error}"
        ) from None


def checked(answer: Any, handler_name: str) -> Content:
    """A handler's answer as content, or a clear ``TypeError`` naming the handler."""
    if isinstance(answer, str):
        return answer
    if (
        isinstance(answer, list | tuple)
        and answer
        and all(isinstance(block, Text | Image) for block in answer)
    ):
        return tuple(answer)
    raise TypeError(
        f"handler {handler_name} answered {type(answer).__name__}; a handler answers "
        "with a str, content blocks, or None (not mine)"
    )


@overload
def truncate(content: str, limit: int) -> str: ...
@overload
def truncate(content: Content, limit: int) -> Content: ...
def truncate(content: Content, limit: int) -> Content:
    """Cut content longer than ``limit`` characters in all, telling the model it was cut.

    Text counts its characters and an image its base64 data. Blocks are kept in order
    while they fit; the text block that overflows is cut, an image that does not fit
    is left out whole; one note at the end says what was shown.
    """
    if isinstance(content, str):
        if len(content) <= limit:
            return content
        return content[:limit] + TRUNCATED.format(shown=limit, total=len(content))
    total = sum(len(b.text) if isinstance(b, Text) else len(b.data) for b in content)
    if total <= limit:
        return content
    kept: list[ContentBlock] = []
    left, omitted = limit, 0
    for block in content:
        if isinstance(block, Text):
            if left > 0:
                kept.append(block if len(block.text) <= left else Text(text=block.text[:left]))
                left -= min(left, len(block.text))
        elif len(block.data) <= left:
            kept.append(block)
            left -= len(block.data)
        else:
            omitted += 1
    note = TRUNCATED.format(shown=limit - left, total=total)
    if omitted:
        note = note[:-1] + f"; {omitted} image(s) omitted]"
    return (*kept, Text(text=note.lstrip("\n")))


@overload
def sendable(content: str, limit: int) -> str: ...
@overload
def sendable(content: Content, limit: int) -> Content: ...
def sendable(content: Content, limit: int) -> Content:
    """Content as it may go to the model: valid UTF-8, at most ``limit`` characters."""
    if isinstance(content, str):
        return truncate(utf8(content), limit)
    return truncate(_valid_blocks(content), limit)


def _valid_blocks(blocks: Sequence[ContentBlock]) -> tuple[ContentBlock, ...]:
    """Content blocks whose text encodes as UTF-8."""
    return tuple(
        Text(text=utf8(block.text))
        if isinstance(block, Text) and not block.text.isascii() and utf8(block.text) != block.text
        else block
        for block in blocks
    )
