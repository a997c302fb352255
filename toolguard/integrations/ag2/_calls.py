"""What AG2 tells toolguard about a tool call: its conversation, its model step, and
where a failure it reports was raised."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Final

import pydantic
from ag2.events import DataInput, ModelResponse, TextInput, ToolCallEvent, ToolResultEvent
from ag2.tools.types import FunctionTool

from toolguard import Dispatcher, Scope, ToolCall

__all__ = ["Steps", "arguments_of", "raised_in_tool", "scope_of", "text_of", "where"]

# FunctionTool.__call__ runs a tool and turns what its body raises into a
# ToolErrorEvent; a failure raised below it is the tool's (its arguments' validation
# by fast-depends, or its body), anything else (a tool hook's own ToolErrorEvent) is not.
_RUN: Final = FunctionTool.__call__.__code__
# Below the run, fast-depends validates the model's arguments before the body runs.
_VALIDATION: Final = ("fast_depends.", "pydantic.", "pydantic_core.")


def _frames(traceback: TracebackType | None) -> list[Any]:
    frames = []
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    return frames


def where(error: BaseException) -> str:
    """``"arguments"`` (AG2 refused the model's arguments before the body ran),
    ``"body"`` (the tool raised it) or ``"ag2"`` (not raised in a tool run: a tool
    hook's own error result)."""
    frames = _frames(error.__traceback__)
    start = next((i for i, frame in enumerate(frames) if frame.f_code is _RUN), None)
    if start is None:
        return "ag2"
    below = frames[start + 1 :]
    if isinstance(error, pydantic.ValidationError) and all(
        str(frame.f_globals.get("__name__", "")).startswith(_VALIDATION) for frame in below
    ):
        return "arguments"
    return "body"


def raised_in_tool(error: BaseException) -> bool:
    """Whether ``error`` was raised in a tool's run (its arguments or its body)."""
    return where(error) != "ag2"


def arguments_of(event: ToolCallEvent) -> dict[str, Any] | str:
    """The model's arguments of ``event``: a dict, or the text as sent when it is not
    a JSON object (toolguard reports that)."""
    try:
        decoded = event.serialized_arguments
    except ValueError:
        return event.arguments
    return dict(decoded) if isinstance(decoded, Mapping) else event.arguments


def text_of(result: ToolResultEvent) -> str:
    """What a model reads of a tool result: its text parts, and its data parts as JSON."""
    texts: list[str] = []
    for part in result.result.parts:
        if isinstance(part, TextInput):
            texts.append(part.content)
        elif isinstance(part, DataInput):
            texts.append(json.dumps(part.data, ensure_ascii=False, default=str))
        else:
            texts.append(f"<{type(part).__name__}>")
    return "\n".join(texts)


class Steps:
    """The model step of each tool call of one AG2 turn: the model response the call
    came in (one per LLM call), recorded as the response passes the middleware."""

    __slots__ = ("_of",)

    def __init__(self) -> None:
        self._of: dict[str, str] = {}

    def saw(self, response: ModelResponse) -> None:
        calls = response.tool_calls.calls if response.tool_calls is not None else []
        if calls:
            step = uuid.uuid4().hex
            for call in calls:
                self._of[call.id] = step

    def of(self, call_id: str) -> str:
        """The step of a call (a call not seen in a response is a step of its own)."""
        return self._of.get(call_id) or f"call:{call_id}"


def scope_of(dispatcher: Dispatcher, context: Any, steps: Steps | None, call: ToolCall) -> Scope:
    """The scope of a call: the conversation is the AG2 stream the turn runs on (the
    same stream across ``reply.ask(...)`` is the same toolguard session), in the model
    response the call came in."""
    stream = getattr(context, "stream", None)
    stream_id = getattr(stream, "id", None)
    if stream_id is None:
        return dispatcher.scope()
    step = steps.of(str(call.id)) if steps is not None else f"call:{call.id}"
    return dispatcher.session(id=f"ag2-stream:{stream_id}").scope(step=step)
