"""The in-place pipeline (``toolguard.integrations.inplace``) and ``toolguard.Scope``.

Driven through a toy framework written here, as an integration author outside toolguard
would: its tools are plain functions returning ``Reply`` objects, it may answer a
problem itself (``Reply(error=True)``), and it has a signal of its own that must pass.
Every promise of the pipeline is pinned on both colours.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

import pydantic
import pytest
import structlog

from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    InvalidOption,
    Retry,
    Scope,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
)
from toolguard.handlers import always, fail, on
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call

SECRET = "password=hunter2"


@dataclass(frozen=True)
class Reply:
    """The toy framework's result object."""

    text: str
    error: bool = False
    stop: bool = False
    extra: str = "kept"


class Handoff(Exception):
    """The toy framework's own signal: it must pass through untouched."""


class ToyAdapter(Adapter[Reply]):
    def answer(self, call: ToolCall, result: ToolResult) -> Reply:
        return Reply(text=result.text, error=result.is_error, stop=result.return_direct)

    def passes(self, error: Exception) -> bool:
        return isinstance(error, Handoff)

    def own_error(self, outcome: Reply) -> str | None:
        return outcome.text if outcome.error else None

    def seen(self, outcome: Reply) -> object:
        return outcome.text

    def succeeded(self, call: ToolCall, outcome: Reply, result: ToolResult) -> Reply:
        if result.truncated:
            outcome = replace(outcome, text=result.text)
        if result.return_direct:
            outcome = replace(outcome, stop=True)
        return outcome

    def kept(self, call: ToolCall, outcome: Reply, result: ToolResult) -> Reply:
        return replace(outcome, stop=True) if result.return_direct else outcome


ADAPTER = ToyAdapter()
CALL = ToolCall(name="lookup", arguments={"q": "x"}, id="c1")


def both(scope: Scope, invoke: Callable[[], Reply], *, run: bool = True) -> tuple[Reply, Reply]:
    """The same call through the sync pipeline and the async one."""

    async def ainvoke() -> Reply:
        return invoke()

    sync = guard_call(scope, CALL, invoke, ADAPTER, run=run)
    asynchronous = asyncio.run(aguard_call(scope, CALL, ainvoke, ADAPTER, run=run))
    return sync, asynchronous


def raising(error: Exception) -> Callable[[], Reply]:
    def invoke() -> Reply:
        raise error

    return invoke


def test_a_success_comes_back_as_the_framework_returned_it() -> None:
    reply = Reply("found it")
    sync, asynchronous = both(Dispatcher([]).scope(), lambda: reply)
    assert sync is reply and asynchronous is reply


def test_a_hidden_failure_is_answered_in_the_frameworks_shape_and_logged_once() -> None:
    scope = Dispatcher([]).scope()
    with structlog.testing.capture_logs() as logs:
        sync, asynchronous = both(scope, raising(RuntimeError(SECRET)))
    for answer in (sync, asynchronous):
        assert answer.error and "internal error" in answer.text and SECRET not in answer.text
    hidden = [log for log in logs if log["event"] == "tool_error_hidden"]
    assert len(hidden) == 2 and all(log["tool"] == "lookup" for log in hidden)
    assert all(
        log["error_id"] in answer.text
        for log, answer in zip(hidden, (sync, asynchronous), strict=True)
    )


def test_a_model_visible_error_arrives_intact() -> None:
    sync, asynchronous = both(Dispatcher([]).scope(), raising(ToolError("No order 42.")))
    assert sync == asynchronous == Reply("No order 42.", error=True)


@pytest.mark.parametrize(
    "error",
    [
        Handoff("to billing"),
        ControlFlow("interrupt"),
        ToolCallFailed("x", tool="t", call_id=None, error_id="e"),
    ],
    ids=["framework-signal", "control-flow", "tool-call-failed"],
)
def test_signals_pass_untouched(error: Exception) -> None:
    scope = Dispatcher([]).scope()
    with pytest.raises(type(error)) as raised:
        guard_call(scope, CALL, raising(error), ADAPTER)
    assert raised.value is error

    async def ainvoke() -> Reply:
        raise error

    with pytest.raises(type(error)) as araised:
        asyncio.run(aguard_call(scope, CALL, ainvoke, ADAPTER))
    assert araised.value is error


def test_the_tools_own_error_result_is_kept_unlogged() -> None:
    own = Reply("The order service said: no such order.", error=True, extra="its own")
    with structlog.testing.capture_logs() as logs:
        sync, asynchronous = both(Dispatcher([]).scope(), lambda: own)
    assert sync is own and asynchronous is own
    assert [log for log in logs if log["log_level"] != "debug"] == []


def test_an_override_that_answers_replaces_the_tools_own_error_result() -> None:
    agent = Dispatcher([], overrides={"look*": ToolPolicy(on_error=always("Try later."))})
    sync, asynchronous = both(agent.scope(), lambda: Reply("raw text", error=True))
    assert sync == asynchronous == Reply("Try later.", error=True)


def test_the_frameworks_own_setting_answers_at_the_tool_level() -> None:
    class WithSetting(ToyAdapter):
        def tool_setting(self, call: ToolCall) -> ToolPolicy | None:
            return ToolPolicy(on_error=on(KeyError, "Unknown key (the tool's own word)."))

    agent = Dispatcher(
        [],
        on_error="fail",
        external_tools=["lookup"],
        overrides={"lookup": ToolPolicy(on_error=on(IndexError, "Override."))},
    )
    scope = agent.scope()
    assert guard_call(scope, CALL, raising(KeyError("k")), WithSetting()).text == (
        "Unknown key (the tool's own word)."
    )
    assert guard_call(scope, CALL, raising(IndexError("i")), WithSetting()).text == "Override."
    with pytest.raises(ToolCallFailed):  # neither answers: the agent's default does
        guard_call(scope, CALL, raising(ValueError("v")), WithSetting())


def test_content_is_cut_and_return_direct_decided_only_when_the_policy_says_so() -> None:
    agent = Dispatcher(
        [],
        external_tools=["lookup"],
        overrides={"lookup": ToolPolicy(max_result_chars=100, return_direct=True)},
    )
    long = Reply("x" * 500)
    sync, asynchronous = both(agent.scope(), lambda: long)
    for reply in (sync, asynchronous):
        assert reply.stop and reply.extra == "kept"
        assert reply.text.startswith("x" * 100) and "truncated" in reply.text


def test_an_open_breaker_answers_without_running_the_tool() -> None:
    agent = Dispatcher([], breaker=Breaker(failures=2, cooldown=60))
    session = agent.session(id="conversation")
    runs: list[int] = []

    def invoke() -> Reply:
        runs.append(1)
        raise RuntimeError("down")

    for step in ("m1", "m2", "m3"):
        guard_call(session.scope(step=step), CALL, invoke, ADAPTER)
    assert len(runs) == 2
    refused = asyncio.run(aguard_call(session.scope(step="m4"), CALL, _async(invoke), ADAPTER))
    assert len(runs) == 2 and refused.error and "unavailable" in refused.text


def test_the_sync_pipeline_on_a_worker_thread_answers_on_an_asyncio_store(
    redis_server: Any,
) -> None:
    # a framework running a sync tool on a worker thread under its async run (Agno,
    # Haystack, ...) reaches the sync scope methods: with a store on an asyncio client
    # they run their async twins on a loop of their own, and the breaker counts in Redis
    import uuid

    from toolguard.stores import RedisStore

    store = RedisStore.from_url(
        redis_server.url, asyncio=True, agent=f"bridge-{uuid.uuid4().hex[:8]}"
    )
    agent = Dispatcher([], breaker=Breaker(failures=2, cooldown=60))
    session = agent.session(id="conversation", store=store)
    runs: list[int] = []

    def invoke() -> Reply:
        runs.append(1)
        raise RuntimeError(SECRET)

    def play() -> list[Reply]:
        return [guard_call(session.scope(step=f"m{i}"), CALL, invoke, ADAPTER) for i in range(3)]

    async def run_on_a_thread() -> list[Reply]:
        return await asyncio.to_thread(play)

    first, second, refused = asyncio.run(run_on_a_thread())
    assert len(runs) == 2 and SECRET not in first.text + second.text
    assert refused.error and "unavailable" in refused.text
    assert session.scope().succeeded(CALL, "fine").content == "fine"  # no loop here: bridged

    async def on_the_loop() -> None:
        session.scope(step="m9").admit(CALL)  # would block every other task

    with pytest.raises(TypeError, match="use the scope's async methods"):
        asyncio.run(on_the_loop())


def _async(function: Callable[[], Reply]) -> Callable[[], Awaitable[Reply]]:
    async def run() -> Reply:
        return function()

    return run


def test_retries_rerun_the_frameworks_invocation() -> None:
    agent = Dispatcher([], retries=Retry(attempts=3, initial=0.001, jitter=0))
    attempts: list[int] = []

    def flaky() -> Reply:
        attempts.append(1)
        if len(attempts) < 3:
            raise ConnectionError("reset")
        return Reply("third time")

    assert guard_call(agent.scope(), CALL, flaky, ADAPTER) == Reply("third time")
    attempts.clear()
    assert asyncio.run(aguard_call(agent.scope(), CALL, _async(flaky), ADAPTER)) == Reply(
        "third time"
    )
    attempts.clear()  # run=False: the invocation once, as it is
    answer = guard_call(agent.scope(), CALL, flaky, ADAPTER, run=False)
    assert answer.error and len(attempts) == 1


def test_a_timeout_answers_at_the_deadline_while_the_tool_is_stuck() -> None:
    agent = Dispatcher([], timeout=0.05)
    release = threading.Event()

    def stuck() -> Reply:
        release.wait(30)
        return Reply("too late")

    try:
        answer = guard_call(agent.scope(), CALL, stuck, ADAPTER)
        assert not release.is_set()  # answered while the tool is still stuck
        assert answer == Reply(
            "The tool 'lookup' did not finish within 0.05 s. It may work if you try again "
            "later, or with a smaller request.",
            error=True,
        )
    finally:
        release.set()

    async def astuck() -> Reply:
        await asyncio.sleep(30)
        return Reply("too late")

    answer = asyncio.run(aguard_call(agent.scope(), CALL, astuck, ADAPTER))
    assert answer.error and answer.text.startswith("The tool 'lookup' did not finish within")


def test_an_unknown_tool_is_answered_in_toolguards_one_wording() -> None:
    scope = Dispatcher([]).scope()
    call = ToolCall(name="serch_web", arguments={}, id="c9")
    result = scope.unknown_tool(call, ["search_web", "lookup"])
    assert result.is_error and result.error_kind == "unknown_tool"
    assert result.content == (
        "There is no tool named 'serch_web' (did you mean 'search_web'?). "
        "Available tools: search_web, lookup."
    )
    assert asyncio.run(scope.aunknown_tool(call, ["search_web", "lookup"])).content == (
        result.content
    )


def test_a_frameworks_validation_error_is_worded_by_toolguard_bounded() -> None:
    """The model's own value is echoed only as a short excerpt; the problem is named."""

    class Args(pydantic.BaseModel):
        count: int

    try:
        Args.model_validate({"count": "y" * 10_000})
    except pydantic.ValidationError as error:
        invalid = Dispatcher([]).scope().invalid_arguments(CALL, error, Args.model_json_schema())
    result = Dispatcher([]).scope().failed(CALL, invalid)
    assert result.error_kind == "arguments" and result.error_id is None
    assert "count" in result.text and len(result.text) < 500


def test_the_resolved_policy_of_a_name_has_nothing_unset() -> None:
    agent = Dispatcher(
        [],
        timeout=5,
        external_tools=["lookup"],
        overrides={"lookup": ToolPolicy(retries=2, on_error="fail")},
    )
    policy = agent.scope().policy("lookup")
    assert policy.timeout == 5.0 and isinstance(policy.retries, Retry)
    assert policy.retries.attempts == 3 and policy.max_result_chars is None
    assert policy.on_error is not None and "fail" in repr(policy.on_error)
    assert agent.scope().policy("other").retries is None


def test_a_scope_counts_the_calls_of_one_step_once_against_a_budget() -> None:
    from toolguard import RetryWithFeedback

    agent = Dispatcher([], max_model_retries=1)
    session = agent.session(id="s")
    retry = raising(RetryWithFeedback("Send a date."))
    first = guard_call(session.scope(step="m1"), CALL, retry, ADAPTER)
    again = guard_call(session.scope(step="m1"), CALL, retry, ADAPTER)
    spent = guard_call(session.scope(step="m2"), CALL, retry, ADAPTER)
    assert "retry 1 of 1" in first.text and "retry 1 of 1" in again.text
    assert "too many times" in spent.text


def test_a_step_found_late_is_read_only_when_a_call_needs_it_and_once() -> None:
    from toolguard import RetryWithFeedback

    agent = Dispatcher([], max_model_retries=1)
    session = agent.session(id="s")
    reads: list[str] = []

    def finder(step: str) -> Callable[[], Awaitable[str | None]]:
        async def find() -> str | None:
            reads.append(step)
            return step

        return find

    async def play() -> list[Reply]:
        ok = _async(lambda: Reply("fine"))
        retry = _async(raising(RetryWithFeedback("Send a date.")))
        replies = [await aguard_call(session.scope(find_step=finder("m0")), CALL, ok, ADAPTER)]
        for step in ("m1", "m1", "m2"):
            scope = session.scope(find_step=finder(step))
            replies.append(await aguard_call(scope, CALL, retry, ADAPTER))
            assert scope.step == step  # found, and kept on the scope
        return replies

    fine, first, again, spent = asyncio.run(play())
    assert fine == Reply("fine")
    assert reads == ["m1", "m1", "m2"]  # a plain success reads no step
    # one model message's calls count once against the budget, as with step=
    assert "retry 1 of 1" in first.text and "retry 1 of 1" in again.text
    assert "too many times" in spent.text


def test_a_step_found_late_answers_on_the_async_methods_only_and_cannot_break_them() -> None:
    session = Dispatcher([]).session(id="s")

    async def broken() -> str | None:
        raise KeyError("the framework's state moved")

    scope = session.scope(find_step=broken)
    with pytest.raises(TypeError, match="async methods only"):
        scope.failed(CALL, RuntimeError("x"))
    result = asyncio.run(scope.afailed(CALL, RuntimeError(SECRET)))
    assert result.is_error and SECRET not in result.text  # answered, as a step of its own
    assert scope.step is None
    with pytest.raises(InvalidOption, match="not both"):
        session.scope(step="m1", find_step=broken)
    with pytest.raises(InvalidOption, match="async function"):
        session.scope(find_step="m1")  # type: ignore[arg-type]  # the mistake under test
    assert Dispatcher([]).scope().step is None  # no conversation: nothing to find


def test_the_scope_dispatches_the_dispatchers_own_tools_in_its_step() -> None:
    from toolguard import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    scope = Dispatcher([add]).session(id="s").scope(step="m1")
    assert scope.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2})).content == "3"
    result = asyncio.run(scope.adispatch(ToolCall(name="add", arguments={"a": 2, "b": 2})))
    assert result.content == "4"


def test_a_handler_that_fails_the_invocation_raises_out_of_the_pipeline() -> None:
    scope = Dispatcher([], on_error=fail).scope()
    with pytest.raises(ToolCallFailed) as raised:
        guard_call(scope, CALL, raising(RuntimeError(SECRET)), ADAPTER)
    assert isinstance(raised.value.__cause__, RuntimeError)


def test_round_stops_is_the_cores_one_rule_in_either_mode() -> None:
    from toolguard import InvalidOption

    agent = Dispatcher([])  # "any" by default
    assert agent.round_stops([False, True]) and not agent.round_stops([])
    assert not agent.round_stops([False, True], mode="all")
    assert agent.round_stops([True, True], mode="all")
    with pytest.raises(InvalidOption):
        agent.round_stops([True], mode="most")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("setting", "quiet"),
    [
        ({}, True),
        ({"timeout": 5.0}, False),
        ({"retries": 2}, False),
        ({"max_result_chars": 100}, False),
        ({"return_direct": True}, False),
        ({"breaker": Breaker(failures=2, cooldown=60)}, False),
        ({"max_model_retries": 2}, True),  # a budget counts failures only
    ],
)
def test_a_scope_is_quiet_only_where_nothing_is_done_before_a_failure(
    setting: dict[str, Any], quiet: bool
) -> None:
    agent = Dispatcher([], external_tools=["lookup"], overrides={"lookup": ToolPolicy(**setting)})
    assert agent.scope().quiet(CALL) is (quiet and "breaker" not in setting)
    assert agent.session(id="t").scope(step="m1").quiet(CALL) is quiet


def test_a_scope_is_not_quiet_with_telemetry_on_or_on_a_shared_store(redis_server: Any) -> None:
    import uuid

    from toolguard.stores import RedisStore

    assert Dispatcher([], external_tools=["lookup"], telemetry=True).scope().quiet(CALL) is False
    store = RedisStore.from_url(redis_server.url, agent=f"quiet-{uuid.uuid4().hex[:8]}")
    agent = Dispatcher([], external_tools=["lookup"])
    assert agent.session(id="t", store=store).scope().quiet(CALL) is False
    assert agent.session(id="t").scope().quiet(CALL) is True


@pytest.mark.parametrize(
    ("value", "as_is"),
    [
        ("plain text", True),
        ("caf\u00e9", True),
        ("lone \ud800 surrogate", False),  # toolguard mends it: not as it is
        ({"a": 1}, True),  # sent as its JSON
        (object(), False),  # cannot be serialised: a hidden failure
    ],
)
def test_as_is_says_whether_toolguard_sends_a_value_unchanged(value: object, as_is: bool) -> None:
    assert Scope.as_is(value) is as_is


def test_a_quiet_success_stands_and_a_value_to_mend_is_decided() -> None:
    class Counting(ToyAdapter):
        stood_calls = 0

        def stood(self, call: ToolCall, outcome: Reply) -> Reply:
            Counting.stood_calls += 1
            return outcome

    agent = Dispatcher([], external_tools=["lookup"])
    plain = Reply("fine")
    assert guard_call(agent.scope(), CALL, lambda: plain, Counting()) is plain
    assert asyncio.run(aguard_call(agent.scope(), CALL, _async(lambda: plain), Counting())) is plain
    assert Counting.stood_calls == 2
    mended = guard_call(agent.scope(), CALL, lambda: Reply("a \ud800 b"), Counting())
    assert Counting.stood_calls == 2 and mended.text == "a \ud800 b"  # decided, not cut


def test_a_sessions_stepless_scope_is_one_and_its_step_is_read_only() -> None:
    session = Dispatcher([], external_tools=["lookup"]).session(id="t")
    assert session.scope() is session.scope()
    assert session.scope(step="m1") is not session.scope(step="m1")
    assert session.scope(step="m1").step == "m1" and session.scope().step is None
    with pytest.raises(AttributeError):
        session.scope().step = "m2"  # type: ignore[misc]  # shared by every call


def test_an_unknown_tool_answer_never_suggests_the_name_called() -> None:
    # a framework that lists a tool and then refuses to call it (FastMCP's auth)
    scope = Dispatcher([], external_tools=["save"]).scope()
    answer = scope.unknown_tool(ToolCall(name="save", id="c1"), ["save", "load"])
    assert answer.error_kind == "unknown_tool"
    assert "did you mean 'save'" not in answer.text and "load" in answer.text
