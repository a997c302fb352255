"""What every MCP integration shares: toolguard's answers as MCP data, on public names.

Used by toolguard's own MCP server (:func:`toolguard.integrations.mcp.mcp_server`), the
MCP SDK's ``MCPServer`` middleware and FastMCP's middleware; public, so that an
integration for another MCP framework can be written with the same pieces:

* :func:`call_tool_result`: a :class:`~toolguard.ToolResult` as the SDK's
  ``CallToolResult``, the one converter (the wire dict is
  :func:`toolguard.formats.mcp.call_result`'s; MCP content the tool returned passes as
  it was; ``_meta`` carries the error id and ``return_direct``);
* :func:`failed_error` / :func:`aborted`: the JSON-RPC error of a call that did not end
  in a result (nothing of the exception in it);
* :func:`is_cancellation`: a cancellation (asyncio's, anyio's, in a group), which every
  MCP path lets through untouched;
* :func:`scope_for`: the toolguard scope of an MCP request (a session per conversation);
* :class:`FrameworkVisible`: a framework's own "tell the model this" error, model-visible.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, Final

import mcp.types as types
import pydantic
from mcp.shared.exceptions import MCPError

from toolguard import Dispatcher, Scope, ToolCall, ToolCallFailed, ToolResult
from toolguard.formats import mcp as mcp_format

__all__ = [
    "EVENT_CALL_ABORTED",
    "META_ERROR_ID",
    "META_RETURN_DIRECT",
    "FrameworkVisible",
    "aborted",
    "call_tool_result",
    "failed_error",
    "is_cancellation",
    "scope_for",
]

EVENT_CALL_ABORTED: Final = "mcp_call_aborted"
"""Logged (at ERROR, with ``exc_info``) when a call ends in a JSON-RPC error because
something other than a handler's ``fail`` escaped: a control-flow signal (nothing in an
MCP server can act on it), a handler that raised, or a ``BaseException`` the tool raised
itself (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, a
``BaseExceptionGroup``)."""

META_ERROR_ID: Final = "toolguard/error_id"
"""``_meta`` key of a failed call's result: the id its hidden cause was logged under."""

META_RETURN_DIRECT: Final = "toolguard/return_direct"
"""``_meta`` key set to ``true`` when the result asks the agent loop to stop."""

_VISIBLE_LIMIT: Final = 4_000


# --- toolguard -> MCP data ------------------------------------------------------------

_BLOCKS: Final = pydantic.TypeAdapter(list[types.ContentBlock])
_BLOCK_TYPES: Final = (
    types.TextContent,
    types.ImageContent,
    types.AudioContent,
    types.ResourceLink,
    types.EmbeddedResource,
)


def meta(result: ToolResult) -> dict[str, Any] | None:
    """What toolguard decided, for a result's ``_meta`` (``None``: nothing)."""
    found: dict[str, Any] = {}
    if result.error_id is not None:
        found[META_ERROR_ID] = result.error_id
    if result.return_direct:
        found[META_RETURN_DIRECT] = True
    return found or None


def _native(result: ToolResult) -> types.CallToolResult | None:
    """The MCP value the tool returned (a ``CallToolResult``, content blocks), read
    back from the result's content (its JSON, made valid UTF-8 by toolguard)."""
    value = result.value
    if result.is_error or not isinstance(result.content, str):
        return None
    if isinstance(value, types.CallToolResult):
        return types.CallToolResult.model_validate_json(result.content)
    if isinstance(value, _BLOCK_TYPES):
        return types.CallToolResult(content=_BLOCKS.validate_json(f"[{result.content}]"))
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(v, _BLOCK_TYPES) for v in value)
    ):
        return types.CallToolResult(content=_BLOCKS.validate_json(result.content))
    return None


def call_tool_result(result: ToolResult, *, structured: bool = True) -> types.CallToolResult:
    """Turn toolguard's :class:`~toolguard.ToolResult` into an MCP ``CallToolResult``.

    The wire form is :func:`toolguard.formats.mcp.call_result`'s (text and image
    blocks, ``isError``, ``structuredContent`` for a JSON object a tool returned, left
    out with ``structured=False``). MCP content blocks or a whole ``CallToolResult``
    that the tool returned pass through as they were. ``_meta`` carries the error id
    (:data:`META_ERROR_ID`) and ``return_direct`` (:data:`META_RETURN_DIRECT`) when
    set, for the client application; ``artifact`` never leaves the process.
    """
    decided = meta(result)
    native = _native(result)
    if native is not None:
        if decided:
            native = native.model_copy(update={"meta": {**(native.meta or {}), **decided}})
        return native
    wire = mcp_format.call_result(result)
    if not structured:
        wire.pop("structuredContent", None)
    if decided:
        wire["_meta"] = decided
    return types.CallToolResult.model_validate(wire)


# --- calls that end in a JSON-RPC error ----------------------------------------------

_FAILED_MESSAGE: Final = (
    "The tool '{tool}' failed because of an internal error (error id {error_id}). "
    "The details are not available."
)


def failed_error(failed: ToolCallFailed) -> MCPError:
    """The JSON-RPC error of a call that did not end in a result: a generic message
    quoting the error id, ``data={"tool", "error_id"}`` (the name as toolguard bounded
    it)."""
    message = _FAILED_MESSAGE.format(tool=failed.tool, error_id=failed.error_id)
    return MCPError(
        code=types.INTERNAL_ERROR,
        message=message,
        data={"tool": failed.tool, "error_id": failed.error_id},
    )


def aborted(scope: Scope, call: ToolCall, error: BaseException) -> MCPError:
    """Log ``error`` once (:data:`EVENT_CALL_ABORTED`, :meth:`toolguard.Scope.aborted`)
    and return the JSON-RPC error the client gets instead; nothing of the exception is
    in it."""
    return failed_error(scope.aborted(call, error, event=EVENT_CALL_ABORTED))


def is_cancellation(error: BaseException) -> bool:
    """A cancellation: asyncio's ``CancelledError`` (anyio's cancel scopes deliver the
    same on asyncio), or a group holding one. It is never a tool's failure."""
    if isinstance(error, asyncio.CancelledError):
        return True
    if isinstance(error, BaseExceptionGroup):
        return any(is_cancellation(inner) for inner in error.exceptions)
    return False


def really_cancelled() -> bool:
    """Whether the running task is being cancelled (a client's cancellation, a
    shutdown), as opposed to a tool raising ``CancelledError`` of its own accord."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


# --- a framework's own words ---------------------------------------------------------------


class FrameworkVisible(Exception):
    """A framework's own model-visible error (its ``ToolError``), for toolguard's
    chain: its message (bounded) is what the model is told; its cause, if any, is
    logged under the error id."""

    def __init__(self, message: str) -> None:
        text = message if len(message) <= _VISIBLE_LIMIT else message[:_VISIBLE_LIMIT] + "..."
        super().__init__(text)
        self.text = text

    def message_for_model(self) -> str:
        return self.text

    @classmethod
    def of(cls, error: BaseException) -> FrameworkVisible:
        marked = cls(str(error))
        marked.__cause__ = error.__cause__
        return marked


# --- sessions ---------------------------------------------------------------------------

_STATE_KEY: Final = "toolguard/session"


def scope_for(
    dispatcher: Dispatcher, connection: Any, session_id: str | None, step: str | None
) -> Scope:
    """The toolguard scope of one MCP request (``step``: its request id).

    With ``session_id`` (the transport's MCP session id, or the application's own key),
    the dispatcher's named session: the same conversation on every request. Without
    one, one session per connection, kept in the connection's ``state`` dict; no
    conversation at all when there is no connection.
    """
    if session_id:
        return dispatcher.session(id=f"mcp:{session_id}").scope(step=step)
    state = getattr(connection, "state", None)
    if not isinstance(state, dict):
        return dispatcher.scope()
    found = state.get(_STATE_KEY)
    if isinstance(found, Mapping) and dispatcher in found:
        return found[dispatcher].scope(step=step)  # type: ignore[no-any-return] # a Session
    session = dispatcher.session()
    by_dispatcher = dict(found) if isinstance(found, Mapping) else {}
    by_dispatcher[dispatcher] = session
    state[_STATE_KEY] = by_dispatcher
    return session.scope(step=step)
