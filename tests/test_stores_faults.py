"""The fault matrix: a real server killed, stopped (SIGSTOP), slowed, black-holed, its
idle connections dropped, or one session's key of the wrong type; for a sync client
and an asyncio one (one long-lived event loop, as a server runs), in both modes.

Whatever the fault, the store's failure is never a tool's failure: no handler sees
it, no breaker or budget counts it, and it is logged once (``store_unavailable``).
Fail-open runs the tools from process memory; fail-closed does not run a tool with a
breaker or a budget. A dropped idle connection is replaced: no outage at all. A bad
key is its session's outage only. Every call answers within the store's wait bound
(with generous slack: the machine is loaded), and the store recovers once the fault
is gone.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis

from tests._content import str_content
from tests._faults import Proxy
from tests._redis_server import RedisServer, find_server
from toolguard import Breaker, Dispatcher, RetryWithFeedback, Session, ToolCall, tool
from toolguard.stores import RedisStore

SLACK = 1.0  # seconds beyond the bound: scheduling on a loaded two-core machine
ran: list[str] = []


@tool(breaker=Breaker(failures=3, cooldown=30), max_model_retries=5)
def guarded(n: int) -> int:
    """A breaker and a budget."""
    ran.append("guarded")
    return n


@tool(max_model_retries=5)
def budgeted(retry: bool) -> str:
    """A budget only; asks the model to try again when told to."""
    ran.append("budgeted")
    if retry:
        raise RetryWithFeedback("Try again.")
    return "fine"


@tool
def plain(n: int) -> int:
    """Neither: it never depends on the store."""
    ran.append("plain")
    return n


@tool(breaker=Breaker(failures=1, cooldown=60))
def fragile() -> str:
    """Fails: its breaker opens at once."""
    raise OSError("down")


CALLS = {
    "guarded": ToolCall(name="guarded", arguments={"n": 1}),
    "budgeted": ToolCall(name="budgeted", arguments={"retry": False}),
    "retry": ToolCall(name="budgeted", arguments={"retry": True}),
    "plain": ToolCall(name="plain", arguments={"n": 2}),
    "fragile": ToolCall(name="fragile", arguments={}),
}
FAULTS = ("kill", "sigstop", "slow", "black_hole", "idle_drop", "wrong_type")


@pytest.fixture
def server() -> Iterator[RedisServer]:
    made = RedisServer(find_server())
    made.start()
    yield made
    made.close()


class World:
    """The server, a proxy in front of it, a store through the proxy, two sessions,
    and a way to call them (an asyncio client's calls on one event loop)."""

    def __init__(self, server: RedisServer, client: str, mode: str) -> None:
        self.server, self.client = server, client
        self.proxy = Proxy(server.port)
        self.store = RedisStore.from_url(
            self.proxy.url,
            asyncio=client == "asyncio",
            timeout=0.4,  # what a loaded machine needs; the faults go past it
            on_unavailable="fail-open" if mode == "fail-open" else "fail-closed",
            retry_interval=0.2,
            agent=f"faults-{uuid.uuid4().hex[:8]}",
        )
        dispatcher = Dispatcher([guarded, budgeted, plain, fragile])
        self.session = dispatcher.session(id="mine", store=self.store)
        self.other = dispatcher.session(id="other", store=self.store)
        self.runner = asyncio.Runner() if client == "asyncio" else None
        self.admin = redis.Redis(port=server.port)

    def call(self, session: Session, name: str) -> tuple[str, float]:
        started = time.monotonic()
        if self.runner is not None:
            result = self.runner.run(session.adispatch(CALLS[name]))
        else:
            result = session.dispatch(CALLS[name])
        return str_content(result), time.monotonic() - started

    def close(self) -> None:
        if self.runner is not None:
            self.runner.close()
        self.proxy.close()
        self.admin.close()


def _apply(world: World, fault: str) -> Callable[[], None]:
    """Start ``fault``; return what ends it."""
    if fault == "kill":
        world.server.kill()
        return world.server.start
    if fault == "sigstop":
        world.server.pause()
        return world.server.resume
    if fault == "slow":
        world.proxy.delay = 1.2  # past the read timeout (0.4 s)

        def fast() -> None:
            world.proxy.delay = 0.0
            world.proxy.drop()  # replies still in flight belong to calls already answered

        return fast
    if fault == "black_hole":
        world.proxy.black_hole = True

        def open_() -> None:
            world.proxy.black_hole = False
            world.proxy.drop()

        return open_
    if fault == "idle_drop":
        world.admin.client_kill_filter(_type="normal", skipme=True)
        time.sleep(0.05)  # the server's FIN reaches the idle connections
        return lambda: None
    key = world.store.session_key("mine") + ":t:guarded"
    world.admin.set(key, "an outside write")

    def repaired() -> None:
        world.admin.delete(key)

    return repaired


@pytest.mark.parametrize("mode", ["fail-open", "fail-closed"])
@pytest.mark.parametrize("client", ["sync", "asyncio"])
@pytest.mark.parametrize("fault", FAULTS)
def test_a_store_fault_is_never_a_tool_failure(
    server: RedisServer, fault: str, client: str, mode: str, logs: list[dict[str, Any]]
) -> None:
    world = World(server, client, mode)
    try:
        assert world.call(world.session, "guarded")[0] == "1"  # connections made, scripts loaded
        assert "failed" in world.call(world.other, "fragile")[0]  # the other's breaker: open
        heal = _apply(world, fault)
        ran.clear()
        answers = {name: world.call(world.session, name) for name in ("guarded", "retry", "plain")}
        bound = world.store.wait_bound + SLACK
        assert all(took < bound for _, took in answers.values()), answers
        assert answers["plain"][0] == "2"
        outage = fault != "idle_drop"
        if not outage or mode == "fail-open":
            assert answers["guarded"][0] == "1"
            assert answers["retry"][0] == "Try again. (retry 1 of 5)"
            assert ran == ["guarded", "budgeted", "plain"]
        else:
            assert "unavailable right now" in answers["guarded"][0]
            assert "unavailable right now" in answers["retry"][0]
            assert ran == ["plain"]  # fail-closed: the others did not run
        events = [e for e in logs if e["event"].startswith("store_")]
        seen = [e.get("error_type") for e in logs if e["event"] == "tool_error_hidden"]
        assert set(seen) <= {"OSError", "ToolUnavailable"}  # fragile's own, and refusals:
        # no handler saw the store's failure
        assert len([e for e in events if e["event"] == "store_unavailable"]) == int(outage)
        if fault == "wrong_type":
            assert events[0]["scope"] == "session"
            assert not world.store.health.down()  # the store is up for everyone else
            refused, _ = world.call(world.other, "fragile")
            assert "unavailable: it failed 1 times" in refused  # its open breaker still holds
        heal()
        time.sleep(world.store.health.retry_interval + 0.05)
        assert world.call(world.session, "guarded")[0] == "1"
        assert world.call(world.session, "guarded")[0] == "1"
        state = (
            world.runner.run(world.session.astate("guarded"))
            if world.runner is not None
            else world.session.state("guarded")
        )
        assert state.consecutive_failures == 0  # the outage counted nothing against it
        recovered = [e for e in logs if e["event"] == "store_recovered"]
        assert len(recovered) == int(outage)
    finally:
        world.close()
