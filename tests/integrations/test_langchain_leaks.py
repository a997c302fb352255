"""The leak properties (``tests/test_leaks.py``) through the in-place path (property-based).

A plain LangChain ``@tool`` raises the same random exceptions as in the core's
property tests (the secret in the message, the cause chain, notes, attributes,
locals, the class name; a pydantic ``ValidationError`` with the secret in a value or
in a ``loc`` key), under random policy stacks (overrides by name or glob, agent
defaults, global defaults, of handlers documented never to send exception text, and
random scalars), in parallel rounds with good calls, unknown tools and bad
arguments, run by a real ``create_agent`` agent with ``ToolguardMiddleware``, sync or
async, with or without a thread. Properties:

* the secret is in no message of the conversation, nor in a ``ToolCallFailed``;
* it is in exactly one log event, with ``exc_info`` the very exception the tool
  raised, and the error id the tool's message carries;
* every call of the round is answered exactly once (unless a handler failed the run);
* the reverse: under handlers that keep visible messages, a ``ToolError`` or
  LangChain ``ToolException`` message arrives exactly as written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import attrs
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langchain_core.tools import BaseTool, ToolException
from langchain_core.tools import tool as lc_tool
from structlog.testing import capture_logs

import toolguard
from toolguard import Dispatcher, ToolCallFailed, ToolError, ToolPolicy
from toolguard.handlers import Handler
from toolguard.integrations.langchain import ToolguardMiddleware

from .._hypothesis import PROFILE
from ..test_leaks import (
    NOOP_RETRY,
    VISIBLE_MESSAGES,
    HostileGetattr,
    Plan,
    Stage,
    clean_globals,
    events_mentioning,
    fresh_secret,
    hiding_handlers,
    keeping_handlers,
    plans,
)
from .langchain_helpers import ScriptedModel, tool_messages

LOC_KEY = Plan("pydantic_loc_key", frozenset())  # the secret is a key of the bad value


class LocStage(Stage):
    """The core's stage, plus a ValidationError whose ``loc`` carries the secret."""

    def act(self, key: str) -> str:
        plan = self.plans.get(key)
        if plan is not None and plan[0] is LOC_KEY:
            secret = plan[1]
            try:
                pydantic.TypeAdapter(dict[str, int]).validate_python({f"acct-{secret}": "x"})
            except pydantic.ValidationError as error:
                self.raised[key] = error
                raise
        return super().act(key)


@attrs.frozen
class Scenario:
    is_async: bool
    thread: bool
    handlers: dict[str, Handler | None]  # override, agent, global
    glob: bool
    scalars: dict[str, Any]
    calls: tuple[str | Plan, ...]


@st.composite
def scenarios(draw: st.DrawFn, handlers: Callable[[bool], st.SearchStrategy[Handler]]) -> Scenario:
    is_async = draw(st.booleans())
    chosen = {
        level: draw(st.none() | handlers(is_async)) for level in ("override", "agent", "global")
    }
    scalars: dict[str, Any] = {}
    if draw(st.booleans()):
        scalars["max_result_chars"] = draw(st.sampled_from([100, 150]))
    if draw(st.booleans()):
        scalars["return_direct"] = draw(st.sampled_from([True, "always"]))
    if draw(st.integers(0, 3)) == 0:
        scalars["retries"] = NOOP_RETRY
    if draw(st.integers(0, 4)) == 0:
        scalars["timeout"] = 5.0
    failures = st.one_of(plans(), st.just(LOC_KEY))
    others = st.sampled_from(["ok", "unknown", "bad_args"])
    calls = draw(st.lists(st.one_of(failures, others), min_size=1, max_size=4))
    if not any(isinstance(call, Plan) for call in calls):
        calls.append(draw(failures))
    return Scenario(
        is_async, draw(st.booleans()), chosen, draw(st.booleans()), scalars, tuple(calls)
    )


def make_tool(stage: Stage, is_async: bool) -> BaseTool:
    if is_async:

        @lc_tool
        async def lookup(key: str) -> str:
            """Look a key up (async)."""
            await asyncio.sleep(0)
            return stage.act(key)

        return lookup

    @lc_tool
    def lookup_(key: str) -> str:
        """Look a key up."""
        return stage.act(key)

    return lookup_.model_copy(update={"name": "lookup"})


@attrs.frozen
class Outcome:
    messages: list[AnyMessage]
    failed: ToolCallFailed | None
    call_ids: tuple[str, ...]
    secrets: dict[str, str]
    raised: dict[str, BaseException]


def play(scenario: Scenario) -> Outcome:
    stage = LocStage()
    calls: list[Any] = []
    secrets: dict[str, str] = {}
    for index, kind in enumerate(scenario.calls):
        call_id = f"call_{index}"
        if isinstance(kind, Plan):
            secrets[call_id] = secret = fresh_secret(index)
            stage.plans[f"k{index}"] = (kind, secret)
            calls.append({"name": "lookup", "args": {"key": f"k{index}"}, "id": call_id})
        elif kind == "ok":
            calls.append({"name": "lookup", "args": {"key": "fine"}, "id": call_id})
        elif kind == "unknown":
            calls.append({"name": "lookup_everything", "args": {}, "id": call_id})
        else:
            calls.append({"name": "lookup", "args": {"key": ["not", "text"]}, "id": call_id})
    overrides: dict[str, ToolPolicy] = {}
    options: dict[str, Any] = dict(scenario.scalars)
    if scenario.handlers["override"] is not None:
        key = "look*" if scenario.glob else "lookup"
        overrides[key] = ToolPolicy(on_error=scenario.handlers["override"], **options)
        options = {}
    if scenario.handlers["agent"] is not None:
        options["on_error"] = scenario.handlers["agent"]
    if scenario.handlers["global"] is not None:
        toolguard.configure(on_error=scenario.handlers["global"])
    dispatcher = Dispatcher([], external_tools=["lookup"], overrides=overrides, **options)
    agent = create_agent(
        ScriptedModel(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")])),
        tools=[make_tool(stage, scenario.is_async)],
        middleware=[ToolguardMiddleware(dispatcher)],
    )
    config: Any = {"configurable": {"thread_id": "t"}} if scenario.thread else None
    start: Any = {"messages": [HumanMessage("go")]}
    messages: list[AnyMessage] = []
    failed = None
    try:
        if scenario.is_async:
            messages = asyncio.run(agent.ainvoke(start, config))["messages"]
        else:
            messages = agent.invoke(start, config)["messages"]
    except ToolCallFailed as caught:
        failed = caught
    finally:
        dispatcher.close()
    raised = {
        f"call_{index}": stage.raised[f"k{index}"]
        for index in range(len(calls))
        if f"k{index}" in stage.raised
    }
    return Outcome(messages, failed, tuple(c["id"] for c in calls), secrets, raised)


@PROFILE
@given(scenario=scenarios(hiding_handlers))
def test_a_plain_tools_hidden_cause_never_reaches_the_model_and_is_logged_once(
    scenario: Scenario,
) -> None:
    with clean_globals(), capture_logs() as events:
        outcome = play(scenario)

    answers = tool_messages(outcome.messages)
    if outcome.failed is None:
        assert sorted(answers) == sorted(outcome.call_ids)  # each answered once
        assert len([m for m in outcome.messages if m.type == "tool"]) == len(outcome.call_ids)
    sent = [message.model_dump_json() for message in outcome.messages]
    for call_id, secret in outcome.secrets.items():
        assert not any(secret in text for text in sent), f"the secret of {call_id} was sent"
        if outcome.failed is not None:
            assert secret not in str(outcome.failed)
        mentions = events_mentioning(events, secret)
        if call_id not in outcome.raised:  # the run failed before this call ran
            assert outcome.failed is not None and mentions == []
            continue
        assert len(mentions) == 1, [event["event"] for event in mentions]
        [event] = mentions
        assert event["exc_info"] is outcome.raised[call_id]
        assert event["call_id"] == call_id
        if call_id in answers:
            answer = answers[call_id]
            assert answer.status == "error"
            assert answer.response_metadata["toolguard"]["error_id"] == event["error_id"]
        else:  # a handler failed the run (each failed call logged; one call's error escapes)
            assert outcome.failed is not None
            if event["event"] in ("tool_error_hidden", "tool_call_cancelled"):
                # answered, but the round's answers were lost with the run a sibling's
                # handler failed; or stopped by it (asyncio.run cancels what is left)
                # while it waited to retry, or as its attempt failed
                assert outcome.failed.call_id != call_id
            else:
                assert event["event"] == "tool_call_failed"
            if outcome.failed.call_id == call_id:
                assert outcome.failed.error_id == event["error_id"]


@PROFILE
@given(
    kind=st.sampled_from(["ToolError", "ToolException"]),
    message=VISIBLE_MESSAGES,
    chained=st.booleans(),
    is_async=st.booleans(),
    levels=st.data(),
)
def test_a_plain_tools_visible_message_arrives_intact(
    kind: str, message: str, chained: bool, is_async: bool, levels: st.DataObject
) -> None:
    handlers = {
        level: levels.draw(st.none() | keeping_handlers(is_async), label=level)
        for level in ("override", "agent", "global")
    }
    secret = fresh_secret(0)

    def fail() -> None:
        error = ToolError(message) if kind == "ToolError" else ToolException(message)
        if chained:
            raise error from PermissionError(f"vault said no to {secret}")
        raise error

    @lc_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        fail()
        return "unreachable"

    overrides = {}
    if handlers["override"] is not None:
        overrides["lookup"] = ToolPolicy(on_error=handlers["override"])
    agent_options: Any = {} if handlers["agent"] is None else {"on_error": handlers["agent"]}
    call: Any = {"name": "lookup", "args": {"key": "k"}, "id": "c1"}
    with clean_globals(), capture_logs() as events:
        if handlers["global"] is not None:
            toolguard.configure(on_error=handlers["global"])
        dispatcher = Dispatcher([], external_tools=["lookup"], overrides=overrides, **agent_options)
        agent = create_agent(
            ScriptedModel(messages=iter([AIMessage("", tool_calls=[call]), AIMessage("")])),
            tools=[lookup],
            middleware=[ToolguardMiddleware(dispatcher)],
        )
        start: Any = {"messages": [HumanMessage("go")]}
        if is_async:
            messages = asyncio.run(agent.ainvoke(start))["messages"]
        else:
            messages = agent.invoke(start)["messages"]

    answer = tool_messages(messages)["c1"]
    assert answer.status == "error"
    assert answer.content == toolguard_sendable(message)
    assert not any(secret in m.model_dump_json() for m in messages)
    if chained:
        [event] = events_mentioning(events, secret)
        assert event["error_id"] == answer.response_metadata["toolguard"]["error_id"] is not None
    else:
        assert answer.response_metadata["toolguard"]["error_id"] is None


def toolguard_sendable(message: str) -> str:
    """The message as toolguard sends any text: valid UTF-8 (lone surrogates replaced)."""
    from toolguard._text import utf8

    return utf8(message)


@pytest.mark.parametrize("is_async", [False, True])
def test_an_exception_langgraph_trips_over_is_still_the_hidden_cause(is_async: bool) -> None:
    """LangGraph's ToolNode asks a failed tool's exception ``is_invalid_resume``, by
    reading an attribute; an API client's exception whose ``__getattr__`` raises
    ``KeyError`` makes that check raise instead. The tool's own exception is still the
    hidden cause: answered with an error id, logged once as itself, never sent."""
    secret = "sk-getattr-4f1c"

    @lc_tool
    def lookup(key: str) -> str:
        """Look a key up."""
        raise HostileGetattr(f"api said {secret}", {})

    calls = [{"name": "lookup", "args": {"key": "k"}, "id": "c1"}]
    agent = create_agent(
        ScriptedModel(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")])),
        tools=[lookup],
        middleware=[ToolguardMiddleware(Dispatcher([], external_tools=["lookup"]))],
    )
    start: Any = {"messages": [HumanMessage("go")]}
    with capture_logs() as events:
        if is_async:
            messages = asyncio.run(agent.ainvoke(start))["messages"]
        else:
            messages = agent.invoke(start)["messages"]
    [answer] = tool_messages(messages).values()
    assert answer.status == "error" and secret not in answer.model_dump_json()
    [event] = [e for e in events if e["event"] == "tool_error_hidden"]
    assert isinstance(event["exc_info"], HostileGetattr)
    assert answer.response_metadata["toolguard"]["error_id"] == event["error_id"]
