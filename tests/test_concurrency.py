"""Concurrency: many agents, many conversations, global changes under load.

From 32 threads and thousands of asyncio tasks at once, each result carries its
own dispatcher's policy outcome (no cross-talk through globals, caches or context
variables), sessions never share counts, ``configure()`` under load is seen whole
or not at all, nothing deadlocks (every join and gather is bounded), and after
``close()`` no thread or task is left over.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import toolguard
from toolguard import (
    Breaker,
    Dispatcher,
    RetryWithFeedback,
    ToolCall,
    ToolPolicy,
    ToolResult,
    tool,
)
from toolguard.handlers import generic_unless_visible

THREADS = 32
AGENTS = 12
JOIN_TIMEOUT = 20.0

whose: contextvars.ContextVar[str] = contextvars.ContextVar("whose", default="nobody")


@pytest.fixture(autouse=True)
def _logs_kept_in_memory(logs: list[dict[str, Any]]) -> None:
    """Hidden failures logged by the thousand, kept in memory: what is measured here is
    toolguard under load, not a console renderer (with rich installed, structlog's
    default renders each traceback in milliseconds)."""


@tool
def echo(tag: str) -> str:
    """Answer the tag and the caller's context variable."""
    return f"{tag}|{whose.get()}"


@tool
def boom(tag: str) -> str:
    """Fail with the tag in the (hidden) message."""
    raise ValueError(f"secret for {tag}")


@tool(timeout=5)
def timed_echo(tag: str) -> str:
    """Echo on a worker thread (it has a timeout)."""
    return f"{tag}|{whose.get()}"


@tool
async def aecho(tag: str) -> str:
    """Echo, asynchronously."""
    await asyncio.sleep(0)
    return f"{tag}|{whose.get()}"


@tool
async def aboom(tag: str) -> str:
    """Fail asynchronously."""
    await asyncio.sleep(0)
    raise ValueError(f"secret for {tag}")


def agent_text(index: int) -> str:
    return f"agent {index} hides it ({{error_id}})"


def agent_answer(index: int, result: ToolResult) -> str:
    return agent_text(index).replace("{error_id}", str(result.error_id))


def make_agents(tools: list[Any]) -> list[Dispatcher]:
    """Dispatchers sharing the same tool objects, each with its own policy."""
    agents = []
    for index in range(AGENTS):
        overrides = {}
        if index % 3 == 0:
            overrides["boom" if "boom" in [t.name for t in tools] else "aboom"] = ToolPolicy(
                on_error=generic_unless_visible(f"override {index} ({{error_id}})")
            )
        agents.append(
            Dispatcher(
                tools,
                on_error=agent_text(index),
                return_direct=index % 2 == 0,
                overrides=overrides,
            )
        )
    return agents


def expected_failure(index: int, result: ToolResult) -> str:
    if index % 3 == 0:
        return f"override {index} ({result.error_id})"
    return agent_answer(index, result)


def run_threads(worker: Callable[[int], None], count: int = THREADS) -> list[BaseException]:
    """Start ``count`` threads at once (a barrier), join them with a deadline."""
    errors: list[BaseException] = []
    barrier = threading.Barrier(count)

    def target(number: int) -> None:
        try:
            barrier.wait(timeout=JOIN_TIMEOUT)
            worker(number)
        except BaseException as error:  # collected and asserted by the test
            errors.append(error)

    threads = [
        threading.Thread(target=target, args=(n,), name=f"worker-{n}", daemon=True)
        for n in range(count)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + JOIN_TIMEOUT
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    stuck = [thread.name for thread in threads if thread.is_alive()]
    assert not stuck, f"deadlock or hang: {stuck} still running after {JOIN_TIMEOUT} s"
    return errors


@pytest.fixture
def thread_baseline() -> frozenset[threading.Thread]:
    """The threads alive before the test (other tests' abandoned threads may end meanwhile)."""
    return frozenset(threading.enumerate())


def new_threads(baseline: frozenset[threading.Thread]) -> list[str]:
    return [t.name for t in threading.enumerate() if t not in baseline and t.is_alive()]


def assert_threads_back_to(baseline: frozenset[threading.Thread]) -> None:
    """No thread started during the test is still alive (joined pools exit at once)."""
    for _ in range(100):
        if not new_threads(baseline):
            return
        time.sleep(0.01)
    raise AssertionError(f"threads left over: {new_threads(baseline)}")


# --- threads -------------------------------------------------------------------------


def test_32_threads_on_many_agents_each_get_their_own_agents_outcome(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    agents = make_agents([echo, boom, timed_echo])
    rounds = 40

    def worker(number: int) -> None:
        whose.set(f"thread {number}")
        rng = random.Random(number)
        for step in range(rounds):
            index = rng.randrange(AGENTS)
            agent = agents[index]
            tag = f"{number}.{step}"
            calls = [
                ToolCall(name="echo", arguments={"tag": tag}, id=f"{tag}-a"),
                ToolCall(name="boom", arguments={"tag": tag}, id=f"{tag}-b"),
                ToolCall(name="timed_echo", arguments={"tag": tag}, id=f"{tag}-c"),
            ]
            if step % 2:
                round_ = agent.run(calls)
                ok, failed, timed = round_.results
                assert round_.stop is (index % 2 == 0)
                assert round_.final == (ok if index % 2 == 0 else None)
            else:
                ok, failed, timed = (agent.dispatch(c) for c in calls)
            assert ok.content == f"{tag}|thread {number}"
            assert timed.content == f"{tag}|thread {number}"
            assert ok.return_direct is (index % 2 == 0)
            assert failed.is_error and not failed.return_direct
            assert failed.content == expected_failure(index, failed)
            assert f"secret for {tag}" not in failed.content

    errors = run_threads(worker)
    assert errors == []
    for agent in agents:
        agent.close()
    assert_threads_back_to(thread_baseline)


def test_configure_changes_under_load_are_seen_whole_and_never_leak_across_agents(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    """Agents with their own handler ignore the global level; agents without one see
    one of the configured global messages (old or new), never another agent's."""
    own = make_agents([echo, boom])
    bare = [Dispatcher([echo, boom]) for _ in range(4)]
    globals_ = [f"global {n} ({{error_id}})" for n in range(5)]
    stop = threading.Event()
    toolguard.configure(on_error=globals_[0])

    def configure_loop() -> None:
        n = 0
        while not stop.is_set():
            toolguard.configure(on_error=globals_[n % len(globals_)])
            n += 1
            time.sleep(0.0005)

    changer = threading.Thread(target=configure_loop, daemon=True)
    changer.start()
    try:

        def worker(number: int) -> None:
            rng = random.Random(number)
            for step in range(60):
                tag = f"{number}.{step}"
                call = ToolCall(name="boom", arguments={"tag": tag}, id=tag)
                if rng.random() < 0.5:
                    index = rng.randrange(AGENTS)
                    result = own[index].dispatch(call)
                    assert result.content == expected_failure(index, result)
                else:
                    result = rng.choice(bare).dispatch(call)
                    allowed = {g.replace("{error_id}", str(result.error_id)) for g in globals_}
                    assert result.content in allowed, result.content

        errors = run_threads(worker)
    finally:
        stop.set()
        changer.join(timeout=JOIN_TIMEOUT)
    assert not changer.is_alive()
    assert errors == []
    # once the changes stop, the latest configure() is what every agent sees
    toolguard.configure(on_error="final ({error_id})")
    for agent in bare:
        result = agent.dispatch(ToolCall(name="boom", arguments={"tag": "x"}))
        assert result.content == f"final ({result.error_id})"
    for agent in [*own, *bare]:
        agent.close()
    assert_threads_back_to(thread_baseline)


def test_sessions_on_one_agent_from_many_threads_never_share_counts(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    attempts_seen: dict[int, list[str]] = {}

    @tool(max_model_retries=3)
    def strict(tag: str) -> str:
        raise RetryWithFeedback("Send the tag in capitals.")

    @tool(breaker=Breaker(failures=2, cooldown=60))
    def flaky(tag: str) -> str:
        raise ConnectionError("down")

    agent = Dispatcher([strict, flaky, echo])

    def worker(number: int) -> None:
        session = agent.session()
        texts = []
        for step in range(5):
            call = ToolCall(name="strict", arguments={"tag": f"{number}.{step}"}, id=str(step))
            texts.append(session.dispatch(call).text)
        attempts_seen[number] = texts
        # only every other session trips its breaker; the others must stay closed
        tries = 3 if number % 2 == 0 else 1
        flaky_calls = [
            ToolCall(name="flaky", arguments={"tag": "t"}, id=f"f{i}") for i in range(tries)
        ]
        results = [session.run([c]).results[0] for c in flaky_calls]
        if number % 2 == 0:
            assert "unavailable" in results[-1].text
            assert session.state("flaky").open_until is not None
        else:
            assert "unavailable" not in results[-1].text
            assert session.state("flaky").open_until is None
        assert session.state("strict").model_retries == 5

    errors = run_threads(worker)
    assert errors == []
    for texts in attempts_seen.values():
        assert texts[:3] == [f"Send the tag in capitals. (retry {n} of 3)" for n in (1, 2, 3)]
        assert all("called incorrectly too many times" in text for text in texts[3:])
    agent.close()
    assert_threads_back_to(thread_baseline)


def test_close_shuts_every_pool_down_and_is_idempotent(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    agents = [Dispatcher([echo, timed_echo]) for _ in range(8)]
    for agent in agents:
        round_ = agent.run(
            [ToolCall(name="timed_echo", arguments={"tag": str(n)}) for n in range(16)]
        )
        assert len(round_.results) == 16
    assert any(name.startswith("toolguard") for name in new_threads(thread_baseline))
    for agent in agents:
        agent.close()
        agent.close()
    assert_threads_back_to(thread_baseline)
    # a closed dispatcher still works: it makes a new pool, and close() ends it again
    with agents[0] as again:
        assert again.run([ToolCall(name="echo", arguments={"tag": str(n)}) for n in range(4)])
    assert_threads_back_to(thread_baseline)


def test_context_variables_never_cross_between_concurrent_rounds() -> None:
    """Each sync tool on the pool sees the context of the round that submitted it."""
    agent = Dispatcher([echo, timed_echo])

    def worker(number: int) -> None:
        whose.set(f"caller {number}")
        for step in range(20):
            calls = [
                ToolCall(name=name, arguments={"tag": f"{step}"})
                for name in ("echo", "timed_echo", "echo", "timed_echo")
            ]
            for result in agent.run(calls).results:
                assert result.content == f"{step}|caller {number}"

    assert run_threads(worker) == []
    agent.close()


# --- asyncio --------------------------------------------------------------------------


async def test_thousands_of_tasks_on_many_agents_each_get_their_own_outcome() -> None:
    agents = make_agents([aecho, aboom])
    tasks_per_agent = 200

    async def one(index: int, n: int) -> None:
        whose.set(f"task {index}.{n}")
        agent = agents[index]
        tag = f"{index}.{n}"
        if n % 4 == 0:
            round_ = await agent.arun(
                [
                    ToolCall(name="aecho", arguments={"tag": tag}, id="a"),
                    ToolCall(name="aboom", arguments={"tag": tag}, id="b"),
                ]
            )
            ok, failed = round_.results
        else:
            name = "aecho" if n % 2 else "aboom"
            result = await agent.adispatch(ToolCall(name=name, arguments={"tag": tag}, id="x"))
            ok = failed = result
        if not ok.is_error:
            assert ok.content == f"{tag}|task {tag}"
            assert ok.return_direct is (index % 2 == 0)
        if failed.is_error:
            assert failed.content == expected_failure(index, failed)

    coroutines = [one(i, n) for i in range(AGENTS) for n in range(tasks_per_agent)]
    assert len(coroutines) >= 2000
    await asyncio.wait_for(asyncio.gather(*coroutines), timeout=JOIN_TIMEOUT)  # no deadlock
    assert asyncio.all_tasks() == {asyncio.current_task()}
    for agent in agents:
        agent.close()


async def test_thousands_of_tasks_on_shared_sessions_and_offloaded_sync_tools(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    @tool(max_model_retries=2)
    async def picky(tag: str) -> str:
        raise RetryWithFeedback("Try again.")

    agent = Dispatcher([picky, echo, aecho], max_workers=8)
    sessions = [agent.session() for _ in range(50)]

    async def conversation(number: int) -> list[str]:
        session = sessions[number]
        whose.set(f"conversation {number}")
        texts = []
        for step in range(4):
            round_ = await session.arun(
                [
                    ToolCall(name="picky", arguments={"tag": "x"}, id="p"),
                    ToolCall(name="echo", arguments={"tag": str(step)}, id="e"),
                    ToolCall(name="aecho", arguments={"tag": str(step)}, id="a"),
                ]
            )
            picky_result, echoed, aechoed = round_.results
            assert echoed.content == f"{step}|conversation {number}"
            assert aechoed.content == f"{step}|conversation {number}"
            texts.append(picky_result.text)
        return texts

    async def plain(n: int) -> None:
        result = await agent.adispatch(
            ToolCall(name="echo", arguments={"tag": str(n)}), offload=True
        )
        assert result.content == f"{n}|nobody"

    outcomes = await asyncio.wait_for(
        asyncio.gather(*(conversation(n) for n in range(50)), *(plain(n) for n in range(2000))),
        timeout=JOIN_TIMEOUT,
    )
    for texts in outcomes[:50]:
        assert texts is not None  # the conversations' results; plain() returns None
        assert texts[0] == "Try again. (retry 1 of 2)"
        assert texts[1] == "Try again. (retry 2 of 2)"
        assert re.search("too many times", texts[2]) and re.search("too many times", texts[3])
    assert asyncio.all_tasks() == {asyncio.current_task()}
    agent.close()
    assert_threads_back_to(thread_baseline)


def test_async_rounds_from_many_threads_each_on_its_own_loop(
    thread_baseline: frozenset[threading.Thread],
) -> None:
    """``run()`` of async tools makes a loop per call: 32 threads, 32 loops, no mixing."""
    agents = make_agents([aecho, aboom])

    def worker(number: int) -> None:
        whose.set(f"thread {number}")
        for step in range(10):
            index = (number + step) % AGENTS
            tag = f"{number}.{step}"
            ok, failed = (
                agents[index]
                .run(
                    [
                        ToolCall(name="aecho", arguments={"tag": tag}),
                        ToolCall(name="aboom", arguments={"tag": tag}),
                    ]
                )
                .results
            )
            assert ok.content == f"{tag}|thread {number}"
            assert failed.content == expected_failure(index, failed)

    assert run_threads(worker) == []
    for agent in agents:
        agent.close()
    assert_threads_back_to(thread_baseline)
