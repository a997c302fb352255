"""What the durable engines' tests share: the bodies of their tools, the count of each
tool's runs, the secret they must never find, and what the model was told.

Each test module decorates these bodies as its engine or framework wants (a toolguard
``@tool``, an activity, a DBOS step); ``fatal`` and ``down`` are the same tools on both
engines. Temporal's sandbox re-imports this module with a
workflow's; the tools run in activities, outside it, where ``ATTEMPTS`` is counted.
"""

from __future__ import annotations

from typing import Any

from toolguard import ToolError, ToolResult, tool
from toolguard.handlers import fail

__all__ = [
    "ATTEMPTS",
    "SECRET",
    "attempted",
    "down",
    "fatal",
    "find_order",
    "flaky_connection",
    "told",
]

SECRET = "db-password=hunter2"
ATTEMPTS: dict[str, int] = {}


def attempted(name: str) -> int:
    """Count one run of the tool ``name``; the runs so far."""
    ATTEMPTS[name] = ATTEMPTS.get(name, 0) + 1
    return ATTEMPTS[name]


def find_order(order: int, tool: str = "lookup") -> str:
    """42 is no order (a ``ToolError``, the model's to fix), 13 a failure carrying the
    secret (hidden), any other order shipped."""
    attempted(tool)
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")
    return f"order {order}: shipped"


def flaky_connection(tool: str) -> str:
    """Fails twice (transient, carrying the secret), then works."""
    if attempted(tool) < 3:
        raise ConnectionError(f"connection reset by 10.0.0.7 ({SECRET})")
    return "connected"


@tool(on_error=fail)
def fatal() -> str:
    """Its handler fails the invocation."""
    raise RuntimeError(f"corrupt ledger ({SECRET})")


@tool
def down() -> str:
    """Always fails."""
    attempted("down")
    raise OSError(f"disk full ({SECRET})")


def told(result: ToolResult) -> dict[str, Any]:
    """What the model was told, as JSON a workflow can return."""
    return {
        "content": result.text,
        "error_id": result.error_id,
        "error_kind": result.error_kind,
        "is_error": result.is_error,
    }
