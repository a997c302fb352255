"""The store protocols: the atomic operations a shared store performs for sessions.

A session's state in a store is, per tool, one record: consecutive failures, when
the breaker opened (and for how long), the half-open trial's lease, and the
model-retry budget with the steps that already counted against it. Each operation
below is *one* atomic change on the store, timed by the store's own clock, and
follows the rules of ``toolguard.sessions._rules`` (R1-R6): the clients' clocks never
enter a decision, so processes on machines whose clocks disagree still agree on when
a cool-down ends.

:class:`Store` is the sync spelling and :class:`AsyncStore` its twin; a
:class:`~toolguard.stores.RedisStore` is one or the other according to the client it
was given. Times are seconds; ``retry_after`` is measured on the store's clock. Every
operation takes ``timeout``: what is left of the calling tool call's wait bound.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Literal, Protocol, TypeAlias, runtime_checkable

import attrs

from toolguard._logging import emit
from toolguard.sessions._rules import CLOSED, OPEN, TRIAL

__all__ = [
    "CLOSED",
    "OPEN",
    "TRIAL",
    "AsyncStore",
    "Check",
    "FailMode",
    "Health",
    "Recorded",
    "Refused",
    "Remembered",
    "Store",
    "StoreUnavailable",
]

FailMode: TypeAlias = Literal["fail-open", "fail-closed"]


class StoreUnavailable(Exception):
    """The store did not answer (down, slow past its bound, or refusing)."""


class Refused(StoreUnavailable):
    """The store answered, refusing this operation (a key of the wrong type): the
    session it belongs to is unavailable, the store is not."""


@attrs.frozen
class Check:
    """The answer to "may this tool run?": ``status`` is CLOSED, TRIAL or OPEN."""

    status: int
    failures: int = 0
    retry_after: float = 0.0


@attrs.frozen
class Recorded:
    """The breaker after an outcome: ``event`` is "breaker_opened", "breaker_closed"
    or ``None`` (nothing changed state), ``failures`` the consecutive failures now."""

    event: str | None
    failures: int
    open: bool


@attrs.frozen
class Remembered:
    """One tool's record as read back: ``open_until`` on the store's clock."""

    model_retries: int = 0
    consecutive_failures: int = 0
    open_until: float | None = None


class Health:
    """Whether a store (or one session in it, ``scope="session"``) answers: after a
    failure it is not asked again for ``retry_interval`` seconds (calls answer at once
    from the fallback), then one call asks it again. ``store_unavailable`` is logged
    once per outage, at WARNING; ``store_recovered`` when it answers again."""

    def __init__(
        self,
        name: str,
        retry_interval: float,
        clock: Callable[[], float] = time.monotonic,
        scope: str = "store",
    ) -> None:
        self.name = name
        self.scope = scope
        self.retry_interval = retry_interval
        self._clock = clock
        self._lock = threading.Lock()
        self._retry_at = 0.0
        self._since: float | None = None  # when the outage began (None: healthy)

    def down(self) -> bool:
        """The store failed lately: do not wait on it now."""
        return self._since is not None and self._clock() < self._retry_at

    def failed(self, error: BaseException) -> None:
        with self._lock:
            now = self._clock()
            first = self._since is None
            if first:
                self._since = now
            self._retry_at = now + self.retry_interval
        if first:
            emit(
                "warning",
                "store_unavailable",
                store=self.name,
                scope=self.scope,
                error=f"{type(error).__name__}: {str(error)[:200]}",
                retry_interval=self.retry_interval,
            )

    def ok(self) -> None:
        if self._since is None:  # the common case: no lock
            return
        with self._lock:
            since, self._since = self._since, None
        if since is not None:
            emit(
                "info",
                "store_recovered",
                store=self.name,
                scope=self.scope,
                down_for=self._clock() - since,
            )


@runtime_checkable
class Store(Protocol):
    """A shared store, sync. ``session`` is what :meth:`session_key` made of the
    session's id (once per session: its cost does not grow with the id's length per
    call); ``fleet`` asks for the tool's fleet-wide breaker (shared by every session
    of the agent) instead of the session's own. Every operation raises
    :class:`StoreUnavailable` when the store cannot answer within ``timeout``."""

    is_async: Literal[False]
    on_unavailable: FailMode
    health: Health
    wait_bound: float  # seconds of store work one tool call may wait, in all
    ttl: float  # R5: seconds an unused session is kept
    fleet_cache: float  # seconds a step may reuse its reading of a closed breaker

    def session_key(self, id: str) -> str:
        """The session ``id`` (any string) as the store names it: distinct ids give
        distinct names."""
        ...

    def fleet(self, tool: str) -> bool:
        """Whether ``tool``'s breaker is fleet-wide in this store."""
        ...

    def cached(self, tool: str) -> bool | None:
        """A fleet-wide breaker's closed state as last read here, while still fresh
        (whether a success must be reported), or ``None``: ask the store."""
        ...

    def remember(self, tool: str, report: bool) -> None:
        """Keep a fleet-wide breaker's closed state for a short time (no-op for others)."""
        ...

    def forget(self, tool: str) -> None:
        """Drop what :meth:`remember` kept (the state changed)."""
        ...

    def check(
        self, session: str, tool: str, cooldown: float, *, fleet: bool, timeout: float
    ) -> Check:
        """R1: whether the tool may run now; past the cool-down, grant one caller the
        trial as a lease of ``cooldown`` seconds."""
        ...

    def record(
        self,
        session: str,
        tool: str,
        failed: bool,
        failures: int,
        cooldown: float,
        *,
        fleet: bool,
        timeout: float,
    ) -> Recorded:
        """R2: an outcome (a failure counts, opening at ``failures`` in a row or at
        once if it was open; a success closes); either ends the trial's lease."""
        ...

    def count_retry(self, session: str, tool: str, step: bytes, *, timeout: float) -> int:
        """R3: spend the model-retry budget once per ``step``; the count so far."""
        ...

    def read(self, session: str, tool: str, *, fleet: bool, timeout: float) -> Remembered:
        """What the store remembers about ``tool`` in ``session``."""
        ...

    def reset(self, session: str, tool: str | None, *, timeout: float) -> None:
        """R4: forget ``tool`` (or every tool) of ``session``; fleet breakers stay."""
        ...

    def touch(self, session: str, *, timeout: float) -> None:
        """R5: the session is in use: keep all of its state another ``ttl``."""
        ...


@runtime_checkable
class AsyncStore(Protocol):
    """:class:`Store`'s async twin: the same operations, named with an ``a``."""

    is_async: Literal[True]
    on_unavailable: FailMode
    health: Health
    wait_bound: float
    ttl: float
    fleet_cache: float

    def session_key(self, id: str) -> str:
        """As :meth:`Store.session_key`."""
        ...

    def fleet(self, tool: str) -> bool:
        """As :meth:`Store.fleet`."""
        ...

    def cached(self, tool: str) -> bool | None:
        """As :meth:`Store.cached`."""
        ...

    def remember(self, tool: str, report: bool) -> None:
        """As :meth:`Store.remember`."""
        ...

    def forget(self, tool: str) -> None:
        """As :meth:`Store.forget`."""
        ...

    async def acheck(
        self, session: str, tool: str, cooldown: float, *, fleet: bool, timeout: float
    ) -> Check:
        """As :meth:`Store.check`."""
        ...

    async def arecord(
        self,
        session: str,
        tool: str,
        failed: bool,
        failures: int,
        cooldown: float,
        *,
        fleet: bool,
        timeout: float,
    ) -> Recorded:
        """As :meth:`Store.record`."""
        ...

    async def acount_retry(self, session: str, tool: str, step: bytes, *, timeout: float) -> int:
        """As :meth:`Store.count_retry`."""
        ...

    async def aread(self, session: str, tool: str, *, fleet: bool, timeout: float) -> Remembered:
        """As :meth:`Store.read`."""
        ...

    async def areset(self, session: str, tool: str | None, *, timeout: float) -> None:
        """As :meth:`Store.reset`."""
        ...

    async def atouch(self, session: str, *, timeout: float) -> None:
        """As :meth:`Store.touch`."""
        ...
