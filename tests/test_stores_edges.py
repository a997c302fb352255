"""What issue 28 found between the stores, one test each (each fails on the code
before it): named steps read breakers live, the budget's step window, hostile ids,
reset during an outage, store errors of any type, the wait bound per call, asyncio
stores on a new event loop per request, and a session kept while in use."""

from __future__ import annotations

import asyncio
import hashlib
import statistics
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests._content import str_content
from tests._faults import proxy as proxied
from tests._redis_server import RedisServer, find_server
from toolguard import Breaker, Dispatcher, RetryWithFeedback, ToolCall, ToolPolicy, tool
from toolguard.stores import MemoryStore, RedisStore, StoreUnavailable

ran: list[str] = []


@tool(breaker=Breaker(failures=1, cooldown=60))
def gamma(fail: bool) -> str:
    """Opens at its first failure."""
    ran.append("gamma")
    if fail:
        raise OSError("down")
    return "ok"


@tool(max_model_retries=5)
def budgeted(retry: bool) -> str:
    """A budget only."""
    ran.append("budgeted")
    if retry:
        raise RetryWithFeedback("Try again.")
    return "fine"


@tool
def plain() -> str:
    """Neither breaker nor budget."""
    return "plain"


def _call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


OK, FAIL = _call("gamma", fail=False), _call("gamma", fail=True)
RETRY, PLAIN = _call("budgeted", retry=True), _call("plain")


def _agent() -> Dispatcher:
    return Dispatcher([gamma, budgeted, plain])


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "memory":
        yield MemoryStore()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    made = RedisStore.from_url(server.url, agent=f"edges-{uuid.uuid4().hex[:8]}")
    yield made
    made.close()


@pytest.fixture
def server() -> Iterator[RedisServer]:
    made = RedisServer(find_server())
    made.start()
    yield made
    made.close()


# --- steps read breakers live ----------------------------------------------------------


def test_a_named_step_sees_a_breaker_another_step_opened(store: Any) -> None:
    session = _agent().session(id="c", store=store)
    assert session.dispatch(OK, step="message-1").content == "ok"  # read closed
    session.dispatch(FAIL, step="message-2")  # opens it
    refused = session.dispatch(OK, step="message-1")
    assert "unavailable" in str_content(refused)


async def test_an_in_place_step_sees_a_breaker_another_step_opened(store: Any) -> None:
    agent = Dispatcher(
        [], external_tools=["ext"], overrides={"ext": ToolPolicy(breaker=Breaker(failures=1))}
    )
    session = agent.session(id="c", store=store)
    call = ToolCall(name="ext", id="1")
    assert await session.aadmit(call, step="m1") is None
    assert await session.aadmit(call, step="m2") is None
    await session.ahandle_error(call, OSError("down"), step="m2")
    refused = await session.aadmit(call, step="m1")
    assert refused is not None and refused.error_kind == "unavailable"


def test_a_step_counts_again_only_after_1024_others_counted(store: Any) -> None:
    session = _agent().session(id="c", store=store)
    budget = ToolPolicy(max_model_retries=100_000)
    first = session.dispatch(RETRY, step="s-0", policy=budget)
    for index in range(1, 301):
        session.dispatch(RETRY, step=f"s-{index}", policy=budget)
    assert str_content(session.dispatch(RETRY, step="s-0", policy=budget)).endswith(
        "(retry 301 of 100000)"
    )  # replayed after 300 others: remembered, not counted again
    for index in range(301, 1030):
        session.dispatch(RETRY, step=f"s-{index}", policy=budget)
    again = str_content(session.dispatch(RETRY, step="s-0", policy=budget))
    assert str_content(first).endswith("(retry 1 of 100000)")
    assert again.endswith("(retry 1031 of 100000)")  # forgotten by now: it counts again


# --- hostile ids -----------------------------------------------------------------------


LONG = "x" * 200


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ("\ud800", "\udc00"),  # lone surrogates: legal in JSON
        ("\ud800", "?"),
        (LONG, "h-" + hashlib.sha256(LONG.encode()).hexdigest()),  # the old hashed form
        (LONG, "%h" + hashlib.sha256(LONG.encode()).hexdigest()),  # the new one
        ("a|b", "a%7Cb"),  # a separator, and its escape
        ("s:t:gamma", "s"),
    ],
)
def test_distinct_session_ids_never_share_state(store: Any, one: str, other: str) -> None:
    agent = _agent()
    first, second = agent.session(id=one, store=store), agent.session(id=other, store=store)
    first.dispatch(FAIL)
    assert "unavailable" in str_content(first.dispatch(OK))
    assert second.dispatch(OK).content == "ok"


def test_lone_surrogates_in_step_keys_and_rounds_answer(store: Any) -> None:
    session = _agent().session(id="\udfff", store=store)
    for key in ("\ud800", "\udc00", "y" * 300, "#" + "y" * 300):
        assert str_content(session.dispatch(RETRY, step=key)).startswith("Try again.")
    assert session.state("budgeted").model_retries == 4  # four steps, four counts
    round_ = session.run([OK, RETRY, PLAIN], step="\ud800")
    assert [str_content(r)[:9] for r in round_.results] == ["ok", "Try again", "plain"]


def test_a_one_megabyte_session_id_costs_what_a_short_one_does(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, agent=f"edges-{uuid.uuid4().hex[:8]}")
    agent = _agent()

    def per_call(session_id: str) -> float:
        session = agent.session(id=session_id, store=store)
        session.dispatch(OK)
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            for _ in range(10):
                session.dispatch(OK)
            samples.append((time.perf_counter() - started) / 10)
        return statistics.median(samples)

    short, huge = per_call("short"), per_call("\ud800" + "z" * 1_000_000)
    assert huge < 3 * short + 0.002  # escaped and hashed once per session, not per call
    store.close()


# --- reset and outages -----------------------------------------------------------------


def test_reset_during_an_outage_raises_and_is_not_logged(
    server: RedisServer, logs: list[dict[str, Any]]
) -> None:
    store = RedisStore.from_url(server.url, agent="reset", retry_interval=0.1)
    session = _agent().session(id="c", store=store)
    session.dispatch(FAIL)
    server.kill()
    with pytest.raises(StoreUnavailable, match="not reset"):
        session.reset()
    assert not [e for e in logs if e["event"] == "session_reset"]
    server.start()  # an empty server would forget anyway: put the open breaker back
    time.sleep(0.15)
    session.dispatch(FAIL)
    assert "unavailable" in str_content(session.dispatch(OK))
    session.reset()
    assert session.dispatch(OK).content == "ok"
    assert [e["event"] for e in logs].count("session_reset") == 1
    store.close()


@pytest.mark.parametrize("error", [RuntimeError("Event loop is closed"), KeyError("x")])
@pytest.mark.parametrize("mode", ["fail-open", "fail-closed"])
def test_a_store_error_of_any_type_is_an_outage_not_the_tools_failure(
    redis_server: RedisServer,
    logs: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
    error: Exception,
    mode: str,
) -> None:
    store = RedisStore.from_url(
        redis_server.url,
        agent=f"edges-{uuid.uuid4().hex[:8]}",
        on_unavailable="fail-open" if mode == "fail-open" else "fail-closed",
    )

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(store, "check", broken)
    session = _agent().session(store=store)
    ran.clear()
    answer = str_content(session.dispatch(OK))
    assert answer == "ok" if mode == "fail-open" else "unavailable right now" in answer
    assert ran == (["gamma"] if mode == "fail-open" else [])
    assert [e["event"] for e in logs].count("store_unavailable") == 1
    assert not [e for e in logs if e.get("error_type") == type(error).__name__]
    monkeypatch.undo()
    time.sleep(store.health.retry_interval + 0.05)
    assert session.state("gamma").consecutive_failures == 0  # nothing counted against it
    store.close()


def test_the_wait_bound_covers_a_whole_call(server: RedisServer) -> None:
    """A slow server (each reply 0.3 s late) and no scripts loaded yet: the check alone
    would take three round trips (EVALSHA, SCRIPT LOAD, EVALSHA), the failure's record
    three more. One call's store work stops at the bound (0.8 s), not at six times
    the read timeout."""
    with proxied(server.port) as proxy:
        proxy.delay = 0.3
        store = RedisStore.from_url(proxy.url, timeout=0.4, agent="bound", retry_interval=0.01)
        session = _agent().session(store=store)
        started = time.monotonic()
        assert "failed" in str_content(session.dispatch(FAIL))
        took = time.monotonic() - started
        assert took < store.wait_bound + 0.5, took  # the bug took 1.8 s and more
        store.close()


# --- asyncio stores and event loops --------------------------------------------------


def test_an_asyncio_store_serves_a_new_event_loop_per_request(
    redis_server: RedisServer, logs: list[dict[str, Any]]
) -> None:
    store = RedisStore.from_url(
        redis_server.url, asyncio=True, agent=f"edges-{uuid.uuid4().hex[:8]}"
    )
    agent = _agent()

    async def request(call: ToolCall) -> str:
        return str_content(await agent.session(id="c", store=store).adispatch(call))

    assert asyncio.run(request(FAIL)).startswith("The tool 'gamma' failed")
    assert "unavailable" in asyncio.run(request(OK))  # another loop sees the open breaker
    assert "unavailable" in asyncio.run(request(OK))
    assert not [e for e in logs if e["event"] == "store_unavailable"]


# --- R5: a session in use keeps its state ---------------------------------------------


def test_a_session_in_use_keeps_its_state_and_an_idle_one_is_forgotten(
    redis_server: RedisServer,
) -> None:
    store = RedisStore.from_url(redis_server.url, agent=f"edges-{uuid.uuid4().hex[:8]}", ttl=1.2)
    session = _agent().session(id="c", store=store)
    session.dispatch(RETRY)
    until = time.monotonic() + 2.0  # past the TTL, used all along (a tool of neither kind)
    while time.monotonic() < until:
        session.dispatch(PLAIN)
        time.sleep(0.1)
    assert session.state("budgeted").model_retries == 1  # renewed while in use
    time.sleep(1.2 * 1.25 + 0.3)  # idle past the TTL and its quarter
    assert session.state("budgeted").model_retries == 0
    store.close()
