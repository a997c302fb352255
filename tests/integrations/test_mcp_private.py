"""The frameworks' private behaviour the MCP integrations still stand on, pinned.

Each name here has no public hook (the comments at its use say why); if a release of
the MCP SDK or FastMCP moves it, these fail loudly instead of the guard degrading
silently (an exception not read back, a conversation not kept).
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import fastmcp
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from toolguard.integrations.fastmcp._middleware import FASTMCP_LOGGER, MASKING
from toolguard.integrations.mcp._middleware import SDK_LOGGER


class Seen(logging.Handler):
    """Keeps each record with the exception being handled when it was emitted."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.handled: list[BaseException | None] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.handled.append(sys.exc_info()[1])


def crash(order: int) -> str:
    """Fail."""
    raise ConnectionError("backend down")


@pytest.fixture
def seen(request: pytest.FixtureRequest) -> Any:
    logger = logging.getLogger(request.param)
    handler = Seen()
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


@pytest.mark.parametrize("seen", [SDK_LOGGER], indirect=True)
async def test_the_sdk_logs_a_tools_crash_from_inside_its_except_block(seen: Seen) -> None:
    server = MCPServer("pin")
    server.tool()(crash)
    async with Client(server) as client:
        await client.call_tool("crash", {"order": 1})
    (handled,) = [error for error in seen.handled if error is not None]
    assert isinstance(handled.__cause__, ConnectionError)  # the SDK's UnexpectedToolError


async def test_the_sdks_server_session_keeps_its_connection_as_connection() -> None:
    """``ServerSession._connection``: the per-client state and MCP session id."""
    found: list[Any] = []

    async def look(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call":
            found.append(ctx.session._connection)
        return await call_next(ctx)

    server = MCPServer("pin", middleware=[look])
    server.tool()(crash)
    async with Client(server, mode="legacy") as client:
        await client.call_tool("crash", {"order": 1})
    (connection,) = found
    assert isinstance(connection.state, dict) and hasattr(connection, "session_id")


@pytest.mark.parametrize("seen", [FASTMCP_LOGGER], indirect=True)
async def test_fastmcp_logs_a_tools_crash_from_inside_its_except_block(seen: Seen) -> None:
    app = fastmcp.FastMCP("pin")
    app.tool(crash)
    with pytest.raises(fastmcp.exceptions.ToolError) as raised:
        await app.call_tool("crash", {"order": 1})
    assert str(raised.value).startswith(MASKING)
    assert any(isinstance(error, ConnectionError) for error in seen.handled)
