"""Eight real processes sharing one Redis server: one breaker, one budget, one trial.

Each worker is a forked process with its own dispatcher and its own client (as a
fleet behind a load balancer has); they meet only in the server. What the tool did is
counted on the server too (``INCR``), so the count is the fleet's, not one process's.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
import uuid
from collections.abc import Iterator
from multiprocessing.synchronize import Barrier
from typing import Any

import pytest
import redis

from tests._content import str_content
from tests._redis_server import RedisServer
from toolguard import Breaker, Dispatcher, RetryWithFeedback, ToolCall, tool
from toolguard.stores import RedisStore

PROCESSES = 8
THRESHOLD = 3
CONTEXT = multiprocessing.get_context("fork")


@pytest.fixture
def fleet(redis_server: RedisServer) -> Iterator[dict[str, Any]]:
    """Where this test's workers meet: the server, a fresh agent name, a counter key."""
    agent = f"fleet-{uuid.uuid4().hex[:8]}"
    admin = redis.Redis.from_url(redis_server.url, decode_responses=True)
    yield {"url": redis_server.url, "agent": agent, "runs": f"runs:{agent}", "admin": admin}
    admin.close()


def _dispatcher(url: str, runs_key: str, cooldown: float) -> Dispatcher:
    counter = redis.Redis.from_url(url)

    @tool(breaker=Breaker(failures=THRESHOLD, cooldown=cooldown))
    def flaky(hold: float = 0.0) -> str:
        """Counts its runs on the server; fails unless the server says "ok"; may hang."""
        counter.incr(runs_key)
        if hold:
            time.sleep(hold)
        if counter.get(f"{runs_key}:mode") == b"ok":
            return "fine"
        raise ConnectionError("backend down")

    @tool(max_model_retries=100)
    def ask(query: str) -> str:
        """Asks the model to try again."""
        raise RetryWithFeedback("try again")

    return Dispatcher([flaky, ask])


def _store(url: str, agent: str, fleet_wide: bool = False) -> RedisStore:
    return RedisStore.from_url(
        url, agent=agent, timeout=2.0, max_wait=4.0, fleet_breakers=fleet_wide
    )


def _calls_worker(
    url: str,
    agent: str,
    runs_key: str,
    barrier: Barrier,
    calls: int,
    cooldown: float,
    out: Any,
    fleet_wide: bool,
    hold: float,
) -> None:
    """``calls`` calls, each its own model step: of one shared session, or (a fleet-wide
    breaker) of a session of this process's own."""
    dispatcher = _dispatcher(url, runs_key, cooldown)
    session_id = f"process-{os.getpid()}" if fleet_wide else "shared"
    session = dispatcher.session(id=session_id, store=_store(url, agent, fleet_wide))
    barrier.wait()
    answers = [
        str_content(session.dispatch(ToolCall(name="flaky", arguments={"hold": hold})))
        for _ in range(calls)
    ]
    out.put(answers)


def _run(
    fleet: dict[str, Any],
    calls: int,
    cooldown: float,
    fleet_wide: bool = False,
    hold: float = 0.0,
) -> list[str]:
    barrier = CONTEXT.Barrier(PROCESSES)
    out = CONTEXT.Queue()
    workers = [
        CONTEXT.Process(
            target=_calls_worker,
            args=(
                fleet["url"],
                fleet["agent"],
                fleet["runs"],
                barrier,
                calls,
                cooldown,
                out,
                fleet_wide,
                hold,
            ),
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    answers = [answer for _ in workers for answer in out.get(timeout=60)]
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    return answers


def _runs(fleet: dict[str, Any]) -> int:
    return int(fleet["admin"].get(fleet["runs"]) or 0)


@pytest.mark.parametrize("fleet_wide", [False, True], ids=["one-session", "fleet-breaker"])
def test_eight_processes_run_a_failing_tool_at_most_threshold_plus_seven_times(
    fleet: dict[str, Any], fleet_wide: bool
) -> None:
    """One session shared by 8 processes, or 8 sessions under one fleet-wide breaker."""
    answers = _run(fleet, calls=5, cooldown=60, fleet_wide=fleet_wide)
    assert len(answers) == 40
    assert THRESHOLD <= _runs(fleet) <= THRESHOLD + PROCESSES - 1
    assert sum("unavailable" in a for a in answers) == 40 - _runs(fleet)


def test_one_trial_per_cooldown_a_failed_one_reopens_a_good_one_closes(
    fleet: dict[str, Any],
) -> None:
    cooldown = 3.0  # long enough for 8 forked processes to ask again within one
    _run(fleet, calls=1, cooldown=cooldown)  # 8 failures: open
    before = _runs(fleet)
    time.sleep(cooldown + 0.1)
    answers = _run(fleet, calls=1, cooldown=cooldown, hold=0.5)  # all at once, past the cool-down
    assert _runs(fleet) - before == 1  # exactly one trial ran, and it failed
    assert sum("unavailable" in a for a in answers) == PROCESSES - 1
    answers = _run(fleet, calls=1, cooldown=cooldown)  # reopened at once: nobody runs
    assert _runs(fleet) - before == 1 and all("unavailable" in a for a in answers)
    time.sleep(cooldown + 0.1)
    fleet["admin"].set(f"{fleet['runs']}:mode", "ok")
    answers = _run(fleet, calls=1, cooldown=cooldown, hold=0.5)  # the others ask meanwhile
    assert _runs(fleet) - before == 2  # one trial, a success
    assert answers.count("fine") == 1
    assert _run(fleet, calls=1, cooldown=cooldown) == ["fine"] * PROCESSES  # closed


def _budget_worker(url: str, agent: str, barrier: Barrier, step: str | None, out: Any) -> None:
    dispatcher = _dispatcher(url, "unused", 60)
    session = dispatcher.session(id="shared", store=_store(url, agent))
    barrier.wait()
    result = session.dispatch(ToolCall(name="ask", arguments={"query": "x"}), step=step)
    out.put(str_content(result))


def _budget(fleet: dict[str, Any], same_step: bool) -> list[str]:
    barrier = CONTEXT.Barrier(PROCESSES)
    out = CONTEXT.Queue()
    workers = [
        CONTEXT.Process(
            target=_budget_worker,
            args=(fleet["url"], fleet["agent"], barrier, "message-1" if same_step else None, out),
        )
        for _ in range(PROCESSES)
    ]
    for worker in workers:
        worker.start()
    answers = [out.get(timeout=60) for _ in workers]
    for worker in workers:
        worker.join(timeout=30)
    return answers


def test_eight_distinct_steps_count_one_to_eight(fleet: dict[str, Any]) -> None:
    answers = _budget(fleet, same_step=False)
    assert sorted(answers) == sorted(f"try again (retry {n} of 100)" for n in range(1, 9))


def test_one_step_replayed_by_eight_processes_counts_once(fleet: dict[str, Any]) -> None:
    answers = _budget(fleet, same_step=True)
    assert answers == ["try again (retry 1 of 100)"] * PROCESSES


def _prober(url: str, agent: str, runs_key: str, cooldown: float) -> None:
    dispatcher = _dispatcher(url, runs_key, cooldown)
    session = dispatcher.session(id="shared", store=_store(url, agent))
    session.dispatch(ToolCall(name="flaky", arguments={"hold": 60}))  # killed in here


def test_a_prober_killed_mid_trial_blocks_others_only_until_its_lease_ends(
    fleet: dict[str, Any],
) -> None:
    cooldown = 4.0
    _run(fleet, calls=1, cooldown=cooldown)  # open
    time.sleep(cooldown + 0.1)
    before = _runs(fleet)
    prober = CONTEXT.Process(
        target=_prober, args=(fleet["url"], fleet["agent"], fleet["runs"], cooldown)
    )
    prober.start()
    deadline = time.monotonic() + 10
    while _runs(fleet) == before and time.monotonic() < deadline:  # the trial has started
        time.sleep(0.01)
    leased_at = time.monotonic()
    assert prober.pid is not None
    os.kill(prober.pid, signal.SIGKILL)
    prober.join(timeout=10)
    assert prober.exitcode == -signal.SIGKILL
    answers = _run(fleet, calls=1, cooldown=cooldown)  # within the lease: all refused
    assert time.monotonic() - leased_at < cooldown - 0.1, "too slow to test within the lease"
    assert all("unavailable" in a for a in answers)
    assert _runs(fleet) == before + 1
    time.sleep(max(0.0, leased_at + cooldown + 0.1 - time.monotonic()))
    before = _runs(fleet)
    answers = _run(fleet, calls=1, cooldown=cooldown)  # the lease ended: one new trial
    assert _runs(fleet) - before == 1
    assert sum("unavailable" in a for a in answers) == PROCESSES - 1
