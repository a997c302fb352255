"""Named sessions, and sessions for tools another framework runs (the in-place path)."""

from __future__ import annotations

from typing import Any

import pytest

from toolguard import Breaker, Dispatcher, RetryWithFeedback, Setting, ToolCall, ToolPolicy, tool
from toolguard.sessions import _named as session_module


def test_a_named_session_is_the_same_conversation_each_time() -> None:
    agent = Dispatcher([], external_tools=["lookup"])
    first = agent.session(id="thread-1")
    assert agent.session(id="thread-1") is first and first.id == "thread-1"
    assert agent.session(id="thread-2") is not first
    assert agent.session() is not agent.session()
    with pytest.raises(TypeError, match="non-empty str"):
        agent.session(id="")


def test_idle_named_sessions_are_forgotten(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [0.0]
    agent = Dispatcher([])
    agent._sessions = session_module.Sessions(clock=lambda: now[0])
    first = agent.session(id="t")
    now[0] = session_module.SESSION_TTL - 1
    assert agent.session(id="t") is first  # in use: kept, and its idle time restarts
    now[0] += session_module.SESSION_TTL + 1
    assert agent.session(id="t") is not first
    monkeypatch.setattr(session_module, "MAX_SESSIONS", 3)
    sessions = [agent.session(id=str(i)) for i in range(5)]
    assert agent.session(id="4") is sessions[4]
    assert agent.session(id="0") is not sessions[0]  # the least recently used went first


def test_a_tool_run_elsewhere_gets_its_breaker_in_a_session() -> None:
    agent = Dispatcher(
        [],
        external_tools=["lookup"],
        overrides={"lookup": ToolPolicy(breaker=Breaker(failures=2, cooldown=60))},
    )
    session = agent.session(id="conversation")
    call = ToolCall(name="lookup", id="c")
    for _ in range(2):
        assert session.admit(call) is None
        assert session.handle_error(call, ConnectionError("down")).error_kind == "hidden"
    refused = session.admit(call)
    assert refused is not None and refused.error_kind == "unavailable"
    assert agent.session(id="conversation").state("lookup").consecutive_failures == 2
    assert agent.session(id="other").admit(call) is None  # another conversation


def test_calls_of_one_model_step_count_once_against_the_budget() -> None:
    agent = Dispatcher(
        [], external_tools=["search"], overrides={"search": ToolPolicy(max_model_retries=2)}
    )
    session = agent.session()
    call = ToolCall(name="search")
    for _ in range(3):  # three parallel calls of one model message
        session.handle_error(call, RetryWithFeedback("Quote phrases."), step="message-1")
    assert session.state("search").model_retries == 1
    session.handle_error(call, RetryWithFeedback("Quote phrases."), step="message-2")
    assert session.state("search").model_retries == 2


async def test_a_success_after_failures_closes_the_breaker_on_the_async_path() -> None:
    agent = Dispatcher(
        [], external_tools=["lookup"], overrides={"lookup": ToolPolicy(breaker=Breaker(failures=3))}
    )
    session = agent.session()
    call = ToolCall(name="lookup")
    await session.ahandle_error(call, RuntimeError("x"))
    assert session.state("lookup").consecutive_failures == 1
    assert (await session.ahandle_result(call, {"ok": True})).content == '{"ok":true}'
    assert session.state("lookup").consecutive_failures == 0


def test_explain_covers_the_tools_a_dispatcher_guards_elsewhere() -> None:
    agent = Dispatcher([], external_tools=["lookup"], retries=2)
    explained: Any = agent.explain("lookup")
    assert explained["retries"].level == "agent"
    assert explained["max_workers"] == Setting(32, "builtin")
    with pytest.raises(KeyError, match="guarded elsewhere: lookup"):
        agent.explain("lokup")


async def test_dispatch_and_rounds_take_a_named_step() -> None:
    """Calls a framework hands over one by one, from one model message, count once."""

    @tool(max_model_retries=3)
    def search(q: str) -> str:
        raise RetryWithFeedback("Quote phrases.")

    session = Dispatcher([search]).session()
    call = ToolCall(name="search", arguments={"q": "x"})
    session.dispatch(call, step="m1")
    await session.adispatch(call, step="m1")
    session.run([call, call], step="m1")
    await session.arun([call], step="m1")
    assert session.state("search").model_retries == 1
    session.dispatch(call)  # no step named: a step of its own
    await session.adispatch(call, step="m2")
    assert session.state("search").model_retries == 3
