"""What ADK tells toolguard about a call: its conversation, its model step, its answer."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence
from typing import Any

from google.adk.agents.readonly_context import ReadonlyContext
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from toolguard import Dispatcher, Image, Scope, ToolCall, ToolResult

__all__ = ["agent_tools", "call_of", "decidable", "response", "round_of", "scope_of", "session_id"]


def session_id(tool_context: ToolContext) -> str:
    """The toolguard session id of the ADK session a tool runs in.

    ``"{app_name}/{user_id}/{session id}"``: ADK session ids are unique per app and
    user. :class:`ToolguardPlugin` and :class:`ToolguardTool` both use it, so they
    share a conversation's breakers and budgets.
    """
    session = tool_context.session
    return f"{session.app_name}/{session.user_id}/{session.id}"


def round_of(tool_context: ToolContext) -> tuple[str, tuple[str, ...]]:
    """``(step, call ids)``: the model message (event) a call came in, and its calls.

    The step is that event's id; without one found (a call made outside a model
    turn), the call is a step of its own.
    """
    call_id = tool_context.function_call_id or ""
    events = tool_context.session.events
    for event in reversed(events[-8:]):
        ids = tuple(call.id or "" for call in event.get_function_calls())
        if call_id in ids:
            return event.id, ids
    return f"call:{call_id}", (call_id,)


def scope_of(dispatcher: Dispatcher, tool_context: ToolContext) -> Scope:
    """The scope of a call: its ADK session, in the model message it came in."""
    step, _ = round_of(tool_context)
    return dispatcher.session(id=session_id(tool_context)).scope(step=step)


def call_of(name: str, arguments: Any, tool_context: ToolContext) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=tool_context.function_call_id)


def response(result: ToolResult) -> Any:
    """toolguard's answer as an ADK function result.

    A failure is ``{"error": text}`` (ADK's own convention for a failed call); a
    success is the content: a ``str`` (ADK sends ``{"result": text}``), or for
    content blocks a list of texts and ``types.Part`` images (ADK moves the images
    into the function response's parts).
    """
    if result.is_error:
        return {"error": result.text}
    if isinstance(result.content, str):
        return result.content
    return [
        types.Part.from_bytes(data=base64.b64decode(block.data), mime_type=block.media_type)
        if isinstance(block, Image)
        else block.text
        for block in result.content
    ]


def decidable(value: Any) -> str:
    """What toolguard decides a plain tool's success on (``return_direct``): its
    response as JSON text (ADK's own parts as their text); the response sent is ADK's
    either way."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


async def agent_tools(tool_context: ToolContext) -> Sequence[str]:
    """The names of the tools the calling agent has (for an unknown tool's answer)."""
    invocation = tool_context.get_invocation_context()
    canonical = getattr(invocation.agent, "canonical_tools", None)
    if canonical is None:
        return ()
    try:
        tools = await canonical(ReadonlyContext(invocation))
    except Exception:  # noqa: BLE001  the listing is a courtesy; the answer must not fail
        return ()
    return [tool.name for tool in tools]
