"""The bad-input corpus (``tests/data/bad_model_input.json``) through the in-place path.

The corpus' tools (``refund``, ``search_orders``, ``buy``) are written as plain
LangChain tools, their arguments as pydantic models that forbid extra arguments, and
run by a ``create_agent`` agent with ``ToolguardMiddleware``. Each case reaches the
agent as LangChain would carry it:

* arguments sent as JSON text go through LangChain's own parser
  (``parse_tool_call``, what its OpenAI integration uses): text that does not parse
  becomes an ``invalid_tool_call``, which LangChain never runs;
* arguments that are not an object cannot be carried at all: LangChain's
  ``AIMessage`` refuses them.

A case that does reach the tools gets toolguard's answer, as on toolguard's own path:
an error holding the case's fragments, at most its ``max_chars`` long, valid UTF-8,
nothing hidden or logged, and the tool body never runs. The exceptions are listed in
:data:`LANGCHAIN_SEMANTICS`, each with why LangChain's own semantics decide.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

import pydantic
import pytest
from langchain.agents import AgentState, create_agent
from langchain_core.exceptions import OutputParserException
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.output_parsers.openai_tools import parse_tool_call
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.prebuilt import InjectedState

from toolguard import Dispatcher
from toolguard.integrations.langchain import ToolguardMiddleware

from ..test_bad_input import CASES, decode
from .langchain_helpers import Logs, ScriptedModel, tool_messages

RUNS: list[dict[str, Any]] = []


class RefundArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    order_id: int = pydantic.Field(description="The order to refund.")
    reason: str = pydantic.Field(description="Why, in the customer's words.")
    user: Annotated[str, InjectedState("user")]
    call_id: Annotated[str, InjectedToolCallId]


class SearchArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    query: str
    limit: int = 10
    tags: list[str] | None = None
    filters: dict[str, int] | None = None


class BuyArgs(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    item: str
    quantity: int = 1


def _refund(order_id: int, reason: str, user: str, call_id: str) -> str:
    RUNS.append({"tool": "refund", "user": user, "call_id": call_id})
    return f"refunded {order_id}"


def _search_orders(
    query: str,
    limit: int = 10,
    tags: list[str] | None = None,
    filters: dict[str, int] | None = None,
) -> str:
    RUNS.append({"tool": "search_orders"})
    return "[]"


def _buy(item: str, quantity: int = 1) -> str:
    RUNS.append({"tool": "buy"})
    return "bought"


TOOLS: list[BaseTool] = [
    StructuredTool.from_function(
        _refund, name="refund", description="Refund an order.", args_schema=RefundArgs
    ),
    StructuredTool.from_function(
        _search_orders,
        name="search_orders",
        description="Search the orders.",
        args_schema=SearchArgs,
    ),
    StructuredTool.from_function(_buy, name="buy", description="Buy an item.", args_schema=BuyArgs),
]


class ShopState(AgentState[Any]):
    user: str


class Semantics(NamedTuple):
    """What a case gives on LangChain's path where LangChain's own semantics decide."""

    why: str
    outcome: Literal["runs", "says", "raises"]
    says: tuple[str, ...] = ()


_STRIPPED = "LangGraph strips what the model sent for an injected argument and supplies its own"
_LENIENT = "LangChain's JSON parser is lenient (json.loads(strict=False))"
_DEEP = (
    "LangChain's BaseTool.run renders the arguments for its callbacks (str()) before "
    "validating them, and a 10,000-deep object makes that raise RecursionError before the "
    "tool runs: LangChain's own error, which fails the run as it does without the guard"
)
LANGCHAIN_SEMANTICS: dict[str, Semantics] = {
    "duplicate-key-smuggling-injected": Semantics(_STRIPPED, "runs"),
    "inject-context": Semantics(_STRIPPED, "runs"),
    "inject-call-id": Semantics(_STRIPPED, "runs"),
    "inject-both-json-text": Semantics(_STRIPPED, "runs"),
    "json-escaped-lone-surrogate": Semantics(
        f"{_LENIENT} and a str field takes an escaped lone surrogate", "runs"
    ),
    "raw-lone-surrogate-in-json-text": Semantics(
        f"{_LENIENT} and a str field takes a lone surrogate", "runs"
    ),
    "json-raw-control-character": Semantics(
        f"{_LENIENT}: a raw control character in a string is accepted", "runs"
    ),
    "json-raw-newline-in-string": Semantics(
        f"{_LENIENT}: a raw newline in a string is accepted", "runs"
    ),
    "json-null": Semantics(
        "LangChain's parser makes JSON null no arguments",
        "says",
        ("'order_id': missing required argument (an integer)",),
    ),
    "deep-dict-object-as-extra": Semantics(_DEEP, "raises"),
    "deep-dict-object-as-arguments": Semantics(_DEEP, "raises"),
}


def carried(case: dict[str, Any], index: int) -> dict[str, Any] | str:
    """The tool call LangChain makes of a case, or why it makes none."""
    name = decode(case["name"])
    arguments = decode(case.get("arguments"))
    call_id = f"call_{index}"
    if isinstance(arguments, str):
        raw = {"function": {"name": name, "arguments": arguments}, "id": call_id}
        try:
            parsed = parse_tool_call(raw, return_id=True)
        except OutputParserException:
            return "LangChain's parser makes it an invalid_tool_call: never run"
        except (RecursionError, ValueError) as error:  # deep nesting, 5000-digit numbers
            return f"LangChain's parser raises {type(error).__name__}: the reply fails first"
        assert parsed is not None
        call = {"name": parsed["name"], "args": parsed["args"], "id": call_id}
    else:
        call = {"name": name, "args": {} if arguments is None else arguments, "id": call_id}
    try:
        AIMessage("", tool_calls=[call])
    except pydantic.ValidationError:
        return "LangChain's AIMessage cannot carry it"
    return call


def answer(calls: list[dict[str, Any]]) -> dict[str, Any]:
    agent = create_agent(
        ScriptedModel(messages=iter([AIMessage("", tool_calls=calls), AIMessage("done")])),
        tools=TOOLS,
        middleware=[ToolguardMiddleware(Dispatcher([], external_tools=[t.name for t in TOOLS]))],
        state_schema=ShopState,
    )
    start: Any = {"messages": [HumanMessage("go")], "user": "the user"}
    return tool_messages(agent.invoke(start)["messages"])


def test_the_corpus_reaches_langchain_mostly_and_every_case_is_accounted_for() -> None:
    outcomes = [carried(case, index) for index, case in enumerate(CASES)]
    assert sum(isinstance(outcome, dict) for outcome in outcomes) >= 40
    assert set(LANGCHAIN_SEMANTICS) <= {case["id"] for case in CASES}
    assert all(semantics.why for semantics in LANGCHAIN_SEMANTICS.values())


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_bad_call_langchain_carries_gets_toolguards_bounded_answer(
    case: dict[str, Any], logs: Logs
) -> None:
    RUNS.clear()
    call = carried(case, 0)
    if isinstance(call, str):
        # LangChain's own answer: the call never reaches a tool (nothing to guard)
        assert call.startswith("LangChain's")
        return
    semantics = LANGCHAIN_SEMANTICS.get(case["id"])
    if semantics is not None and semantics.outcome == "raises":
        with pytest.raises(RecursionError):
            answer([call])
        assert RUNS == [] and logs == []
        return
    answers = answer([call])
    message = answers[call["id"]]
    content = message.content
    assert isinstance(content, str)
    if semantics is not None and semantics.outcome == "runs":
        assert message.status == "success", content
        assert RUNS and RUNS[0].get("user", "the user") == "the user"
        assert RUNS[0].get("call_id", call["id"]) == call["id"]
        return
    expected = semantics.says if semantics is not None else case["expect"]
    assert message.status == "error", f"{case['id']}: the call succeeded: {content[:200]!r}"
    assert len(content) <= case["max_chars"], f"{case['id']}: {len(content)} characters"
    for fragment in expected:
        assert fragment in content, f"{case['id']}: {fragment!r} not in {content[:500]!r}"
    content.encode("utf-8")
    assert message.response_metadata["toolguard"] == {"return_direct": False, "error_id": None}
    assert RUNS == []
    assert logs == []


def test_a_round_of_every_carried_bad_call_answers_each_once() -> None:
    RUNS.clear()
    calls = [
        c
        for i, case in enumerate(CASES)
        if isinstance(c := carried(case, i), dict)
        and getattr(LANGCHAIN_SEMANTICS.get(case["id"]), "outcome", None) != "raises"
    ]
    answers = answer(calls)
    assert sorted(answers) == sorted(call["id"] for call in calls)
    assert all(len(str(m.content)) <= 1500 for m in answers.values())
    ran = {run["tool"] for run in RUNS}
    assert ran <= {"refund", "buy", "search_orders"}
    assert len(RUNS) == sum(s.outcome == "runs" for s in LANGCHAIN_SEMANTICS.values())


def test_the_corpus_file_is_the_one_the_core_suite_reads() -> None:
    path = Path(__file__).parent.parent / "data" / "bad_model_input.json"
    assert json.loads(path.read_text())["cases"] == CASES
