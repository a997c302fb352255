"""toolguard tools the framework integrations' tests serve as each framework's own
(``as_<framework>_tool``), with the secret their hidden failures must never send."""

from __future__ import annotations

import asyncio

from toolguard import tool

__all__ = ["SECRET", "asearch", "search"]

SECRET = "db-password=hunter2"


@tool
def search(query: str, limit: int = 3) -> list[str]:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    if query == "boom":
        raise RuntimeError(SECRET)
    return [f"{query} {i}" for i in range(limit)]


@tool
async def asearch(query: str) -> str:
    """Search, asynchronously.

    Args:
        query: What to look for.
    """
    await asyncio.sleep(0)
    if query == "boom":
        raise RuntimeError(SECRET)
    return f"found {query}"
