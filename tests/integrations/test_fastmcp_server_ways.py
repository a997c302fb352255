"""The same tool three ways in FastMCP (issue 13): native, guarded in place, and
toolguard's own server (the in-place driver is conformance/test_fastmcp.py).

1. ``native``: FastMCP's ``@app.tool`` on the plain function;
2. ``guarded``: ``@app.tool`` on the toolguard ``@tool`` of that function, the app
   guarded in place by ``toolguard.integrations.fastmcp.ToolguardMiddleware``;
3. ``adapter``: toolguard's ``mcp_server`` over a ``Dispatcher`` of the tool, served
   as ``python -m toolguard.integrations.mcp MODULE:ATTR``.

Driven by FastMCP's own ``Client``: in memory for the app, over stdio for the
adapter (FastMCP's in-memory transport takes a FastMCP app or an ``MCPServer``,
not the SDK's low-level server; one subprocess serves the whole module). The
native way is the reference for schemas, FastMCP's ``Context`` and success;
toolguard's policy for failures. FastMCP's ``Context`` can
only be supplied by FastMCP: the adapter refuses such a tool, naming the parameter.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastmcp
import mcp.types as types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.client.transports import StdioTransport

from tests.integrations import _mcp_tools as tools
from toolguard import Dispatcher, tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.fastmcp import ToolguardMiddleware
from toolguard.integrations.mcp import META_ERROR_ID, mcp_server

WAYS = ["native", "guarded", "adapter"]


async def remember(ctx: Context, note: str) -> str:
    """Keep a note in FastMCP's session state (its Context)."""
    await ctx.set_state("note", note)
    await ctx.report_progress(1, 1)
    return f"{type(ctx).__name__} kept {await ctx.get_state('note')}"


ROOT = Path(__file__).resolve().parents[2]
_ADAPTER: dict[tuple[str, str], Any] = {}


def serve(way: str, functions: list[Callable[..., Any]]) -> FastMCP[Any]:
    app: FastMCP[Any] = FastMCP("conformance")
    if way == "guarded":
        guarded_tools = [tool(f) for f in functions]
        for guarded_tool in guarded_tools:
            app.tool(guarded_tool)
        app.add_middleware(ToolguardMiddleware(Dispatcher(guarded_tools)))
        return app
    for function in functions:
        app.tool(function)
    return app


CALLS: list[tuple[str, dict[str, Any]]] = [
    ("quote", {"sku": "A-1", "quantity": 2}),
    ("pictures", {}),
    ("crash", {"order_id": 1}),
    ("refuse", {"order_id": 7}),
    ("quote", {"quantity": "many"}),
]


async def adapter(name: str, arguments: dict[str, Any]) -> Any:
    """The adapter's answers, from one stdio server for the module (with its log)."""
    if not _ADAPTER:
        transport = StdioTransport(
            command=sys.executable,
            args=["-m", "toolguard.integrations.mcp", "tests.integrations._mcp_tools:conformance"],
            cwd=str(ROOT),
        )
        async with fastmcp.Client(transport) as client:
            _ADAPTER["list", repr({})] = {t.name: t for t in await client.list_tools()}
            for call_name, call_arguments in CALLS:
                _ADAPTER[call_name, repr(call_arguments)] = await client.call_tool(
                    call_name, call_arguments, raise_on_error=False
                )
    return _ADAPTER[name, repr(arguments)]


async def run(way: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    arguments = arguments or {}
    if way == "adapter":
        return await adapter("list", {}), (await adapter(name, arguments) if name else None)
    async with fastmcp.Client(serve(way, [*tools.CONFORMANCE, remember])) as client:
        listed = {t.name: t for t in await client.list_tools()}
        result = await client.call_tool(name, arguments, raise_on_error=False) if name else None
    return listed, result


def essentials(schema: Any) -> Any:
    """What the model is asked to send (no titles, descriptions or style keys)."""
    if isinstance(schema, dict):
        return {
            k: essentials(v)
            for k, v in schema.items()
            if k not in ("title", "description", "additionalProperties")
        }
    if isinstance(schema, list):
        return [essentials(item) for item in schema]
    return schema


def text_of(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_model_sees_the_same_input_schema_three_ways() -> None:
    declared = {way: (await run(way, ""))[0] for way in WAYS}
    for name in ("quote", "pictures", "crash", "refuse"):
        native = declared["native"][name]
        assert declared["guarded"][name].input_schema == native.input_schema
        assert essentials(declared["adapter"][name].input_schema) == essentials(native.input_schema)
    assert (
        declared["guarded"]["remember"].input_schema == declared["native"]["remember"].input_schema
    )
    assert set(declared["native"]["remember"].input_schema["properties"]) == {"note"}


@pytest.mark.parametrize("way", WAYS)
async def test_a_structured_return_gives_the_same_structured_content(way: str) -> None:
    listed, result = await run(way, "quote", {"sku": "A-1", "quantity": 2})
    native_listed, native = await run("native", "quote", {"sku": "A-1", "quantity": 2})
    assert result.is_error is False
    assert result.structured_content == native.structured_content
    assert essentials(listed["quote"].output_schema) == essentials(
        native_listed["quote"].output_schema
    )


@pytest.mark.parametrize("way", WAYS)
async def test_mcp_content_blocks_pass_through_untouched(way: str) -> None:
    _, result = await run(way, "pictures")
    _, native = await run("native", "pictures")
    assert [b.model_dump() for b in result.content] == [b.model_dump() for b in native.content]


@pytest.mark.parametrize("way", ["native", "guarded"])
async def test_fastmcps_context_is_supplied_per_request(way: str) -> None:
    _, result = await run(way, "remember", {"note": "blue"})
    assert (result.is_error, text_of(result)) == (False, "Context kept blue")


def test_the_adapter_refuses_a_fastmcp_context_naming_the_parameter() -> None:
    with pytest.raises(ToolDefinitionError, match=r"'ctx'.*fastmcp's Context"):
        mcp_server(Dispatcher([tool(remember)]))


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_a_hidden_failure_follows_toolguards_policy(
    way: str, logs: list[dict[str, Any]]
) -> None:
    """The secret stays on the server; the client gets the error id (in process, the
    cause is logged once under it; the adapter's log is its process's stderr)."""
    _, result = await run(way, "crash", {"order_id": 1})
    assert result.is_error is True
    assert tools.SECRET not in text_of(result) and tools.CAUSE_SECRET not in text_of(result)
    error_id = result.meta[META_ERROR_ID]
    assert f"error id {error_id}" in text_of(result)
    if way == "guarded":
        (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
        assert event["error_id"] == error_id


async def test_without_toolguard_fastmcp_sends_the_secret() -> None:
    _, result = await run("native", "crash", {"order_id": 1})
    assert tools.SECRET in text_of(result)


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_a_visible_message_arrives_intact(way: str) -> None:
    _, result = await run(way, "refuse", {"order_id": 7})
    assert text_of(result) == "There is no order 7. Ask the user to check the number."


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_invalid_arguments_name_the_argument(way: str) -> None:
    _, result = await run(way, "quote", {"quantity": "many"})
    assert text_of(result).startswith("Invalid arguments for tool 'quote':")
    assert "'sku'" in text_of(result)
