"""In-place rows: the MCP SDK's ``MCPServer``, unguarded and with its one line.

One ``tools/call`` through the SDK's in-process client (``mcp.Client(server)``, the
2026-07-28 direct path: the server's middleware chain, validation, the tool, the
result), with and without ``middleware=[ToolguardMiddleware(dispatcher)]``. The
failure's unguarded side is the SDK's own error handling (an ``isError`` result, its
traceback logged to a NullHandler); guarded, toolguard's hidden failure (the record
taken over, the cause logged once through structlog, here to a no-op logger).
"""

from __future__ import annotations

import logging
from typing import Any

from _peers import ARGS, Bench, RunAsync, Suite, does


def _setup(run: RunAsync) -> dict[str, Any]:
    import structlog
    from mcp import Client
    from mcp.server.mcpserver import MCPServer

    from toolguard import Dispatcher
    from toolguard.integrations.mcp import ToolguardMiddleware

    logging.getLogger("mcp").addHandler(logging.NullHandler())
    logging.getLogger("mcp").propagate = False
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())

    def server(guarded: bool) -> Any:
        middleware = [ToolguardMiddleware(Dispatcher([]))] if guarded else None
        built = MCPServer("bench", middleware=middleware)

        @built.tool()
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @built.tool()
        async def boom(a: int, b: int) -> int:
            """Add two integers (fails)."""
            raise ValueError("database down")

        return built

    async def connect(guarded: bool) -> Any:
        client = Client(server(guarded))
        await client.__aenter__()
        return client

    return {
        "mcp_plain": run(connect(False)),
        "mcp_guarded": run(connect(True)),
        "ARGS": ARGS,
    }


def _bench(key: str, client: str, tool: str, vs: str | None, ok: bool) -> Bench:
    return Bench(
        key=key,
        label=f"mcp in place: {tool}, {'guarded' if client == 'mcp_guarded' else 'unguarded'}",
        stmt=f"await {client}.call_tool({tool!r}, ARGS)",
        is_async=True,
        vs=vs,
        check=f"(await {client}.call_tool({tool!r}, ARGS)).is_error is {not ok}",
        does=does(
            "the SDK's pydantic model of the tool",
            "the SDK's isError result" if client == "mcp_plain" else "toolguard's answer",
            "SDK traceback (NullHandler)" if client == "mcp_plain" else "structlog, once",
            "CallToolResult",
        ),
    )


SUITE = Suite(
    group="inplace mcp",
    module="mcp",
    versions=("mcp",),
    description="MCPServer through mcp.Client in process, without and with ToolguardMiddleware",
    benches=(
        _bench("inplace_mcp_ok_unguarded", "mcp_plain", "add", None, ok=True),
        _bench("inplace_mcp_ok_guarded", "mcp_guarded", "add", "inplace_mcp_ok_unguarded", True),
        _bench("inplace_mcp_fail_unguarded", "mcp_plain", "boom", None, ok=False),
        _bench(
            "inplace_mcp_fail_guarded", "mcp_guarded", "boom", "inplace_mcp_fail_unguarded", False
        ),
    ),
    setup=_setup,
)
