"""Serve a :class:`~toolguard.Dispatcher`'s tools as an MCP server (``toolguard-agents[mcp]``).

::

    from toolguard.integrations.mcp import mcp_server, run_stdio

    server = mcp_server(Dispatcher([search, add]))   # the SDK's low-level Server
    run_stdio(Dispatcher([search, add]))               # or: toolguard serve-mcp app:tools

``tools/list`` declares toolguard's own schema (``inputSchema`` is
``tool.parameters``); ``tools/call`` goes through ``dispatcher.adispatch``, so
argument validation, the handler chain, hidden-cause logging and error ids are
toolguard's, and the client gets a ``CallToolResult`` (``isError`` on failures).
Sync tools run on the dispatcher's thread pool, so a slow one never stops the
server answering other requests.

Why the SDK's *low-level* ``Server`` and not ``MCPServer`` (FastMCP): ``MCPServer``
builds its own schema from the signature, validates arguments itself (pydantic's
text, not toolguard's), prefixes failures with ``Error executing tool ...`` and
knows nothing of policies or error ids. The low-level server only routes: it does
not validate arguments against ``inputSchema`` and leaves results to us, so the
model always gets toolguard's answer. One thing it *does* do is answer an
exception escaping a handler with a JSON-RPC error whose message is ``str(exc)``;
:func:`mcp_server` therefore never lets one escape (see :func:`mcp_server`).

Requires the official SDK, version 2 (``pip install "toolguard-agents[mcp]"``).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final

import anyio
import structlog

try:
    import mcp.types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
    from mcp.shared.exceptions import MCPError
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.mcp needs the official MCP SDK, version 2: "
        'pip install "toolguard-agents[mcp]"'
    ) from error

from toolguard._decorator import BoundTool, Tool
from toolguard._dispatcher import Dispatcher
from toolguard._handlers import fill_message
from toolguard._logging import emit, new_error_id
from toolguard._targets import TargetError, load_target
from toolguard._values import Image, ToolCall, ToolResult
from toolguard.errors import ToolCallFailed

__all__ = [
    "EVENT_CALL_ABORTED",
    "META_ERROR_ID",
    "META_RETURN_DIRECT",
    "TargetError",
    "call_tool_result",
    "load_target",
    "main",
    "mcp_server",
    "run_stdio",
    "serve_stdio",
    "tool_declaration",
]

EVENT_CALL_ABORTED: Final = "mcp_call_aborted"
"""Logged (at ERROR, with ``exc_info``) when a call ends in a JSON-RPC error because
something other than a handler's ``fail`` escaped the dispatcher: a control-flow
signal (nothing in an MCP server can act on it) or a handler that raised."""

META_ERROR_ID: Final = "toolguard/error_id"
"""``_meta`` key of a failed call's result: the id its hidden cause was logged under."""

META_RETURN_DIRECT: Final = "toolguard/return_direct"
"""``_meta`` key set to ``true`` when the result asks the agent loop to stop."""

_FAILED_MESSAGE: Final = (
    "The tool '{tool}' failed because of an internal error (error id {error_id}). "
    "The details are not available."
)

ContextFactory = Callable[["ServerRequestContext[Any, Any]"], Any]


# --- toolguard -> MCP data ------------------------------------------------------------


def tool_declaration(tool: Tool[..., Any] | BoundTool[..., Any]) -> types.Tool:
    """The MCP declaration of one tool: its name, description and JSON Schema."""
    return types.Tool(
        name=tool.name,
        description=tool.description or None,
        input_schema=copy.deepcopy(tool.parameters),
    )


def _structured(result: ToolResult) -> dict[str, Any] | None:
    """The JSON object a successful text result carries, for ``structuredContent``.

    A tool's non-str return value reaches toolguard's result as its JSON text; when
    that text is a JSON object, MCP clients also get it parsed. (A tool that returns
    JSON object *text* itself gets the same; both describe the same data.) Only
    objects: protocol versions up to 2025-11-25 allow nothing else there.
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


def call_tool_result(result: ToolResult, *, structured: bool = True) -> types.CallToolResult:
    """Turn toolguard's :class:`~toolguard.ToolResult` into an MCP ``CallToolResult``.

    Text is a ``TextContent`` block, :class:`~toolguard.Image` an ``ImageContent``;
    ``isError`` is the result's ``is_error``. ``_meta`` carries the error id
    (:data:`META_ERROR_ID`) and ``return_direct`` (:data:`META_RETURN_DIRECT`) when
    set, for the client application; ``artifact`` never leaves the process.
    """
    blocks: list[types.ContentBlock]
    if isinstance(result.content, str):
        blocks = [types.TextContent(text=result.content)]
    else:
        blocks = [
            types.ImageContent(data=block.data, mime_type=block.media_type)
            if isinstance(block, Image)
            else types.TextContent(text=block.text)
            for block in result.content
        ]
    meta: dict[str, Any] = {}
    if result.error_id is not None:
        meta[META_ERROR_ID] = result.error_id
    if result.return_direct:
        meta[META_RETURN_DIRECT] = True
    return types.CallToolResult(
        content=blocks,
        structured_content=_structured(result) if structured else None,
        is_error=result.is_error,
        _meta=meta or None,
    )


# --- the server -----------------------------------------------------------------------


def mcp_server(
    dispatcher: Dispatcher,
    *,
    name: str = "toolguard",
    version: str = "",
    instructions: str | None = None,
    structured_content: bool = True,
    context: ContextFactory | None = None,
) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``dispatcher``'s tools.

    Run it with any SDK transport (:func:`serve_stdio`, ``server.run(...)``,
    ``server.streamable_http_app()``) or connect to it in process with
    ``mcp.Client(server)``.

    * ``tools/list``: one declaration per tool (:func:`tool_declaration`).
    * ``tools/call``: ``dispatcher.adispatch(..., offload=True)``: an async tool
      runs on the server's event loop, a sync one on the dispatcher's thread pool
      (``max_workers`` calls at once), so a slow sync tool does not keep the
      server from answering other requests. toolguard's result becomes the
      ``CallToolResult`` (:func:`call_tool_result`), with ``isError`` on every failure
      the policy answered: bad arguments, unknown tool names, model-visible errors,
      hidden ones (generic text and error id; the cause is only in the server log).
      The JSON-RPC request id is the call id (``InjectedCallId`` receives it).
    * A handler that *fails the invocation* (``fail``, ``fail_unless_visible``) gets
      a JSON-RPC error instead (``INTERNAL_ERROR``, a generic message with the
      error id, ``data={"tool", "error_id"}``): the client application sees an
      ``MCPError``, as a Python caller would see ``ToolCallFailed``. A control-flow
      signal or a handler that raised gets the same, logged as
      :data:`EVENT_CALL_ABORTED`. No exception text reaches the client.

    ``structured_content=False`` leaves ``structuredContent`` out. ``context`` is
    called with the SDK's request context for each call; what it returns is what
    ``Injected`` tool parameters receive.
    """
    declarations = [tool_declaration(tool) for tool in dispatcher.tools.values()]

    async def list_tools(
        ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # One page: a dispatcher's tools are fixed and few.
        return types.ListToolsResult(tools=declarations)

    async def call_tool(
        ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        call = ToolCall(
            name=params.name,
            arguments=params.arguments,
            id=None if ctx.request_id is None else str(ctx.request_id),
        )
        try:
            result = await dispatcher.adispatch(
                call, context=None if context is None else context(ctx), offload=True
            )
        except ToolCallFailed as failed:
            # Already logged by toolguard (tool_call_failed), with this error id.
            raise _failed(failed.tool, failed.error_id) from None
        except Exception as error:  # noqa: BLE001 - the server boundary; logged below
            # Never let it reach the SDK: it would send str(error) to the client.
            error_id = new_error_id()
            emit(
                "error",
                EVENT_CALL_ABORTED,
                tool=call.name,
                call_id=call.id,
                error_id=error_id,
                error_type=type(error).__name__,
                exc_info=error,
            )
            raise _failed(call.name, error_id) from None
        return call_tool_result(result, structured=structured_content)

    return Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _failed(tool: str, error_id: str) -> MCPError:
    message = fill_message(_FAILED_MESSAGE, tool=tool[:64], error_id=error_id)
    return MCPError(
        code=types.INTERNAL_ERROR, message=message, data={"tool": tool, "error_id": error_id}
    )


# --- stdio ----------------------------------------------------------------------------


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes.

    Leaves logging alone (see :func:`run_stdio`); stdout carries the protocol, so
    the application's logs must go elsewhere (stderr, a file).
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(
    dispatcher: Dispatcher,
    *,
    name: str = "toolguard",
    log_to_stderr: bool = True,
    **options: Any,
) -> None:
    """Serve ``dispatcher``'s tools over stdio; blocks until the client disconnects.

    This is an application entry point (``toolguard serve-mcp``), and stdout is the
    protocol channel. So with ``log_to_stderr`` (the default), if structlog has not
    been configured yet, it is configured to write one JSON line per event to
    stderr, tracebacks included, where MCP hosts collect a server's log. A process
    that configured structlog itself keeps its configuration. ``options`` go to
    :func:`mcp_server`. Runs on asyncio (toolguard's async dispatch needs it).
    """
    if log_to_stderr and not structlog.is_configured():
        _log_to_stderr()
    server = mcp_server(dispatcher, name=name, **options)
    anyio.run(serve_stdio, server, backend="asyncio")


def _log_to_stderr() -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


# --- MODULE:ATTR ----------------------------------------------------------------------
# ``load_target`` and ``TargetError`` are toolguard's own (``toolguard._targets``, shared
# with the ``toolguard`` command), re-exported here under their old names.


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolguard.integrations.mcp MODULE:ATTR``: serve it over stdio.

    ``MODULE:ATTR`` is read by :func:`load_target`: a ``Dispatcher``, a list or
    tuple of tools, or one ``@tool``. The current directory is importable for the
    whole run, as with ``python -m``. Returns the exit status: 0 when the client
    disconnected, 2 for a bad target (:class:`TargetError`: malformed, not found,
    of another kind, or a module whose import raised).
    """
    parser = argparse.ArgumentParser(
        prog="python -m toolguard.integrations.mcp",
        description="Serve a toolguard Dispatcher's tools as an MCP server over stdio.",
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="a Dispatcher or a list of tools")
    parser.add_argument("--name", default="toolguard", help="the server name sent to clients")
    args = parser.parse_args(argv)
    _import_from_cwd(sys.path)
    try:
        dispatcher = load_target(args.target)
    except TargetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        run_stdio(dispatcher, name=args.name)
    except KeyboardInterrupt:
        return 130
    return 0


def _import_from_cwd(path: list[str]) -> None:
    """Put the working directory on ``sys.path`` (a console script does not)."""
    cwd = os.getcwd()
    if "" not in path and cwd not in path:
        path.insert(0, cwd)


if __name__ == "__main__":
    sys.exit(main())
