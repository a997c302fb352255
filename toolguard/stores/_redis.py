"""``RedisStore``: sessions' budgets and breakers on a Redis or Valkey server.

Every change is one Lua script (``_lua``: each names the rule of
``toolguard.sessions._rules`` it implements), sent with ``EVALSHA`` and loaded again
when the server answers ``NOSCRIPT`` (after a restart or ``SCRIPT FLUSH``), on
connections of the store's own with one deadline per call (``_wire``). Keys::

    {namespace}:{<agent>|<session>}:t:<tool>    a tool's record in a session (hash)
    {namespace}:{<agent>|<session>}:s:<tool>    the steps that spent its budget (zset)
    {namespace}:{<agent>|<session>}:tools       the session's tools (set: reset, renewal)
    {namespace}:{<agent>|fleet|<tool>}:t:<tool> a fleet-wide breaker (hash)

The part in braces is a cluster hash tag: one session's keys share a slot. Names are
escaped or hashed so that distinct names never share a key (``_keys``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection
from typing import Any, Final

from toolguard.sessions._named import SESSION_TTL
from toolguard.sessions._rules import COUNTED_STEPS, EVENT_BREAKER_CLOSED, EVENT_BREAKER_OPENED
from toolguard.stores import _lua
from toolguard.stores._base import Check, FailMode, Health, Recorded, Remembered
from toolguard.stores._keys import Parts, part
from toolguard.stores._remote import RemoteState
from toolguard.stores._wire import AsyncWire, Script, Wire

__all__ = ["DEFAULT_TIMEOUT", "RedisStore"]

DEFAULT_TIMEOUT: Final = 0.25  # seconds: from_url's connect and read timeouts
_EVENTS: Final = {0: None, 1: EVENT_BREAKER_OPENED, 2: EVENT_BREAKER_CLOSED}  # RECORD's reply
_MODES: Final = ("fail-open", "fail-closed")
_FIELDS: Final = ("r", "f", "o", "c")

_CHECK, _RECORD, _RETRY, _RESET, _TOUCH = (
    Script(s) for s in (_lua.CHECK, _lua.RECORD, _lua.RETRY, _lua.RESET, _lua.TOUCH)
)


def _timeouts(client: Any) -> tuple[float | None, float | None, int]:
    pool = getattr(client, "connection_pool", None)
    kwargs: dict[str, Any] = getattr(pool, "connection_kwargs", {}) or {}
    retry = client.get_retry() if hasattr(client, "get_retry") else kwargs.get("retry")
    retries = int(getattr(retry, "_retries", 0) or 0) if retry is not None else 0
    return kwargs.get("socket_connect_timeout"), kwargs.get("socket_timeout"), retries


class RedisStore:
    """Sessions' budgets and breakers on a Redis (>= 6.2) or Valkey server.

    ``RedisStore(client)`` takes a ``redis.Redis`` or a ``redis.asyncio.Redis`` (then
    only the session's async methods may be used). The client must bound its waits:
    ``socket_connect_timeout`` and ``socket_timeout`` set, their sum at most
    ``max_wait`` seconds, and no client-side retries (``retry=Retry(NoBackoff(), 0)``);
    :meth:`from_url` builds such a client. The store makes its own connections with
    the client's settings; one tool call then waits at most ``wait_bound``
    (``socket_connect_timeout + socket_timeout``) on the store in all, however many
    round trips it takes, on a dead, silent or slow server. An asyncio store works
    from any event loop (each loop gets its own connections).

    * ``agent``: the namespace of this agent's sessions (two agents sharing a server
      never share state).
    * ``ttl``: seconds an unused session is kept (default: as long as an idle
      session is kept in memory, :data:`~toolguard.sessions._named.SESSION_TTL`); a
      session in use keeps its state (R5 of ``toolguard.sessions._rules``).
    * ``fleet_breakers``: ``True`` for every tool, or tool names, whose breaker is
      shared by all sessions of the agent (one tool down is down for everyone);
      their closed state is cached in the process for ``fleet_cache`` seconds.
    * ``on_unavailable``: ``"fail-open"`` (answer from process memory while the
      server is down) or ``"fail-closed"`` (tools with a breaker or budget are
      answered "unavailable" and do not run). Whatever the store raises is its
      outage, never the tool's failure; the server is asked again
      ``retry_interval`` seconds after a failure.
    """

    name: Final = "redis"

    def __init__(
        self,
        client: Any,
        *,
        agent: str = "default",
        namespace: str = "toolguard",
        ttl: float = SESSION_TTL,
        fleet_breakers: bool | Collection[str] = False,
        fleet_cache: float = 1.0,
        on_unavailable: FailMode = "fail-open",
        retry_interval: float = 1.0,
        max_wait: float = 1.0,
    ) -> None:
        import redis  # the extra: toolguard-agents[redis]
        import redis.asyncio

        if not isinstance(client, redis.Redis | redis.asyncio.Redis):
            raise TypeError(
                f"RedisStore takes a redis.Redis or redis.asyncio.Redis, got {client!r}"
            )
        if on_unavailable not in _MODES:
            raise ValueError(f"on_unavailable={on_unavailable!r}: use 'fail-open' or 'fail-closed'")
        for label, value in (
            ("ttl", ttl),
            ("fleet_cache", fleet_cache),
            ("retry_interval", retry_interval),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                raise ValueError(f"RedisStore({label}={value!r}): use seconds > 0")
        connect, read, retries = _timeouts(client)
        if connect is None or read is None or connect + read > max_wait or retries:
            raise ValueError(
                "RedisStore needs a client that bounds its waits: socket_connect_timeout and "
                f"socket_timeout set (together at most max_wait={max_wait} s) and no client "
                f"retries; this one has socket_connect_timeout={connect}, socket_timeout={read}, "
                f"{retries} retries. Use RedisStore.from_url(url), or "
                "redis.Redis(..., socket_connect_timeout=0.25, socket_timeout=0.25, "
                "retry=redis.retry.Retry(redis.backoff.NoBackoff(), 0))"
            )
        self.client: Any = client
        self.is_async: bool = isinstance(client, redis.asyncio.Redis)
        self.agent = agent
        self.namespace = namespace
        self.ttl = float(ttl)
        self.on_unavailable: FailMode = on_unavailable
        self.wait_bound: float = float(connect + read)
        self.health = Health("redis", float(retry_interval))
        self._fleet_all = fleet_breakers is True
        self._fleet = frozenset(() if isinstance(fleet_breakers, bool) else fleet_breakers)
        self.fleet_cache = float(fleet_cache)  # seconds a closed breaker's reading is reused
        self._cached: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()
        # R5: keys live a quarter longer than ttl, and a session renews them once it
        # has been used for a quarter of ttl: one used within ttl is never forgotten
        self._ttl_ms = str(int(self.ttl * 1250))
        self._skew_ms = 0  # tests only: added to the server's clock (see _lua)
        self._agent = part(agent)
        self._part = Parts()
        self._wire: Wire | AsyncWire = AsyncWire(client) if self.is_async else Wire(client)

    @classmethod
    def from_url(
        cls, url: str, *, asyncio: bool = False, timeout: float = DEFAULT_TIMEOUT, **options: Any
    ) -> RedisStore:
        """A store on a client made for it: ``timeout`` seconds to connect and to
        read, no client retries. ``asyncio=True`` for a ``redis.asyncio`` client."""
        import redis
        import redis.asyncio
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        settings: dict[str, Any] = {
            "socket_connect_timeout": timeout,
            "socket_timeout": timeout,
            "health_check_interval": 0,
        }
        if asyncio:
            from redis.asyncio.retry import Retry as AsyncRetry

            client: Any = redis.asyncio.Redis.from_url(
                url, retry=AsyncRetry(NoBackoff(), 0), **settings
            )
        else:
            client = redis.Redis.from_url(url, retry=Retry(NoBackoff(), 0), **settings)
        return cls(client, **options)

    def __repr__(self) -> str:
        kind = "asyncio " if self.is_async else ""
        mode = self.on_unavailable
        return f"RedisStore({kind}client, agent={self.agent!r}, on_unavailable={mode!r})"

    def open(self, id: str | None, *, clock: Callable[[], float] | None = None) -> RemoteState:
        """The state of a session in this store (``clock`` is the fallback's, for tests:
        the store itself always uses the server's clock)."""
        return RemoteState(self, id, clock=clock)

    def describe(self) -> str:
        """One line for ``explain``: the store, its failure mode, its bound."""
        fleet = "all tools" if self._fleet_all else (", ".join(sorted(self._fleet)) or "none")
        return (
            f"redis (agent {self.agent!r}, {self.on_unavailable}, waits at most "
            f"{self.wait_bound:g} s, session TTL {self.ttl:g} s, fleet-wide breakers: {fleet})"
        )

    # --- keys ----------------------------------------------------------------------

    def session_key(self, id: str) -> str:
        """The session ``id`` (any string) as its keys' prefix: computed once per session."""
        return f"{self.namespace}:{{{self._agent}|{part(id)}}}"

    def _record_keys(self, session: str, tool: str, fleet: bool) -> list[str]:
        tool_part = self._part(tool)
        if fleet:
            return [f"{self.namespace}:{{{self._agent}|fleet|{tool_part}}}:t:{tool_part}"]
        return [f"{session}:t:{tool_part}", f"{session}:tools"]

    # --- fleet-wide breakers: which, and their closed state cached here -------------

    def fleet(self, tool: str) -> bool:
        return self._fleet_all or tool in self._fleet

    def cached(self, tool: str) -> bool | None:
        found = self._cached.get(tool)
        if found is None or found[0] < time.monotonic():
            return None
        return found[1]

    def remember(self, tool: str, report: bool) -> None:
        if self.fleet(tool):
            self._cached[tool] = (time.monotonic() + self.fleet_cache, report)

    def forget(self, tool: str) -> None:
        self._cached.pop(tool, None)

    # --- the operations' arguments (one place for both twins) -------------------------

    def _check_args(
        self, session: str, tool: str, cooldown: float, fleet: bool
    ) -> tuple[Script, list[str], list[Any]]:
        keys = self._record_keys(session, tool, fleet)[:1]
        return _CHECK, keys, [int(cooldown * 1000), self._ttl_ms, self._skew_ms]

    def _record_args(
        self, session: str, tool: str, failed: bool, failures: int, cooldown: float, fleet: bool
    ) -> tuple[Script, list[str], list[Any]]:
        args = [
            "1" if failed else "0",
            failures,
            self._skew_ms,
            int(cooldown * 1000),
            self._ttl_ms,
            self._part(tool),
        ]
        return _RECORD, self._record_keys(session, tool, fleet), args

    def _retry_args(
        self, session: str, tool: str, step: bytes
    ) -> tuple[Script, list[str], list[Any]]:
        tool_part = self._part(tool)
        keys = [f"{session}:t:{tool_part}", f"{session}:s:{tool_part}", f"{session}:tools"]
        return _RETRY, keys, [step, self._ttl_ms, tool_part, COUNTED_STEPS]

    def _reset_args(self, session: str, tool: str | None) -> tuple[Script, list[str], list[Any]]:
        return _RESET, [f"{session}:tools"], [session, "" if tool is None else self._part(tool)]

    def _touch_args(self, session: str) -> tuple[Script, list[str], list[Any]]:
        return _TOUCH, [f"{session}:tools"], [session, self._ttl_ms]

    def _read_keys(self, session: str, tool: str, fleet: bool) -> list[str]:
        mine = self._record_keys(session, tool, False)[0]
        return [mine, self._record_keys(session, tool, True)[0]] if fleet else [mine]

    # --- the operations (the Store protocol) -------------------------------------------

    def _sync(self) -> Wire:
        if not isinstance(self._wire, Wire):
            raise TypeError("this store has an asyncio client: use its async operations")
        return self._wire

    def _async(self) -> AsyncWire:
        if not isinstance(self._wire, AsyncWire):
            raise TypeError("this store has a sync client: use its sync operations")
        return self._wire

    def _run(self, timeout: float, script: Script, keys: list[str], args: list[Any]) -> Any:
        return self._sync().script(time.monotonic() + timeout, script, keys, args)

    def check(
        self, session: str, tool: str, cooldown: float, *, fleet: bool, timeout: float
    ) -> Check:
        return _check(self._run(timeout, *self._check_args(session, tool, cooldown, fleet)))

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
        args = self._record_args(session, tool, failed, failures, cooldown, fleet)
        return _recorded(self._run(timeout, *args))

    def count_retry(self, session: str, tool: str, step: bytes, *, timeout: float) -> int:
        return int(self._run(timeout, *self._retry_args(session, tool, step)))

    def reset(self, session: str, tool: str | None, *, timeout: float) -> None:
        self._run(timeout, *self._reset_args(session, tool))
        if tool is not None:
            self.forget(tool)

    def touch(self, session: str, *, timeout: float) -> None:
        self._run(timeout, *self._touch_args(session))

    def read(self, session: str, tool: str, *, fleet: bool, timeout: float) -> Remembered:
        deadline = time.monotonic() + timeout
        found = [
            self._sync().command(deadline, "HMGET", key, *_FIELDS)
            for key in self._read_keys(session, tool, fleet)
        ]
        return _remembered(found[0], found[-1])

    def close(self) -> None:
        """Close this store's idle connections (sync client)."""
        if isinstance(self._wire, Wire):
            self._wire.close()

    # --- the async twins (the AsyncStore protocol): the same arguments, awaited ------

    async def _arun(self, timeout: float, script: Script, keys: list[str], args: list[Any]) -> Any:
        return await self._async().script(time.monotonic() + timeout, script, keys, args)

    async def acheck(
        self, session: str, tool: str, cooldown: float, *, fleet: bool, timeout: float
    ) -> Check:
        return _check(await self._arun(timeout, *self._check_args(session, tool, cooldown, fleet)))

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
        args = self._record_args(session, tool, failed, failures, cooldown, fleet)
        return _recorded(await self._arun(timeout, *args))

    async def acount_retry(self, session: str, tool: str, step: bytes, *, timeout: float) -> int:
        return int(await self._arun(timeout, *self._retry_args(session, tool, step)))

    async def areset(self, session: str, tool: str | None, *, timeout: float) -> None:
        await self._arun(timeout, *self._reset_args(session, tool))
        if tool is not None:
            self.forget(tool)

    async def atouch(self, session: str, *, timeout: float) -> None:
        await self._arun(timeout, *self._touch_args(session))

    async def aread(self, session: str, tool: str, *, fleet: bool, timeout: float) -> Remembered:
        deadline = time.monotonic() + timeout
        found = [
            await self._async().command(deadline, "HMGET", key, *_FIELDS)
            for key in self._read_keys(session, tool, fleet)
        ]
        return _remembered(found[0], found[-1])

    async def aclose(self) -> None:
        """Close this store's idle connections of the running event loop."""
        if isinstance(self._wire, AsyncWire):
            await self._wire.aclose()


def _check(reply: Any) -> Check:
    status, failures, retry_ms = (int(x) for x in reply)
    return Check(status, failures, retry_ms / 1000)


def _recorded(reply: Any) -> Recorded:
    event, failures, open_ = (int(x) for x in reply)
    return Recorded(_EVENTS[event], failures, bool(open_))


def _remembered(mine: list[Any], breaker: list[Any]) -> Remembered:
    def number(value: Any) -> int:
        return int(value) if value is not None else 0

    opened, cooldown = breaker[2], breaker[3]
    open_until = None if opened is None else (number(opened) + number(cooldown)) / 1000
    return Remembered(number(mine[0]), number(breaker[1]), open_until)
