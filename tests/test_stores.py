"""Sessions on both stores: the same budgets, breakers, resets and rounds in process
memory and on a real Redis server; what a healthy tool costs in round trips; keys,
scripts and client settings of the Redis store."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis

from tests._content import str_content
from tests._redis_server import RedisServer
from toolguard import Breaker, Dispatcher, RetryWithFeedback, ToolCall, ToolError, tool
from toolguard.stores import MemoryStore, RedisStore

COOLDOWN = 0.3


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> Iterator[MemoryStore | RedisStore]:
    """Each test twice: on the memory store and on the test session's Redis server."""
    if request.param == "memory":
        yield MemoryStore()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    made = RedisStore.from_url(server.url, agent=f"test-{uuid.uuid4().hex[:8]}")
    yield made
    made.client.close()


@pytest.fixture
def commands(redis_server: RedisServer) -> Iterator[Any]:
    """``commands()``: the scripts the server has been sent so far (EVALSHA, and SCRIPT
    LOAD after a NOSCRIPT), counted by the server (not a mock). Every state change and
    check of the store is one of these; its other command (HMGET) serves only
    ``state()``. The suite runs one test at a time, so a difference is the block's."""
    admin = redis.Redis.from_url(redis_server.url)

    def count() -> int:
        stats = admin.info("commandstats")
        return sum(int(stats.get(name, {}).get("calls", 0)) for name in _SENT)

    yield count
    admin.close()


_SENT = ("cmdstat_evalsha", "cmdstat_script")


runs: list[str] = []


@tool(breaker=Breaker(failures=2, cooldown=COOLDOWN))
def search(query: str) -> str:
    """Search; fails for 'down', answers 'visible' with a message for the model."""
    runs.append(query)
    if query == "down":
        raise ConnectionRefusedError("backend at 10.0.0.7 refused")
    if query == "visible":
        raise ToolError("Nothing matches; try other words.")
    return f"results for {query}"


@tool(max_model_retries=2)
def lookup(query: str) -> str:
    """Asks the model to try again."""
    raise RetryWithFeedback(f"no match for {query!r}; use an order number")


@tool
def plain(x: int) -> int:
    """No breaker, no budget."""
    return x


def _search(query: str) -> ToolCall:
    return ToolCall(name="search", arguments={"query": query})


LOOKUP = ToolCall(name="lookup", arguments={"query": "x"})


def _dispatcher() -> Dispatcher:
    return Dispatcher([search, lookup, plain])


# --- breakers ------------------------------------------------------------------------


def test_the_breaker_opens_after_the_threshold_and_refuses_without_running(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    runs.clear()
    assert session.dispatch(_search("down")).error_id is not None
    assert session.dispatch(_search("down")).error_id is not None
    refused = session.dispatch(_search("fine"))
    assert refused.is_error and "unavailable: it failed 2 times in a row" in str_content(refused)
    assert runs == ["down", "down"]
    state = session.state("search")
    assert state.consecutive_failures == 2 and state.open_until is not None


def test_one_trial_after_the_cooldown_a_success_closes(store: Any, logs: list[Any]) -> None:
    session = _dispatcher().session(id="c", store=store)
    for _ in range(2):
        session.dispatch(_search("down"))
    time.sleep(COOLDOWN + 0.05)
    assert session.dispatch(_search("fine")).content == "results for fine"
    assert session.dispatch(_search("again")).content == "results for again"
    assert session.state("search").open_until is None
    events = [e["event"] for e in logs if e["event"].startswith("breaker")]
    assert events == ["breaker_opened", "breaker_closed"]


def test_a_failed_trial_reopens_at_once(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    for _ in range(2):
        session.dispatch(_search("down"))
    time.sleep(COOLDOWN + 0.05)
    assert session.dispatch(_search("down")).error_id is not None  # the trial ran, failed
    assert "unavailable" in str_content(session.dispatch(_search("fine")))
    assert session.state("search").consecutive_failures == 3


def test_a_model_visible_error_means_the_tool_works(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    session.dispatch(_search("down"))
    assert str_content(session.dispatch(_search("visible"))) == "Nothing matches; try other words."
    assert session.state("search").consecutive_failures == 0


def test_breakers_belong_to_one_session(store: Any) -> None:
    dispatcher = _dispatcher()
    first, second = dispatcher.session(id="a", store=store), dispatcher.session(id="b", store=store)
    for _ in range(2):
        first.dispatch(_search("down"))
    assert "unavailable" in str_content(first.dispatch(_search("x")))
    assert second.dispatch(_search("x")).content == "results for x"


def test_a_named_session_is_found_again_with_its_state(store: Any) -> None:
    """Another dispatcher (another process's) with the same id and store sees the same
    breaker on Redis; memory sessions are per dispatcher."""
    one = _dispatcher()
    for _ in range(2):
        one.session(id="conv", store=store).dispatch(_search("down"))
    assert "unavailable" in str_content(one.session(id="conv", store=store).dispatch(_search("x")))
    other = _dispatcher().session(id="conv", store=store).dispatch(_search("x"))
    shared = isinstance(store, RedisStore)
    assert ("unavailable" in str_content(other)) is shared


def test_reset_closes_breakers_and_forgets_budgets(store: Any, logs: list[Any]) -> None:
    session = _dispatcher().session(id="c", store=store)
    for _ in range(2):
        session.dispatch(_search("down"))
    session.dispatch(LOOKUP)
    session.reset("search")
    assert session.dispatch(_search("x")).content == "results for x"
    assert session.state("lookup").model_retries == 1
    session.reset()
    assert session.state("lookup").model_retries == 0
    assert [e["event"] for e in logs].count("session_reset") == 2


async def test_the_async_path_closes_after_a_success(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    await session.adispatch(_search("down"))
    assert (await session.adispatch(_search("x"))).content == "results for x"
    assert (await session.astate("search")).consecutive_failures == 0


def test_admit_and_handle_error_for_a_tool_run_elsewhere(store: Any) -> None:
    dispatcher = Dispatcher([], external_tools=["remote"], breaker=Breaker(failures=1, cooldown=60))
    session = dispatcher.session(id="c", store=store)
    call = ToolCall(name="remote", arguments={}, id="1")
    assert session.admit(call) is None
    session.handle_error(call, RuntimeError("secret"))
    refused = session.admit(call)
    assert refused is not None and "unavailable" in str_content(refused)


# --- budgets -------------------------------------------------------------------------


def test_budgets_count_per_session_and_say_so(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    first, second, third = (str_content(session.dispatch(LOOKUP)) for _ in range(3))
    assert first.endswith("(retry 1 of 2)") and second.endswith("(retry 2 of 2)")
    assert "too many times" in third
    assert session.state("lookup").model_retries == 3


def test_parallel_calls_of_a_round_count_once(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    round_ = session.run([LOOKUP] * 8)
    assert all(str_content(r).endswith("(retry 1 of 2)") for r in round_.results)
    assert session.state("lookup").model_retries == 1


async def test_calls_of_one_named_step_count_once(store: Any) -> None:
    session = _dispatcher().session(id="c", store=store)
    for _ in range(3):
        await session.adispatch(LOOKUP, step="message-1")
    assert str_content(await session.adispatch(LOOKUP, step="message-2")).endswith("(retry 2 of 2)")
    assert (await session.astate("lookup")).model_retries == 2


def test_sessions_never_share_budgets(store: Any) -> None:
    dispatcher = _dispatcher()
    for index in range(4):
        text = str_content(dispatcher.session(id=f"s{index}", store=store).dispatch(LOOKUP))
        assert text.endswith("(retry 1 of 2)")


# --- what the Redis store costs --------------------------------------------------------


def test_a_healthy_tool_costs_one_round_trip_per_step_and_none_per_call(
    redis_server: RedisServer, commands: Any
) -> None:
    store = RedisStore.from_url(redis_server.url, agent=f"cost-{uuid.uuid4().hex[:8]}")
    warm = _dispatcher().session(id="warm-up", store=store)
    warm.dispatch(_search("down"))  # the scripts loaded once per server (SCRIPT LOAD)
    session = _dispatcher().session(id="c", store=store)
    session.dispatch(ToolCall(name="plain", arguments={"x": 0}))  # its first step renews it
    before = commands()
    for _ in range(10):  # ten calls of one model step
        session.dispatch(_search("x"), step="m1")
    assert commands() - before == 1
    before = commands()
    for index in range(10):  # ten steps
        session.dispatch(_search("x"), step=f"s{index}")
    assert commands() - before == 10
    before = commands()
    for index in range(10):  # no breaker, no budget: the store is never asked
        session.dispatch(ToolCall(name="plain", arguments={"x": index}))
    assert commands() - before == 0
    before = commands()
    session.dispatch(_search("down"), step="m2")  # a failure: its check and its record
    assert commands() - before == 2


def test_a_round_reads_each_tool_once(redis_server: RedisServer, commands: Any) -> None:
    store = RedisStore.from_url(redis_server.url, agent=f"cost-{uuid.uuid4().hex[:8]}")
    session = _dispatcher().session(store=store)
    session.dispatch(_search("warm-up"))
    before = commands()
    round_ = session.run([_search(str(i)) for i in range(8)])
    assert not any(r.is_error for r in round_.results)
    assert commands() - before == 1  # the round's threads wait for the first one's answer
    before = commands()
    asyncio.run(session.arun([_search(str(i)) for i in range(8)]))
    assert commands() - before == 1  # a new step: read again, once, by the first task


def test_scripts_are_loaded_again_after_script_flush(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, agent=f"flush-{uuid.uuid4().hex[:8]}")
    session = _dispatcher().session(id="c", store=store)
    session.dispatch(_search("down"))
    store.client.script_flush()
    session.dispatch(_search("down"))
    assert "unavailable" in str_content(session.dispatch(_search("x")))


def test_keys_are_namespaced_hash_tagged_escaped_and_expire(redis_server: RedisServer) -> None:
    agent = f"a{{b}}:{uuid.uuid4().hex[:6]}"
    store = RedisStore.from_url(redis_server.url, agent=agent, ttl=120)
    session = _dispatcher().session(id="user:1|{x}", store=store)
    session.dispatch(_search("down"))
    session.dispatch(LOOKUP)
    keys = sorted(k.decode() for k in store.client.scan_iter(match="toolguard:*"))
    mine = [k for k in keys if "user%3A1%7C%7Bx%7D" in k]
    assert len(mine) == 4  # search's record, lookup's record and steps, the tools set
    for key in mine:
        tag = key[key.index("{") + 1 : key.index("}")]
        assert "{" not in tag and ":" not in tag  # escaped: one hash tag per session
        assert 0 < store.client.ttl(key) <= 150  # ttl and a quarter (R5)


def test_a_client_without_bounded_waits_is_refused(redis_server: RedisServer) -> None:
    with pytest.raises(ValueError, match="bounds its waits"):
        RedisStore(redis.Redis.from_url(redis_server.url))  # redis-py waits 5 s, retries
    assert RedisStore.from_url(redis_server.url).wait_bound == 0.5


def test_a_sync_session_on_an_asyncio_client_is_refused(redis_server: RedisServer) -> None:
    store = RedisStore.from_url(redis_server.url, asyncio=True)
    session = _dispatcher().session(store=store)
    with pytest.raises(TypeError, match="asyncio client"):
        session.dispatch(_search("x"))

    async def main() -> str:
        result = await session.adispatch(_search("x"))
        await store.client.aclose()
        return str_content(result)

    assert asyncio.run(main()) == "results for x"


def test_the_benchmark_row_script_runs_and_prints_each_ratio() -> None:
    """``benchmarks/stores.py --quick``: its own server, four rows, a ratio each."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parent.parent / "benchmarks" / "stores.py"
    done = subprocess.run(
        [sys.executable, str(script), "--quick"], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [line for line in done.stdout.splitlines() if line.endswith("x")]
    assert len(rows) == 4
