"""Bad model input never breaks a run: the corpus in ``tests/data/bad_model_input.json``.

Each case is a tool call a model could send (unknown and near-miss names, malformed
JSON, JSON that is not an object, missing/extra/wrong/null arguments, megabyte
strings, 10,000-deep nesting, NaN and Infinity, duplicate keys, lone surrogates
and control characters, attempts to set injected arguments, Python keywords as
argument names, huge numbers, an empty name). For every case, on every path:

* the result is an error whose content holds the case's fragments, is at most its
  ``max_chars`` long and can be encoded as UTF-8 (a provider request must be able
  to carry it);
* the tool body never runs;
* nothing raises out of ``dispatch``/``adispatch``/``run``/``arun``;
* a round of every case at once answers every call, in call order.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Annotated, Any

import pytest

from toolguard import Dispatcher, Injected, InjectedCallId, ToolCall, ToolResult, formats, tool

CORPUS = json.loads((Path(__file__).parent / "data" / "bad_model_input.json").read_text())
CASES: list[dict[str, Any]] = CORPUS["cases"]

runs: list[str] = []


@tool
def refund(
    order_id: int,
    reason: str,
    user: Annotated[str, Injected],
    call_id: Annotated[str, InjectedCallId],
) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
        reason: Why, in the customer's words.
    """
    runs.append("refund")
    return f"refunded {order_id}"


@tool
def search_orders(
    query: str,
    limit: int = 10,
    tags: list[str] | None = None,
    filters: dict[str, int] | None = None,
) -> list[str]:
    """Search the orders."""
    runs.append("search_orders")
    return []


class Shop:
    @tool
    def buy(self, item: str, quantity: int = 1) -> str:
        """Buy an item."""
        runs.append("buy")
        return "bought"


def dispatcher() -> Dispatcher:
    return Dispatcher([refund, search_orders, Shop().buy])


@pytest.fixture(autouse=True)
def _no_runs() -> None:
    runs.clear()


# --- the corpus' encoding of values JSON cannot hold --------------------------------


def decode(value: Any) -> Any:
    """Expand the corpus' ``$`` forms (see the file's ``encoding``) into Python values."""
    if isinstance(value, list):
        return [decode(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "$repeat" in value:
        text, count = value["$repeat"]
        return text * count
    if "$concat" in value:
        return "".join(decode(part) for part in value["$concat"])
    if "$float" in value:
        return float(value["$float"])
    if "$deep_dict" in value:
        depth, key, leaf = value["$deep_dict"]
        nested: Any = leaf
        for _ in range(depth):
            nested = {key: nested}
        return nested
    decoded: dict[Any, Any] = {}
    for key, item in value.items():
        if key == "$int_keys":
            decoded.update({int(k): decode(v) for k, v in item.items()})
        else:
            decoded[key] = decode(item)
    return decoded


def call_of(case: dict[str, Any], index: int = 0) -> ToolCall:
    return ToolCall(
        name=decode(case["name"]),
        arguments=decode(case.get("arguments")),
        id=f"call_{index}_{case['id']}",
    )


def check(case: dict[str, Any], result: ToolResult, call: ToolCall) -> None:
    content = result.content
    assert isinstance(content, str)
    assert result.is_error, f"{case['id']}: the call succeeded: {content[:200]!r}"
    assert result.call_id == call.id
    assert len(content) <= case["max_chars"], f"{case['id']}: {len(content)} characters"
    for fragment in case["expect"]:
        assert fragment in content, f"{case['id']}: {fragment!r} not in {content[:500]!r}"
    content.encode("utf-8")  # a provider request must be able to carry it
    assert result.error_id is None, f"{case['id']}: bad input is visible, nothing is hidden"
    assert not result.return_direct


# --- the corpus ---------------------------------------------------------------------


def test_the_corpus_has_at_least_fifty_distinct_cases() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 50
    assert len(set(ids)) == len(ids)
    for case in CASES:
        assert case["expect"], case["id"]


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_bad_call_gets_a_clear_bounded_error_and_the_tool_never_runs(
    case: dict[str, Any], logs: list[dict[str, Any]]
) -> None:
    call = call_of(case)
    result = dispatcher().dispatch(call, context="the user")
    check(case, result, call)
    assert runs == []
    assert logs == []  # the model's mistakes hide nothing: there is no cause to log


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
async def test_each_bad_call_gets_the_same_answer_on_the_async_path(
    case: dict[str, Any],
) -> None:
    call = call_of(case)
    result = await dispatcher().adispatch(call, context="the user")
    check(case, result, call)
    assert runs == []


def test_a_round_of_every_bad_call_answers_each_in_order() -> None:
    calls = [call_of(case, index) for index, case in enumerate(CASES)]
    with dispatcher() as agent:
        round_ = agent.run(calls, context="the user")
    assert [r.call_id for r in round_.results] == [c.id for c in calls]
    for case, call, result in zip(CASES, calls, round_.results, strict=True):
        check(case, result, call)
    assert runs == []
    assert not round_.stop


async def test_an_async_round_of_every_bad_call_answers_each_in_order() -> None:
    calls = [call_of(case, index) for index, case in enumerate(CASES)]
    with dispatcher() as agent:
        round_ = await agent.arun(calls, context="the user")
    assert [r.call_id for r in round_.results] == [c.id for c in calls]
    for case, call, result in zip(CASES, calls, round_.results, strict=True):
        check(case, result, call)
    assert runs == []


def test_bad_calls_between_good_ones_never_disturb_them() -> None:
    good = ToolCall(name="refund", arguments={"order_id": 1, "reason": "late"}, id="good_a")
    also_good = ToolCall(name="search_orders", arguments='{"query": "hats"}', id="good_b")
    bad = [call_of(case, index) for index, case in enumerate(CASES[:20])]
    calls = [good, *bad, also_good]
    with dispatcher() as agent:
        round_ = agent.run(calls, context="the user")
    assert [r.call_id for r in round_.results] == [c.id for c in calls]
    assert round_.results[0].content == "refunded 1"
    assert round_.results[-1].content == "[]"
    assert not round_.results[0].is_error and not round_.results[-1].is_error
    assert sorted(runs) == ["refund", "search_orders"]


# --- what the corpus cannot show as an error --------------------------------------------


def test_duplicate_keys_the_last_wins_and_the_log_sees_the_same_value(
    logs: list[dict[str, Any]],
) -> None:
    """JSON with a repeated key: validation and the log agree on one value (the last)."""
    seen: list[int] = []

    @tool(on_error="failed ({error_id})")
    def pick(n: int) -> str:
        seen.append(n)
        raise RuntimeError("boom")

    Dispatcher([pick]).dispatch(ToolCall(name="pick", arguments='{"n": 1, "n": 2}'))
    assert seen == [2]
    [event] = logs
    assert event["arguments"] == {"n": 2}


def test_a_keyword_named_argument_reaches_a_var_keyword_tool() -> None:
    """``class``/``from`` cannot be parameters; a ``**kwargs`` tool receives them as keys."""
    received: list[dict[str, Any]] = []

    @tool
    def anything(**options: Any) -> str:
        received.append(options)
        return "ok"

    result = Dispatcher([anything]).dispatch(
        ToolCall(name="anything", arguments='{"class": "vip", "from": "alice"}')
    )
    assert result.content == "ok"
    assert received == [{"class": "vip", "from": "alice"}]


def test_a_missing_injected_value_is_the_applications_bug_not_the_models(
    logs: list[dict[str, Any]],
) -> None:
    """Without ``context=``, a good call fails hidden (logged), naming the parameter."""
    result = dispatcher().dispatch(
        ToolCall(name="refund", arguments={"order_id": 1, "reason": "late"}, id="c1")
    )
    assert result.is_error and result.error_id is not None
    assert "'user'" not in result.content
    [event] = logs
    assert "'user'" in str(event["exc_info"])
    assert runs == []


def test_corpus_results_serialise_for_every_provider() -> None:
    """Error results of bad input are valid provider messages."""
    calls = [call_of(case, index) for index, case in enumerate(CASES)]
    with dispatcher() as agent:
        round_ = agent.run(calls, context="the user")
    for reply in (
        formats.openai.messages(round_),
        formats.anthropic.message(round_),
        formats.gemini.content(round_),
        [formats.mcp.call_result(result) for result in round_.results],
    ):
        json.dumps(reply, ensure_ascii=False).encode("utf-8")


def test_huge_inputs_are_answered_quickly() -> None:
    """A megabyte name or argument costs milliseconds, not a hang."""
    big = [case for case in CASES if "megabyte" in case["id"] or "deep" in case["id"]]
    assert len(big) >= 6
    started = time.perf_counter()
    agent = dispatcher()
    for index, case in enumerate(big):
        agent.dispatch(call_of(case, index), context="the user")
    assert time.perf_counter() - started < 5
