"""``mcp_server``: a :class:`~toolguard.Dispatcher`'s tools as an MCP server.

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

import copy
import dataclasses
import typing
from collections.abc import Callable
from typing import Annotated, Any

import mcp.types as types
import pydantic
import typing_extensions
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.mcpserver.context import Context

from toolguard import BoundTool, Dispatcher, Tool, ToolCall, ToolCallFailed, ToolDefinitionError
from toolguard.formats import mcp as mcp_format
from toolguard.integrations.mcp.wire import (
    aborted,
    call_tool_result,
    failed_error,
    is_cancellation,
    really_cancelled,
    scope_for,
)

__all__ = ["mcp_server", "output_schema", "refuse_frameworks", "tool_declaration"]

ContextFactory = Callable[["ServerRequestContext[Any, Any]"], Any]
SessionId = Callable[["ServerRequestContext[Any, Any]"], "str | None"]

_SDK_CONTEXT = "mcp.server.mcpserver.context.Context"


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
        # Framework-private: the SDK's per-client Connection (state, MCP session id) is
        # ServerSession._connection; see ToolguardMiddleware._scope.
        connection = getattr(ctx.session, "_connection", None)
        named = session_id(ctx) if session_id is not None else None
        scope = scope_for(
            dispatcher, connection, named or getattr(connection, "session_id", None), None
        )
        try:
            result = await scope.adispatch(
                call,
                context=None if context is None else context(ctx),
                offload=True,
                framework_values=values,
            )
        except ToolCallFailed as failed:
            # Already logged by toolguard (tool_call_failed), with this error id.
            raise failed_error(failed) from None
        except BaseException as error:
            # Never let it reach the SDK: an Exception would send str(error) to the
            # client, a BaseException would end the server and every later call. A
            # request the client cancelled is cancelled (no answer is due); a tool's
            # own CancelledError is answered like any aborted call.
            if really_cancelled() and is_cancellation(error):
                raise
            raise aborted(scope, call, error) from None
        return call_tool_result(result, structured=structured_content)

    return Server(
        name,
        version=version,
        instructions=instructions,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


# --- toolguard -> MCP declarations ------------------------------------------------------


def tool_declaration(tool: Tool[..., Any] | BoundTool[..., Any]) -> types.Tool:
    """The MCP declaration of one tool (:func:`toolguard.formats.mcp.tools`' entry: its
    name, description, JSON Schema), with an ``outputSchema`` when its return
    annotation is a structured object (a pydantic model, a dataclass, a ``TypedDict``):
    its value is then sent as ``structuredContent`` too."""
    (entry,) = mcp_format.tools(tool)
    return types.Tool.model_validate({**entry, "outputSchema": output_schema(tool)})


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
    return copy.deepcopy(schema) if schema.get("type") == "object" else None


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
