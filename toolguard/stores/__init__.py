"""Where sessions keep their model-retry budgets and circuit breakers.

``MemoryStore`` (the default) keeps them in this process; ``RedisStore`` (extra
``redis``) on a Redis or Valkey server, so that every process of a fleet sees the
same conversation and the same breakers::

    store = RedisStore.from_url("redis://cache:6379/0", agent="support")
    session = dispatcher.session(id="conversation-42", store=store)

``Store`` and ``AsyncStore`` are the operations a shared store performs (each one
atomic on the store, on the store's clock): the protocol a store for another
server would implement. See ``docs/fleet.md``.
"""

from __future__ import annotations

from toolguard.stores._base import AsyncStore, FailMode, Store, StoreUnavailable
from toolguard.stores._memory import MemoryStore
from toolguard.stores._redis import RedisStore

__all__ = ["AsyncStore", "FailMode", "MemoryStore", "RedisStore", "Store", "StoreUnavailable"]
