"""``RedisStore``: sessions' budgets and breakers on a Redis or Valkey server.

Every change is one Lua script (``_lua``), sent with ``EVALSHA`` and loaded again
when the server answers ``NOSCRIPT`` (after a restart or ``SCRIPT FLUSH``). Keys::

    {namespace}:{<agent>|<session>}:t:<tool>    a tool's record in a session (hash)
    {namespace}:{<agent>|<session>}:s:<tool>    the steps that spent its budget (zset)
    {namespace}:{<agent>|<session>}:tools       the session's tools (set, for reset)
    {namespace}:{<agent>|fleet|<tool>}:t:<tool> a fleet-wide breaker (hash)

The part in braces is a cluster hash tag: one session's keys share a slot. Agent,
session and tool names are percent-escaped (``%``, braces, ``:``, ``|`` and anything
unprintable), and names too long for a key are hashed. Each write sets the keys'
TTL, so a session idle for ``ttl`` seconds disappears.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Collection
from typing import Any, Final
from urllib.parse import quote

from toolguard.sessions._named import SESSION_TTL
from toolguard.stores import _lua
from toolguard.stores._base import (
    Check,
    FailMode,
    Health,
    Recorded,
    Remembered,
    StoreUnavailable,
)
from toolguard.stores._remote import RemoteState

__all__ = ["COUNTED_STEPS", "DEFAULT_TIMEOUT", "RedisStore"]

DEFAULT_TIMEOUT: Final = 0.25  # seconds: from_url's connect and read timeouts
COUNTED_STEPS: Final = 256  # steps remembered per tool for the budget (as in memory)
_MAX_PART: Final = 120
_EVENTS: Final = {0: None, 1: "breaker_opened", 2: "breaker_closed"}
_MODES: Final = ("fail-open", "fail-closed")


def _part(name: str) -> str:
    """``name`` as a key part: escaped, and hashed when long."""
    escaped = quote(name, safe="")
    if len(escaped) > _MAX_PART:
        return "h-" + hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return escaped


class _Script:
    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()  # the server's script id


_CHECK, _RECORD, _RETRY, _RESET = (
    _Script(s) for s in (_lua.CHECK, _lua.RECORD, _lua.RETRY, _lua.RESET)
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
    :meth:`from_url` builds such a client. A call then waits at most
    ``socket_connect_timeout + socket_timeout`` on a dead or silent server.

    * ``agent``: the namespace of this agent's sessions (two agents sharing a server
      never share state).
    * ``ttl``: seconds an idle session's keys live (default: as long as an idle
      session is kept in memory, :data:`~toolguard.sessions._named.SESSION_TTL`).
    * ``fleet_breakers``: ``True`` for every tool, or tool names, whose breaker is
      shared by all sessions of the agent (one tool down is down for everyone);
      their closed state is cached in the process for ``fleet_cache`` seconds.
    * ``on_unavailable``: ``"fail-open"`` (answer from process memory while the
      server is down) or ``"fail-closed"`` (tools with a breaker or budget are
      answered "unavailable" and do not run). The server is asked again
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
        self._fleet_cache = float(fleet_cache)
        self._cached: dict[str, tuple[float, bool]] = {}
        self._lock = threading.Lock()
        self._ttl_ms = str(int(self.ttl * 1000))
        self._errors: tuple[type[BaseException], ...] = (redis.RedisError, OSError)
        self._noscript: type[BaseException] = redis.exceptions.NoScriptError
        self._agent = _part(agent)

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

    def prefix(self, session: str) -> str:
        return f"{self.namespace}:{{{self._agent}|{_part(session)}}}"

    def _record_keys(self, session: str, tool: str, fleet: bool) -> list[str]:
        part = _part(tool)
        if fleet:
            return [f"{self.namespace}:{{{self._agent}|fleet|{part}}}:t:{part}"]
        prefix = self.prefix(session)
        return [f"{prefix}:t:{part}", f"{prefix}:tools"]

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
            self._cached[tool] = (time.monotonic() + self._fleet_cache, report)

    def forget(self, tool: str) -> None:
        self._cached.pop(tool, None)

    # --- scripts -------------------------------------------------------------------

    def _eval(self, script: _Script, keys: list[str], args: list[Any]) -> Any:
        client = self.client
        try:
            try:
                return client.evalsha(script.sha, len(keys), *keys, *args)
            except self._noscript:
                client.script_load(script.source)
                return client.evalsha(script.sha, len(keys), *keys, *args)
        except self._errors as error:
            raise StoreUnavailable(str(error)) from error

    async def _aeval(self, script: _Script, keys: list[str], args: list[Any]) -> Any:
        client = self.client
        try:
            try:
                return await client.evalsha(script.sha, len(keys), *keys, *args)
            except self._noscript:
                await client.script_load(script.source)
                return await client.evalsha(script.sha, len(keys), *keys, *args)
        except self._errors as error:
            raise StoreUnavailable(str(error)) from error

    # --- the operations (the Store / AsyncStore protocol) ------------------------------

    def _check_args(
        self, session: str, tool: str, cooldown: float, fleet: bool
    ) -> tuple[list[str], list[Any]]:
        return self._record_keys(session, tool, fleet)[:1], [int(cooldown * 1000), self._ttl_ms]

    def _record_args(
        self, session: str, tool: str, failed: bool, failures: int, cooldown: float, fleet: bool
    ) -> tuple[list[str], list[Any]]:
        args = ["1" if failed else "0", failures, int(cooldown * 1000), self._ttl_ms, _part(tool)]
        return self._record_keys(session, tool, fleet), args

    def _retry_args(self, session: str, tool: str, step: str) -> tuple[list[str], list[Any]]:
        prefix, part = self.prefix(session), _part(tool)
        keys = [f"{prefix}:t:{part}", f"{prefix}:s:{part}", f"{prefix}:tools"]
        return keys, [step, self._ttl_ms, part, COUNTED_STEPS]

    def _reset_args(self, session: str, tool: str | None) -> tuple[list[str], list[Any]]:
        prefix = self.prefix(session)
        return [f"{prefix}:tools"], [prefix, "" if tool is None else _part(tool)]

    def check(self, session: str, tool: str, cooldown: float, *, fleet: bool) -> Check:
        return _check(self._eval(_CHECK, *self._check_args(session, tool, cooldown, fleet)))

    def record(
        self, session: str, tool: str, failed: bool, failures: int, cooldown: float, *, fleet: bool
    ) -> Recorded:
        reply = self._eval(
            _RECORD, *self._record_args(session, tool, failed, failures, cooldown, fleet)
        )
        return _recorded(reply)

    def count_retry(self, session: str, tool: str, step: str) -> int:
        return int(self._eval(_RETRY, *self._retry_args(session, tool, step)))

    def reset(self, session: str, tool: str | None) -> None:
        self._eval(_RESET, *self._reset_args(session, tool))
        if tool is not None:
            self.forget(tool)

    def read(self, session: str, tool: str, *, fleet: bool) -> Remembered:
        keys = self._record_keys(session, tool, False)
        try:
            mine = self.client.hmget(keys[0], "r", "f", "o", "c")
            breaker = (
                self.client.hmget(self._record_keys(session, tool, True)[0], "r", "f", "o", "c")
                if fleet
                else mine
            )
        except self._errors as error:
            raise StoreUnavailable(str(error)) from error
        return _remembered(mine, breaker)

    # async twins: the same arguments, awaited

    async def acheck(self, session: str, tool: str, cooldown: float, *, fleet: bool) -> Check:
        return _check(await self._aeval(_CHECK, *self._check_args(session, tool, cooldown, fleet)))

    async def arecord(
        self, session: str, tool: str, failed: bool, failures: int, cooldown: float, *, fleet: bool
    ) -> Recorded:
        reply = await self._aeval(
            _RECORD, *self._record_args(session, tool, failed, failures, cooldown, fleet)
        )
        return _recorded(reply)

    async def acount_retry(self, session: str, tool: str, step: str) -> int:
        return int(await self._aeval(_RETRY, *self._retry_args(session, tool, step)))

    async def areset(self, session: str, tool: str | None) -> None:
        await self._aeval(_RESET, *self._reset_args(session, tool))
        if tool is not None:
            self.forget(tool)

    async def aread(self, session: str, tool: str, *, fleet: bool) -> Remembered:
        keys = self._record_keys(session, tool, False)
        try:
            mine = await self.client.hmget(keys[0], "r", "f", "o", "c")
            breaker = (
                await self.client.hmget(
                    self._record_keys(session, tool, True)[0], "r", "f", "o", "c"
                )
                if fleet
                else mine
            )
        except self._errors as error:
            raise StoreUnavailable(str(error)) from error
        return _remembered(mine, breaker)


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
