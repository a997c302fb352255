"""Bounded commands to a Redis server, on connections the store owns.

The store makes its connections from its client's settings (class and keyword
arguments of the client's pool) and never uses the client's own pool, so that:

* **one deadline bounds a call's whole store work**: each command gets what is left
  of it (connect, send, wait for the reply, a ``NOSCRIPT`` reload), whatever the
  client's own per-socket timeouts would allow;
* **a dropped connection is replaced once**: a pooled connection the server or a load
  balancer closed while idle is found before anything is sent on it, and a new one is
  made; only a failure after that is an outage (nothing is ever sent twice);
* **asyncio connections belong to their event loop**: each running loop gets its own
  (an application that runs ``asyncio.run`` per request works), and they are closed
  when the loop shuts down its async generators (``asyncio.run`` and
  ``asyncio.Runner`` do).

What the server answers with an error (``ResponseError``: a key of the wrong type, a
script error) is :class:`Refused`: the server is up, this operation was refused.
Anything else is the server's outage (:class:`StoreUnavailable`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
import time
import weakref
from collections.abc import AsyncIterator, Sequence
from typing import Any, Final

from toolguard.stores._base import Refused, StoreUnavailable

__all__ = ["AsyncWire", "Script", "Wire"]

_IDLE: Final = 32  # idle connections kept per process (per event loop for asyncio)


class Script:
    """A Lua script and its server-side id (``EVALSHA``)."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        import hashlib

        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()


def _settings(client: Any) -> tuple[type[Any], dict[str, Any], float, float]:
    pool = client.connection_pool
    kwargs = dict(pool.connection_kwargs)
    return pool.connection_class, kwargs, kwargs["socket_connect_timeout"], kwargs["socket_timeout"]


def _spent(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise StoreUnavailable("the store's wait bound for this call is spent")
    return left


def _classify(error: Exception) -> Exception:
    """A key of the wrong type is refused (that session's problem); anything else is
    the store's outage."""
    if isinstance(error, StoreUnavailable):
        return error
    text = f"{type(error).__name__}: {str(error)[:200]}"
    if "WRONGTYPE" in str(error):
        return Refused(text)
    return StoreUnavailable(text)


class Wire:
    """Sync commands with a deadline (a ``redis.Redis`` client's settings)."""

    def __init__(self, client: Any) -> None:
        self._class, self._kwargs, self._connect, self._read = _settings(client)
        self._lock = threading.Lock()
        self._idle: list[Any] = []
        self._pid = os.getpid()

    def script(
        self, deadline: float, script: Script, keys: Sequence[str], args: Sequence[Any]
    ) -> Any:
        """Run ``script``; load it once if the server does not know it."""
        import redis

        try:
            try:
                return self._command(deadline, "EVALSHA", script.sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                self._command(deadline, "SCRIPT", "LOAD", script.source)
                return self._command(deadline, "EVALSHA", script.sha, len(keys), *keys, *args)
        except Exception as error:
            classified = _classify(error)
            if classified is error:
                raise
            raise classified from error

    def command(self, deadline: float, *args: Any) -> Any:
        try:
            return self._command(deadline, *args)
        except Exception as error:
            classified = _classify(error)
            if classified is error:
                raise
            raise classified from error

    def _command(self, deadline: float, *args: Any) -> Any:
        connection = self._take(deadline)
        try:
            connection.send_command(*args)
            if not connection.can_read(timeout=_spent(deadline)):
                raise TimeoutError("the store did not answer in time")
            reply = connection.read_response()
        except Exception as error:
            import redis

            if isinstance(error, redis.ResponseError):
                self._give(connection)  # the server answered: the connection is fine
            else:
                with contextlib.suppress(Exception):
                    connection.disconnect()
            raise
        self._give(connection)
        return reply

    def _take(self, deadline: float) -> Any:
        """An idle connection still open, or a new one (one replacement at most)."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's sockets stay its own
                self._idle, self._pid = [], os.getpid()
            connection = self._idle.pop() if self._idle else None
        if connection is not None:
            try:
                if not connection.can_read(timeout=0):
                    return connection
            except Exception:  # noqa: BLE001 - closed while idle: make another
                pass
            with contextlib.suppress(Exception):
                connection.disconnect()
        connection = self._class(**self._kwargs)
        left = _spent(deadline)
        connection.socket_connect_timeout = min(self._connect, left)
        connection.socket_timeout = min(self._read, left)
        connection.connect()
        return connection

    def _give(self, connection: Any) -> None:
        with self._lock:
            if len(self._idle) < _IDLE and self._pid == os.getpid():
                self._idle.append(connection)
                return
        with contextlib.suppress(Exception):
            connection.disconnect()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for connection in idle:
            with contextlib.suppress(Exception):
                connection.disconnect()


class _Loop:
    """One event loop's idle connections, closed when that loop shuts down."""

    __slots__ = ("closer", "idle")

    def __init__(self) -> None:
        self.idle: list[Any] = []
        self.closer: AsyncIterator[None] | None = None


async def _close_at_shutdown(entry: _Loop) -> AsyncIterator[None]:
    """An async generator the loop finalizes in ``shutdown_asyncgens()``: then, while
    the loop still runs, its connections are closed."""
    try:
        yield
    finally:
        idle, entry.idle = entry.idle, []
        for connection in idle:
            with contextlib.suppress(Exception):
                await connection.disconnect(nowait=True)


class AsyncWire:
    """Asyncio commands with a deadline (a ``redis.asyncio.Redis`` client's
    settings), on connections of the running event loop's own."""

    def __init__(self, client: Any) -> None:
        self._class, self._kwargs, self._connect, self._read = _settings(client)
        self._lock = threading.Lock()
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Loop] = (
            weakref.WeakKeyDictionary()
        )

    async def script(
        self, deadline: float, script: Script, keys: Sequence[str], args: Sequence[Any]
    ) -> Any:
        import redis

        try:
            try:
                return await self._command(deadline, "EVALSHA", script.sha, len(keys), *keys, *args)
            except redis.exceptions.NoScriptError:
                await self._command(deadline, "SCRIPT", "LOAD", script.source)
                return await self._command(deadline, "EVALSHA", script.sha, len(keys), *keys, *args)
        except Exception as error:
            classified = _classify(error)
            if classified is error:
                raise
            raise classified from error

    async def command(self, deadline: float, *args: Any) -> Any:
        try:
            return await self._command(deadline, *args)
        except Exception as error:
            classified = _classify(error)
            if classified is error:
                raise
            raise classified from error

    async def _command(self, deadline: float, *args: Any) -> Any:
        entry = await self._entry()
        connection = await self._take(entry, deadline)
        try:
            async with asyncio.timeout(_spent(deadline)):
                await connection.send_command(*args)
                reply = await connection.read_response()
        except BaseException as error:
            import redis

            if isinstance(error, redis.ResponseError):
                await self._give(entry, connection)
            else:
                with contextlib.suppress(Exception):
                    await connection.disconnect(nowait=True)
            if isinstance(error, TimeoutError):
                raise TimeoutError("the store did not answer in time") from error
            raise
        await self._give(entry, connection)
        return reply

    async def _entry(self) -> _Loop:
        loop = asyncio.get_running_loop()
        with self._lock:
            entry = self._loops.get(loop)
            if entry is None:
                entry = self._loops[loop] = _Loop()
        if entry.closer is None:
            entry.closer = _close_at_shutdown(entry)
            await entry.closer.__anext__()  # registered with the loop's async generators
        return entry

    async def _take(self, entry: _Loop, deadline: float) -> Any:
        connection = entry.idle.pop() if entry.idle else None
        if connection is not None:
            try:
                # two turns of the loop: the first polls the sockets, the second runs
                # their callbacks (a FIN the server sent while idle becomes the stream's EOF)
                await asyncio.sleep(0)
                await asyncio.sleep(0)
                if not await connection.can_read():
                    return connection
            except Exception:  # noqa: BLE001 - closed while idle: make another
                pass
            with contextlib.suppress(Exception):
                await connection.disconnect(nowait=True)
        connection = self._class(**self._kwargs)
        left = _spent(deadline)
        connection.socket_connect_timeout = min(self._connect, left)
        connection.socket_timeout = min(self._read, left)
        async with asyncio.timeout(left):
            await connection.connect()
        return connection

    async def _give(self, entry: _Loop, connection: Any) -> None:
        if len(entry.idle) < _IDLE:
            entry.idle.append(connection)
            return
        with contextlib.suppress(Exception):
            await connection.disconnect(nowait=True)

    async def aclose(self) -> None:
        """Close the running loop's idle connections."""
        with self._lock:
            entry = self._loops.get(asyncio.get_running_loop())
        if entry is not None:
            idle, entry.idle = entry.idle, []
            for connection in idle:
                with contextlib.suppress(Exception):
                    await connection.disconnect(nowait=True)
