"""toolguard's results as LangChain messages, and the round that asks the loop to stop.

Part of :mod:`toolguard.integrations.langchain` (which re-exports the public names):
content conversions both ways, :func:`tool_message`, the decision carried in
``ToolMessage.response_metadata["toolguard"]`` (only where toolguard decided
something: its own answers, and a message that asks to stop), :func:`stop_requested`,
the update that ends a ``create_agent`` loop with the stopping message last, and which
return values are LangChain's own (they pass through untouched).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal, TypeAlias

from langchain_core.messages import AIMessage, AnyMessage, RemoveMessage, ToolMessage
from langchain_core.messages.tool import ToolOutputMixin
from langgraph.graph.message import REMOVE_ALL_MESSAGES

from toolguard import Dispatcher, Image, Text, ToolResult

__all__ = [
    "BLOCK_TYPES",
    "METADATA_KEY",
    "as_toolguard_content",
    "decided",
    "is_native",
    "message_content",
    "native_text",
    "stop_requested",
    "stop_update",
    "tool_message",
]

Content: TypeAlias = str | tuple[Text | Image, ...]
Stops: TypeAlias = Callable[[Sequence[bool]], bool]

METADATA_KEY: Final = "toolguard"
"""Key in ``ToolMessage.response_metadata`` of toolguard's decision about a call:
``{"return_direct": bool, "error_id": str | None}``, on the messages toolguard wrote
and on a message that asks the loop to stop; a message toolguard decided nothing about
carries nothing. Chat model integrations send a tool result's content and call id, not
its ``response_metadata`` (langchain-openai keeps only ``content``, ``role`` and
``tool_call_id``)."""

BLOCK_TYPES: Final = frozenset(
    {"text", "image_url", "image", "json", "search_result", "custom_tool_call_output"}
    | {"document", "file"}
)
"""The content block types LangChain passes into a ``ToolMessage`` as they are
(``langchain_core.tools.base.TOOL_MESSAGE_BLOCK_TYPES``)."""


# --- content, both ways -----------------------------------------------------------------


def message_content(content: Content) -> str | list[str | dict[str, Any]]:
    """toolguard's content as LangChain message content (standard content blocks)."""
    if isinstance(content, str):
        return content
    return [
        {"type": "image", "base64": block.data, "mime_type": block.media_type}
        if isinstance(block, Image)
        else {"type": "text", "text": block.text}
        for block in content
    ]


def as_toolguard_content(content: str | list[str | dict[str, Any]]) -> Content | None:
    """LangChain message content as toolguard's: text, text blocks and base64 images.

    ``None`` when a block has no toolguard form (an image by URL, a file, JSON...):
    such content is left as the tool wrote it.
    """
    if isinstance(content, str):
        return content
    blocks: list[Text | Image] = []
    for block in content:
        if isinstance(block, str):
            blocks.append(Text(text=block))
        elif block.get("type") == "text" and isinstance(block.get("text"), str):
            blocks.append(Text(text=block["text"]))
        elif (
            block.get("type") == "image"
            and isinstance(block.get("base64"), str)
            and isinstance(block.get("mime_type"), str)
        ):
            blocks.append(Image(data=block["base64"], media_type=block["mime_type"]))
        else:
            return None
    return tuple(blocks)


# --- answers ----------------------------------------------------------------------------


def tool_message(result: ToolResult) -> ToolMessage:
    """The ``ToolMessage`` that answers ``result``'s call.

    ``content`` is toolguard's content; ``status`` is ``"error"`` for failures;
    ``artifact`` is the result's artifact; ``response_metadata["toolguard"]`` holds
    ``return_direct`` and ``error_id``. The result must carry the call id.
    """
    if result.call_id is None:
        raise ValueError("a ToolMessage answers a tool call; this result has no call id")
    return ToolMessage(
        content=message_content(result.content),
        tool_call_id=result.call_id,
        name=result.name,
        status="error" if result.is_error else "success",
        artifact=result.artifact,
        response_metadata={
            METADATA_KEY: {"return_direct": result.return_direct, "error_id": result.error_id}
        },
    )


def decided(message: ToolMessage, return_direct: bool, error_id: str | None = None) -> ToolMessage:
    """``message`` carrying toolguard's decision (a copy; the rest is unchanged).

    Where there is nothing to carry (no stop, no error id), ``message`` itself.
    """
    if not return_direct and error_id is None:
        return message
    metadata = {
        **message.response_metadata,
        METADATA_KEY: {"return_direct": return_direct, "error_id": error_id},
    }
    return message.model_copy(update={"response_metadata": metadata})


# --- the round that stops the loop ------------------------------------------------------


def _last_round(messages: Sequence[AnyMessage]) -> int | None:
    """Where the last round's answers start: after the last ``AIMessage``, when every
    message after it is a ``ToolMessage`` (and there is one)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            answers = messages[index + 1 :]
            if answers and all(isinstance(m, ToolMessage) for m in answers):
                return index + 1
            return None
    return None


def _asked_to_stop(message: AnyMessage) -> bool:
    decision = message.response_metadata.get(METADATA_KEY)
    return isinstance(decision, dict) and decision.get("return_direct") is True


@functools.cache
def _rule(mode: Literal["any", "all"]) -> Stops:
    """The core's rule for a round (``Dispatcher.round_stops``) under ``mode``."""
    return Dispatcher([], return_direct_mode=mode).round_stops


def stop_requested(messages: Sequence[AnyMessage], *, mode: Literal["any", "all"] = "any") -> bool:
    """Whether the last round of tool calls asked the agent loop to stop.

    The round is the ``ToolMessage``s after the last ``AIMessage``; it asks to stop
    when any (``mode="any"``) or every (``mode="all"``) one of them carries
    toolguard's ``return_direct``. False when the conversation does not end with
    that round (say, a new human message came after it).
    """
    start = _last_round(messages)
    if start is None:
        return False
    return _rule(mode)([_asked_to_stop(message) for message in messages[start:]])


def stop_update(messages: Sequence[AnyMessage], stops: Stops) -> dict[str, Any] | None:
    """The state update that ends a ``create_agent`` loop after a stopping round, or
    ``None`` when the round does not stop it (``stops``: the agent's rule for a round,
    ``Dispatcher.round_stops``).

    The agent's last message is then the ``ToolMessage`` of the tool that stopped it:
    when the round's last answer did not ask to stop (a parallel round in which the
    stopping tool was not called last), the first answer that did is moved to the
    end. ``add_messages`` replaces a message with a known id in place, so the move
    rewrites the history (``REMOVE_ALL_MESSAGES``, then every message again, ids kept).
    """
    start = _last_round(messages)
    if start is None:
        return None
    answers = list(messages[start:])
    asked = [_asked_to_stop(message) for message in answers]
    if not stops(asked):
        return None
    if asked[-1]:
        return {"jump_to": "end"}
    stopping = answers.pop(asked.index(True))
    history = [RemoveMessage(id=REMOVE_ALL_MESSAGES), *messages[:start], *answers, stopping]
    return {"messages": history, "jump_to": "end"}


# --- LangChain's own return values ------------------------------------------------------


def _is_block(value: object) -> bool:
    return isinstance(value, str) or (isinstance(value, dict) and value.get("type") in BLOCK_TYPES)


def is_native(value: object, response_format: str = "content") -> bool:
    """Whether a tool's return value is LangChain's own, which must reach LangChain untouched.

    A ``Command`` or ``ToolMessage`` (any ``ToolOutputMixin``), a list of them, a list
    of content blocks holding at least one block dict (a list of plain strings is
    data: toolguard serialises it), and, for ``response_format="content_and_artifact"``,
    the ``(content, artifact)`` pair.
    """
    if isinstance(value, ToolOutputMixin):
        return True
    if response_format == "content_and_artifact":
        return isinstance(value, tuple) and len(value) == 2
    if isinstance(value, list) and value:
        if all(isinstance(item, ToolOutputMixin) for item in value):
            return True
        return any(isinstance(item, dict) for item in value) and all(map(_is_block, value))
    return False


def native_text(value: object) -> str:
    """What toolguard's policy sees of a native value (``return_direct`` predicates):
    a message's text, a pair's or a block list's text; ``""`` for a ``Command``."""
    if isinstance(value, ToolMessage):
        return value.text
    if isinstance(value, tuple) and value:
        value = value[0]
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(
            item
            if isinstance(item, str)
            else str(item.get("text", ""))
            if isinstance(item, dict) and item.get("type") == "text"
            else ""
            for item in value
        )
    return ""
