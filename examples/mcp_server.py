"""Serve toolguard tools over MCP and call them with the official MCP client.

Offline and self-contained: the server runs in this process (the SDK's in-memory
connection), so nothing is spawned and no network is used. Run it, from the root of a clone, with::

    python3 -m venv .venv && .venv/bin/pip install -e ".[mcp]"
    .venv/bin/python examples/mcp_server.py

To serve the same tools to a real MCP host (Claude Desktop, an IDE, ...) over
stdio, point it at ``.venv/bin/toolguard serve-mcp examples.mcp_server:dispatcher`` (run from
the root of the clone, so that ``examples`` is importable).

(Once toolguard is released: ``pip install "toolguard-agents[mcp]"``.)
"""

from __future__ import annotations

import asyncio
import sys

import structlog
from mcp import Client

from toolguard import Dispatcher, ToolError, tool
from toolguard.integrations.mcp import mcp_server

ORDERS = {42: "shipped"}


@tool
def order_status(order_id: int) -> dict[str, object]:
    """Look up the status of an order.

    Args:
        order_id: The order number the customer gave.
    """
    if order_id not in ORDERS:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return {"order_id": order_id, "status": ORDERS[order_id]}


@tool
def refund(order_id: int, amount: float) -> str:
    """Refund part of an order."""
    # An unexpected failure: its text must stay on the server, in the log.
    raise ConnectionError("payments-db at 10.0.0.7 refused login for user 'svc' (password expired)")


dispatcher = Dispatcher([order_status, refund])


async def main() -> int:
    # Logs go to stderr here, so stdout shows only what the MCP client received.
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    try:
        async with Client(mcp_server(dispatcher, name="shop")) as client:
            listed = await client.list_tools()
            for declared in listed.tools:
                print(f"tool {declared.name}: {declared.description}")
                print(f"  inputSchema {declared.input_schema}")

            calls: list[tuple[str, dict[str, object]]] = [
                ("order_status", {"order_id": 42}),  # success (with structuredContent)
                ("order_status", {"order_id": 7}),  # model-visible failure: ToolError
                ("order_status", {"order_id": "forty-two"}),  # invalid arguments: never runs
                ("refund", {"order_id": 42, "amount": 5}),  # hidden failure: generic + error id
                ("cancel_order", {"order_id": 42}),  # unknown tool: lists the real ones
            ]
            for name, arguments in calls:
                result = await client.call_tool(name, arguments)
                text = " | ".join(
                    getattr(block, "text", "[non-text block]") for block in result.content
                )
                print(f"\n{name}({arguments}) -> isError={result.is_error}")
                print(f"  {text}")
                if result.structured_content is not None:
                    print(f"  structuredContent {result.structured_content}")
        print("\n(refund's real cause is in the server log, on stderr, under the same error id)")
    finally:
        structlog.reset_defaults()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
