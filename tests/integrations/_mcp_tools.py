"""Tools served by the MCP tests, in process and as ``MODULE:ATTR`` over stdio.

``SECRET`` and ``CAUSE_SECRET`` are what must never reach an MCP client: they sit
in hidden exceptions' messages and causes. ``RUNS`` counts how often each tool's
body ran (in this process), to prove that bad arguments never run a tool.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Annotated, Any

import mcp.types as types
from pydantic import BaseModel

from toolguard import (
    ControlFlow,
    Dispatcher,
    Image,
    Injected,
    InjectedCallId,
    Text,
    ToolError,
    tool,
)
from toolguard.handlers import fail

SECRET = "pw=hunter2-5ecr3t"
CAUSE_SECRET = "db-host-10.0.0.7-cause-5ecr3t"
PIXEL = "iVBORw0KGgo="  # the first bytes of a PNG, base64

RUNS: Counter[str] = Counter()


class Handoff(ControlFlow):
    """A control-flow signal: no handler sees it."""


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    RUNS["add"] += 1
    return a + b


@tool
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look an order up by its number."""
    RUNS["lookup_order"] += 1
    if order_id != 42:
        try:
            raise LookupError(f"no row for order {order_id} ({CAUSE_SECRET})")
        except LookupError as error:
            raise ToolError(
                f"There is no order {order_id}. Ask the user to check the number."
            ) from error
    return {"order_id": 42, "status": "shipped", "items": ["book"]}


@tool
def charge(amount: float) -> str:
    """Charge the customer's card."""
    RUNS["charge"] += 1
    try:
        raise KeyError(CAUSE_SECRET)
    except KeyError as error:
        raise ConnectionError(f"payment gateway refused ({SECRET})") from error


@tool
def chart() -> list[Text | Image]:
    """Draw the sales chart."""
    RUNS["chart"] += 1
    return [Text(text="Sales, last 7 days:"), Image(data=PIXEL, media_type="image/png")]


@tool(on_error=fail)
def transfer(to: str) -> str:
    """Transfer the balance (failures fail the invocation)."""
    RUNS["transfer"] += 1
    raise RuntimeError(f"ledger locked ({SECRET})")


@tool
def escalate() -> str:
    """Hand the conversation to a human."""
    RUNS["escalate"] += 1
    raise Handoff(f"to the billing team ({SECRET})")


@tool
def whoami(user: Annotated[str, Injected], call_id: Annotated[str, InjectedCallId]) -> str:
    """Who is calling, and under which call id."""
    RUNS["whoami"] += 1
    return f"{user} {call_id}"


dispatcher = Dispatcher([add, lookup_order, charge, chart, transfer, escalate])
tools = [add, chart]
not_tools = 42


# --- tools that abort their call (issue 12): served by ``hostile`` over stdio ----------


@tool
def exits() -> str:
    """Call sys.exit() in the middle of a call."""
    raise SystemExit(f"exiting ({SECRET})")


@tool
def interrupts() -> str:
    """Raise KeyboardInterrupt from the tool's own code."""
    raise KeyboardInterrupt(SECRET)


@tool
def closes() -> str:
    """Raise GeneratorExit from the tool's own code."""
    raise GeneratorExit(SECRET)


@tool
async def cancels_itself() -> str:
    """An async tool whose own code raises CancelledError (nobody cancelled it)."""
    raise asyncio.CancelledError(SECRET)


@tool
async def group_exit() -> str:
    """A TaskGroup whose task called sys.exit(): a BaseExceptionGroup reaches the server."""
    async with asyncio.TaskGroup() as group:
        group.create_task(_exit_soon())
    return "unreachable"


async def _exit_soon() -> None:
    raise SystemExit(SECRET)


@tool
def surrogate_result() -> str:
    """Return a file name that is not UTF-8 (a lone surrogate, as os.listdir gives)."""
    return "report-\udcff.txt"


@tool
def surrogate_error() -> str:
    """A model-visible message holding a lone surrogate."""
    raise ToolError("cannot open report-\udcff.txt")


@tool
async def slow(seconds: float) -> str:
    """Sleep (async), to be cancelled by the client."""
    await asyncio.sleep(seconds)
    return "done"


hostile = Dispatcher(
    [
        add,
        exits,
        interrupts,
        closes,
        cancels_itself,
        group_exit,
        surrogate_result,
        surrogate_error,
        slow,
        escalate,
        transfer,
    ]
)


# --- the conformance suites' tools: plain functions, each made three ways -------------


class Quote(BaseModel):
    """A structured return value (an ``outputSchema`` in every way)."""

    sku: str
    price: float
    tags: list[str]


def quote(sku: str, quantity: int = 1, express: bool = False) -> Quote:
    """Price an item.

    Args:
        sku: The item's stock number.
        quantity: How many.
        express: Ship express.
    """
    return Quote(sku=sku, price=2.5 * quantity + (5 if express else 0), tags=["in-stock"])


def pictures() -> list[types.ContentBlock]:
    """MCP content blocks, returned as they are."""
    return [
        types.TextContent(text="Sales, last 7 days:"),
        types.ImageContent(data=PIXEL, mime_type="image/png"),
    ]


def crash(order_id: int) -> str:
    """A tool whose backend fails with a secret in the message."""
    try:
        raise KeyError(CAUSE_SECRET)
    except KeyError as error:
        raise ConnectionError(f"payment gateway refused ({SECRET})") from error


def refuse(order_id: int) -> str:
    """A tool that tells the model what went wrong (toolguard's ToolError)."""
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


CONFORMANCE: list[Callable[..., Any]] = [quote, pictures, crash, refuse]

conformance = Dispatcher([tool(function) for function in CONFORMANCE])
"""The conformance tools in toolguard's adapter, for ``MODULE:ATTR`` over stdio."""
