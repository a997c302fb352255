"""The same tool three ways in the official MCP SDK (issue 13): native, guarded in place,
and toolguard's own server (the in-place driver is conformance/test_mcp.py).

1. ``native``: the SDK's ``@server.tool()`` on the plain function (``MCPServer``);
2. ``guarded``: the SDK's decorator on the toolguard ``@tool`` of that function,
   the server guarded in place by ``ToolguardMiddleware``;
3. ``adapter``: toolguard's ``mcp_server`` over a ``Dispatcher`` of the tool.

Driven by the SDK's own in-process client (``mcp.Client(server)``). The native way
is the reference for the schema the model sees, the ``Context`` the tool gets and
the return handling on success; toolguard's policy is the reference for failures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context

from tests.integrations import _mcp_tools as tools
from toolguard import Dispatcher, tool
from toolguard.integrations.mcp import META_ERROR_ID, ToolguardMiddleware, mcp_server

WAYS = ["native", "guarded", "adapter"]


async def inspect_context(ctx: Context, label: str) -> str:
    """What the injected ``Context`` is: the request's own, with its id and session."""
    await ctx.report_progress(1, 1)
    return (
        f"{label}: {type(ctx).__name__} request={ctx.request_id == str(ctx.request_id)} "
        f"session={ctx.session is not None}"
    )


def serve(way: str, functions: list[Callable[..., Any]]) -> MCPServer[Any] | Server[Any]:
    if way == "adapter":
        return mcp_server(Dispatcher([tool(f) for f in functions]))
    if way == "guarded":
        guarded_tools = [tool(f) for f in functions]
        server: MCPServer[Any] = MCPServer(
            "conformance", middleware=[ToolguardMiddleware(Dispatcher(guarded_tools))]
        )
        for guarded_tool in guarded_tools:
            server.tool()(guarded_tool)
        return server
    server = MCPServer("conformance")
    for function in functions:
        server.tool()(function)
    return server


async def run(way: str, name: str, arguments: dict[str, Any] | None = None) -> Any:
    async with Client(serve(way, [*tools.CONFORMANCE, inspect_context])) as client:
        listed = {t.name: t for t in (await client.list_tools()).tools}
        result = await client.call_tool(name, arguments or {}) if name else None
    return listed, result


def essentials(schema: Any) -> Any:
    """A JSON Schema without what only documents it (titles, descriptions: toolguard
    adds the docstring's ``Args:``) or differs by style (``additionalProperties:
    false``): what the model is asked to send."""
    if isinstance(schema, dict):
        return {
            k: essentials(v)
            for k, v in schema.items()
            if k not in ("title", "description", "additionalProperties")
        }
    if isinstance(schema, list):
        return [essentials(item) for item in schema]
    return schema


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_model_sees_the_same_input_schema_three_ways() -> None:
    """``ctx: Context`` is in no schema; the guarded way is the SDK's own schema exactly,
    toolguard's adapter asks for the same arguments."""
    declared = {way: (await run(way, ""))[0] for way in WAYS}
    for name in ("quote", "pictures", "crash", "refuse", "inspect_context"):
        native = declared["native"][name]
        assert declared["guarded"][name].input_schema == native.input_schema
        assert essentials(declared["adapter"][name].input_schema) == essentials(native.input_schema)
        assert "ctx" not in str(declared["adapter"][name].input_schema)
    assert set(declared["native"]["inspect_context"].input_schema["properties"]) == {"label"}
    # toolguard's adapter also tells the model what each argument is (the docstring)
    adapter_quote = declared["adapter"]["quote"].input_schema["properties"]
    assert adapter_quote["sku"]["description"] == "The item's stock number."


@pytest.mark.parametrize("way", WAYS)
async def test_a_structured_return_gives_the_same_output_schema_and_content(way: str) -> None:
    listed, result = await run(way, "quote", {"sku": "A-1", "quantity": 2})
    native_listed, native = await run("native", "quote", {"sku": "A-1", "quantity": 2})
    assert result.is_error is False
    assert result.structured_content == native.structured_content
    assert result.structured_content == {"sku": "A-1", "price": 5.0, "tags": ["in-stock"]}
    assert essentials(listed["quote"].output_schema) == essentials(
        native_listed["quote"].output_schema
    )


@pytest.mark.parametrize("way", WAYS)
async def test_mcp_content_blocks_pass_through_untouched(way: str) -> None:
    _, result = await run(way, "pictures")
    _, native = await run("native", "pictures")
    assert result.is_error is False
    assert [b.model_dump() for b in result.content] == [b.model_dump() for b in native.content]
    text, image = result.content
    assert isinstance(text, types.TextContent) and isinstance(image, types.ImageContent)
    assert (image.data, image.mime_type) == (tools.PIXEL, "image/png")


@pytest.mark.parametrize("way", WAYS)
async def test_the_tool_gets_the_requests_own_context(way: str) -> None:
    _, result = await run(way, "inspect_context", {"label": "hi"})
    assert (result.is_error, text_of(result)) == (False, "hi: Context request=True session=True")


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_a_hidden_failure_follows_toolguards_policy(
    way: str, logs: list[dict[str, Any]]
) -> None:
    _, result = await run(way, "crash", {"order_id": 1})
    assert result.is_error is True
    sent = result.model_dump_json(by_alias=True)
    assert tools.SECRET not in sent and tools.CAUSE_SECRET not in sent
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert result.meta[META_ERROR_ID] == event["error_id"]
    assert text_of(result).startswith("The tool 'crash' failed because of an internal error")


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_a_visible_message_arrives_intact(way: str) -> None:
    _, result = await run(way, "refuse", {"order_id": 7})
    assert (result.is_error, text_of(result)) == (
        True,
        "There is no order 7. Ask the user to check the number.",
    )


async def test_without_toolguard_the_sdk_masks_toolguards_visible_message() -> None:
    """The reason the guarded way exists: the native way hides the ToolError too."""
    _, result = await run("native", "refuse", {"order_id": 7})
    assert text_of(result) == "Error executing tool refuse"


@pytest.mark.parametrize("way", ["guarded", "adapter"])
async def test_invalid_arguments_name_the_argument(way: str) -> None:
    _, result = await run(way, "quote", {"quantity": "many"})
    message = text_of(result)
    assert result.is_error is True
    assert message.startswith("Invalid arguments for tool 'quote':")
    assert "'sku'" in message and "'quantity'" in message
