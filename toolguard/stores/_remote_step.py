"""A model step of a session in a shared store (:class:`RemoteStep`): R1-R3 and R6 of
``sessions._rules`` around each call, asked of the store within the call's wait bound,
answered by its fallback (a memory step) while the store cannot answer. See
``stores._remote``.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from typing import Any, Final, Protocol

from toolguard._logging import emit
from toolguard.errors import RetryWithFeedback
from toolguard.policy._precedence import Resolved
from toolguard.policy._resilience import Breaker
from toolguard.sessions._rules import (
    CLOSED,
    EVENT_BREAKER_OPENED,
    OPEN,
    closed,
    exhausted,
    failed,
    unavailable,
)
from toolguard.sessions._steps import MemoryStep, SessionState
from toolguard.stores._base import Check, Health, Recorded
from toolguard.stores._keys import random_step, step_id

__all__ = ["SPENT", "Owner", "RemoteStep"]

# seconds of store work spent by the current tool call (each call's context has its own)
SPENT: Final[contextvars.ContextVar[float]] = contextvars.ContextVar(
    "toolguard_store_spent", default=0.0
)


class Owner(Protocol):
    """What a step needs of its session (``stores._remote.RemoteState``)."""

    store: Any
    key: str
    epoch: int
    fallback: SessionState
    health: Health
    _lock: threading.Lock

    def down(self) -> bool: ...
    def failed(self, error: BaseException) -> None: ...
    def ok(self) -> None: ...
    def run(self, operation: str, *args: Any, **kwargs: Any) -> Any: ...
    async def arun(self, operation: str, *args: Any, **kwargs: Any) -> Any: ...
    def due(self) -> bool: ...
    async def aready(self) -> None: ...


class RemoteStep:
    """One model step of a session in a shared store (see ``sessions._steps.Step``).
    :attr:`id` is its identity in the store: the key's, or a random one."""

    __slots__ = ("_alock", "_fallback", "_id", "_lock", "key", "read", "session")
    remote = True

    def __init__(self, session: Owner, key: str | None) -> None:
        self.session = session
        self.key = key
        self._id: bytes | None = None
        self._fallback: MemoryStep | None = None
        # one check per tool at a time: parallel calls of a round wait for its answer
        self._lock = threading.Lock()
        self._alock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.read: dict[str, tuple[int, float, bool]] = {}  # tool -> (epoch, when, report)

    @property
    def id(self) -> bytes:
        if self._id is None:
            with self._lock:
                if self._id is None:
                    self._id = random_step() if self.key is None else step_id(self.key)
        return self._id

    @property
    def fallback(self) -> MemoryStep:
        """The same step in the fallback (made on first need)."""
        found = self._fallback
        if found is None:
            found = self._fallback = self.session.fallback.step(self.key)
        return found

    async def aready(self) -> None:
        """Before the step's first call on the async path: R5's renewal, when due (the
        async operations below renew too, for callers that do not call this first)."""
        await self.session.aready()

    # --- R1, before a call -------------------------------------------------------------

    def _reading(self, tool: str) -> bool | None:
        """A closed breaker's reading still good for this step, or ``None``: ask."""
        state = self.session
        found = self.read.get(tool)
        if found is not None:
            epoch, when, report = found
            if epoch == state.epoch and time.monotonic() - when < state.store.fleet_cache:
                return report
        if state.store.fleet(tool):
            result: bool | None = state.store.cached(tool)
            return result
        return None

    def _asks(self, breaker: Breaker | None, budget: bool) -> bool:
        """R1 asks the store about a breaker; R6 asks whether a fail-closed store
        answers before a tool with a budget runs."""
        return breaker is not None or (
            budget and self.session.store.on_unavailable == "fail-closed"
        )

    def _here(self, tool: str, breaker: Breaker | None) -> bool:
        """R6: the store cannot answer."""
        if self.session.store.on_unavailable == "fail-closed":
            raise closed(tool, self.session.health.retry_interval)
        return self.fallback.check_breaker(tool, breaker)

    def _checked(self, tool: str, breaker: Breaker | None, check: Check, epoch: int) -> bool:
        state = self.session
        state.ok()
        if check.status == CLOSED or breaker is None:
            report = breaker is not None and check.failures > 0
            self.read[tool] = (epoch, time.monotonic(), report)
            state.store.remember(tool, report)
            return report
        if check.status == OPEN:
            raise unavailable(tool, breaker, check.retry_after)
        return True  # the trial: this call holds the lease

    def check_breaker(self, tool: str, breaker: Breaker | None, budget: bool = False) -> bool:
        SPENT.set(0.0)  # a call begins: its wait bound is whole
        if not self._asks(breaker, budget):
            return False
        reading = self._reading(tool)
        if reading is not None:
            return reading
        with self._lock:
            reading = self._reading(tool)  # the first of a round's calls may have read it
            if reading is not None:
                return reading
            state = self.session
            if state.down():
                return self._here(tool, breaker)
            epoch = state.epoch
            cooldown = breaker.cooldown if breaker is not None else 0.0
            try:
                check = state.run("check", state.key, tool, cooldown, fleet=state.store.fleet(tool))
            except Exception as error:  # noqa: BLE001 - R6
                state.failed(error)
                return self._here(tool, breaker)
            return self._checked(tool, breaker, check, epoch)

    async def acheck_breaker(
        self, tool: str, breaker: Breaker | None, budget: bool = False
    ) -> bool:
        if self.session.due():  # R5 (a caller that did not await aready() first)
            await self.session.aready()
        SPENT.set(0.0)
        if not self._asks(breaker, budget):
            return False
        reading = self._reading(tool)
        if reading is not None:
            return reading
        loop = asyncio.get_running_loop()
        if self._alock is None or self._alock[0] is not loop:  # a lock serves one loop
            self._alock = (loop, asyncio.Lock())
        async with self._alock[1]:
            reading = self._reading(tool)
            if reading is not None:
                return reading
            state = self.session
            if state.down():
                return self._here(tool, breaker)
            epoch = state.epoch
            cooldown = breaker.cooldown if breaker is not None else 0.0
            try:
                check = await state.arun(
                    "check", state.key, tool, cooldown, fleet=state.store.fleet(tool)
                )
            except Exception as error:  # noqa: BLE001 - R6
                state.failed(error)
                return self._here(tool, breaker)
            return self._checked(tool, breaker, check, epoch)

    # --- R2, after a call --------------------------------------------------------------

    def _outcome(
        self, tool: str, breaker: Breaker | None, error: Exception | None, visible: bool
    ) -> bool | None:
        """R2's classification; ``None`` also for a success that changes nothing (this
        step read the breaker closed with no failures, and nothing changed since)."""
        if breaker is None:
            return None
        failure = failed(error, visible)
        if error is None and self._reading(tool) is False:
            return None
        return failure

    def _recording(self, tool: str) -> int:
        state = self.session
        with state._lock:
            state.epoch += 1  # every reading of this session is now stale
            epoch = state.epoch
        self.read.pop(tool, None)
        state.store.forget(tool)
        return epoch

    def _recorded(self, tool: str, recorded: Recorded) -> None:
        self.session.ok()
        self.session.store.forget(tool)
        if recorded.event == EVENT_BREAKER_OPENED:
            emit("warning", recorded.event, tool=tool, failures=recorded.failures)
        elif recorded.event is not None:
            emit("info", recorded.event, tool=tool)

    def _record_here(
        self, tool: str, breaker: Breaker, error: Exception | None, visible: bool
    ) -> None:
        if error is None:
            self.fallback.succeeded(tool, breaker)
        else:
            self.fallback.after(tool, breaker, error, visible=visible)

    def _record(
        self, tool: str, breaker: Breaker | None, error: Exception | None, visible: bool
    ) -> None:
        try:
            failure = self._outcome(tool, breaker, error, visible)
            if failure is None or breaker is None:
                return
            state = self.session
            if state.down():
                self._record_here(tool, breaker, error, visible)
                return
            self._recording(tool)
            try:
                recorded = state.run(
                    "record",
                    state.key,
                    tool,
                    failure,
                    breaker.failures,
                    breaker.cooldown,
                    fleet=state.store.fleet(tool),
                )
            except Exception as error_:  # noqa: BLE001 - R6
                state.failed(error_)
                self._record_here(tool, breaker, error, visible)
                return
            self._recorded(tool, recorded)
        finally:
            SPENT.set(0.0)  # the call's store work is over

    async def _arecord(
        self, tool: str, breaker: Breaker | None, error: Exception | None, visible: bool
    ) -> None:
        try:
            failure = self._outcome(tool, breaker, error, visible)
            if failure is None or breaker is None:
                return
            state = self.session
            if state.down():
                self._record_here(tool, breaker, error, visible)
                return
            self._recording(tool)
            try:
                recorded = await state.arun(
                    "record",
                    state.key,
                    tool,
                    failure,
                    breaker.failures,
                    breaker.cooldown,
                    fleet=state.store.fleet(tool),
                )
            except Exception as error_:  # noqa: BLE001 - R6
                state.failed(error_)
                self._record_here(tool, breaker, error, visible)
                return
            self._recorded(tool, recorded)
        finally:
            SPENT.set(0.0)

    def succeeded(self, tool: str, breaker: Breaker | None) -> None:
        self._record(tool, breaker, None, False)

    async def asucceeded(self, tool: str, breaker: Breaker | None) -> None:
        await self._arecord(tool, breaker, None, False)

    def after(self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool) -> None:
        self._record(tool, breaker, error, visible)

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        await self._arecord(tool, breaker, error, visible)

    # --- R3, before the handler chain --------------------------------------------------

    def _budget_here(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """R6: the store cannot answer."""
        if self.session.store.on_unavailable == "fail-closed":
            return closed(tool, self.session.health.retry_interval)
        return self.fallback.before(error, tool, resolved)

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        state = self.session
        if state.down():
            return self._budget_here(error, tool, resolved)
        try:
            used = state.run("count_retry", state.key, tool, self.id)
        except Exception as error_:  # noqa: BLE001 - R6
            state.failed(error_)
            return self._budget_here(error, tool, resolved)
        state.ok()
        return exhausted(error, tool, int(used), limit)

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        if self.session.due():
            await self.session.aready()
        state = self.session
        if state.down():
            return self._budget_here(error, tool, resolved)
        try:
            used = await state.arun("count_retry", state.key, tool, self.id)
        except Exception as error_:  # noqa: BLE001 - R6
            state.failed(error_)
            return self._budget_here(error, tool, resolved)
        state.ok()
        return exhausted(error, tool, int(used), limit)
