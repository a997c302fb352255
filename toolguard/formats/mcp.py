"""Model Context Protocol (MCP) server side, as plain dicts in wire (camelCase) form.

The three calls of a server that answers ``tools/list`` and ``tools/call``::

    from toolguard.formats import mcp as tg_mcp

    {"tools": tg_mcp.tools(dispatcher)}                        # tools/list result
    call = tg_mcp.parse_call(request)                          # tools/call request in
    tg_mcp.call_result(dispatcher.dispatch(call))              # CallToolResult out

A failed call is a result with ``"isError": true`` (a tool failure is a result,
not a JSON-RPC error, so the model can read it). A tool that returned a JSON object
also gets it as ``structuredContent``. No MCP SDK is imported.
"""

from __future__ import annotations

from typing import Any

from toolguard._values import Text, ToolCall, ToolResult
from toolguard.formats._common import ToolSource, declared, get, has, json_object, parameters

__all__ = ["call_result", "parse_call", "tools"]

_METHOD = "tools/call"


def tools(source: ToolSource) -> list[dict[str, Any]]:
    """MCP Tool definitions (a ``tools/list`` result's ``tools``): ``name``,
    ``description``, ``inputSchema``."""
    found: list[dict[str, Any]] = []
    for t in declared(source):
        entry: dict[str, Any] = {"name": t.name}
        if t.description:
            entry["description"] = t.description
        entry["inputSchema"] = parameters(t)
        found.append(entry)
    return found


def parse_call(request: Any, *, call_id: str | None = None) -> ToolCall:
    """The call in a ``tools/call`` request.

    Takes the JSON-RPC request (``{"jsonrpc", "id", "method", "params"}``), the
    request without its envelope, or just its ``params`` (``{"name", "arguments"}``),
    as SDK objects or dicts. The call id is ``call_id`` if given, else the JSON-RPC
    request id as a string (``None`` when there is none).
    """
    method = get(request, "method")
    if method is not None and method != _METHOD:
        raise ValueError(f"mcp.parse_call answers {_METHOD!r} requests, got {method!r}")
    params = get(request, "params") if has(request, "params") else request
    if not has(params, "name"):
        raise TypeError(
            "mcp.parse_call takes a tools/call request or its params (with a 'name'), "
            f"got {type(request).__name__}"
        )
    # a name that is not a string is the client's mistake: the dispatcher answers it
    name = get(params, "name")
    if call_id is None:
        request_id = get(request, "id")
        call_id = None if request_id is None else str(request_id)
    return ToolCall(name=name, arguments=get(params, "arguments"), id=call_id)


def call_result(result: ToolResult) -> dict[str, Any]:
    """The ``CallToolResult`` for one result: ``content`` blocks, ``isError``, and
    ``structuredContent`` when a successful tool returned a JSON object."""
    if isinstance(result.content, str):
        content: list[dict[str, Any]] = [{"type": "text", "text": result.content}]
    else:
        content = [
            {"type": "text", "text": block.text}
            if isinstance(block, Text)
            else {"type": "image", "data": block.data, "mimeType": block.media_type}
            for block in result.content
        ]
    answer: dict[str, Any] = {"content": content}
    structured = None if result.is_error else json_object(result.content)
    if structured is not None:
        answer["structuredContent"] = structured
    answer["isError"] = result.is_error
    return answer
