"""What Strands tells toolguard about a call: its conversation, its model step, its answer."""

from __future__ import annotations

import base64
import json
import weakref
from typing import Any, Final

from pydantic import ValidationError
from strands.types.content import ContentBlock
from strands.types.tools import ToolResult, ToolUse

from toolguard import Dispatcher, Image, Scope, Session, ToolCall
from toolguard import ToolResult as GuardResult

__all__ = [
    "blocks",
    "call_of",
    "decidable",
    "final_message",
    "forget",
    "remember",
    "scope_of",
    "session_id",
    "tool_result",
    "validation",
]

_DECISIONS_KEPT: Final = 4096  # calls whose decision waits for the end of their batch


def session_id(agent: Any) -> str | None:
    """The toolguard session id of a Strands agent with a session manager.

    ``"{session_id}/{agent_id}"``; ``None`` without a session manager, where the
    agent object itself is the conversation (its toolguard session lives as long
    as the agent).
    """
    # Agent._session_manager is Strands-private: no public property says which
    # session an agent is in. tests/integrations/test_strands.py fails loudly if a
    # release moves it.
    manager = agent._session_manager if agent is not None else None
    found = getattr(manager, "session_id", None) if manager is not None else None
    if not isinstance(found, str) or not found:
        return None
    return f"{found}/{getattr(agent, 'agent_id', 'default')}"


_by_agent: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Dispatcher, Session]] = (
    weakref.WeakKeyDictionary()
)


def _session(dispatcher: Dispatcher, agent: Any) -> Session:
    named = session_id(agent)
    if named is not None:
        return dispatcher.session(id=named)
    if agent is None:
        return dispatcher.session()
    sessions = _by_agent.setdefault(agent, weakref.WeakKeyDictionary())
    found = sessions.get(dispatcher)
    if found is None:
        found = sessions[dispatcher] = dispatcher.session()
    return found


def _step(agent: Any, call_id: str) -> str:
    """The model message a call came in: the first tool use id of that message."""
    messages = getattr(agent, "messages", None) or ()
    for message in reversed(messages[-4:]):
        ids = [b["toolUse"]["toolUseId"] for b in message.get("content", ()) if "toolUse" in b]
        if call_id in ids:
            return f"message:{ids[0]}"
    return f"call:{call_id}"


def scope_of(dispatcher: Dispatcher, agent: Any, call_id: str) -> Scope:
    """The scope of a call: the agent's conversation, in the model message it came in."""
    return _session(dispatcher, agent).scope(step=_step(agent, call_id))


def call_of(tool_use: ToolUse) -> ToolCall:
    return ToolCall(
        name=tool_use.get("name", ""),
        arguments=tool_use.get("input"),
        id=str(tool_use.get("toolUseId", "")),
    )


def blocks(result: GuardResult) -> list[Any]:
    """toolguard's content as Strands content blocks (text and images)."""
    if isinstance(result.content, str):
        return [{"text": result.content}]
    found: list[Any] = []
    for block in result.content:
        if isinstance(block, Image):
            fmt = block.media_type.removeprefix("image/")
            found.append(
                {"image": {"format": fmt, "source": {"bytes": base64.b64decode(block.data)}}}
            )
        else:
            found.append({"text": block.text})
    return found


def tool_result(call_id: str, result: GuardResult) -> ToolResult:
    return {
        "toolUseId": call_id,
        "status": "error" if result.is_error else "success",
        "content": blocks(result),
    }


# --- return_direct: a call's decision, until its batch ends -------------------------------

_DECISIONS: Final = "toolguard.decisions"  # invocation_state key: this invocation's stops


def remember(invocation_state: dict[str, Any], call_id: str) -> None:
    """A call of this invocation that asks to stop, until its batch ends (kept in the
    invocation's own state: nothing outlives the agent call, nothing crosses agents)."""
    decided: dict[str, bool] = invocation_state.setdefault(_DECISIONS, {})
    decided[call_id] = True
    while len(decided) > _DECISIONS_KEPT:
        del decided[next(iter(decided))]


def forget(invocation_state: dict[str, Any], call_id: str) -> bool:
    """Whether the call asked to stop (and forget it)."""
    decided: dict[str, bool] = invocation_state.get(_DECISIONS, {})
    return decided.pop(call_id, False)


def final_message(result: ToolResult) -> list[ContentBlock]:
    """A tool result's content as the final assistant message (``json`` blocks as text)."""
    found: list[ContentBlock] = []
    for block in result.get("content", ()):
        if "text" in block:
            found.append({"text": block["text"]})
        elif "json" in block:
            found.append({"text": json.dumps(block["json"], ensure_ascii=False, default=str)})
        elif "image" in block:
            found.append({"image": block["image"]})
        elif "document" in block:
            found.append({"document": block["document"]})
    return found


def validation(error: Exception) -> bool:
    """A decorated tool's ``ValueError`` for input that failed its pydantic model."""
    return (
        isinstance(error, ValueError)
        and isinstance(error.__cause__, ValidationError)
        and str(error).startswith("Validation failed for input parameters")
    )


def decidable(result: ToolResult) -> str:
    """What a success is decided on (``return_direct``): the result's text (its content
    is kept)."""
    return "\n".join(block["text"] for block in result.get("content", ()) if "text" in block)
