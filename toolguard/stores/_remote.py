"""A session whose budgets and breakers live in a shared store (:class:`RemoteState`)
and its model steps (``_remote_step.RemoteStep``): the session side of every store
but memory.

They implement ``sessions._steps``' protocols (``State``, ``Step``); they do not
extend the memory store's classes. Each holds a memory state or step as its
*fallback* (R6 of ``sessions._rules``): while the store cannot answer and the store
fails open, the fallback answers by the same rules. Whatever a store operation raises
(any type: a ``RedisError``, a closed event loop, a bug) is an outage, handled here
and logged once; it never reaches the tool's handler chain, breaker or budget.

The wait bound is per tool call: the store work of one call (its check, its budget,
its outcome, and any reload or reconnection inside them) shares one ``wait_bound``.

Cost: a step reuses a closed breaker's reading for its further calls while nothing
changed in this process and for at most ``fleet_cache`` seconds (another process's
change is seen by then); a healthy tool costs one round trip per model step, its
successes none; a failure one more. Tools without a breaker or a budget never touch
the store (nor do budgets before a failure, under fail-open).
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict
from typing import Any, Final

from toolguard._logging import emit
from toolguard.sessions._steps import SessionState, ToolState, check_step
from toolguard.stores._base import Health, Refused, StoreUnavailable
from toolguard.stores._remote_step import SPENT, RemoteStep

__all__ = ["RemoteState"]

_NAMED_STEPS: Final = 1024  # named steps (and their readings) kept per session
_ASYNC_ONLY: Final = (
    "this session's store uses an asyncio client: use the session's async methods "
    "(adispatch, arun, aadmit, ahandle_error, ahandle_result, astate, areset), or give "
    "the store a sync client"
)


class RemoteState:
    """One conversation's state in ``store`` under the id ``id`` (see the module)."""

    def __init__(self, store: Any, id: str | None, *, clock: Any = None) -> None:
        self.store = store
        self.id = id if id is not None else uuid.uuid4().hex
        self.key: str = store.session_key(self.id)  # once: its cost is the id's length
        self.fallback = SessionState(clock=clock)
        self.health: Health = store.health
        self.faults = Health(store.name, store.health.retry_interval, scope="session")
        self.epoch = 0  # moves when this process changes a breaker here: readings expire
        self._lock = threading.Lock()
        self._named: OrderedDict[str, RemoteStep] = OrderedDict()
        self._renew_every: float = store.ttl / 4
        self._renewed = time.monotonic() if id is None else float("-inf")

    # --- outages, once -----------------------------------------------------------------

    def down(self) -> bool:
        return self.health.down() or self.faults.down()

    def failed(self, error: BaseException) -> None:
        (self.faults if isinstance(error, Refused) else self.health).failed(error)

    def ok(self) -> None:
        self.health.ok()
        self.faults.ok()

    def run(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        """``store.operation(...)`` within what is left of this call's wait bound."""
        left = self.store.wait_bound - SPENT.get()
        if left <= 0:
            raise StoreUnavailable("the store's wait bound for this call is spent")
        started = time.monotonic()
        try:
            return getattr(self.store, operation)(*args, timeout=left, **kwargs)
        finally:
            SPENT.set(SPENT.get() + time.monotonic() - started)

    async def arun(self, operation: str, *args: Any, **kwargs: Any) -> Any:
        """Async :meth:`run` (a sync store's operation blocks the loop, within the bound)."""
        left = self.store.wait_bound - SPENT.get()
        if left <= 0:
            raise StoreUnavailable("the store's wait bound for this call is spent")
        started = time.monotonic()
        try:
            if self.store.is_async:
                return await getattr(self.store, "a" + operation)(*args, timeout=left, **kwargs)
            return getattr(self.store, operation)(*args, timeout=left, **kwargs)
        finally:
            SPENT.set(SPENT.get() + time.monotonic() - started)

    # --- steps, and R5: a session in use renews its state -------------------------------

    def step(self, key: str | None = None) -> RemoteStep:
        if self.store.is_async:
            raise TypeError(_ASYNC_ONLY)
        if self.due():
            self._renew()
        return self._step(key)

    def astep(self, key: str | None = None) -> RemoteStep:
        """:meth:`step` for the async methods (they await its ``aready()``: R5)."""
        return self._step(key)

    def _step(self, key: str | None) -> RemoteStep:
        if key is None:
            return RemoteStep(self, None)
        if type(key) is not str:
            check_step(key)
        with self._lock:
            found = self._named.get(key)
            if found is not None:
                self._named.move_to_end(key)
                return found
            made = self._named[key] = RemoteStep(self, key)
            if len(self._named) > _NAMED_STEPS:
                self._named.popitem(last=False)
        return made

    def _renew(self) -> None:
        self._renewed = time.monotonic()
        if self.down():
            return
        SPENT.set(0.0)
        try:
            self.run("touch", self.key)
        except Exception as error:  # noqa: BLE001 - R6: the store's, never the call's
            self.failed(error)
        else:
            self.ok()
        SPENT.set(0.0)

    def due(self) -> bool:
        """R5: whether this process should renew the session now."""
        return time.monotonic() - self._renewed >= self._renew_every

    async def aready(self) -> None:
        """R5 for the async methods: renew the session if it is due (never raises)."""
        if not self.due():
            return
        self._renewed = time.monotonic()
        if self.down():
            return
        SPENT.set(0.0)
        try:
            await self.arun("touch", self.key)
        except Exception as error:  # noqa: BLE001 - R6
            self.failed(error)
        else:
            self.ok()
        SPENT.set(0.0)

    # --- what the application asks --------------------------------------------------

    def state(self, tool: str) -> ToolState:
        """What the store remembers about ``tool`` (``open_until`` on the store's clock,
        epoch seconds); while it cannot answer, the fallback's memory."""
        if self.store.is_async:
            raise TypeError(_ASYNC_ONLY)
        if self.down():
            return self.fallback.state(tool)
        SPENT.set(0.0)
        try:
            found = self.run("read", self.key, tool, fleet=self.store.fleet(tool))
        except Exception as error:  # noqa: BLE001 - R6
            self.failed(error)
            return self.fallback.state(tool)
        finally:
            SPENT.set(0.0)
        self.ok()
        return ToolState(found.model_retries, found.consecutive_failures, found.open_until)

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state`."""
        if self.down():
            return self.fallback.state(tool)
        SPENT.set(0.0)
        try:
            found = await self.arun("read", self.key, tool, fleet=self.store.fleet(tool))
        except Exception as error:  # noqa: BLE001 - R6
            self.failed(error)
            return self.fallback.state(tool)
        finally:
            SPENT.set(0.0)
        self.ok()
        return ToolState(found.model_retries, found.consecutive_failures, found.open_until)

    def reset(self, tool: str | None = None) -> None:
        """R4 in the store and in the fallback. While the store cannot answer, raises
        :class:`StoreUnavailable` and changes nothing: call it again once it is back."""
        if self.store.is_async:
            raise TypeError(_ASYNC_ONLY)
        SPENT.set(0.0)
        try:
            self.run("reset", self.key, tool)
        except Exception as error:  # noqa: BLE001 - R6: told to the caller, below
            self._not_reset(error)
        finally:
            SPENT.set(0.0)
        self._was_reset(tool)

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        SPENT.set(0.0)
        try:
            await self.arun("reset", self.key, tool)
        except Exception as error:  # noqa: BLE001 - R6: told to the caller, below
            self._not_reset(error)
        finally:
            SPENT.set(0.0)
        self._was_reset(tool)

    def _not_reset(self, error: Exception) -> None:
        self.failed(error)
        raise StoreUnavailable(
            "the store did not answer: the session was not reset (reset it again once "
            "the store answers)"
        ) from error

    def _was_reset(self, tool: str | None) -> None:
        self.ok()
        with self._lock:
            self.epoch += 1
        self.fallback.forget(tool)
        emit("info", "session_reset", tool=tool)
