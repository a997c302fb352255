"""Guard an existing MCPServer (the official MCP SDK) with one added line.

The server below is written as any SDK user writes one: ``@server.tool()``, the
SDK's ``Context`` (progress), a resource and a prompt, a structured return with
an ``outputSchema``. The only toolguard line is ``middleware=[ToolguardMiddleware(...)]``.
Run offline with the SDK's own in-process client::

    python3 -m venv .venv && .venv/bin/pip install -e ".[mcp]"
    .venv/bin/python examples/mcp_guard_existing_server.py

(Once toolguard is released: ``pip install "toolguard-agents[mcp]"``.)
"""

from __future__ import annotations

import asyncio
import sys

import structlog
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.types import CallToolResult
from pydantic import BaseModel
from structlog.testing import capture_logs

from toolguard import Dispatcher, ToolError
from toolguard.integrations.mcp import META_ERROR_ID, ToolguardMiddleware

ORDERS = {42: "shipped"}
dispatcher = Dispatcher([], log_level="error")  # the agent's policy; tools stay the SDK's

server = MCPServer("shop", middleware=[ToolguardMiddleware(dispatcher)])  # <- the one line


class Status(BaseModel):
    order_id: int
    status: str


@server.tool()
async def order_status(order_id: int, ctx: Context) -> Status:
    """Look up the status of an order."""
    await ctx.report_progress(1, 1, "looked up")
    if order_id not in ORDERS:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return Status(order_id=order_id, status=ORDERS[order_id])


@server.tool()
def refund(order_id: int, amount: float) -> str:
    """Refund part of an order."""
    raise ConnectionError("payments-db at db.internal refused login for 'svc' (password expired)")


@server.resource("shop://refund-policy")
def refund_policy() -> str:
    """The refund policy."""
    return "Refunds within 30 days of delivery."


@server.prompt()
def apology(name: str) -> str:
    """An apology to a customer."""
    return f"Dear {name}, we are sorry for the delay."


def text(result: CallToolResult) -> str:
    return " ".join(getattr(block, "text", "[non-text block]") for block in result.content)


async def main() -> int:
    seen: list[str] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(f"{progress}/{total} {message}")

    with capture_logs() as logs:
        async with Client(server) as client:
            listed = await client.list_tools()
            for declared in listed.tools:
                print(f"tool {declared.name}: outputSchema={declared.output_schema is not None}")
            ok = await client.call_tool(
                "order_status", {"order_id": 42}, progress_callback=on_progress
            )
            print(f"order_status(42) -> {ok.structured_content} (progress: {seen})")
            visible = await client.call_tool("order_status", {"order_id": 7})
            print(f"order_status(7) -> isError={visible.is_error}: {text(visible)}")
            hidden = await client.call_tool("refund", {"order_id": 42, "amount": 5})
            print(f"refund -> isError={hidden.is_error}: {text(hidden)}")
            policy = await client.read_resource("shop://refund-policy")
            print(f"resource -> {getattr(policy.contents[0], 'text', '')}")
            prompt = await client.get_prompt("apology", {"name": "Ann"})
            print(f"prompt -> {getattr(prompt.messages[0].content, 'text', '')}")
    assert "password" not in hidden.model_dump_json()
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert hidden.meta is not None and hidden.meta[META_ERROR_ID] == event["error_id"]
    print(f"\nrefund's cause is in the server log once, under error id {event['error_id']}:")
    print(f"  {type(event['exc_info']).__name__}: {event['exc_info']}")
    return 0


if __name__ == "__main__":
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    sys.exit(asyncio.run(main()))
