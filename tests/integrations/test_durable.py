"""toolguard.integrations.durable, with no engine: the two halves and what crosses.

Where the tool runs (a fake engine's unit: ``tests/_fake_engine.py``), one attempt is
answered there (the real exception, its cause logged there once) or handed back to the
engine to retry, carrying only its type and an error id; in the workflow, what crossed
becomes the result in the workflow's session, nothing logged again. The engines
themselves: ``test_temporal*.py``, ``test_dbos*.py``.
"""

from __future__ import annotations

import json
import pickle
from typing import Any

import pytest

from toolguard import (
    Breaker,
    Dispatcher,
    EngineRetry,
    Retry,
    RetryWithFeedback,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    tool,
)
from toolguard.handlers import fail, on
from toolguard.integrations.durable import (
    Answered,
    aanswer,
    aanswer_invocation,
    answer,
    answer_invocation,
    asettle,
    call_of,
    call_payload,
    engine_retries,
    is_crossing,
    never_retried,
    settle,
)
from toolguard.testing import assert_not_leaked

from .._fake_engine import FakeUnit, in_unit

SECRET = "db-password=hunter2"
Logs = list[dict[str, Any]]


class PaymentDeclined(Exception):
    pass


@tool(retries=2)
def flaky() -> str:
    raise ConnectionError(f"cannot reach 10.0.0.7 ({SECRET})")


@tool
def lookup(order: int) -> str:
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    return f"order {order}: shipped"


@tool(on_error=on(PaymentDeclined, "The card was declined. Ask for another card."))
def charge() -> str:
    raise PaymentDeclined(f"card 4111 declined ({SECRET})")


@tool
def picky(attempt: int) -> str:
    raise RetryWithFeedback("Pass attempt as a positive number.")


@tool(on_error=fail)
def fatal() -> str:
    raise RuntimeError(SECRET)


AGENT = Dispatcher([flaky, lookup, charge, picky, fatal], max_model_retries=1)


def crossed_json(value: object) -> Any:
    """What an engine persists: the crossing, as JSON."""
    return json.loads(json.dumps(value))


def test_a_call_crosses_as_json_and_back() -> None:
    call = ToolCall(name="lookup", arguments={"order": 7}, id="c1")
    assert call_of(crossed_json(call_payload(call))) == call


def test_a_success_crosses_as_its_content(logs: Logs) -> None:
    crossed = answer(AGENT, ToolCall(name="lookup", arguments={"order": 7}, id="c1"))
    assert is_crossing(crossed) and crossed["content"] == "order 7: shipped"
    call = ToolCall(name="lookup", id="c1")
    result = settle(AGENT.session().scope(), call, crossed_json(crossed))
    assert (result.content, result.is_error) == ("order 7: shipped", False)
    assert logs == []


def test_a_retryable_failure_before_the_last_attempt_is_the_engines_to_retry(logs: Logs) -> None:
    with in_unit(FakeUnit(1)), pytest.raises(EngineRetry) as raised:
        answer(AGENT, ToolCall(name="flaky", id="c1"))
    error = raised.value
    assert error.error_type == "ConnectionError"
    assert error.__cause__ is None and error.__suppress_context__  # nothing chained
    assert SECRET not in str(error) and SECRET not in repr(pickle.loads(pickle.dumps(error)))
    [event] = logs  # its cause, logged here at DEBUG under the id it carries
    assert (event["event"], event["log_level"], event["error_id"]) == (
        "tool_retry",
        "debug",
        error.error_id,
    )
    assert isinstance(event["exc_info"], ConnectionError)


async def test_the_last_attempt_is_answered_where_the_tool_ran_and_logged_there_once(
    logs: Logs,
) -> None:
    with in_unit(FakeUnit(3)):  # retries=2: the third attempt is the last
        crossed = await aanswer(AGENT, ToolCall(name="flaky", id="c1"))
    assert crossed["error_kind"] == "hidden" and crossed["error_type"] == "ConnectionError"
    assert_not_leaked(crossed_json(crossed), SECRET)
    [event] = logs
    assert event["event"] == "tool_error_hidden" and event["error_id"] == crossed["error_id"]
    session = AGENT.session()
    result = await asettle(session.scope(), ToolCall(name="flaky", id="c1"), crossed_json(crossed))
    assert (result.error_id, result.error_kind) == (crossed["error_id"], "hidden")
    assert result.content == crossed["content"]
    assert len(logs) == 1  # the workflow logs nothing again


def test_the_handler_chain_where_the_tool_ran_sees_the_real_exception(logs: Logs) -> None:
    crossed = answer(AGENT, ToolCall(name="charge", id="c1"))
    assert crossed["content"] == "The card was declined. Ask for another card."
    assert crossed["error_type"] == "PaymentDeclined" and crossed["error_id"]
    assert_not_leaked(crossed_json(crossed), SECRET)
    result = settle(AGENT.session().scope(), ToolCall(name="charge"), crossed_json(crossed))
    assert result.content == "The card was declined. Ask for another card."
    assert result.error_id == crossed["error_id"]
    assert [event["event"] for event in logs] == ["tool_error_hidden"]


def test_a_model_visible_error_is_answered_at_once_never_retried() -> None:
    retried = Dispatcher([lookup], retries=Retry(attempts=3, on=Exception))
    with in_unit(FakeUnit(1)):
        crossed = answer(retried, ToolCall(name="lookup", arguments={"order": 42}))
    assert crossed["content"] == "There is no order 42. Ask the user to check the number."
    assert crossed["error_kind"] == "visible" and crossed["error_id"] is None


def test_a_hidden_failure_crossed_counts_towards_the_workflows_breaker() -> None:
    agent = Dispatcher([flaky], breaker=Breaker(failures=1))
    session = agent.session()
    with in_unit(FakeUnit(3)):
        crossed = crossed_json(answer(agent, ToolCall(name="flaky")))
    settle(session.scope(), ToolCall(name="flaky"), crossed)
    assert session.state("flaky").open_until is not None


def test_retry_with_feedback_is_answered_in_the_workflow_where_its_budget_is() -> None:
    session = AGENT.session()
    answers = []
    for step in ("s1", "s2"):
        call = ToolCall(name="picky", arguments={"attempt": -1})
        crossed = crossed_json(answer(AGENT, call))
        answers.append(settle(session.scope(step=step), call, crossed))
    assert answers[0].text.startswith("Pass attempt as a positive number. (retry 1 of 1)")
    assert answers[1].text.startswith("The tool 'picky' was called incorrectly too many times")


def test_invalid_arguments_are_answered_where_the_tool_ran() -> None:
    with in_unit(FakeUnit(1)):
        crossed = answer(AGENT, ToolCall(name="lookup", arguments={"order": "x"}))
    assert crossed["error_kind"] == "arguments" and "order" in str(crossed["content"])


def test_a_handler_that_fails_the_invocation_fails_it_in_the_workflow(logs: Logs) -> None:
    crossed = crossed_json(answer(AGENT, ToolCall(name="fatal", id="c9")))
    assert crossed["failed"] is True
    assert_not_leaked(crossed, SECRET)
    with pytest.raises(ToolCallFailed) as raised:
        settle(AGENT.session().scope(), ToolCall(name="fatal", id="c9"), crossed)
    assert (raised.value.tool, raised.value.call_id, raised.value.error_id) == (
        "fatal",
        "c9",
        crossed["error_id"],
    )
    assert [event["event"] for event in logs] == ["tool_call_failed"]


def test_retries_and_timeout_compile_into_an_engines_options() -> None:
    policy = Dispatcher([flaky], timeout=20).scope().policy("flaky")
    compiled = engine_retries(policy)
    assert (compiled.attempts, compiled.initial_interval, compiled.backoff_rate) == (3, 0.5, 2.0)
    assert (compiled.maximum_interval, compiled.timeout, compiled.total) == (10.0, 20.0, None)
    assert any("jitter" in note for note in compiled.notes)
    none = engine_retries(ToolPolicy(retries=None, timeout=None))
    assert (none.attempts, none.timeout) == (1, None)
    total = engine_retries(ToolPolicy(retries=Retry(attempts=5, total=30.0)))
    assert total.total == 30.0 and any("total 30 s" in note for note in total.notes)
    assert set(never_retried()) >= {"ToolError", "RetryWithFeedback", "ToolCallFailed"}


# --- a tool that is its framework's own unit -----------------------------------------------


EXTERNAL = Dispatcher([], external_tools=["charge_card"], retries=1)


def test_an_invocations_value_is_kept_and_its_failure_raised_as_its_answer(logs: Logs) -> None:
    call = ToolCall(name="charge_card", id="c1")
    assert answer_invocation(EXTERNAL, call, lambda: {"charged": 5}) == {"charged": 5}

    def declined() -> None:
        raise PaymentDeclined(f"card 4111 declined ({SECRET})")

    with in_unit(FakeUnit(1)), pytest.raises(Answered) as raised:
        answer_invocation(EXTERNAL, call, declined)  # not retried: not transient
    crossing = raised.value.crossing
    assert crossing["error_kind"] == "hidden" and crossing["error_type"] == "PaymentDeclined"
    assert_not_leaked(crossed_json(crossing), SECRET)
    assert SECRET not in repr(pickle.loads(pickle.dumps(raised.value)).crossing)
    [event] = logs
    assert event["error_id"] == crossing["error_id"]


async def test_an_invocations_transient_failure_is_the_engines_to_retry() -> None:
    async def reset() -> None:
        raise ConnectionError(SECRET)

    call = ToolCall(name="charge_card", id="c1")
    with in_unit(FakeUnit(1)), pytest.raises(EngineRetry):
        await aanswer_invocation(EXTERNAL, call, reset)
    with in_unit(FakeUnit(2)), pytest.raises(Answered) as raised:
        await aanswer_invocation(EXTERNAL, call, reset)
    assert raised.value.crossing["error_type"] == "ConnectionError"
