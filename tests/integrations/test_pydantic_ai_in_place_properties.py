"""The leak properties and the bad-input corpus, through ``ToolguardCapability`` in place.

The tool is a plain Pydantic AI tool (no ``@tool``); the run is a real ``Agent.run``
on Pydantic AI's ``FunctionModel``. The exceptions, handlers and secrets are
``tests/test_leaks.py``'s; the bad calls are ``tests/data/bad_model_input.json``.
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    Tool,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest
from pydantic_ai.models.function import AgentInfo, FunctionModel
from structlog.testing import capture_logs

import toolguard
from toolguard import Dispatcher, ToolCallFailed, ToolPolicy
from toolguard.handlers import Handler
from toolguard.integrations.pydantic_ai import ToolguardCapability

from .._hypothesis import PROFILE
from ..test_bad_input import CASES, decode
from ..test_leaks import (
    VISIBLE_MESSAGES,
    Plan,
    Stage,
    clean_globals,
    events_mentioning,
    fresh_secret,
    hiding_handlers,
    keeping_handlers,
    plans,
    raise_visible,
)

LEVELS = ("override", "agent", "global")


class Script:
    __name__ = "script"  # FunctionModel names its model after the function

    def __init__(self, *steps: list[Any]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=self.steps.pop(0))


def sent_to_model(script: Script, messages: list[ModelMessage] | None) -> str:
    """Everything the model was sent, and the run's history, as JSON text."""
    texts = [ModelMessagesTypeAdapter.dump_json(seen).decode() for seen in script.seen]
    if messages is not None:
        texts.append(ModelMessagesTypeAdapter.dump_json(messages).decode())
    return "\n".join(texts)


@attrs.frozen
class Scenario:
    is_async_tool: bool
    handlers: dict[str, Handler | None]
    glob: bool
    calls: tuple[Plan | str, ...]  # a failure plan, or "ok"


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    calls = draw(st.lists(st.one_of(plans(), st.just("ok")), min_size=1, max_size=3))
    if not any(isinstance(c, Plan) for c in calls):
        calls.append(draw(plans()))
    return Scenario(
        is_async_tool=draw(st.booleans()),
        handlers={level: draw(st.none() | hiding_handlers(True)) for level in LEVELS},
        glob=draw(st.booleans()),
        calls=tuple(calls),
    )


def guard_for(handlers: dict[str, Handler | None], glob: bool) -> Dispatcher:
    overrides = {}
    if handlers["override"] is not None:
        overrides["look*" if glob else "lookup"] = ToolPolicy(on_error=handlers["override"])
    agent: dict[str, Any] = {}
    if handlers["agent"] is not None:
        agent["on_error"] = handlers["agent"]
    if handlers["global"] is not None:
        toolguard.configure(on_error=handlers["global"])
    return Dispatcher([], external_tools=["lookup"], overrides=overrides, **agent)


@PROFILE
@given(scenario=scenarios())
def test_a_hidden_cause_of_a_plain_tool_never_reaches_the_model_and_is_logged_once(
    scenario: Scenario,
) -> None:
    stage = Stage()  # holds the plans: no frame of a call sees another call's secret
    secrets: dict[str, str] = {}
    parts = []
    for index, kind in enumerate(scenario.calls):
        key = f"call_{index}"
        if isinstance(kind, Plan):
            stage.plans[key] = (kind, fresh_secret(index))
            secrets[key] = stage.plans[key][1]
        parts.append(ToolCallPart("lookup", {"key": key}, tool_call_id=key))
    raised = stage.raised

    async def alookup(key: str) -> str:
        await asyncio.sleep(0)
        return stage.act(key)

    def lookup(key: str) -> str:
        return stage.act(key)

    script = Script(parts, [TextPart("done")])
    messages: list[ModelMessage] | None = None
    failed: ToolCallFailed | None = None
    with clean_globals(), capture_logs() as events:
        guard = guard_for(scenario.handlers, scenario.glob)
        agent = Agent(
            FunctionModel(script),
            tools=[Tool(alookup if scenario.is_async_tool else lookup, name="lookup")],
            capabilities=[ToolguardCapability(guard)],
        )
        try:
            messages = asyncio.run(agent.run("go")).all_messages()
        except ToolCallFailed as caught:
            failed = caught

    model_saw = sent_to_model(script, messages)
    for key, secret in secrets.items():
        assert secret not in model_saw
        if failed is not None:
            assert secret not in str(failed)
        if key not in raised:  # the run failed before this call ran
            assert failed is not None
            continue
        mentioning = events_mentioning(events, secret)
        if not mentioning and failed is not None and failed.call_id != key:
            # it ran (a sync tool, on a thread) but a sibling failed the run first:
            # Pydantic AI cancelled its task, so it was never answered, nor logged
            continue
        [event] = mentioning
        assert event["event"] in ("tool_error_hidden", "tool_call_failed")
        assert event["exc_info"] is raised[key]
        assert event["call_id"] == key
        if failed is not None and failed.call_id == key:
            assert failed.error_id == event["error_id"]
            assert failed.__cause__ is raised[key]
    if messages is not None:
        answers = {
            part.tool_call_id: part
            for message in messages
            if isinstance(message, ModelRequest)
            for part in message.parts
            if isinstance(part, ToolReturnPart)
        }
        assert set(answers) == {part.tool_call_id for part in parts}  # every call answered
        for key in secrets:
            quoted = set(re.findall(r"\b[0-9a-f]{8}\b", str(answers[key].content)))
            [event] = events_mentioning(events, secrets[key])
            assert quoted <= {event["error_id"]}


@PROFILE
@given(
    kind=st.sampled_from(["ToolError", "RetryWithFeedback", "ToolTimeout", "Custom"]),
    message=VISIBLE_MESSAGES,
    chained=st.booleans(),
    levels=st.data(),
)
def test_a_plain_tools_model_visible_message_always_arrives_intact(
    kind: str, message: str, chained: bool, levels: st.DataObject
) -> None:
    handlers = {
        level: levels.draw(st.none() | keeping_handlers(True), label=level) for level in LEVELS
    }
    secret = fresh_secret(0)

    def lookup(key: str) -> str:
        """Look up."""
        raise_visible(kind, message, secret, chained)
        return "unreachable"

    script = Script([ToolCallPart("lookup", {"key": "k"}, tool_call_id="c")], [TextPart("ok")])
    with clean_globals(), capture_logs() as events:
        guard = guard_for(handlers, glob=False)
        agent = Agent(
            FunctionModel(script), tools=[lookup], capabilities=[ToolguardCapability(guard)]
        )
        result = asyncio.run(agent.run("go"))

    [answer] = [p for p in script.seen[-1][-1].parts if isinstance(p, ToolReturnPart)]
    assert answer.content == message
    assert answer.outcome == ("retried" if kind == "RetryWithFeedback" else "failed")
    assert secret not in sent_to_model(script, result.all_messages())
    if chained:
        [event] = events_mentioning(events, secret)
        assert event["event"] == "tool_error_hidden"
    else:
        assert events == []


# --- the bad-input corpus ---------------------------------------------------------------------

BEYOND_PYDANTIC_AI = {
    # Pydantic AI fails the run on these before any tool hook runs, with or without
    # toolguard (pinned below); a provider's JSON text cannot carry them anyway
    # (10,000-deep objects, raw lone surrogates in already-parsed values).
    "deep-dict-object-as-extra": {"PydanticSerializationError"},
    "deep-dict-object-as-arguments": {"PydanticSerializationError"},
    # TypeError up to 2.77; 2.78 serialises the call's arguments first
    "raw-lone-surrogate-in-json-text": {"TypeError", "PydanticSerializationError"},
    "lone-surrogate-for-int": {"PydanticSerializationError"},
}


@pytest.mark.parametrize("case_id", sorted(BEYOND_PYDANTIC_AI))
async def test_pydantic_ai_itself_fails_on_the_few_cases_no_provider_sends(case_id: str) -> None:
    """The reference for the exclusions above: a plain agent, no toolguard."""
    [case] = [c for c in CASES if c["id"] == case_id]
    arguments = decode(case["arguments"])

    def refund(order_id: int, reason: str) -> str:
        """Refund an order."""
        return "refunded"

    script = Script([ToolCallPart(decode(case["name"]), arguments, tool_call_id="c")], [])
    with pytest.raises(Exception) as raised:
        await Agent(FunctionModel(script), tools=[refund]).run("go")
    assert type(raised.value).__name__ in BEYOND_PYDANTIC_AI[case_id]


async def test_every_bad_call_of_the_corpus_is_answered_and_no_plain_tool_runs() -> None:
    """Pydantic AI answers unknown names itself and toolguard the arguments that do not
    fit (``on_tool_validate_error``); under the capability the run survives every case,
    each call gets an answer, the tools never run and nothing is logged as hidden."""
    ran: list[str] = []

    def refund(order_id: int, reason: str) -> str:
        """Refund an order."""
        ran.append("refund")
        return "refunded"

    def search_orders(
        query: str,
        limit: int = 10,
        tags: list[str] | None = None,
        filters: dict[str, int] | None = None,
    ) -> list[str]:
        """Search the orders."""
        ran.append("search_orders")
        return []

    def buy(item: str, quantity: int = 1) -> str:
        """Buy an item."""
        ran.append("buy")
        return "bought"

    parts = []
    for index, case in enumerate(c for c in CASES if c["id"] not in BEYOND_PYDANTIC_AI):
        arguments = decode(case.get("arguments"))
        if not isinstance(arguments, str | dict) and arguments is not None:
            arguments = json.dumps(arguments)
        parts.append(ToolCallPart(decode(case["name"]), arguments, tool_call_id=f"call_{index}"))
    script = Script(parts, [TextPart("done")])
    guard = Dispatcher([], external_tools=["refund", "search_orders", "buy"])
    agent = Agent(
        FunctionModel(script),
        tools=[refund, search_orders, buy],
        capabilities=[ToolguardCapability(guard)],
        retries=len(CASES) + 1,
    )
    with capture_logs() as events:
        result = await agent.run("go")

    assert result.output == "done"
    answered = {
        part.tool_call_id
        for part in script.seen[-1][-1].parts
        if isinstance(part, ToolReturnPart | RetryPromptPart)
    }
    assert answered == {part.tool_call_id for part in parts}
    assert ran == []
    assert [e for e in events if e["event"] == "tool_error_hidden"] == []
