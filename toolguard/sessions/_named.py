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


class _Kept(Generic[S]):
    """A named session and when it was last used."""

    __slots__ = ("session", "used")

    def __init__(self, session: S, used: float) -> None:
        self.session = session
        self.used = used


class Sessions(Generic[S]):
    """One dispatcher's named sessions: found again by id, forgotten when idle.

    A session found in use costs a dict lookup and its idle clock restarted; the idle
    and the least recently used beyond :data:`MAX_SESSIONS` are dropped when a new
    one is made (the only way the registry grows), and a session found idle past
    :data:`SESSION_TTL` is not handed back: a new one takes its id.
    """

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = new_lock()  # not threading.Lock(): a workflow may make a dispatcher
        # least recently used first
        self._by_id: OrderedDict[str | tuple[int, str], _Kept[S]] = OrderedDict()

    def find(self, id: str, store: object = None) -> S | None:
        """The session ``id`` in ``store`` if one is kept and in use (its idle clock
        restarted), else ``None``: the hot path, with no function made per lookup."""
        key: str | tuple[int, str] = id if store is None else (builtins.id(store), id)
        now = self._clock()
        self._lock.acquire()  # not `with`: a third of a hit's cost on 3.11
        try:
            found = self._by_id.get(key)
            if found is None or now - found.used >= SESSION_TTL:
                return None
            found.used = now
            self._by_id.move_to_end(key)
            return found.session
        finally:
            self._lock.release()

    def get(self, id: str, make: Callable[[], S], store: object = None) -> S:
        """The session ``id`` (in ``store``: the same id in two stores is two sessions),
        made by ``make`` when none is kept in use."""
        key: str | tuple[int, str] = id if store is None else (builtins.id(store), id)
        now = self._clock()
        with self._lock:
            found = self._by_id.get(key)
            if found is not None and now - found.used < SESSION_TTL:
                found.used = now
                self._by_id.move_to_end(key)
                return found.session
            self._by_id.pop(key, None)
            while self._by_id:  # the least recently used first: drop the idle ones
                oldest, kept = next(iter(self._by_id.items()))
                if now - kept.used < SESSION_TTL and len(self._by_id) < MAX_SESSIONS:
                    break
                del self._by_id[oldest]
            session = make()
            self._by_id[key] = _Kept(session, now)
        return session
