"""toolguard's values as MCP data, and the rules every MCP path shares.

Used by the low-level adapter (:mod:`toolguard.integrations.mcp`), the ``MCPServer``
middleware (``_mcp_middleware``) and the FastMCP middleware
(:mod:`toolguard.integrations.fastmcp`):

* :func:`tool_declaration` / :func:`call_tool_result`: toolguard -> MCP;
* :func:`aborted` / :func:`failed_error`: the JSON-RPC error of a call that did not
  end in a result (the exception logged once, its text never sent);
* :func:`really_cancelled`: a request cancelled by its client, told apart from a
  tool's own ``CancelledError``;
* :func:`invalid_arguments`: a framework's argument-validation failure as
  toolguard's bounded, model-visible error (field names and pydantic's kinds,
  never the values or a validator's words);
* :func:`session_for`: the toolguard session of an MCP connection.

Every string put on the wire here is valid UTF-8 (lone surrogates replaced) and a
model-supplied name is bounded and escaped (``toolguard._text``).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Final

import mcp.types as types
import pydantic
import typing_extensions
from mcp.shared.exceptions import MCPError

from toolguard._dispatcher import Dispatcher
from toolguard._logging import emit, new_error_id
from toolguard._session import Session
from toolguard._text import ID_LIMIT, bounded, excerpt, shown, utf8
from toolguard._tool import BoundTool, Tool
from toolguard._values import Image, ToolResult
from toolguard.errors import InvalidArguments, ToolDefinitionError
from toolguard.policy._handlers import fill_message

__all__ = [
    "EVENT_CALL_ABORTED",
    "META_ERROR_ID",
    "META_RETURN_DIRECT",
    "SessionKey",
    "aborted",
    "block_texts",
    "call_tool_result",
    "connection_of",
    "failed_error",
    "invalid_arguments",
    "native_result",
    "output_schema",
    "really_cancelled",
    "refuse_frameworks",
    "session_for",
    "tool_declaration",
]

EVENT_CALL_ABORTED: Final = "mcp_call_aborted"
"""Logged (at ERROR, with ``exc_info``) when a call ends in a JSON-RPC error because
something other than a handler's ``fail`` escaped the dispatcher: a control-flow
signal (nothing in an MCP server can act on it), a handler that raised, or a
``BaseException`` the tool raised itself (``SystemExit``, ``KeyboardInterrupt``,
``GeneratorExit``, its own ``CancelledError``, a ``BaseExceptionGroup``)."""

META_ERROR_ID: Final = "toolguard/error_id"
"""``_meta`` key of a failed call's result: the id its hidden cause was logged under."""

META_RETURN_DIRECT: Final = "toolguard/return_direct"
"""``_meta`` key set to ``true`` when the result asks the agent loop to stop."""

_FAILED_MESSAGE: Final = (
    "The tool '{tool}' failed because of an internal error (error id {error_id}). "
    "The details are not available."
)
_MAX_PROBLEMS: Final = 20

SessionKey = Callable[[Any], str | None]
"""From a framework's request context to a session id (``None``: the connection's)."""


# --- toolguard -> MCP data ------------------------------------------------------------


def tool_declaration(tool: Tool[..., Any] | BoundTool[..., Any]) -> types.Tool:
    """The MCP declaration of one tool: its name, description, JSON Schema, and an
    ``outputSchema`` when its return annotation is a structured object (a pydantic
    model, a dataclass, a ``TypedDict``): its value is then sent as
    ``structuredContent`` too."""
    return types.Tool(
        name=utf8(tool.name),
        description=utf8(tool.description) if tool.description else None,
        input_schema=copy.deepcopy(tool.parameters),
        output_schema=output_schema(tool),
    )


def output_schema(tool: Tool[..., Any] | BoundTool[..., Any]) -> dict[str, Any] | None:
    """The JSON Schema of a structured return annotation, or ``None``."""
    try:
        returned = typing.get_type_hints(tool, include_extras=True).get("return")
    except Exception:  # noqa: BLE001 - an unresolvable hint declares nothing
        return None
    plain = typing.get_args(returned)[0] if typing.get_origin(returned) is Annotated else returned
    if returned is None or not isinstance(plain, type):
        return None
    structured = (
        issubclass(plain, pydantic.BaseModel)
        or dataclasses.is_dataclass(plain)
        or typing_extensions.is_typeddict(plain)
    )
    if not structured:
        return None
    try:
        schema = pydantic.TypeAdapter(returned).json_schema(mode="serialization")
    except Exception:  # noqa: BLE001 - a type pydantic cannot describe declares nothing
        return None
    return schema if schema.get("type") == "object" else None


def refuse_frameworks(
    tool: Tool[..., Any] | BoundTool[..., Any], supplied: frozenset[str], where: str
) -> None:
    """Refuse, at conversion, a tool with another framework's parameter (named)."""
    for parameter in tool.spec.arguments.framework:
        if parameter.marker not in supplied:
            raise ToolDefinitionError(
                f"{where} cannot serve tool {tool.name!r}: its parameter {parameter.name!r} "
                f"is {parameter.framework}'s {parameter.kind}, which {where} cannot supply; "
                f"run the tool with {parameter.framework} (and toolguard's middleware there)"
            )


def _structured(result: ToolResult) -> dict[str, Any] | None:
    """The JSON object a successful text result carries, for ``structuredContent``.

    A tool's non-str return value reaches toolguard's result as its JSON text; when
    that text is a JSON object, MCP clients also get it parsed. Only objects:
    protocol versions up to 2025-11-25 allow nothing else there.
    """
    content = result.content
    if result.is_error or not isinstance(content, str) or not content.startswith("{"):
        return None
    try:
        value = json.loads(content, parse_constant=_reject_constant)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")  # NaN / Infinity: not valid structured content


_BLOCKS: Final = pydantic.TypeAdapter(list[types.ContentBlock])
_BLOCK: Final = pydantic.TypeAdapter(types.ContentBlock)
_BLOCK_TYPES: Final = frozenset({"text", "image", "audio", "resource_link", "resource"})
_RESULT_KEYS: Final = frozenset(
    {"content", "structured_content", "structuredContent", "is_error", "isError"}
    | {"meta", "_meta", "result_type", "resultType"}
)


def native_result(result: ToolResult) -> types.CallToolResult | None:
    """The MCP value a tool returned, when it returned one: content blocks, a list
    of them, or a whole ``CallToolResult``; ``None`` for anything else.

    toolguard's dispatcher hands back a tool's non-str value as its JSON text (the
    core keeps no raw value), so the value is read back from that text: a JSON
    object shaped as one MCP content block (a ``"type"`` of MCP's), a list of them,
    or a ``CallToolResult`` (``"content"`` a list of blocks). The SDK's own models
    dump to exactly that JSON, so they pass through unchanged.
    """
    content = result.content
    if result.is_error or not isinstance(content, str) or content[:1] not in "{[":
        return None
    try:
        value = json.loads(content, parse_constant=_reject_constant)
    except ValueError:
        return None
    try:
        if isinstance(value, list) and value and all(_is_block(item) for item in value):
            return types.CallToolResult(content=_BLOCKS.validate_python(value))
        if _is_block(value):
            return types.CallToolResult(content=[_BLOCK.validate_python(value)])
        if (
            isinstance(value, dict)
            and isinstance(value.get("content"), list)
            and set(value) <= _RESULT_KEYS
            and all(_is_block(item) for item in value["content"])
        ):
            return types.CallToolResult.model_validate(value)
    except pydantic.ValidationError:
        return None
    return None


def _is_block(value: Any) -> bool:
    return isinstance(value, dict) and value.get("type") in _BLOCK_TYPES


def call_tool_result(result: ToolResult, *, structured: bool = True) -> types.CallToolResult:
    """Turn toolguard's :class:`~toolguard.ToolResult` into an MCP ``CallToolResult``.

    Text is a ``TextContent`` block, :class:`~toolguard.Image` an ``ImageContent``;
    ``isError`` is the result's ``is_error``. MCP content blocks (or a whole
    ``CallToolResult``) that the tool returned pass through as they were. ``_meta``
    carries the error id (:data:`META_ERROR_ID`) and ``return_direct``
    (:data:`META_RETURN_DIRECT`) when set, for the client application; ``artifact``
    never leaves the process.
    """
    meta: dict[str, Any] = {}
    if result.error_id is not None:
        meta[META_ERROR_ID] = result.error_id
    if result.return_direct:
        meta[META_RETURN_DIRECT] = True
    native = native_result(result)
    if native is not None:
        if meta:
            native = native.model_copy(update={"meta": {**(native.meta or {}), **meta}})
        return native
    blocks: list[types.ContentBlock]
    if isinstance(result.content, str):
        blocks = [types.TextContent(text=utf8(result.content))]
    else:
        blocks = [
            types.ImageContent(data=block.data, mime_type=utf8(block.media_type))
            if isinstance(block, Image)
            else types.TextContent(text=utf8(block.text))
            for block in result.content
        ]
    return types.CallToolResult(
        content=blocks,
        structured_content=_structured(result) if structured else None,
        is_error=result.is_error,
        _meta=meta or None,
    )


# --- calls that end in a JSON-RPC error ----------------------------------------------


def failed_error(tool: object, error_id: str) -> MCPError:
    """The JSON-RPC error of a call that did not end in a result: a generic message
    quoting the error id, ``data={"tool", "error_id"}``; the name bounded and escaped."""
    name = shown(tool)
    message = fill_message(_FAILED_MESSAGE, tool=name, error_id=error_id)
    return MCPError(
        code=types.INTERNAL_ERROR, message=message, data={"tool": name, "error_id": error_id}
    )


def aborted(tool: object, call_id: str | None, error: BaseException) -> MCPError:
    """Log ``error`` once (:data:`EVENT_CALL_ABORTED`) and return the JSON-RPC error
    the client gets instead; nothing of the exception is in it."""
    error_id = new_error_id()
    emit(
        "error",
        EVENT_CALL_ABORTED,
        tool=shown(tool),
        call_id=None if call_id is None else shown(call_id, ID_LIMIT),
        error_id=error_id,
        error_type=type(error).__name__,
        exc_info=error,
    )
    return failed_error(tool, error_id)


def really_cancelled() -> bool:
    """Whether the running task is being cancelled (the client cancelled the request,
    or the server is shutting down), as opposed to a tool raising ``CancelledError``
    of its own accord. anyio's cancel scopes cancel the asyncio task, so
    ``cancelling()`` counts them too."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


# --- a framework's argument validation -------------------------------------------------


def invalid_arguments(tool: str, error: pydantic.ValidationError) -> InvalidArguments:
    """A framework's validation failure as toolguard's model-visible error.

    One bounded line per problem: where, and pydantic's description of the
    model's mistake (missing, extra, wrong type, bounds); what a custom validator
    raised is withheld (it may quote anything) and so are the rejected values.
    """
    problems: list[str] = []
    for detail in error.errors(include_url=False, include_input=False)[:_MAX_PROBLEMS]:
        where = excerpt(".".join(str(part) for part in detail["loc"])) or "the arguments"
        kind = detail["type"]
        if kind in ("value_error", "assertion_error"):
            said = "this value was rejected"
        else:
            said = bounded(utf8(detail["msg"]).rstrip("."), 200)
        problems.append(f"{where}: {said}")
    if error.error_count() > len(problems):
        problems.append(f"... and {error.error_count() - len(problems)} more")
    name = shown(tool)
    message = f"Invalid arguments for tool '{name}':\n" + "\n".join(f"- {p}" for p in problems)
    invalid = InvalidArguments(message, tool=name, problems=tuple(problems))
    invalid.__suppress_context__ = True
    return invalid


# --- sessions ---------------------------------------------------------------------------

_STATE_KEY: Final = "toolguard/session"


def session_for(
    dispatcher: Dispatcher,
    connection: Any,
    session_id: str | None,
) -> Session:
    """The toolguard session of an MCP connection.

    With ``session_id`` (the transport's MCP session id, or the application's own
    key), the dispatcher's named session: the same conversation on every request.
    Without one (stdio, stateless HTTP), one session per connection, kept in the
    connection's ``state``; a new one per call when there is no connection at all.
    """
    if session_id:
        return dispatcher.session(id=f"mcp:{session_id}")
    state = getattr(connection, "state", None)
    if not isinstance(state, dict):
        return dispatcher.session()
    found = state.get(_STATE_KEY)
    if isinstance(found, Mapping) and dispatcher in found:
        session: Session = found[dispatcher]
        return session
    session = dispatcher.session()
    by_dispatcher = dict(found) if isinstance(found, Mapping) else {}
    by_dispatcher[dispatcher] = session
    state[_STATE_KEY] = by_dispatcher
    return session


def connection_of(session: Any) -> Any:
    """The SDK's per-client ``Connection`` behind a request's ``ServerSession``.

    The SDK exposes it to handlers only on its (not yet constructed) request
    ``Context``; FastMCP reads the same attribute. ``None`` if it is not there.
    """
    return getattr(session, "_connection", None)


def block_texts(content: Sequence[Any]) -> str:
    """The text of a framework's content blocks (for toolguard's bookkeeping)."""
    return "\n".join(str(getattr(block, "text", "")) for block in content)
