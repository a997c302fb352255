"""Retries, timeouts, model retries (RetryWithFeedback) and circuit breakers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import Any

import pytest
from structlog.testing import capture_logs

import toolguard
from tests._content import str_content
from tests._stuck import Stuck
from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    Retry,
    RetryWithFeedback,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolTimeout,
    tool,
)
from toolguard.handlers import always, on

# Every case runs under each tool's own plan and under the general plan (conftest).
pytestmark = pytest.mark.usefixtures("plans")


class FakeTime:
    """An injected clock and sleep: no real waiting in tests."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds

    def clock(self) -> float:
        return self.now


def _flaky(
    failures: list[BaseException], name: str = "flaky"
) -> tuple[Callable[[], str], list[int]]:
    """A tool that raises each of ``failures`` in turn, then succeeds."""
    runs: list[int] = []

    def body() -> str:
        runs.append(1)
        if len(runs) <= len(failures):
            raise failures[len(runs) - 1]
        return f"ok after {len(runs)}"

    return body, runs


# --- retries ---------------------------------------------------------------------------


def test_transient_failures_are_retried_with_exponential_backoff() -> None:
    fake = FakeTime()
    body, runs = _flaky([ConnectionError("a"), ConnectionError("b"), ConnectionError("c")])
    retry = Retry(attempts=5, initial=1, max_delay=3, jitter=0, sleep=fake.sleep)
    result = Dispatcher([tool(name="flaky", retries=retry)(body)]).dispatch(ToolCall(name="flaky"))
    assert result.content == "ok after 4"
    assert len(runs) == 4
    assert fake.sleeps == [1.0, 2.0, 3.0]  # doubling, capped at max_delay


def test_jitter_stays_within_its_bound() -> None:
    fake = FakeTime()
    body, _ = _flaky([ConnectionError()] * 4)
    retry = Retry(attempts=5, initial=1, max_delay=1, jitter=0.25, sleep=fake.sleep)
    Dispatcher([tool(name="flaky", retries=retry)(body)]).dispatch(ToolCall(name="flaky"))
    assert len(fake.sleeps) == 4
    assert all(1.0 <= s <= 1.25 for s in fake.sleeps)


@pytest.mark.parametrize(
    "error",
    [ValueError("not listed"), ToolError("visible"), RetryWithFeedback("fix it")],
)
def test_only_listed_types_are_retried_never_visible_errors(error: Exception) -> None:
    fake = FakeTime()
    body, runs = _flaky([error])
    retry = Retry(attempts=3, on=(Exception,), sleep=fake.sleep)
    if isinstance(error, ValueError):
        retry = Retry(attempts=3, sleep=fake.sleep)  # default: transient errors only
    result = Dispatcher([tool(name="flaky", retries=retry)(body)]).dispatch(ToolCall(name="flaky"))
    assert result.is_error
    assert runs == [1]
    assert fake.sleeps == []


@pytest.mark.parametrize("error_type", [KeyboardInterrupt, ControlFlow])
def test_control_flow_is_never_retried(error_type: type[BaseException]) -> None:
    fake = FakeTime()
    body, runs = _flaky([error_type("stop")])
    retry = Retry(attempts=3, on=lambda e: True, sleep=fake.sleep)
    with pytest.raises(error_type):
        Dispatcher([tool(name="flaky", retries=retry)(body)]).dispatch(ToolCall(name="flaky"))
    assert runs == [1]


def test_exhausted_retries_reach_the_handler_chain_with_the_last_error_logged_once(
    logs: list[dict[str, Any]],
) -> None:
    fake = FakeTime()
    body, runs = _flaky([ConnectionError(f"attempt {i}") for i in range(1, 10)])
    guarded = tool(
        name="flaky",
        retries=Retry(attempts=3, jitter=0, sleep=fake.sleep),
        on_error=on(ConnectionError, "Still down ({error_id})."),
    )(body)
    result = Dispatcher([guarded]).dispatch(ToolCall(name="flaky", id="c1"))
    assert result.content == f"Still down ({result.error_id})."
    assert len(runs) == 3
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1
    assert hidden[0]["attempts"] == 3
    assert str(hidden[0]["exc_info"]) == "attempt 3"
    retried = [e for e in logs if e["event"] == "tool_retry"]
    assert [(e["attempt"], e["log_level"], e["error_type"]) for e in retried] == [
        (1, "debug", "ConnectionError"),
        (2, "debug", "ConnectionError"),
    ]


def test_total_time_caps_retries_with_an_injected_clock() -> None:
    fake = FakeTime()
    body, runs = _flaky([ConnectionError()] * 10)
    retry = Retry(
        attempts=10, initial=2, max_delay=2, jitter=0, total=5, sleep=fake.sleep, clock=fake.clock
    )
    result = Dispatcher([tool(name="flaky", retries=retry)(body)]).dispatch(ToolCall(name="flaky"))
    assert result.is_error
    assert fake.sleeps == [2.0, 2.0, 2.0]  # at t=6 the 5 s budget is spent
    assert len(runs) == 4


def test_async_tools_are_retried_too() -> None:
    fake = FakeTime()
    attempts: list[int] = []

    @tool(retries=Retry(attempts=3, jitter=0, sleep=fake.sleep))
    async def fetch() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            raise TimeoutError("slow network")
        return "fetched"

    result = asyncio.run(Dispatcher([fetch]).adispatch(ToolCall(name="fetch")))
    assert result.content == "fetched"
    assert fake.sleeps == [0.5, 1.0]


def test_a_call_cancelled_while_it_waits_to_retry_logs_the_cause_it_was_retrying() -> None:
    # a sibling's failure ends the run (asyncio.run cancels what is left): the failed
    # attempt's cause is answered nowhere, and must not vanish from the log
    raised: list[Exception] = []
    waiting = asyncio.Event()

    async def wait_forever(seconds: float) -> None:
        waiting.set()
        await asyncio.Event().wait()

    @tool(retries=Retry(attempts=3, jitter=0, sleep=wait_forever))
    async def fetch() -> str:
        raised.append(ConnectionError("vault said no"))
        raise raised[-1]

    async def main() -> None:
        call = asyncio.create_task(Dispatcher([fetch]).adispatch(ToolCall(name="fetch", id="c1")))
        await waiting.wait()
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    with capture_logs() as logs:
        asyncio.run(main())
    [cancelled] = [e for e in logs if e["event"] == "tool_call_cancelled"]
    assert cancelled["exc_info"] is raised[0]
    assert (cancelled["tool"], cancelled["call_id"], cancelled["attempt"]) == ("fetch", "c1", 1)
    assert cancelled["log_level"] == "debug"
    assert [e["event"] for e in logs if "exc_info" in e] == ["tool_call_cancelled"]


def test_a_failure_that_ends_as_its_call_is_cancelled_is_logged_not_lost() -> None:
    # the tool (a task of its own, under a timeout) fails in the very turn its caller is
    # cancelled (asyncio.run cancels every task at once): the caller never reads it
    calls: list[asyncio.Task[Any]] = []
    raised: list[Exception] = []

    @tool(timeout=5)
    async def fetch() -> str:
        calls[0].cancel()
        raised.append(ConnectionError("vault said no"))
        raise raised[-1]

    async def main() -> None:
        calls.append(asyncio.create_task(Dispatcher([fetch]).adispatch(ToolCall(name="fetch"))))
        with pytest.raises(asyncio.CancelledError):
            await calls[0]

    with capture_logs() as logs:
        asyncio.run(main())
    [cancelled] = [e for e in logs if e["event"] == "tool_call_cancelled"]
    assert cancelled["exc_info"] is raised[0]
    assert cancelled["attempt"] == 1


def test_an_interrupted_sync_retry_logs_the_cause_once_and_a_finished_one_logs_none() -> None:
    def interrupt(seconds: float) -> None:
        raise KeyboardInterrupt

    body, _ = _flaky([ConnectionError("first"), ConnectionError("second")])
    flaky = tool(name="flaky", retries=Retry(attempts=3, jitter=0, sleep=interrupt))(body)
    with capture_logs() as logs, pytest.raises(KeyboardInterrupt):
        Dispatcher([flaky]).dispatch(ToolCall(name="flaky"))
    [cancelled] = [e for e in logs if e["event"] == "tool_call_cancelled"]
    assert str(cancelled["exc_info"]) == "first"

    fake = FakeTime()
    body, _ = _flaky([ConnectionError("first")])
    flaky = tool(name="flaky", retries=Retry(attempts=3, jitter=0, sleep=fake.sleep))(body)
    with capture_logs() as logs:
        assert Dispatcher([flaky]).dispatch(ToolCall(name="flaky")).content == "ok after 2"
    assert not [e for e in logs if e["event"] == "tool_call_cancelled"]


def test_an_unused_retry_policy_runs_the_tool_once_and_builds_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import tenacity

    built: list[int] = []
    monkeypatch.setattr(tenacity.Retrying, "__init__", lambda *a, **k: built.append(1))
    body, runs = _flaky([])
    Dispatcher([tool(name="ok", retries=3)(body)]).dispatch(ToolCall(name="ok"))
    assert runs == [1]
    assert built == []


@pytest.mark.parametrize(
    ("value", "expected"),
    [(0, None), (2, Retry(attempts=3)), (None, None), (Retry(attempts=2), Retry(attempts=2))],
)
def test_retries_option_forms(value: Any, expected: Any) -> None:
    assert ToolPolicy(retries=value).retries == expected


@pytest.mark.parametrize("bad", [-1, "3", 1.5, True])
def test_bad_retries_are_refused_at_decoration(bad: Any) -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="retries="):
        tool(name="t", retries=bad)(lambda: None)


def test_bad_retry_values_are_refused() -> None:
    with pytest.raises(ValueError, match="attempts=0"):
        Retry(attempts=0)
    with pytest.raises(ValueError, match="use exception classes or a predicate"):
        Retry(on=("ConnectionError",))  # type: ignore[arg-type]  # a name, not a class


# --- timeouts --------------------------------------------------------------------------


def test_a_slow_sync_tool_times_out_with_a_visible_toolguard_message() -> None:
    release = threading.Event()

    @tool(timeout=0.05)
    def search(query: str) -> str:
        release.wait(5)
        return "late"

    with Dispatcher([search]) as dispatcher:
        result = dispatcher.dispatch(ToolCall(name="search", arguments={"query": "q"}))
        release.set()
    assert result.is_error
    assert str_content(result).startswith("The tool 'search' did not finish within 0.05 s.")
    assert result.error_id is None


def test_a_timed_out_sync_tool_does_not_hold_up_its_round() -> None:
    """The round is answered while the overrun attempt is still stuck."""
    wedge = Stuck()

    @tool(timeout=0.1)
    def stuck() -> str:
        wedge.wait()
        return "late"

    @tool
    def quick() -> str:
        return "quick"

    dispatcher = Dispatcher([stuck, quick])
    try:
        round_ = dispatcher.run([ToolCall(name="stuck"), ToolCall(name="quick")])
        assert [r.is_error for r in round_.results] == [True, False]
        assert not wedge.finished.is_set()
    finally:
        wedge.release.set()
        dispatcher.close()


def test_a_slow_async_tool_is_cancelled() -> None:
    cancelled: list[bool] = []

    @tool(timeout=0.05)
    async def crawl() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "late"

    result = asyncio.run(Dispatcher([crawl]).adispatch(ToolCall(name="crawl")))
    assert str_content(result).startswith("The tool 'crawl' did not finish within 0.05 s.")
    assert cancelled == [True]


def test_a_timeout_error_raised_by_the_tool_itself_is_not_reported_as_a_timeout() -> None:
    @tool(timeout=5)
    async def own() -> str:
        raise TimeoutError("socket timeout with a secret")

    result = asyncio.run(Dispatcher([own]).adispatch(ToolCall(name="own")))
    assert "did not finish" not in result.content
    assert "secret" not in result.content
    assert result.error_id


def test_the_handler_chain_can_override_the_timeout_message() -> None:
    # toolguard's timeout message is model-visible: a plain string keeps it, always() replaces it
    @tool(
        timeout=0.01,
        on_error=on(ToolTimeout, always("Search is slow today; try a narrower query.")),
    )
    async def search() -> str:
        await asyncio.sleep(1)
        return "late"

    result = asyncio.run(Dispatcher([search]).adispatch(ToolCall(name="search")))
    assert result.content == "Search is slow today; try a narrower query."


def test_timeouts_apply_per_attempt_and_compose_with_retries() -> None:
    fake = FakeTime()
    attempts: list[int] = []

    @tool(timeout=0.05, retries=Retry(attempts=3, jitter=0, sleep=fake.sleep))
    async def sometimes_slow() -> str:
        attempts.append(1)
        if len(attempts) < 3:
            await asyncio.sleep(1)
        return "fast this time"

    result = asyncio.run(Dispatcher([sometimes_slow]).adispatch(ToolCall(name="sometimes_slow")))
    assert result.content == "fast this time"
    assert len(attempts) == 3


@pytest.mark.parametrize("bad", [0, -1, "5", True])
def test_bad_timeouts_are_refused(bad: Any) -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="timeout="):
        tool(name="t", timeout=bad)(lambda: None)


# --- asking the model to retry ----------------------------------------------------------


@tool(max_model_retries=2)
def lookup(query: str) -> str:
    if not query.isdigit():
        raise RetryWithFeedback("Send the order number as digits only, e.g. '42'.")
    return f"order {query}"


def test_retry_with_feedback_counts_per_session_and_says_so() -> None:
    session = Dispatcher([lookup]).session()
    call = ToolCall(name="lookup", arguments={"query": "forty-two"})
    first, second, third = (session.dispatch(call) for _ in range(3))
    assert first.content == "Send the order number as digits only, e.g. '42'. (retry 1 of 2)"
    assert str_content(second).endswith("(retry 2 of 2)")
    assert str_content(third).startswith(
        "The tool 'lookup' was called incorrectly too many times (2 retries are allowed"
    )
    assert third.error_id is not None
    assert session.state("lookup").model_retries == 3


def test_successes_do_not_reset_the_budget_silently() -> None:
    session = Dispatcher([lookup]).session()
    bad = ToolCall(name="lookup", arguments={"query": "x"})
    good = ToolCall(name="lookup", arguments={"query": "1"})
    session.dispatch(bad)
    assert session.dispatch(good).content == "order 1"
    assert str_content(session.dispatch(bad)).endswith("(retry 2 of 2)")
    session.reset("lookup")
    assert str_content(session.dispatch(bad)).endswith("(retry 1 of 2)")


def test_parallel_calls_of_one_tool_in_one_step_count_once() -> None:
    session = Dispatcher([lookup]).session()
    round_ = session.run([ToolCall(name="lookup", arguments={"query": q}) for q in "abc"])
    assert [str_content(r)[-14:] for r in round_.results] == ["(retry 1 of 2)"] * 3
    assert session.state("lookup").model_retries == 1


def test_without_a_session_the_message_is_sent_as_is() -> None:
    result = Dispatcher([lookup]).dispatch(ToolCall(name="lookup", arguments={"query": "x"}))
    assert result.content == "Send the order number as digits only, e.g. '42'."


def test_exhausted_budget_can_fail_the_invocation() -> None:
    session = Dispatcher(
        [lookup],
        overrides={"lookup": ToolPolicy(max_model_retries=0, model_retries_exhausted="fail")},
    ).session()
    with pytest.raises(ToolCallFailed) as caught:
        session.dispatch(ToolCall(name="lookup", arguments={"query": "x"}))
    assert isinstance(caught.value.__cause__, toolguard.ModelRetriesExhausted)


def test_exhausted_budget_can_stop_the_round() -> None:
    session = Dispatcher(
        [lookup],
        model_retries_exhausted="stop",
        overrides={"lookup": ToolPolicy(max_model_retries=0)},
    ).session()
    round_ = session.run([ToolCall(name="lookup", arguments={"query": "x"})])
    assert round_.stop
    assert round_.final is round_.results[0]
    assert round_.final.is_error


def test_sessions_on_one_dispatcher_never_share_counts() -> None:
    dispatcher = Dispatcher([lookup])
    sessions = [dispatcher.session() for _ in range(8)]
    barrier = threading.Barrier(8)
    contents: dict[int, list[str]] = {}

    def converse(index: int) -> None:
        barrier.wait()
        contents[index] = [
            str_content(sessions[index].dispatch(ToolCall(name="lookup", arguments={"query": "x"})))
            for _ in range(2)
        ]

    threads = [threading.Thread(target=converse, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert all(
        [c[-14:] for c in contents[i]] == ["(retry 1 of 2)", "(retry 2 of 2)"] for i in range(8)
    )


def test_sessions_in_concurrent_tasks_never_share_counts() -> None:
    dispatcher = Dispatcher([lookup])

    async def converse() -> list[str]:
        session = dispatcher.session()
        out = []
        for _ in range(2):
            await asyncio.sleep(0)
            result = await session.adispatch(ToolCall(name="lookup", arguments={"query": "x"}))
            out.append(str_content(result)[-14:])
        return out

    async def main() -> list[list[str]]:
        return await asyncio.gather(*(converse() for _ in range(50)))

    assert asyncio.run(main()) == [["(retry 1 of 2)", "(retry 2 of 2)"]] * 50


# --- circuit breaker ----------------------------------------------------------------------


def test_breaker_opens_short_circuits_and_closes_after_the_cooldown(
    logs: list[dict[str, Any]],
) -> None:
    fake = FakeTime()
    healthy = [False]
    runs: list[int] = []

    @tool(breaker=Breaker(failures=2, cooldown=30))
    def search() -> str:
        runs.append(1)
        if not healthy[0]:
            raise ConnectionError("down")
        return "results"

    session = Dispatcher([search]).session(clock=fake.clock)
    call = ToolCall(name="search")
    assert session.dispatch(call).error_id is not None
    assert session.dispatch(call).error_id is not None
    assert len(runs) == 2
    blocked = session.dispatch(call)
    assert len(runs) == 2  # not run while open
    assert str_content(blocked).startswith(
        "The tool 'search' is unavailable: it failed 2 times in a row. "
        "Do not call it again for about 30 s"
    )
    fake.now += 31
    healthy[0] = True
    assert session.dispatch(call).content == "results"  # the trial call closes it
    assert session.dispatch(call).content == "results"
    events = [e["event"] for e in logs if e["event"].startswith("breaker")]
    assert events == ["breaker_opened", "breaker_closed"]


def test_a_failed_trial_reopens_the_breaker() -> None:
    fake = FakeTime()

    @tool(breaker=Breaker(failures=1, cooldown=10))
    def search() -> str:
        raise ConnectionError("down")

    session = Dispatcher([search]).session(clock=fake.clock)
    call = ToolCall(name="search")
    session.dispatch(call)
    fake.now += 11
    assert session.dispatch(call).error_id is not None  # the trial ran and failed
    assert "unavailable" in session.dispatch(call).content
    assert session.state("search").open_until == 21


def test_visible_errors_and_bad_arguments_do_not_trip_the_breaker() -> None:
    @tool(breaker=Breaker(failures=1, cooldown=10))
    def find(order: int) -> str:
        raise ToolError("No such order.")

    session = Dispatcher([find]).session()
    for _ in range(3):
        assert session.dispatch(ToolCall(name="find", arguments={"order": 1})).content == (
            "No such order."
        )
        session.dispatch(ToolCall(name="find", arguments={"order": "x"}))
    assert session.state("find").consecutive_failures == 0


def test_breakers_belong_to_one_session() -> None:
    @tool(breaker=Breaker(failures=1, cooldown=60))
    def search() -> str:
        raise ConnectionError("down")

    dispatcher = Dispatcher([search])
    first, second = dispatcher.session(), dispatcher.session()
    first.dispatch(ToolCall(name="search"))
    assert "unavailable" in first.dispatch(ToolCall(name="search")).content
    assert "unavailable" not in second.dispatch(ToolCall(name="search")).content


def test_explain_shows_the_resilience_settings() -> None:
    retry = Retry(attempts=2)

    @tool(retries=retry, timeout=3)
    def search() -> str:
        return "x"

    explained = Dispatcher([search], breaker=Breaker()).explain("search")
    assert explained["retries"] == toolguard.Setting(retry, "tool")
    assert explained["timeout"] == toolguard.Setting(3.0, "tool")
    assert explained["breaker"] == toolguard.Setting(Breaker(), "agent")
    assert explained["max_model_retries"] == toolguard.Setting(None, "builtin")
