"""A fixture for the drivers: the sync session API refuses to be called.

Async paths must use the ``a``-methods (issue 27: "Async paths use the sync session
API"): with an asyncio store the sync ones fail every call, with a sync client they
block the event loop. A driver plays its framework's async path with this fixture on:
any sync call fails the test.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from toolguard import Scope, Session

SYNC_API: tuple[tuple[type, str], ...] = (
    *((Session, name) for name in ("admit", "handle_error", "handle_result", "dispatch", "run")),
    *(
        (Scope, name)
        for name in ("admit", "run", "failed", "succeeded", "unknown_tool", "dispatch")
    ),
)


def _refused(owner: type, name: str) -> Callable[..., Any]:
    def refused(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError(f"the async path called the sync {owner.__name__}.{name}")

    return refused


@pytest.fixture
def no_sync_api(monkeypatch: pytest.MonkeyPatch) -> None:
    for owner, name in SYNC_API:
        monkeypatch.setattr(owner, name, _refused(owner, name))
