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
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

import structlog

try:
    import mcp.types as types
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.mcpserver.context import Context
    from mcp.server.stdio import stdio_server
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.mcp needs the official MCP SDK, version 2: "
        'pip install "toolguard-agents[mcp]"'
    ) from error

from toolguard._dispatcher import Dispatcher
from toolguard._targets import TargetError, load_target
from toolguard._values import ToolCall
from toolguard.errors import ToolCallFailed
from toolguard.integrations._mcp_middleware import ToolguardMiddleware
from toolguard.integrations._mcp_wire import (
    EVENT_CALL_ABORTED,
    META_ERROR_ID,
    META_RETURN_DIRECT,
    aborted,
    call_tool_result,
    connection_of,
    failed_error,
    really_cancelled,
    refuse_frameworks,
    session_for,
    tool_declaration,
)

__all__ = [
    "EVENT_CALL_ABORTED",
    "META_ERROR_ID",
    "META_RETURN_DIRECT",
    "TargetError",
    "ToolguardMiddleware",
    "call_tool_result",
    "load_target",
    "main",
    "mcp_server",
    "run_stdio",
    "serve_stdio",
    "tool_declaration",
]

ContextFactory = Callable[["ServerRequestContext[Any, Any]"], Any]
SessionId = Callable[["ServerRequestContext[Any, Any]"], "str | None"]

_SDK_CONTEXT = "mcp.server.mcpserver.context.Context"


# --- the server -----------------------------------------------------------------------


def mcp_server(
    dispatcher: Dispatcher,
    *,
    name: str = "toolguard",
    version: str = "",
    instructions: str | None = None,
    structured_content: bool = True,
    context: ContextFactory | None = None,
    session_id: SessionId | None = None,
) -> Server[Any]:
    """An MCP server (the SDK's low-level ``Server``) serving ``dispatcher``'s tools.

    Run it with any SDK transport (:func:`serve_stdio`, ``server.run(...)``,
    ``server.streamable_http_app()``) or connect to it in process with
    ``mcp.Client(server)``.

    * ``tools/list``: one declaration per tool (:func:`tool_declaration`).
    * ``tools/call``: ``session.adispatch(..., offload=True)``: an async tool
      runs on the server's event loop, a sync one on the dispatcher's thread pool
      (``max_workers`` calls at once), so a slow sync tool does not keep the
      server from answering other requests. toolguard's result becomes the
      ``CallToolResult`` (:func:`call_tool_result`), with ``isError`` on every failure
      the policy answered: bad arguments, unknown tool names, model-visible errors,
      hidden ones (generic text and error id; the cause is only in the server log).
      MCP content blocks or a ``CallToolResult`` the tool returned pass through.
      The JSON-RPC request id is the call id (``InjectedCallId`` receives it); a
      parameter annotated with the SDK's ``Context``
      (``mcp.server.mcpserver.context.Context``) receives the request's context
      (logging, progress, elicitation, sampling) and is never in the schema.
    * A handler that *fails the invocation* (``fail``, ``fail_unless_visible``) gets
      a JSON-RPC error instead (``INTERNAL_ERROR``, a generic message with the
      error id, ``data={"tool", "error_id"}``): the client application sees an
      ``MCPError``, as a Python caller would see ``ToolCallFailed``. A control-flow
      signal, a handler that raised, or a ``BaseException`` the tool raised itself
      (``SystemExit``, ``KeyboardInterrupt``, ``GeneratorExit``, its own
      ``CancelledError``, a ``BaseExceptionGroup``) gets the same, logged once as
      :data:`EVENT_CALL_ABORTED`, and the server keeps serving. A request the client
      cancelled is cancelled (no answer, as the protocol says). No exception text
      reaches the client.
    * Each connection is one toolguard session (breakers and model-retry budgets
      span its calls); ``session_id(ctx)`` may name the conversation instead (the
      transport's MCP session id is used when there is one).

    ``structured_content=False`` leaves ``structuredContent`` out. ``context`` is
    called with the SDK's request context for each call; what it returns is what
    ``Injected`` tool parameters receive. A tool with another framework's
    parameter (FastMCP's ``Context``...) is refused here (``ToolDefinitionError``).
    """
    for served in dispatcher.tools.values():
        refuse_frameworks(served, frozenset({_SDK_CONTEXT}), "toolguard's mcp_server")
    declarations = [tool_declaration(tool) for tool in dispatcher.tools.values()]
    sdk_context = {
        tool_name: [p.name for p in t.spec.arguments.framework if p.marker == _SDK_CONTEXT]
        for tool_name, t in dispatcher.tools.items()
    }

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
        wanted = sdk_context.get(params.name)
        values = (
            {name: Context(request_context=ctx, input_params=params) for name in wanted}
            if wanted
            else None
        )
        connection = connection_of(ctx.session)
        named = session_id(ctx) if session_id is not None else None
        session = session_for(
            dispatcher, connection, named or getattr(connection, "session_id", None)
        )
        try:
            result = await session.adispatch(
                call,
                context=None if context is None else context(ctx),
                offload=True,
                framework_values=values,
            )
        except ToolCallFailed as failed:
            # Already logged by toolguard (tool_call_failed), with this error id.
            raise failed_error(failed.tool, failed.error_id) from None
        except asyncio.CancelledError as error:
            if really_cancelled():
                raise  # the client cancelled this request: no answer is due
            raise aborted(call.name, call.id, error) from None
        except BaseException as error:
            # Never let it reach the SDK: an Exception would send str(error) to the
            # client, a BaseException would end the server and every later call.
            if really_cancelled() and _holds_cancellation(error):
                raise
            raise aborted(call.name, call.id, error) from None
        return call_tool_result(result, structured=structured_content)

    return Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _holds_cancellation(error: BaseException) -> bool:
    if isinstance(error, asyncio.CancelledError):
        return True
    if isinstance(error, BaseExceptionGroup):
        return any(_holds_cancellation(inner) for inner in error.exceptions)
    return False


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

    The event loop survives a tool's ``SystemExit`` or ``KeyboardInterrupt`` raised
    in a task of the tool's own (asyncio lets those escape the loop, whoever
    awaits the task): the loop is resumed, and the call that awaited the task is
    answered with a JSON-RPC error like any aborted call. A real Ctrl-C (SIGINT)
    still stops the server (``KeyboardInterrupt`` from this function).
    """
    if log_to_stderr and not structlog.is_configured():
        _log_to_stderr()
    server = mcp_server(dispatcher, name=name, **options)
    _run_resilient(serve_stdio(server))


def _run_resilient(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on a new asyncio loop until it ends, resuming the loop when a
    task's ``SystemExit``/``KeyboardInterrupt`` escapes it; SIGINT cancels ``main``."""
    loop = asyncio.new_event_loop()
    task = loop.create_task(main)
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, interrupt)  # the main thread, on POSIX
    try:
        while True:
            try:
                loop.run_until_complete(task)
                return
            except (SystemExit, KeyboardInterrupt):
                if task.done():
                    raise
                # a tool's task raised it: the call awaiting that task answers it
                # (logged there, once); the server goes on
            except asyncio.CancelledError:
                if interrupted:
                    raise KeyboardInterrupt from None
                raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
        _close(loop)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    with contextlib.suppress(BaseException):
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


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
