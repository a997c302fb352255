"""The store a policy file names (``store = "redis://..."`` or ``"env:NAME"``), made
by the dispatcher on first use."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from toolguard.errors import ToolDefinitionError
from toolguard.stores._base import FailMode

if TYPE_CHECKING:
    from toolguard.stores._redis import RedisStore

__all__ = ["policy_store"]


def policy_store(url: str, on_unavailable: FailMode) -> RedisStore:
    """A :class:`RedisStore` on ``url`` (``env:NAME``: the URL that variable holds),
    failing ``on_unavailable`` (``"fail-open"`` or ``"fail-closed"``)."""
    if url.startswith("env:"):
        found = os.environ.get(url[4:])
        if not found:
            raise ToolDefinitionError(f"store = {url!r}: the variable {url[4:]} is not set")
        url = found
    from toolguard.stores._redis import RedisStore  # its client's extra, on first use

    return RedisStore.from_url(url, on_unavailable=on_unavailable)
