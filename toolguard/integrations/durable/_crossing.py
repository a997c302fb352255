"""What crosses an activity or step boundary, both ways, and the workflow's half.

To where the tool runs: the call (:func:`call_payload`, :func:`call_of`). Back: a
:data:`Crossing`, JSON with nothing hidden in it. In the workflow, :func:`asettle` (and
:func:`settle`) makes the result from it, in the workflow's session.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, TypedDict

import attrs

from toolguard import (
    Image,
    RemoteFailure,
    RetryWithFeedback,
    Scope,
    Text,
    ToolCall,
    ToolCallFailed,
    ToolResult,
)

__all__ = [
    "CROSSING_VERSION",
    "Crossing",
    "asettle",
    "blocks",
    "call_of",
    "call_payload",
    "content_of",
    "crossing_failure",
    "is_crossing",
    "settle",
]

CROSSING_VERSION: Final = 1


class Crossing(TypedDict, total=False):
    """What crosses back from where a tool ran: JSON, nothing hidden.

    A success: ``content`` (text, or content blocks as ``{"type": "text", "text"}`` and
    ``{"type": "image", "data", "media_type"}``) and ``truncated``. A failure answered
    there: ``content`` (the answer), ``error_kind``, ``error_id`` (set when a cause was
    hidden, and logged there under it), ``error_type`` (the exception type's name),
    ``message`` (the exception's own model-visible message, for a ``RetryWithFeedback``
    answered in the workflow). A handler that failed the invocation: ``failed`` with
    ``error_id``, ``error_type`` and ``call_id``. ``toolguard`` is the format's version.
    """

    toolguard: int
    content: str | list[dict[str, str]]
    truncated: bool
    error_kind: str
    error_id: str | None
    error_type: str
    message: str | None
    failed: bool
    call_id: str | None


def is_crossing(value: object) -> bool:
    """Whether ``value`` is a :data:`Crossing` (what toolguard sent across)."""
    return isinstance(value, Mapping) and value.get("toolguard") == CROSSING_VERSION


def call_payload(call: ToolCall) -> dict[str, Any]:
    """``call`` as JSON, for the activity's or step's input."""
    return {"name": call.name, "arguments": call.arguments, "id": call.id}


def call_of(payload: Mapping[str, Any]) -> ToolCall:
    """The call from :func:`call_payload`'s JSON."""
    return ToolCall(name=payload["name"], arguments=payload.get("arguments"), id=payload.get("id"))


def blocks(content: Any) -> str | list[dict[str, str]]:
    """A result's content as JSON (text as it is, blocks as dicts)."""
    if isinstance(content, str):
        return content
    return [
        {"type": "text", "text": block.text}
        if isinstance(block, Text)
        else {"type": "image", "data": block.data, "media_type": block.media_type}
        for block in content
    ]


def content_of(crossed: str | list[dict[str, str]]) -> Any:
    """The content :func:`blocks` sent across, as toolguard's values again."""
    if isinstance(crossed, str):
        return crossed
    return tuple(
        Text(text=block["text"])
        if block.get("type") == "text"
        else Image(data=block["data"], media_type=block["media_type"])
        for block in crossed
    )


_KINDS: Final = frozenset(
    ("arguments", "unknown_tool", "timeout", "unavailable", "visible", "hidden")
)


def crossing_failure(crossed: Crossing, call: ToolCall) -> Exception:
    """What a failure that crossed means in the workflow: the answer given where the
    tool ran (a :class:`~toolguard.RemoteFailure`), a ``RetryWithFeedback`` to answer
    here (its budget is the workflow session's), or the ``ToolCallFailed`` to raise."""
    tool = str(call.name)
    error_type = str(crossed.get("error_type") or "Exception")
    if crossed.get("failed"):
        return ToolCallFailed(
            f"The tool '{tool}' failed ({error_type}, error id {crossed.get('error_id')}).",
            tool=tool,
            call_id=call.id,
            error_id=str(crossed.get("error_id")),
        )
    kind = crossed.get("error_kind")
    message = crossed.get("message")
    if kind == "feedback" and message:
        return RetryWithFeedback(message)
    known: Any = kind if kind in _KINDS else None
    return RemoteFailure(
        content_of(crossed.get("content", "")),
        error_type=error_type,
        error_id=crossed.get("error_id"),
        error_kind=known,
    )


def _succeeded(crossed: Crossing) -> bool:
    return "error_kind" not in crossed and not crossed.get("failed")


def settle(scope: Scope, call: ToolCall, crossed: Crossing) -> ToolResult:
    """The result of what crossed back, in ``scope`` (the workflow's session): its books
    kept, nothing logged again. A ``ToolCallFailed`` that crossed is raised."""
    if _succeeded(crossed):
        result = scope.succeeded(call, content_of(crossed.get("content", "")))
        return attrs.evolve(result, truncated=True) if crossed.get("truncated") else result
    error = crossing_failure(crossed, call)
    if isinstance(error, ToolCallFailed):
        raise error
    return scope.failed(call, error)


async def asettle(scope: Scope, call: ToolCall, crossed: Crossing) -> ToolResult:
    """Async :func:`settle` (a session on an asyncio store, async handlers)."""
    if _succeeded(crossed):
        result = await scope.asucceeded(call, content_of(crossed.get("content", "")))
        return attrs.evolve(result, truncated=True) if crossed.get("truncated") else result
    error = crossing_failure(crossed, call)
    if isinstance(error, ToolCallFailed):
        raise error
    return await scope.afailed(call, error)
