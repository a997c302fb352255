"""One dispatcher's named sessions: a conversation found again by its id (a LangGraph
thread id, an MCP session id) while it is in use, forgotten when left idle."""

from __future__ import annotations

import builtins
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final, Generic, TypeVar

from toolguard._engine import new_lock

__all__ = ["MAX_SESSIONS", "SESSION_TTL", "Sessions"]

S = TypeVar("S")

SESSION_TTL: Final = 3600.0  # seconds a named session is kept while idle
MAX_SESSIONS: Final = 10_000  # named sessions kept at most per dispatcher


class Sessions(Generic[S]):
    """One dispatcher's named sessions: found again by id, forgotten when idle."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = new_lock()  # not threading.Lock(): a workflow may make a dispatcher
        self._by_id: OrderedDict[str | tuple[int, str], tuple[S, float]] = OrderedDict()

    def get(self, id: str, make: Callable[[], S], store: object = None) -> S:
        """The session ``id`` (in ``store``: the same id in two stores is two sessions)."""
        if not isinstance(id, str) or not id:
            raise TypeError(f"session(id=...) takes a non-empty str, got {id!r}")
        key: str | tuple[int, str] = id if store is None else (builtins.id(store), id)
        now = self._clock()
        with self._lock:
            while self._by_id:  # the least recently used first: drop the idle ones
                oldest, (_, used) = next(iter(self._by_id.items()))
                if now - used < SESSION_TTL and len(self._by_id) < MAX_SESSIONS:
                    break
                del self._by_id[oldest]
            found = self._by_id.pop(key, None)
            session = found[0] if found is not None else make()
            self._by_id[key] = (session, now)
        return session
