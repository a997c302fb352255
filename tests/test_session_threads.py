"""A session's breaker lease and model-retry budgets under threads: exact counts.

Several threads run ``session.run`` rounds on one session at once (as a server
answering one conversation's parallel requests does). The documented rules hold
exactly, not on average:

* after the cool-down, one trial runs however many threads ask at once, and every
  other call is answered unavailable without running; the trial's outcome decides
  (success closes, failure re-opens), and a trial that never reports holds its lease
  for one cool-down, then one new trial runs;
* consecutive failures are counted one by one, whoever reports them;
* a model step that raised ``RetryWithFeedback`` counts once against the budget,
  however its calls and other threads' steps interleave, and however many other
  steps count while it is still running.

Every wait here is bounded: a wedged session fails the test instead of hanging it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Any

import pytest
from structlog.testing import capture_logs

from tests._content import str_content
from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    RetryWithFeedback,
    Round,
    Session,
    ToolCall,
    ToolPolicy,
    ToolResult,
    tool,
)

THREADS = 16
WAIT = 10.0  # seconds any one wait may take before the test fails


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Handoff(ControlFlow):
    pass


def retry_number(result: ToolResult) -> int:
    """The ``i`` of a feedback result's ``"(retry i of n)"``."""
    return int(str_content(result).rsplit("retry ", 1)[1].split(" of")[0])


def breaker_events(events: list[Any], name: str) -> list[Any]:
    return [e for e in events if e["event"] == name]


def run_together(count: int, work: Callable[[int], Any]) -> list[Future[Any]]:
    """Start ``count`` threads on ``work`` behind one barrier; their futures."""
    barrier = threading.Barrier(count, timeout=WAIT)

    def start(index: int) -> Any:
        barrier.wait()
        return work(index)

    pool = ThreadPoolExecutor(count)
    futures = [pool.submit(start, index) for index in range(count)]
    pool.shutdown(wait=False)
    return futures


def wait_for(futures: list[Future[Any]], done_count: int) -> set[Future[Any]]:
    """Wait until ``done_count`` of ``futures`` are done (bounded); the done ones."""
    done: set[Future[Any]] = set()
    pending = set(futures)
    while len(done) < done_count:
        finished, pending = wait(pending, timeout=WAIT, return_when=FIRST_COMPLETED)
        assert finished, f"only {len(done)} of {done_count} threads were answered in time"
        done |= finished
    return done


# --- the breaker's trial is a lease: one at a time ----------------------------------------


def _opened_session(
    outcome: dict[str, str], entered: threading.Event, release: threading.Event
) -> tuple[Dispatcher, Session, Clock]:
    @tool(breaker=Breaker(failures=1, cooldown=10), check_docstring=False)
    def flaky() -> str:
        if outcome["mode"] == "fail":
            raise ConnectionError("upstream down")
        entered.set()
        assert release.wait(WAIT)
        if outcome["mode"] == "trial_fails":
            raise ConnectionError("still down")
        if outcome["mode"] == "trial_hands_off":
            raise Handoff("to the billing agent")
        return "up"

    @tool(max_model_retries=1_000, check_docstring=False)
    def search(query: str) -> str:
        raise RetryWithFeedback("Use quotes around phrases.")

    clock = Clock()
    dispatcher = Dispatcher([flaky, search])
    session = dispatcher.session(clock=clock)
    return dispatcher, session, clock


def _round(session: Session) -> Round:
    """One thread's round: the breaker's tool, and a feedback call beside it."""
    return session.run(
        [ToolCall(name="flaky", id="f"), ToolCall(name="search", arguments={"query": "q"})]
    )


@pytest.mark.parametrize("trial", ["succeeds", "trial_fails", "trial_hands_off"])
def test_one_trial_runs_when_many_threads_find_the_cool_down_over(trial: str) -> None:
    """16 threads' rounds reach an open breaker together after its cool-down: exactly
    one call is the trial, 15 are answered unavailable without running; success
    closes (``breaker_closed`` once), failure re-opens (``breaker_opened`` once more,
    for a new cool-down), a trial ending in control flow holds its lease one cool-down.
    Each round's feedback call counts once: 16 steps, 16 counts."""
    outcome = {"mode": "fail"}
    entered, release = threading.Event(), threading.Event()
    dispatcher, session, clock = _opened_session(outcome, entered, release)
    with dispatcher, capture_logs() as events:
        assert session.dispatch(ToolCall(name="flaky")).error_kind == "hidden"  # opens
        assert session.state("flaky").open_until == 10
        clock.now = 10.0
        outcome["mode"] = {"succeeds": "ok"}.get(trial, trial)
        try:
            futures = run_together(THREADS, lambda _: _round(session))
            # all but the trial's thread are answered while the trial is still running
            wait_for(futures, THREADS - 1)
            assert entered.is_set()
        finally:
            release.set()
        wait_for(futures, THREADS)
        rounds: list[Round] = []
        handed_off = 0
        for future in futures:
            error = future.exception()
            if error is not None:
                assert isinstance(error, Handoff)
                handed_off += 1
                continue
            rounds.append(future.result())
        unavailable = [r for r in rounds if r.results[0].error_kind == "unavailable"]
        assert len(unavailable) == THREADS - 1
        ran = [r for r in rounds if r.results[0].error_kind != "unavailable"]
        state = session.state("flaky")
        if trial == "succeeds":
            [only] = ran
            assert only.results[0].content == "up"
            assert state.open_until is None and state.consecutive_failures == 0
            assert len(breaker_events(events, "breaker_closed")) == 1
            assert len(breaker_events(events, "breaker_opened")) == 1
        elif trial == "trial_fails":
            [only] = ran
            assert only.results[0].error_kind == "hidden"
            assert state.open_until == 20 and state.consecutive_failures == 2
            assert [e["failures"] for e in breaker_events(events, "breaker_opened")] == [1, 2]
            assert not breaker_events(events, "breaker_closed")
        else:
            assert handed_off == 1 and not ran
            assert state.open_until == 10  # the trial never reported: the lease holds
            clock.now = 19.5  # within the lease: still unavailable
            assert session.dispatch(ToolCall(name="flaky")).error_kind == "unavailable"
        # every round's feedback call ran (the handed-off round's too), each round a
        # step of its own: 16 counts, and no two rounds told the same one
        counts = [retry_number(r.results[1]) for r in rounds]
        assert len(set(counts)) == len(counts)
        assert session.state("search").model_retries == THREADS


def test_after_an_expired_lease_exactly_one_new_trial_runs() -> None:
    """A trial that never reported (control flow) holds its lease one cool-down; then
    16 threads together get exactly one new trial, which closes the breaker."""
    outcome = {"mode": "fail"}
    entered, release = threading.Event(), threading.Event()
    dispatcher, session, clock = _opened_session(outcome, entered, release)
    with dispatcher:
        session.dispatch(ToolCall(name="flaky"))  # opens at 0
        clock.now = 10.0
        outcome["mode"] = "trial_hands_off"
        release.set()
        with pytest.raises(Handoff):
            session.dispatch(ToolCall(name="flaky"))  # the trial: its lease runs to 20
        release.clear()
        entered.clear()
        clock.now = 20.0
        outcome["mode"] = "ok"
        try:
            futures = run_together(THREADS, lambda _: _round(session))
            wait_for(futures, THREADS - 1)
            assert entered.is_set()
        finally:
            release.set()
        wait_for(futures, THREADS)
        kinds = sorted(str(f.result().results[0].error_kind) for f in futures)
        assert kinds == ["None"] + ["unavailable"] * (THREADS - 1)
        assert session.state("flaky").open_until is None


# --- consecutive failures are counted one by one -----------------------------------------------


def test_concurrent_failures_are_counted_one_by_one_and_then_no_call_runs() -> None:
    """16 calls that all passed the (closed) breaker fail together: the session counts
    16 consecutive failures, the breaker opened when the 5th was reported and each
    later report re-opened it (``breaker_opened`` with the counts 5 to 16, once each),
    and the next 16 concurrent calls are all answered unavailable without running."""
    barrier = threading.Barrier(THREADS, timeout=WAIT)
    ran = []

    @tool(breaker=Breaker(failures=5, cooldown=60), check_docstring=False)
    def down() -> str:
        ran.append(1)
        barrier.wait()  # every call is past the breaker before any fails
        raise ConnectionError("upstream down")

    clock = Clock()
    clock.now = 3.0
    with Dispatcher([down]) as dispatcher, capture_logs() as events:
        session = dispatcher.session(clock=clock)
        futures = run_together(THREADS, lambda _: session.run([ToolCall(name="down")]))
        wait_for(futures, THREADS)
        assert [f.result().results[0].error_kind for f in futures] == ["hidden"] * THREADS
        state = session.state("down")
        assert state.consecutive_failures == THREADS
        assert state.open_until == 63
        # logged outside the session's lock: in any order, but each count once
        opened = sorted(e["failures"] for e in breaker_events(events, "breaker_opened"))
        assert opened == list(range(5, THREADS + 1))
        ran.clear()
        futures = run_together(THREADS, lambda _: session.run([ToolCall(name="down")]))
        wait_for(futures, THREADS)
        assert [f.result().results[0].error_kind for f in futures] == ["unavailable"] * THREADS
        assert ran == []


# --- model-retry budgets: one count per step --------------------------------------------------


def test_rounds_from_many_threads_count_one_each_against_the_budget() -> None:
    """8 threads x 40 rounds of 3 parallel feedback calls: 320 steps, 320 counts. The
    lowest count a round's calls are told is its own step's: those are 1 to 320, each
    once."""

    @tool(max_model_retries=10_000, check_docstring=False)
    def search(query: str) -> str:
        raise RetryWithFeedback("Use quotes around phrases.")

    rounds_per_thread = 40
    with Dispatcher([search]) as dispatcher:
        session = dispatcher.session()

        def work(_: int) -> list[int]:
            seen = []
            for _ in range(rounds_per_thread):
                round_ = session.run(
                    [ToolCall(name="search", arguments={"query": q}, id=q) for q in "abc"]
                )
                seen.append(min(retry_number(r) for r in round_.results))
            return seen

        futures = run_together(8, work)
        wait_for(futures, 8)
        told = sorted(number for f in futures for number in f.result())
    assert session.state("search").model_retries == 8 * rounds_per_thread
    assert told == list(range(1, 8 * rounds_per_thread + 1))


def test_named_steps_reported_from_many_threads_count_once_each() -> None:
    """The in-place path: 8 threads report feedback for the same 50 named steps (a
    framework's model messages): 50 counts, not 400."""

    @tool(check_docstring=False)
    def local() -> str:
        return "x"

    dispatcher = Dispatcher(
        [local], external_tools=["ext"], overrides={"ext": ToolPolicy(max_model_retries=10_000)}
    )
    session = dispatcher.session()
    call = ToolCall(name="ext", id="e")

    def work(_: int) -> None:
        for index in range(50):
            session.handle_error(call, RetryWithFeedback("Use quotes."), step=f"msg-{index}")

    futures = run_together(8, work)
    wait_for(futures, 8)
    for future in futures:
        future.result()
    assert session.state("ext").model_retries == 50


def test_a_step_still_running_while_300_others_count_is_counted_once() -> None:
    """A round whose second feedback call is slow: while it runs, 300 other rounds
    (from 4 threads) count. When it finally reports, it is still the same step: 301
    counts in all."""
    release = threading.Event()

    @tool(max_model_retries=10_000, check_docstring=False)
    def search(query: str) -> str:
        if query == "slow":
            assert release.wait(WAIT)
        raise RetryWithFeedback("Use quotes around phrases.")

    calls = [ToolCall(name="search", arguments={"query": q}, id=q) for q in ("fast", "slow")]
    with Dispatcher([search]) as dispatcher:
        session = dispatcher.session()
        with ThreadPoolExecutor(1) as pool:
            first = pool.submit(session.run, calls)
            for _ in range(int(WAIT * 100)):  # its fast call has counted
                if session.state("search").model_retries:
                    break
                threading.Event().wait(0.01)
            assert session.state("search").model_retries == 1

            def work(_: int) -> None:
                for _ in range(75):
                    session.run([ToolCall(name="search", arguments={"query": "x"})])

            try:
                others = run_together(4, work)
                wait_for(others, 4)
            finally:
                release.set()
            round_ = first.result(timeout=WAIT)
    assert session.state("search").model_retries == 301
    assert [retry_number(r) for r in round_.results] == [1, 301]


def test_a_named_step_reported_again_after_300_others_is_not_counted_again() -> None:
    """The in-place path names its steps (a framework's model message); a session
    remembers 1024 of them. A step reported again after 300 other steps counted is
    the same step: it does not count again (and is told the budget used so far)."""

    @tool(check_docstring=False)
    def local() -> str:
        return "x"

    dispatcher = Dispatcher(
        [local], external_tools=["ext"], overrides={"ext": ToolPolicy(max_model_retries=10_000)}
    )
    session = dispatcher.session()
    call = ToolCall(name="ext", id="e")
    first = session.handle_error(call, RetryWithFeedback("Use quotes."), step="msg-0")
    for index in range(1, 301):
        session.handle_error(call, RetryWithFeedback("Use quotes."), step=f"msg-{index}")
    again = session.handle_error(call, RetryWithFeedback("Use quotes."), step="msg-0")
    assert session.state("ext").model_retries == 301
    assert str_content(first) == "Use quotes. (retry 1 of 10000)"
    assert str_content(again) == "Use quotes. (retry 301 of 10000)"
