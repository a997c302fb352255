"""When the Redis server is down or silent: fail-open keeps answering (one WARNING, one
recovery), fail-closed never runs the tool, and no call waits past the store's bound
(its client's connect + read timeouts). A server restart is survived."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests._content import str_content
from tests._redis_server import RedisServer, find_server
from toolguard import Breaker, Dispatcher, ToolCall, tool
from toolguard.stores import RedisStore

SLACK = 0.25  # scheduling on a loaded machine, beyond the bound itself
ran: list[int] = []


@tool(breaker=Breaker(failures=3, cooldown=30))
def fetch(n: int) -> int:
    """A healthy tool with a breaker: it touches the store."""
    ran.append(n)
    return n


def _call(n: int) -> ToolCall:
    return ToolCall(name="fetch", arguments={"n": n})


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    yield listener.getsockname()[1]
    listener.close()


@pytest.fixture
def private_server(redis_server: RedisServer) -> Iterator[RedisServer]:
    """A server of this test's own, to kill and restart (the session's stays up)."""
    server = RedisServer(find_server())
    server.start()
    yield server
    server.close()


def _timed(session: Any, n: int) -> tuple[Any, float]:
    started = time.monotonic()
    result = session.dispatch(_call(n))
    return result, time.monotonic() - started


def _events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == name]


def test_fail_open_survives_a_killed_server_and_its_restart(
    private_server: RedisServer, logs: list[dict[str, Any]]
) -> None:
    store = RedisStore.from_url(private_server.url, agent="outage", retry_interval=0.2)
    session = Dispatcher([fetch]).session(id="c", store=store)
    assert session.dispatch(_call(0)).content == "0"
    private_server.kill()
    ran.clear()
    for n in range(1, 21):
        result, took = _timed(session, n)
        assert result.content == str(n)
        assert took < store.wait_bound + SLACK
        time.sleep(0.02)
    assert ran == list(range(1, 21))  # every call answered, from process memory
    private_server.start()  # the same port, an empty server: no scripts, no keys
    time.sleep(0.25)
    for n in range(3):
        assert session.dispatch(_call(n)).content == str(n)
    unavailable = _events(logs, "store_unavailable")
    assert len(unavailable) == 1 and unavailable[0]["log_level"] == "warning"
    assert len(_events(logs, "store_recovered")) == 1
    session.dispatch(ToolCall(name="fetch", arguments={"n": "x"}))  # still answering
    assert store.client.ping()


def test_fail_open_on_a_silent_server_waits_at_most_the_bound(
    silent_port: int, logs: list[dict[str, Any]]
) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{silent_port}/0", retry_interval=0.3)
    session = Dispatcher([fetch]).session(store=store)
    longest = 0.0
    for n in range(12):
        result, took = _timed(session, n)
        assert result.content == str(n)
        longest = max(longest, took)
        time.sleep(0.05)  # past retry_interval the store is asked again, and times out again
    assert longest < store.wait_bound + SLACK
    assert len(_events(logs, "store_unavailable")) == 1
    assert not _events(logs, "store_recovered")


def test_fail_closed_never_runs_the_tool(silent_port: int) -> None:
    store = RedisStore.from_url(
        f"redis://127.0.0.1:{silent_port}/0", on_unavailable="fail-closed", retry_interval=0.3
    )
    session = Dispatcher([fetch]).session(store=store)
    ran.clear()
    for n in range(6):
        result, took = _timed(session, n)
        assert result.is_error and "unavailable right now" in str_content(result)
        assert took < store.wait_bound + SLACK
    assert ran == []


def test_fail_closed_on_a_dead_server_answers_at_once(private_server: RedisServer) -> None:
    store = RedisStore.from_url(private_server.url, on_unavailable="fail-closed")
    session = Dispatcher([fetch]).session(store=store)
    private_server.kill()
    ran.clear()
    result, took = _timed(session, 1)
    assert result.is_error and "unavailable" in str_content(result)
    assert took < store.wait_bound + SLACK and ran == []


async def test_an_asyncio_client_on_a_silent_server_is_bounded_too(silent_port: int) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{silent_port}/0", asyncio=True)
    session = Dispatcher([fetch]).session(store=store)
    started = time.monotonic()
    result = await session.adispatch(_call(7))
    assert result.content == "7"
    assert time.monotonic() - started < store.wait_bound + SLACK
    await store.client.aclose()
