"""A conversation's state (model-retry budgets, circuit breakers) and its model steps.

:class:`SessionState` is what one conversation remembers per tool; a :class:`Step`
is one model step of it (one ``dispatch``/``run`` of a :class:`~toolguard.Session`),
which the runner asks before a call (is the breaker open?) and the guard tells
after a failure (count it; spend the model-retry budget). Safe to use from many
threads and tasks at once.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, Protocol

import attrs

from toolguard._logging import emit
from toolguard.errors import (
    InvalidArguments,
    ModelRetriesExhausted,
    RetryWithFeedback,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
)
from toolguard.policy._precedence import Resolved
from toolguard.policy._resilience import Breaker

__all__ = [
    "NEUTRAL",
    "Opens",
    "SessionState",
    "Step",
    "ToolState",
    "exhausted",
    "unavailable",
]

# Outcomes that say nothing about whether the tool works: it did not run, or the
# model asked wrongly. They neither trip nor reset a breaker.
NEUTRAL: Final = (InvalidArguments, UnknownTool, ToolUnavailable, RetryWithFeedback)
_NEUTRAL = NEUTRAL


def unavailable(tool: str, breaker: Breaker, retry_after: float) -> ToolUnavailable:
    """What the model is told while ``tool``'s breaker is open (every store says this)."""
    return ToolUnavailable(
        f"The tool '{tool}' is unavailable: it failed {breaker.failures} times in a row. "
        f"Do not call it again for about {retry_after:.0f} s; use another tool or tell "
        "the user.",
        tool=tool,
        retry_after=retry_after,
    )


def exhausted(error: RetryWithFeedback, tool: str, used: int, limit: int) -> Exception:
    """The error the handler chain sees after a ``RetryWithFeedback`` counted as number
    ``used`` of ``limit``: the same one with its counts, or ``ModelRetriesExhausted``."""
    if used <= limit:
        error.attempt, error.limit = used, limit
        return error
    spent = ModelRetriesExhausted(
        f"The tool '{tool}' was called incorrectly too many times ({limit} retries are "
        "allowed in this conversation). Stop calling it and tell the user what went wrong."
    )
    spent.__cause__ = error
    return spent


@attrs.frozen
class ToolState:
    """What a session remembers about one tool (see :meth:`Session.state`)."""

    model_retries: int = 0
    consecutive_failures: int = 0
    open_until: float | None = None


_KEYED_STEPS: Final = 1024  # named steps remembered per session


@attrs.define(eq=False)
class _Tool:
    model_retries: int = 0
    failures: int = 0
    opened_at: float | None = None
    cooldown: float = 0.0
    # the half-open trial is a lease: until this time, one call is the trial; a trial
    # that never reports back (cancelled, control flow, a dead prober) expires
    trial_until: float | None = None


class SessionState:
    """What one conversation remembers, per tool, and its step counter."""

    def __init__(self, *, clock: Callable[[], float] | None = None) -> None:
        self._clock = clock or time.monotonic
        self._lock = threading.Lock()
        self._tools: dict[str, _Tool] = {}
        self._steps = itertools.count(1)
        self._keyed: OrderedDict[str, Step] = OrderedDict()

    def step(self, key: str | None = None) -> Step:
        """A model step: a new one, or the one named ``key`` (calls an integration
        sees one by one, with the model message they came in as their key, make
        one step). ``count``'s ``next()`` is atomic."""
        if key is None:
            return Step(self, next(self._steps))
        with self._lock:
            step = self._keyed.get(key)
            if step is None:
                step = self._keyed[key] = Step(self, next(self._steps))
                if len(self._keyed) > _KEYED_STEPS:
                    self._keyed.popitem(last=False)
            else:
                self._keyed.move_to_end(key)
        return step

    astep = step  # the async methods' spelling: a store of asyncio clients has only this one

    def state(self, tool: str) -> ToolState:
        """What this conversation remembers about ``tool``."""
        with self._lock:
            record = self._tools.get(tool, _Tool())
            open_until = None
            if record.opened_at is not None:
                open_until = record.opened_at + record.cooldown
            return ToolState(record.model_retries, record.failures, open_until)

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state` (a store's state awaits its server; this one does not)."""
        return self.state(tool)

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        self.reset(tool)

    def reset(self, tool: str | None = None) -> None:
        """Forget budgets and close breakers: for one tool, or all of them."""
        with self._lock:
            if tool is None:
                self._tools.clear()
            else:
                self._tools.pop(tool, None)
        emit("info", "session_reset", tool=tool)


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

    def open(self, id: str | None, *, clock: Callable[[], float] | None = None) -> SessionState:
        """The state of the session ``id`` (a new one for ``None``)."""
        ...

    def describe(self) -> str:
        """One line for ``explain``."""
        ...


class Step:
    """One model step of a session: what the runner consults around each call.

    Before a tool runs, :meth:`check_breaker`; after a success, :meth:`succeeded`;
    around the handler chain of a failure, :meth:`before` (spend the model-retry
    budget: it returns the error the chain sees) and :meth:`after` (record the
    outcome for the breaker). Each has an async twin (``a``-prefixed), which a store's
    step (``remote``) implements with awaited round trips; here the twins are the same
    calls, and the async pipeline calls the sync ones directly when ``remote`` is false.
    """

    __slots__ = ("counted", "number", "session")
    remote: bool = False

    def __init__(self, session: SessionState, number: int) -> None:
        self.session = session
        self.number = number
        # per tool, the record this step counted against (a step counts once per
        # tool, however long it runs and however many steps count meanwhile; after
        # a reset the tool's record is new, and the step may count again)
        self.counted: dict[str, _Tool] | None = None

    # --- the breaker, before a call ------------------------------------------------

    def check_breaker(self, tool: str, breaker: Breaker | None) -> bool:
        """Raise :class:`ToolUnavailable` if the tool's breaker is open.

        Returns whether a success must be reported back (:meth:`succeeded`): not for
        a tool this session has never seen fail, the common case.
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
            record = session._tools.setdefault(tool, _Tool())
            if record.opened_at is None:
                return True
            now = session._clock()
            waited = now - record.opened_at
            lease = record.trial_until
            if waited >= breaker.cooldown and (lease is None or now >= lease):
                record.trial_until = now + breaker.cooldown  # half-open: this call's lease
                return True
            retry_after = max(0.0, breaker.cooldown - waited)
            if lease is not None:  # another call holds the trial
                retry_after = max(retry_after, lease - now)
        raise unavailable(tool, breaker, retry_after)

    async def acheck_breaker(self, tool: str, breaker: Breaker | None) -> bool:
        """Async :meth:`check_breaker`."""
        return self.check_breaker(tool, breaker)

    # --- after a call ----------------------------------------------------------------

    def succeeded(self, tool: str, breaker: Breaker | None) -> None:
        """A success, reported when :meth:`check_breaker` asked for it: it closes the
        breaker and clears the failures in a row."""
        self._record(tool, breaker, None, visible=False)

    async def asucceeded(self, tool: str, breaker: Breaker | None) -> None:
        """Async :meth:`succeeded`."""
        self.succeeded(tool, breaker)

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Before the handler chain: count a ``RetryWithFeedback`` against the tool's
        budget for this session (parallel calls of one tool in one step count once).

        Returns the error the chain should see: the same one, now carrying its counts,
        or a :class:`ModelRetriesExhausted` once the budget is spent.
        """
        limit = resolved.max_model_retries
        if limit is None or not isinstance(error, RetryWithFeedback):
            return error
        session = self.session
        with session._lock:
            record = session._tools.setdefault(tool, _Tool())
            counted = self.counted
            if counted is None:
                counted = self.counted = {}
            if counted.get(tool) is not record:
                counted[tool] = record
                record.model_retries += 1
            used = record.model_retries
        return exhausted(error, tool, used, limit)

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Async :meth:`before`."""
        return self.before(error, tool, resolved)

    def after(self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool) -> None:
        """After the handler chain: record the failure ``error`` (as raised, before
        :meth:`before`) for the breaker.

        Unmarked exceptions and timeouts count as failures; a model-visible error
        (``visible``: the failure read its marker) means the tool worked (it
        answered); neutral outcomes change nothing.
        """
        self._record(tool, breaker, error, visible=visible)

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        """Async :meth:`after`."""
        self.after(tool, breaker, error, visible=visible)

    def _record(
        self, tool: str, breaker: Breaker | None, error: Exception | None, *, visible: bool
    ) -> None:
        if breaker is None:
            return
        session = self.session
        if error is None:
            known = session._tools.get(tool)
            if known is None or (not known.failures and known.opened_at is None):
                return  # a healthy tool's success changes nothing: no lock
        elif isinstance(error, _NEUTRAL):
            return
        counts = error is not None and (isinstance(error, ToolTimeout) or not visible)
        event: dict[str, Any] | None = None
        with session._lock:
            record = session._tools.setdefault(tool, _Tool())
            was_open = record.opened_at is not None
            record.trial_until = None
            if counts:
                record.failures += 1
                if was_open or record.failures >= breaker.failures:
                    record.opened_at = session._clock()
                    record.cooldown = breaker.cooldown
                    event = {"event": "breaker_opened", "failures": record.failures}
            else:
                record.failures = 0
                if was_open:
                    record.opened_at = None
                    event = {"event": "breaker_closed"}
        if event is not None:
            name = event.pop("event")
            emit("warning" if name == "breaker_opened" else "info", name, tool=tool, **event)
