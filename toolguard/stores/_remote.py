"""A session whose budgets and breakers live in a shared store (:class:`RemoteState`),
its model steps (:class:`RemoteStep`), and the store's health (:class:`Health`).

The in-process state (``sessions._steps.SessionState``, the memory store) is this class's base
and stays its fallback: while the store is down and the store fails open, the same
methods answer from process memory, exactly as the memory store would.

Cost: a step remembers, per tool, the closed breaker it read, so a healthy tool costs
one round trip per model step (the first call's check); its successes cost none. A
failure costs one round trip (the outcome, or the budget: a ``RetryWithFeedback`` is
neutral for breakers). Tools without a breaker or a budget never touch the store.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final

from toolguard._logging import emit
from toolguard.errors import RetryWithFeedback, ToolTimeout, ToolUnavailable
from toolguard.policy._precedence import Resolved
from toolguard.policy._resilience import Breaker
from toolguard.sessions._steps import NEUTRAL, SessionState, Step, ToolState, exhausted, unavailable
from toolguard.stores._base import (
    CLOSED,
    OPEN,
    Check,
    Health,
    Recorded,
    Remembered,
    StoreUnavailable,
)

__all__ = ["RemoteState", "RemoteStep"]

_NAMED_STEPS: Final = 1024  # named steps (and their reads) remembered per session
_MAX_STEP_ID: Final = 200


class RemoteState(SessionState):
    """One conversation's state in ``store`` under the id ``id``."""

    def __init__(self, store: Any, id: str | None, *, clock: Callable[[], float] | None = None):
        super().__init__(clock=clock)
        self.store = store
        self.id = id if id is not None else uuid.uuid4().hex
        self.health: Health = store.health
        self._named: OrderedDict[str, RemoteStep] = OrderedDict()

    # --- steps ----------------------------------------------------------------------

    def step(self, key: str | None = None) -> RemoteStep:
        if self.store.is_async:
            raise TypeError(
                "this session's store uses an asyncio client: use the session's async "
                "methods (adispatch, arun, aadmit, ahandle_error, ahandle_result, astate, "
                "areset), or give the store a sync client"
            )
        return self._step(key)

    def astep(self, key: str | None = None) -> RemoteStep:
        return self._step(key)

    def _step(self, key: str | None) -> RemoteStep:
        number = SessionState.step(self, key).number  # the fallback's step
        if key is None:
            return RemoteStep(self, number, None)  # its id drawn when a budget needs it
        with self._lock:
            found = self._named.get(key)
            if found is not None and found.number == number:
                self._named.move_to_end(key)
                return found
            ident = (
                key if len(key) <= _MAX_STEP_ID else "h:" + uuid.uuid5(uuid.NAMESPACE_URL, key).hex
            )
            made = self._named[key] = RemoteStep(self, number, ident)
            if len(self._named) > _NAMED_STEPS:
                self._named.popitem(last=False)
        return made

    # --- what the application asks --------------------------------------------------

    def state(self, tool: str) -> ToolState:
        """What the store remembers about ``tool`` (``open_until`` on the store's clock,
        epoch seconds); while it is down, the fallback's memory."""
        if self.health.down():
            return SessionState.state(self, tool)
        try:
            remembered = self.step().store_read(tool)
        except StoreUnavailable as error:
            self.health.failed(error)
            return SessionState.state(self, tool)
        self.health.ok()
        return _tool_state(remembered)

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state`."""
        if self.health.down():
            return SessionState.state(self, tool)
        try:
            remembered = await self.astep().astore_read(tool)
        except StoreUnavailable as error:
            self.health.failed(error)
            return SessionState.state(self, tool)
        self.health.ok()
        return _tool_state(remembered)

    def reset(self, tool: str | None = None) -> None:
        """Forget budgets and close breakers, in the store and here; fleet-wide
        breakers are the fleet's and stay as they are."""
        if self.store.is_async:
            self.step()  # raises: the sync spelling needs a sync client
        self._forget()
        try:
            self.store.reset(self.id, tool)
        except StoreUnavailable as error:
            self.health.failed(error)
        SessionState.reset(self, tool)

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        self._forget()
        try:
            await _awaited(self.store, "reset", self.id, tool)
        except StoreUnavailable as error:
            self.health.failed(error)
        SessionState.reset(self, tool)

    def _forget(self) -> None:
        with self._lock:
            self._named.clear()


def _tool_state(remembered: Remembered) -> ToolState:
    return ToolState(
        remembered.model_retries, remembered.consecutive_failures, remembered.open_until
    )


def _closed(tool: str, seconds: float) -> ToolUnavailable:
    """What the model is told when the store fails closed."""
    return ToolUnavailable(
        f"The tool '{tool}' is unavailable right now. Do not call it again for about "
        f"{seconds:.0f} s; use another tool or tell the user.",
        tool=tool,
        retry_after=seconds,
    )


_ID_LOCK: Final = threading.Lock()
_ASK: Final = object()  # "the step cannot decide alone: ask the store"


class RemoteStep(Step):
    """One model step of a :class:`RemoteState`: :attr:`id` is unique across processes
    (the step's own key, or a random one drawn on first use)."""

    __slots__ = ("_alock", "_id", "_lock", "seen")
    remote = True
    session: RemoteState

    def __init__(self, session: RemoteState, number: int, id: str | None) -> None:
        super().__init__(session, number)
        self._id = id
        # one check per tool per step: parallel calls of a round wait for its answer
        self._lock = threading.Lock()
        self._alock: tuple[asyncio.AbstractEventLoop, asyncio.Lock] | None = None
        self.seen: dict[str, bool] = {}  # tool -> closed, with failures to report?

    @property
    def id(self) -> str:
        """The step's identity in the store (what a budget counts once)."""
        if self._id is None:
            with _ID_LOCK:  # parallel calls of a round must agree on it
                if self._id is None:
                    self._id = uuid.uuid4().hex
        return self._id

    # --- the breaker, before a call --------------------------------------------------

    def _before_check(self, tool: str, breaker: Breaker) -> Any:
        seen = self.seen.get(tool)
        if seen is not None:
            return seen
        state = self.session
        if state.store.fleet(tool):
            cached = state.store.cached(tool)
            if cached is not None:
                return cached
        if state.health.down():
            return self._check_here(tool, breaker)
        return _ASK

    def _check_here(self, tool: str, breaker: Breaker) -> bool:
        if self.session.store.on_unavailable == "fail-closed":
            raise _closed(tool, self.session.health.retry_interval)
        return Step.check_breaker(self, tool, breaker)

    def _checked(self, tool: str, breaker: Breaker, check: Check) -> bool:
        self.session.health.ok()
        if check.status == CLOSED:
            report = check.failures > 0
            self.seen[tool] = report
            self.session.store.remember(tool, report)
            return report
        if check.status == OPEN:
            raise unavailable(tool, breaker, check.retry_after)
        return True  # the trial: this call holds the lease

    def check_breaker(self, tool: str, breaker: Breaker | None) -> bool:
        if breaker is None:
            return False
        seen = self.seen.get(tool)
        if seen is not None:
            return seen
        with self._lock:
            return self._check(tool, breaker)

    def _check(self, tool: str, breaker: Breaker) -> bool:
        decided = self._before_check(tool, breaker)
        if decided is not _ASK:
            return bool(decided)
        state = self.session
        try:
            check = state.store.check(
                state.id, tool, breaker.cooldown, fleet=state.store.fleet(tool)
            )
        except StoreUnavailable as error:
            state.health.failed(error)
            return self._check_here(tool, breaker)
        return self._checked(tool, breaker, check)

    async def acheck_breaker(self, tool: str, breaker: Breaker | None) -> bool:
        if breaker is None:
            return False
        seen = self.seen.get(tool)
        if seen is not None:
            return seen
        loop = asyncio.get_running_loop()
        if self._alock is None or self._alock[0] is not loop:  # a lock serves one loop
            self._alock = (loop, asyncio.Lock())
        async with self._alock[1]:
            return await self._acheck(tool, breaker)

    async def _acheck(self, tool: str, breaker: Breaker) -> bool:
        decided = self._before_check(tool, breaker)
        if decided is not _ASK:
            return bool(decided)
        state = self.session
        try:
            check = await _awaited(
                state.store,
                "check",
                state.id,
                tool,
                breaker.cooldown,
                fleet=state.store.fleet(tool),
            )
        except StoreUnavailable as error:
            state.health.failed(error)
            return self._check_here(tool, breaker)
        return self._checked(tool, breaker, check)

    # --- after a call ----------------------------------------------------------------

    def _counts(
        self, tool: str, breaker: Breaker | None, error: Exception | None, visible: bool
    ) -> bool | None:
        """Whether the outcome counts as a failure; ``None``: nothing to record."""
        if breaker is None:
            return None
        if error is None:
            if self.seen.get(tool) is False:
                return None  # a healthy tool's success changes nothing
            if self.session.store.fleet(tool) and self.session.store.cached(tool) is False:
                return None
            return False
        if isinstance(error, NEUTRAL):
            return None
        return isinstance(error, ToolTimeout) or not visible

    def _recorded(self, tool: str, recorded: Recorded) -> None:
        self.session.health.ok()
        self.session.store.forget(tool)
        if recorded.open:
            self.seen.pop(tool, None)
        else:
            self.seen[tool] = recorded.failures > 0
        if recorded.event == "breaker_opened":
            emit("warning", "breaker_opened", tool=tool, failures=recorded.failures)
        elif recorded.event == "breaker_closed":
            emit("info", "breaker_closed", tool=tool)

    def _record(
        self, tool: str, breaker: Breaker | None, error: Exception | None, *, visible: bool
    ) -> None:
        failed = self._counts(tool, breaker, error, visible)
        if failed is None or breaker is None:
            return
        state = self.session
        if state.health.down():
            Step._record(self, tool, breaker, error, visible=visible)
            return
        try:
            recorded = state.store.record(
                state.id,
                tool,
                failed,
                breaker.failures,
                breaker.cooldown,
                fleet=state.store.fleet(tool),
            )
        except StoreUnavailable as unavailable_:
            state.health.failed(unavailable_)
            Step._record(self, tool, breaker, error, visible=visible)
            return
        self._recorded(tool, recorded)

    async def _arecord(
        self, tool: str, breaker: Breaker | None, error: Exception | None, *, visible: bool
    ) -> None:
        failed = self._counts(tool, breaker, error, visible)
        if failed is None or breaker is None:
            return
        state = self.session
        if state.health.down():
            Step._record(self, tool, breaker, error, visible=visible)
            return
        try:
            recorded = await _awaited(
                state.store,
                "record",
                state.id,
                tool,
                failed,
                breaker.failures,
                breaker.cooldown,
                fleet=state.store.fleet(tool),
            )
        except StoreUnavailable as unavailable_:
            state.health.failed(unavailable_)
            Step._record(self, tool, breaker, error, visible=visible)
            return
        self._recorded(tool, recorded)

    async def asucceeded(self, tool: str, breaker: Breaker | None) -> None:
        await self._arecord(tool, breaker, None, visible=False)

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        await self._arecord(tool, breaker, error, visible=visible)

    # --- the model-retry budget, before the handler chain ------------------------------

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        state = self.session
        if state.health.down():
            return self._budget_here(error, tool, resolved)
        try:
            used = state.store.count_retry(state.id, tool, self.id)
        except StoreUnavailable as unavailable_:
            state.health.failed(unavailable_)
            return self._budget_here(error, tool, resolved)
        state.health.ok()
        return exhausted(error, tool, used, limit)

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        state = self.session
        if state.health.down():
            return self._budget_here(error, tool, resolved)
        try:
            used = await _awaited(state.store, "count_retry", state.id, tool, self.id)
        except StoreUnavailable as unavailable_:
            state.health.failed(unavailable_)
            return self._budget_here(error, tool, resolved)
        state.health.ok()
        return exhausted(error, tool, used, limit)

    def _budget_here(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        if self.session.store.on_unavailable == "fail-closed":
            return _closed(tool, self.session.health.retry_interval)
        return Step.before(self, error, tool, resolved)

    # --- reads -----------------------------------------------------------------------

    def store_read(self, tool: str) -> Remembered:
        state = self.session
        return state.store.read(state.id, tool, fleet=state.store.fleet(tool))  # type: ignore[no-any-return]  # the store is Any (sync or async)

    async def astore_read(self, tool: str) -> Remembered:
        state = self.session
        found: Remembered = await _awaited(
            state.store, "read", state.id, tool, fleet=state.store.fleet(tool)
        )
        return found


async def _awaited(store: Any, operation: str, *args: Any, **kwargs: Any) -> Any:
    """``store.operation(...)``, or its twin ``store.aoperation(...)`` awaited when the
    store is async (a sync store's operation blocks the loop for at most its bound)."""
    if store.is_async:
        return await getattr(store, "a" + operation)(*args, **kwargs)
    return getattr(store, operation)(*args, **kwargs)
