"""A conversation's state (model-retry budgets, circuit breakers) and its model steps.

:class:`Step` is what the runner and the guard call around each tool call (a
protocol: the memory store's :class:`MemoryStep` and a shared store's step implement
it); :class:`State` is what a store opens for a session. :class:`SessionState` is the
memory store's state: the rules of ``sessions._rules`` applied to records in this
process. Safe to use from many threads and tasks at once.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Protocol

import attrs

from toolguard._engine import new_lock
from toolguard._logging import emit
from toolguard.errors import InvalidOption, RetryWithFeedback
from toolguard.policy._precedence import Resolved
from toolguard.policy._resilience import Breaker
from toolguard.sessions._rules import (
    EVENT_BREAKER_OPENED,
    OPEN,
    Record,
    admit,
    exhausted,
    failed,
    settle,
    spend,
    unavailable,
)

__all__ = ["MemoryStep", "Opens", "SessionState", "State", "Step", "ToolState", "check_step"]


@attrs.frozen
class ToolState:
    """What a session remembers about one tool (see :meth:`Session.state`)."""

    model_retries: int = 0
    consecutive_failures: int = 0
    open_until: float | None = None


class Step(Protocol):
    """One model step of a session: what the runner consults around each call.

    Before a tool with a breaker or a budget runs, :meth:`check_breaker`; after a
    success it asked for, :meth:`succeeded`; around the handler chain of a failure,
    :meth:`before` (spend the model-retry budget: it returns the error the chain
    sees) and :meth:`after` (record the outcome for the breaker). Each has an async
    twin (``a``-prefixed); ``remote`` says whether the async pipeline must await them
    (a shared store's step) or may call the sync ones (the memory store's).
    """

    remote: bool

    async def aready(self) -> None:
        """Before a step's calls on the async path, when ``remote``: what the store
        needs first (a shared store renews a session in use, R5)."""
        ...

    def check_breaker(self, tool: str, breaker: Breaker | None, budget: bool = False) -> bool:
        """Raise ``ToolUnavailable`` if the tool may not run now (R1, R6); whether a
        success must be reported back (:meth:`succeeded`)."""
        ...

    async def acheck_breaker(
        self, tool: str, breaker: Breaker | None, budget: bool = False
    ) -> bool:
        """Async :meth:`check_breaker`."""
        ...

    def succeeded(self, tool: str, breaker: Breaker | None) -> None:
        """A success that :meth:`check_breaker` asked for (R2)."""
        ...

    async def asucceeded(self, tool: str, breaker: Breaker | None) -> None:
        """Async :meth:`succeeded`."""
        ...

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Before the handler chain: spend the budget (R3); the error the chain sees."""
        ...

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Async :meth:`before`."""
        ...

    def after(self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool) -> None:
        """After the handler chain: record the failure ``error`` (as raised) (R2)."""
        ...

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        """Async :meth:`after`."""
        ...


class State(Protocol):
    """A session's state as a store opened it: its steps, reads and resets."""

    def step(self, key: str | None = None) -> Step:
        """A model step: a new one, or the one named ``key``."""
        ...

    def astep(self, key: str | None = None) -> Step:
        """:meth:`step` for the async methods."""
        ...

    def state(self, tool: str) -> ToolState:
        """What the session remembers about ``tool``."""
        ...

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state`."""
        ...

    def reset(self, tool: str | None = None) -> None:
        """R4, for one tool or all of them."""
        ...

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        ...


class Opens(Protocol):
    """A store, as a session sees it: it opens a session's state (``toolguard.stores``)."""

    @property
    def name(self) -> str:
        """What ``explain`` calls it ("memory", "redis")."""
        ...

    @property
    def on_unavailable(self) -> str:
        """ "fail-open" or "fail-closed"."""
        ...

    def open(self, id: str | None, *, clock: Callable[[], float] | None = None) -> State:
        """The state of the session ``id`` (a new one for ``None``)."""
        ...

    def describe(self) -> str:
        """One line for ``explain``."""
        ...


class SessionState:
    """What one conversation remembers, per tool, in this process (the memory store).

    A named step is its key (the same key is the same step, however long ago); an
    unnamed step is a number drawn here. ``count``'s ``next()`` is atomic.
    """

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._lock = new_lock()  # not threading.Lock(): a workflow may open a session
        self._tools: dict[str, Record] = {}
        self._steps = itertools.count(1)

    def step(self, key: str | None = None) -> MemoryStep:
        """A model step: a new one, or the one named ``key``."""
        if key is None:
            return MemoryStep(self, next(self._steps))
        if type(key) is not str:
            check_step(key)
        return MemoryStep(self, key)

    astep = step  # the async methods' spelling

    def state(self, tool: str) -> ToolState:
        """What this conversation remembers about ``tool``."""
        with self._lock:
            record = self._tools.get(tool) or Record()
            open_until = None
            if record.opened_at is not None:
                open_until = record.opened_at + record.cooldown
            return ToolState(record.retries, record.failures, open_until)

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state` (a store's state awaits its server; this one does not)."""
        return self.state(tool)

    def reset(self, tool: str | None = None) -> None:
        """R4: forget budgets and close breakers, for one tool or all of them."""
        self.forget(tool)
        emit("info", "session_reset", tool=tool)

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        self.reset(tool)

    def forget(self, tool: str | None) -> None:
        """R4 without the event (a shared store's fallback, reset with the store)."""
        with self._lock:
            if tool is None:
                self._tools.clear()
            else:
                self._tools.pop(tool, None)


class MemoryStep:
    """One model step of a :class:`SessionState` (see :class:`Step`): the rules of
    ``sessions._rules`` applied under the session's lock. ``id`` is the step's
    identity for R3: its key, or a number."""

    __slots__ = ("id", "session")
    remote = False

    def __init__(self, session: SessionState, id: object) -> None:
        self.session = session
        self.id = id

    async def aready(self) -> None:
        """Nothing to do first in process memory (never called: not ``remote``)."""

    # --- R1, before a call -----------------------------------------------------------

    def check_breaker(self, tool: str, breaker: Breaker | None, budget: bool = False) -> bool:
        """Raise :class:`ToolUnavailable` if the tool's breaker is open (R1).

        Returns whether a success must be reported back (:meth:`succeeded`): not for
        a tool this session has never seen fail, the common case. (A budget needs no
        check here: process memory is never unavailable.)
        """
        if breaker is None:
            return False
        session = self.session
        known = session._tools.get(tool)
        if known is None:
            return False
        if known.opened_at is None:
            return bool(known.failures)  # closed: no lock needed to read that
        with session._lock:
            record = session._tools.get(tool)
            if record is None:  # reset meanwhile
                return False
            status, retry_after = admit(record, session._clock(), breaker.cooldown)
        if status == OPEN:
            raise unavailable(tool, breaker, retry_after)
        return True

    async def acheck_breaker(
        self, tool: str, breaker: Breaker | None, budget: bool = False
    ) -> bool:
        """Async :meth:`check_breaker`."""
        return self.check_breaker(tool, breaker)

    # --- R2 and R3, after a call -----------------------------------------------------

    def succeeded(self, tool: str, breaker: Breaker | None) -> None:
        """A success: it closes the breaker and clears the failures in a row (R2)."""
        if breaker is None:
            return
        known = self.session._tools.get(tool)
        if known is None or (not known.failures and known.opened_at is None):
            return  # a healthy tool's success changes nothing: no lock
        self._settle(tool, breaker, False)

    async def asucceeded(self, tool: str, breaker: Breaker | None) -> None:
        """Async :meth:`succeeded`."""
        self.succeeded(tool, breaker)

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Before the handler chain: count a ``RetryWithFeedback`` against the tool's
        budget once per step (R3). Returns the error the chain should see: the same
        one, now carrying its counts, or a ``ModelRetriesExhausted`` once spent."""
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        session = self.session
        with session._lock:
            record = session._tools.get(tool)
            if record is None:
                record = session._tools[tool] = Record()
            used = spend(record, self.id)
        return exhausted(error, tool, used, limit)

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Async :meth:`before`."""
        return self.before(error, tool, resolved)

    def after(self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool) -> None:
        """After the handler chain: record the failure ``error`` (as raised, before
        :meth:`before`) for the breaker (R2): unmarked exceptions and timeouts count;
        a model-visible error (``visible``) means the tool worked; neutral outcomes
        change nothing."""
        failure = failed(error, visible)
        if breaker is None or failure is None:
            return
        self._settle(tool, breaker, failure)

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        """Async :meth:`after`."""
        self.after(tool, breaker, error, visible=visible)

    def _settle(self, tool: str, breaker: Breaker, failure: bool) -> None:
        session = self.session
        with session._lock:
            record = session._tools.get(tool)
            if record is None:
                record = session._tools[tool] = Record()
            event = settle(record, failure, breaker, session._clock)
            failures = record.failures
        if event == EVENT_BREAKER_OPENED:
            emit("warning", event, tool=tool, failures=failures)
        elif event is not None:
            emit("info", event, tool=tool)


def check_step(key: object) -> None:
    """Refuse a step key that is not a ``str`` (every store keys a step by its text;
    an ``int`` would meet a memory session's own numbering of unnamed steps)."""
    if not isinstance(key, str):
        raise InvalidOption(
            f"step= takes a str naming the model step (the model message's id), or None "
            f"for a step of its own; got {type(key).__name__}"
        )
