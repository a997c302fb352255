"""Guard an existing FastMCP app with one added line.

The app is written in FastMCP's style: ``@app.tool``, its ``Context`` (progress and
session state), a resource and a prompt. FastMCP itself would send ``Error calling
tool 'refund': {the exception's text}`` to the client, password included; the one
line ``app.add_middleware(ToolguardMiddleware(dispatcher))`` makes toolguard answer
instead: the client gets an error id, the cause is logged once (FastMCP's own
traceback log of it is taken over, not repeated), and a ``ToolError`` stays visible.
Run offline with FastMCP's in-memory client::

    python3 -m venv .venv && .venv/bin/pip install -e ".[fastmcp]"
    .venv/bin/python examples/fastmcp_guard_existing_app.py

(Once toolguard is released: ``pip install "toolguard-agents[fastmcp]"``.)
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import fastmcp
import structlog
from fastmcp import Context, FastMCP
from structlog.testing import capture_logs

from toolguard import Dispatcher, ToolError
from toolguard.integrations.fastmcp import ToolguardMiddleware
from toolguard.integrations.mcp import META_ERROR_ID

ORDERS = {42: "shipped"}

app: FastMCP[Any] = FastMCP("shop", mask_error_details=True)


@app.tool
async def order_status(order_id: int, ctx: Context) -> dict[str, object]:
    """Look up the status of an order."""
    await ctx.report_progress(1, 1)
    await ctx.set_state("last_order", order_id)
    if order_id not in ORDERS:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return {"order_id": order_id, "status": ORDERS[order_id]}


@app.tool
def refund(order_id: int, amount: float) -> str:
    """Refund part of an order."""
    raise ConnectionError("payments-db at db.internal refused login for 'svc' (password expired)")


@app.resource("shop://refund-policy")
def refund_policy() -> str:
    """The refund policy."""
    return "Refunds within 30 days of delivery."


@app.prompt
def apology(name: str) -> str:
    """An apology to a customer."""
    return f"Dear {name}, we are sorry for the delay."


app.add_middleware(ToolguardMiddleware(Dispatcher([], log_level="error")))  # <- the one line


def text(result: Any) -> str:
    return " ".join(getattr(block, "text", "[non-text block]") for block in result.content)


async def main() -> int:
    with capture_logs() as logs:
        async with fastmcp.Client(app) as client:
            ok = await client.call_tool("order_status", {"order_id": 42})
            print(f"order_status(42) -> {ok.data}")
            visible = await client.call_tool("order_status", {"order_id": 7}, raise_on_error=False)
            print(f"order_status(7) -> isError={visible.is_error}: {text(visible)}")
            hidden = await client.call_tool(
                "refund", {"order_id": 42, "amount": 5}, raise_on_error=False
            )
            print(f"refund -> isError={hidden.is_error}: {text(hidden)}")
            policy = await client.read_resource("shop://refund-policy")
            print(f"resource -> {getattr(policy[0], 'text', '')}")
            prompt = await client.get_prompt("apology", {"name": "Ann"})
            print(f"prompt -> {getattr(prompt.messages[0].content, 'text', '')}")
    assert "password" not in text(hidden)
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert hidden.meta[META_ERROR_ID] == event["error_id"]
    print(f"\nrefund's cause is in the server log once, under error id {event['error_id']}:")
    print(f"  {type(event['exc_info']).__name__}: {event['exc_info']}")
    return 0


if __name__ == "__main__":
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    sys.exit(asyncio.run(main()))
