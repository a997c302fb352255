"""The values that flow through a dispatcher: calls in, results and rounds out.

Pure data: this module imports nothing else of toolguard's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

__all__ = [
    "Content",
    "ContentBlock",
    "ErrorKind",
    "Image",
    "Output",
    "Round",
    "Text",
    "ToolCall",
    "ToolResult",
    "error_result",
    "success",
]


@attrs.frozen(kw_only=True)
class ToolCall:
    """One tool call as the model sent it.

    ``arguments`` is a dict, the JSON string a model sent, or ``None``; ``None``
    and ``""`` both mean "no arguments".
    """

    name: str
    arguments: Mapping[str, Any] | str | None = None
    id: str | None = None


@attrs.frozen(kw_only=True)
class Text:
    """A text content block."""

    text: str


@attrs.frozen(kw_only=True)
class Image:
    """An image content block: base64 ``data`` and its ``media_type`` (``image/png``)."""

    data: str
    media_type: str


ContentBlock: TypeAlias = Text | Image
Content: TypeAlias = str | tuple[ContentBlock, ...]


@attrs.frozen(kw_only=True)
class Output:
    """What a tool returns when it has data for the application too.

    ``content`` goes to the model (serialised like any return value); ``artifact``
    stays in the process, on :attr:`ToolResult.artifact`.
    """

    content: Any
    artifact: Any = None


ErrorKind: TypeAlias = Literal[
    "arguments", "unknown_tool", "feedback", "timeout", "unavailable", "visible", "hidden"
]
"""What kind of failure a result answers (never sent to the model):

``arguments`` the model's arguments were invalid; ``unknown_tool`` it named no tool;
``feedback`` the tool asked the model to retry (``RetryWithFeedback``); ``timeout``
the tool overran; ``unavailable`` its breaker is open; ``visible`` another
model-visible error (``ToolError``, ``message_for_model()``); ``hidden`` an unmarked
error, whose detail the model did not see.
"""


# Not slotted: a frozen attrs class with a __dict__ builds faster (one result per
# call is on the hot path), and results are short-lived.
@attrs.frozen(kw_only=True, slots=False)
class ToolResult:
    """The answer to one :class:`ToolCall`.

    ``content`` is what the model sees. ``error_id`` is set when a failure's cause
    was hidden from the model (and logged under that id). ``return_direct`` says
    whether this result asks the agent loop to stop. ``artifact`` is data for the
    application, never sent to the model. ``error_kind`` says what kind of failure
    this answers (``None`` on success), for integrations that map failures onto a
    framework's own signals (a retry, a failed result). ``truncated`` says that
    ``max_result_chars`` cut the content. ``value`` is what the tool returned, as it
    returned it (``None`` for a failure): never sent, not compared, not shown in the
    repr; for integrations that hand a framework its own return types back.
    """

    call_id: str | None
    name: str
    content: Content
    is_error: bool = False
    return_direct: bool = False
    error_id: str | None = None
    artifact: Any = None
    error_kind: ErrorKind | None = None
    truncated: bool = False
    value: Any = attrs.field(default=None, eq=False, repr=False)

    @property
    def text(self) -> str:
        """The content as plain text (text blocks joined; images as a placeholder)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(
            block.text if isinstance(block, Text) else f"[image {block.media_type}]"
            for block in self.content
        )


_SUCCESS_DEFAULTS: Final = {
    "is_error": False,
    "return_direct": False,
    "error_id": None,
    "error_kind": None,
    "truncated": False,
}
_new = object.__new__


def error_result(
    call_id: str | None,
    name: str,
    content: Content,
    *,
    return_direct: bool,
    error_id: str | None,
    error_kind: ErrorKind,
) -> ToolResult:
    """An error result, built like :func:`success` (a test pins that it is identical)."""
    result: ToolResult = _new(ToolResult)
    result.__dict__.update(
        call_id=call_id,
        name=name,
        content=content,
        is_error=True,
        return_direct=return_direct,
        error_id=error_id,
        artifact=None,
        error_kind=error_kind,
        truncated=False,
        value=None,
    )
    return result


def success(
    call_id: str | None, name: str, content: Content, artifact: Any, value: Any = None
) -> ToolResult:
    """``ToolResult(call_id=..., name=..., content=..., artifact=..., value=...)``, built
    faster.

    The dispatcher's hot path builds one per call; filling the instance dict at once
    skips attrs' per-field frozen setters. The result is identical (a test pins it).
    """
    result: ToolResult = _new(ToolResult)
    fields = result.__dict__
    # in field order, as attrs' __init__ stores them: the instance dicts of a class
    # share one key table only while every instance inserts its keys in one order
    fields["call_id"] = call_id
    fields["name"] = name
    fields["content"] = content
    fields["is_error"] = False
    fields["return_direct"] = False
    fields["error_id"] = None
    fields["artifact"] = artifact
    fields["error_kind"] = None
    fields["truncated"] = False
    fields["value"] = value
    return result


@attrs.frozen(kw_only=True, slots=False)  # not slotted, as ToolResult: one per round
class Round:
    """The results of one round of parallel tool calls.

    ``results`` has one result per call, in call order. ``stop`` says whether the
    agent loop should end after this round (see ``return_direct_mode``); ``final``
    is the first result, in call order, that asked to stop, when ``stop`` is true.
    """

    results: tuple[ToolResult, ...]
    stop: bool = False
    final: ToolResult | None = None
