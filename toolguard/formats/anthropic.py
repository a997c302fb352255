"""Anthropic Messages API, as plain dicts.

The three calls of a raw loop::

    from toolguard.formats import anthropic as tg_anthropic

    response = client.messages.create(..., tools=tg_anthropic.tools(dispatcher))
    calls = tg_anthropic.parse_calls(response)                 # tool_use blocks in
    round_ = dispatcher.run(calls)
    history += [
        {"role": "assistant", "content": response.content},
        tg_anthropic.message(round_),                          # tool_result blocks out
    ]

A failed call is a ``tool_result`` block with ``"is_error": true``; its content is
the model-facing message only. No Anthropic SDK is imported.
"""

from __future__ import annotations

from typing import Any, Final

from toolguard._values import Text, ToolCall, ToolResult
from toolguard.formats._common import (
    Results,
    ToolSource,
    declared,
    get,
    has,
    need_call_id,
    parameters,
    results,
    sequence,
)

__all__ = ["IMAGE_MEDIA_TYPES", "message", "parse_calls", "tool_results", "tools"]

IMAGE_MEDIA_TYPES: Final = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""The image types a ``tool_result`` may carry; others become a text placeholder."""

_PROVIDER: Final = "Anthropic"


def tools(source: ToolSource) -> list[dict[str, Any]]:
    """Messages API ``tools``: ``{"name", "description", "input_schema"}`` per tool."""
    declared_tools: list[dict[str, Any]] = []
    for t in declared(source):
        entry: dict[str, Any] = {"name": t.name}
        if t.description:
            entry["description"] = t.description
        entry["input_schema"] = parameters(t)
        declared_tools.append(entry)
    return declared_tools


def parse_calls(response: Any) -> list[ToolCall]:
    """The ``tool_use`` blocks of a Messages API reply, in order.

    Takes a ``Message``, a message dict (``{"role": "assistant", "content": [...]}``),
    or its list of content blocks, as SDK objects or dicts. Server tools
    (``server_tool_use``) run at Anthropic and are left out.
    """
    content = response if sequence(response) else get(response, "content")
    if content is None and not has(response, "content"):
        raise TypeError(
            "anthropic.parse_calls takes a Message, a message dict or its content blocks, "
            f"got {type(response).__name__}"
        )
    if isinstance(content, str):
        return []
    return [
        ToolCall(name=get(block, "name") or "", arguments=get(block, "input"), id=get(block, "id"))
        for block in content or ()
        if get(block, "type") == "tool_use"
    ]


def _block(result: ToolResult) -> dict[str, Any]:
    block: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": need_call_id(result, _PROVIDER),
    }
    if isinstance(result.content, str):
        if result.content:
            block["content"] = result.content
    else:
        parts: list[dict[str, Any]] = []
        for item in result.content:
            if isinstance(item, Text):
                parts.append({"type": "text", "text": item.text})
            elif item.media_type in IMAGE_MEDIA_TYPES:
                parts.append(
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": item.media_type,
                            "data": item.data,
                        },
                    }
                )
            else:
                text = f"[{item.media_type} image: not a type Anthropic accepts]"
                parts.append({"type": "text", "text": text})
        block["content"] = parts
    block["is_error"] = result.is_error
    return block


def tool_results(source: Results) -> list[dict[str, Any]]:
    """One ``tool_result`` block per result, in call order (``is_error`` on each)."""
    return [_block(result) for result in results(source)]


def message(source: Results) -> dict[str, Any]:
    """The ``user`` message answering a round: its ``tool_result`` blocks, in call order."""
    return {"role": "user", "content": tool_results(source)}
