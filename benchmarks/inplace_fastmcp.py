"""In-place rows: a FastMCP app, unguarded and with its one line.

One ``tools/call`` through FastMCP's in-memory ``Client(app)``, with and without
``app.add_middleware(ToolguardMiddleware(dispatcher))``. The failure's unguarded side
is FastMCP's own error handling (its masking ``ToolError``, an ``isError`` result, its
traceback logged to a NullHandler); guarded, toolguard's hidden failure (the record
taken over, the cause logged once through structlog, here to a no-op logger).
"""

from __future__ import annotations

import logging
from typing import Any

from _peers import ARGS, Bench, RunAsync, Suite, does


def _setup(run: RunAsync) -> dict[str, Any]:
    import fastmcp
    import structlog

    from toolguard import Dispatcher
    from toolguard.integrations.fastmcp import ToolguardMiddleware

    logging.getLogger("fastmcp").addHandler(logging.NullHandler())
    logging.getLogger("fastmcp").propagate = False
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())

    def app(guarded: bool) -> Any:
        built = fastmcp.FastMCP("bench")

        @built.tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @built.tool
        async def boom(a: int, b: int) -> int:
            """Add two integers (fails)."""
            raise ValueError("database down")

        if guarded:
            built.add_middleware(ToolguardMiddleware(Dispatcher([])))
        return built

    async def connect(guarded: bool) -> Any:
        client = fastmcp.Client(app(guarded))
        await client.__aenter__()  # type: ignore[no-untyped-call] # FastMCP's own
        return client

    return {
        "fastmcp_plain": run(connect(False)),
        "fastmcp_guarded": run(connect(True)),
        "ARGS": ARGS,
    }


def _bench(key: str, client: str, tool: str, vs: str | None, ok: bool) -> Bench:
    guarded = client == "fastmcp_guarded"
    return Bench(
        key=key,
        label=f"fastmcp in place: {tool}, {'guarded' if guarded else 'unguarded'}",
        stmt=f"await {client}.call_tool({tool!r}, ARGS, raise_on_error=False)",
        is_async=True,
        vs=vs,
        check=f"(await {client}.call_tool({tool!r}, ARGS, raise_on_error=False)).is_error"
        f" is {not ok}",
        does=does(
            "FastMCP's pydantic model of the tool",
            "toolguard's answer" if guarded else "FastMCP's masking ToolError, isError",
            "structlog, once" if guarded else "FastMCP traceback (NullHandler)",
            "CallToolResult",
        ),
    )


SUITE = Suite(
    group="inplace fastmcp",
    module="fastmcp",
    versions=("fastmcp",),
    description="A FastMCP app through its in-memory Client, without and with the middleware",
    benches=(
        _bench("inplace_fastmcp_ok_unguarded", "fastmcp_plain", "add", None, ok=True),
        _bench(
            "inplace_fastmcp_ok_guarded",
            "fastmcp_guarded",
            "add",
            "inplace_fastmcp_ok_unguarded",
            ok=True,
        ),
        _bench("inplace_fastmcp_fail_unguarded", "fastmcp_plain", "boom", None, ok=False),
        _bench(
            "inplace_fastmcp_fail_guarded",
            "fastmcp_guarded",
            "boom",
            "inplace_fastmcp_fail_unguarded",
            ok=False,
        ),
    ),
    setup=_setup,
)
