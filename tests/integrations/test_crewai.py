"""The CrewAI integration, driven through real crews.

The model is a ``crewai.llms.base_llm.BaseLLM`` subclass playing a script (CrewAI's
documented way to bring a custom model), recording every message it is sent; the
agents, tasks, crews, the native function-calling loop, the text (ReAct) loop, tool
usage, caching and ``result_as_answer`` are CrewAI's own.

CrewAI does not install beside toolguard's ``test`` extra (it pins ``openai<3`` and
``mcp<2``): this module runs in CrewAI's own environment, ``.ci/extras``.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest

with warnings.catch_warnings():  # CrewAI warns while it imports; the suite makes warnings errors
    warnings.simplefilter("ignore")
    import crewai  # noqa: F401 - imported first, before the variables below

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

from crewai import Agent, Crew, CrewOutput, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import BaseTool
from crewai.tools import tool as crew_tool
from pydantic import PrivateAttr

from toolguard import (
    Breaker,
    Dispatcher,
    Injected,
    InjectedCallId,
    ToolError,
    ToolPolicy,
    load_policy,
    tool,
)
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.crewai import as_crewai_tool, as_crewai_tools, guard
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ..test_bad_input import CASES, Shop, decode, runs, search_orders

# CrewAI's own warnings, not toolguard's: it estimates tokens for a model without a
# tokenizer; an Agent reads its own deprecated fields (``function_calling_llm``,
# ``allow_code_execution``) when it is set up.
pytestmark = [
    pytest.mark.filterwarnings("ignore:Using an approximate input token count"),
    pytest.mark.filterwarnings("ignore:deprecated$:DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:function_calling_llm is deprecated:DeprecationWarning"),
]

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"
Call = tuple[str, dict[str, Any], str]


class ScriptedLLM(BaseLLM):
    """A model that plays a script: each step is a list of tool calls (native function
    calling) or a text; every list of messages it is sent is recorded."""

    _steps: list[Any] = PrivateAttr(default_factory=list)
    _seen: list[Any] = PrivateAttr(default_factory=list)
    _tools: list[Any] = PrivateAttr(default_factory=list)
    _native: bool = PrivateAttr(default=True)

    @classmethod
    def playing(cls, steps: Sequence[list[Call] | str], *, native: bool = True) -> ScriptedLLM:
        llm = cls(model="scripted")
        llm._steps = list(steps)
        llm._native = native
        return llm

    def call(
        self,
        messages: Any,
        tools: Any = None,
        callbacks: Any = None,
        available_functions: Any = None,
        from_task: Any = None,
        from_agent: Any = None,
        response_model: Any = None,
    ) -> Any:
        self._seen.append(json.loads(json.dumps(messages, default=str)))
        self._tools.append(tools)
        if not self._steps:
            return "Final Answer: all done" if not self._native else "all done"
        step = self._steps.pop(0)
        if isinstance(step, str):
            return step
        return [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
            for name, arguments, call_id in step
        ]

    def supports_function_calling(self) -> bool:
        return self._native

    def sent(self) -> str:
        return json.dumps(self._seen)

    def tool_messages(self) -> dict[str, str]:
        """The tool results the model was sent, by call id."""
        answers: dict[str, str] = {}
        for seen in self._seen:
            for message in seen:
                if isinstance(message, dict) and message.get("role") == "tool":
                    answers[message["tool_call_id"]] = message["content"]
        return answers

    def declared(self) -> list[Any]:
        found: list[Any] = next(t for t in self._tools if t)
        return found


def kickoff(tools: Sequence[BaseTool], llm: ScriptedLLM) -> tuple[CrewOutput, Task]:
    agent = Agent(role="support", goal="help", backstory="a clerk", llm=llm, tools=list(tools))
    task = Task(description="Answer the customer.", expected_output="an answer", agent=agent)
    output = Crew(agents=[agent], tasks=[task]).kickoff()
    assert isinstance(output, CrewOutput)
    return output, task


def hidden_event(llm: ScriptedLLM, output: CrewOutput, logs: Logs) -> dict[str, Any]:
    assert SECRET not in llm.sent()
    assert SECRET not in output.raw
    carrying = [event for event in logs if SECRET in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]


def builtin_message(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


# --- an existing app's tools --------------------------------------------------------------

ran: list[str] = []


@crew_tool("lookup_order")
def lookup_order(order_id: int) -> str:
    """Look up an order by its number."""
    ran.append(f"lookup_order {order_id}")
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id < 0:
        raise ConnectionError(f"orders-db refused: {SECRET}")
    return f"order {order_id}: shipped"


@crew_tool("finish", result_as_answer=True)
def finish(answer: str) -> str:
    """Give the final answer."""
    ran.append(f"finish {answer}")
    if answer == "crash":
        raise RuntimeError(f"renderer crashed: {SECRET}")
    return f"FINAL: {answer}"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()
    for app_tool in (lookup_order, finish):
        app_tool.reset_usage_count()


def test_guarded_failures_are_crewais_own_tool_failures_with_the_error_id(logs: Logs) -> None:
    llm = ScriptedLLM.playing([[("lookup_order", {"order_id": -1}, "c1")], "sorry"])
    output, _ = kickoff(guard([lookup_order], Dispatcher([])), llm)
    (record,) = output.tasks_output[0].tool_failures
    event = next(e for e in logs if e["event"] == "tool_error_hidden")
    assert record.failure.details["toolguard"]["error_id"] == event["error_id"]
    assert record.failure.code is None  # CrewAI would show the exception's type
    assert SECRET not in record.model_dump_json()


# Success, parallel calls, a tool's state, hidden and visible failures and bad
# arguments, guarded against unguarded under native and text tool calling: the
# conformance driver, tests/integrations/conformance/test_crewai.py.


def test_overrides_by_glob_and_policy_files_answer_guarded_tools(
    tmp_path: Path, logs: Logs
) -> None:
    policy = tmp_path / "agent.toml"
    policy.write_text(
        'version = 1\n[tools."lookup_*"]\n'
        'on_error = "generic_unless_visible"\n'
        'message = "Orders are down ({error_id}); tell the user."\n'
    )
    llm = ScriptedLLM.playing(
        [[("lookup_order", {"order_id": -1}, "c1"), ("finish", {"answer": "crash"}, "c2")], "ok"]
    )
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order", "finish"],
        policy=load_policy(policy),
        overrides={"finish": ToolPolicy(on_error="Rendering failed; answer in plain text.")},
    )
    output, _ = kickoff(guard([lookup_order, finish], dispatcher), llm)
    answers = llm.tool_messages()
    error_id = next(e["error_id"] for e in logs if e.get("tool") == "lookup_order")
    assert answers["c1"] == f"Orders are down ({error_id}); tell the user."
    assert answers["c2"] == "Rendering failed; answer in plain text."
    assert SECRET not in llm.sent()
    assert output.raw == "ok"  # the failed result_as_answer tool did not end the task


def test_a_result_as_answer_tool_ends_the_task_on_success_only() -> None:
    llm = ScriptedLLM.playing([[("finish", {"answer": "42 apples"}, "c1")], "never asked"])
    output, _ = kickoff(guard([finish], Dispatcher([])), llm)
    assert output.raw == "FINAL: 42 apples"
    failed = ScriptedLLM.playing([[("finish", {"answer": "crash"}, "c1")], "recovered"])
    output, _ = kickoff(guard([finish], Dispatcher([])), failed)
    assert output.raw == "recovered"
    assert SECRET not in failed.sent()


def test_the_dispatchers_return_direct_becomes_result_as_answer_for_a_guarded_tool() -> None:
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(return_direct=True)},
    )
    llm = ScriptedLLM.playing([[("lookup_order", {"order_id": 8}, "c1")], "never"])
    output, _ = kickoff(guard([lookup_order], dispatcher), llm)
    assert output.raw == "order 8: shipped"


def test_a_failure_is_not_retried_under_text_tool_calling() -> None:
    """CrewAI's text (ReAct) loop retries a raising tool silently; guarded, the tool
    runs once and the model gets toolguard's answer."""
    llm = ScriptedLLM.playing(
        [
            'Thought: look it up\nAction: lookup_order\nAction Input: {"order_id": -1}',
            "Thought: I know\nFinal Answer: it failed",
        ],
        native=False,
    )
    output, _ = kickoff(guard([lookup_order], Dispatcher([])), llm)
    assert ran == ["lookup_order -1"]
    assert output.raw == "it failed"
    assert SECRET not in llm.sent()
    assert "error id" in llm.sent()


def test_one_task_is_one_session_and_its_breaker_opens() -> None:
    dispatcher = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(breaker=Breaker(failures=2, cooldown=60))},
    )
    calls: list[Call] = [("lookup_order", {"order_id": -1}, f"c{i}") for i in range(3)]
    llm = ScriptedLLM.playing([calls[:1], calls[1:2], calls[2:], "done"])
    kickoff(guard([lookup_order], dispatcher), llm)
    assert ran == ["lookup_order -1", "lookup_order -1"]  # the third call never ran
    assert "unavailable" in llm.tool_messages()["c2"]


def test_settings_that_cannot_apply_to_a_tool_crewai_runs_are_refused() -> None:
    dispatcher = Dispatcher(
        [], external_tools=["lookup_order"], overrides={"lookup_*": ToolPolicy(retries=2)}
    )
    with pytest.raises(ToolDefinitionError, match="retries"):
        guard([lookup_order], dispatcher)


def test_guard_returns_guarded_tools_as_they_are() -> None:
    once = guard([lookup_order], Dispatcher([]))
    assert guard(once, Dispatcher([])) == once


# --- toolguard tools as CrewAI tools ---------------------------------------------------


@tool
def search(query: str, limit: int = 3) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    ran.append(f"search {query}")
    if query == "boom":
        raise OSError(f"index unreachable: {SECRET}")
    return f"{limit} results for {query}"


@tool(return_direct=True)
def final_answer(answer: str) -> str:
    """Give the final answer."""
    if answer == "crash":
        raise RuntimeError(f"renderer crashed: {SECRET}")
    return f"FINAL: {answer}"


def test_the_model_sees_toolguards_schema() -> None:
    llm = ScriptedLLM.playing(["ok"])
    kickoff(as_crewai_tools(Dispatcher([search])), llm)
    (declared,) = llm.declared()
    assert declared["function"]["name"] == "search"
    assert declared["function"]["parameters"]["properties"] == search.parameters["properties"]


def test_toolguard_tool_failure_is_hidden_logged_once_and_quoted(logs: Logs) -> None:
    llm = ScriptedLLM.playing([[("search", {"query": "boom"}, "c1")], "sorry"])
    output, _ = kickoff(as_crewai_tools(Dispatcher([search])), llm)
    event = hidden_event(llm, output, logs)
    assert llm.tool_messages()["c1"] == builtin_message("search", event["error_id"])


def test_bad_arguments_get_toolguards_message_and_the_tool_never_runs() -> None:
    llm = ScriptedLLM.playing(
        [[("search", {"query": "x", "limit": "lots"}, "c1"), ("search", {}, "c2")], "ok"]
    )
    kickoff(as_crewai_tools(Dispatcher([search])), llm)
    answers = llm.tool_messages()
    assert "limit" in answers["c1"] and "query" in answers["c2"]
    assert ran == []


def test_toolguard_return_direct_ends_the_task_on_success_only() -> None:
    tools = as_crewai_tools(Dispatcher([search, final_answer]))
    output, _ = kickoff(tools, ScriptedLLM.playing([[("final_answer", {"answer": "7"}, "c1")]]))
    assert output.raw == "FINAL: 7"
    failed = ScriptedLLM.playing([[("final_answer", {"answer": "crash"}, "c1")], "went on"])
    output, _ = kickoff(tools, failed)
    assert output.raw == "went on"
    assert SECRET not in failed.sent()


def test_a_return_direct_predicate_is_refused_it_cannot_be_declared_up_front() -> None:
    @tool(return_direct=lambda result: "stop" in result.text)
    def maybe_stop(word: str) -> str:
        """Stop when the word says so."""
        return word

    with pytest.raises(ToolDefinitionError, match="predicate"):
        as_crewai_tool(maybe_stop)


# Pydantic AI's RunContext as toolguard knows it (by qualified name; Pydantic AI
# is not installed beside CrewAI).
RunContext = type("RunContext", (), {"__module__": "pydantic_ai._run_context"})


@tool
def needs_context(ctx: RunContext, x: int) -> int:  # type: ignore[valid-type]
    """Uses Pydantic AI's context."""
    return x


def test_a_framework_parameter_is_refused_crewai_injects_nothing() -> None:
    with pytest.raises(ToolDefinitionError, match="'ctx'"):
        as_crewai_tool(needs_context)


@tool
def wants_call_id(x: int, call_id: Annotated[str, InjectedCallId]) -> int:
    """Needs the call id."""
    return x


@tool
def wants_context(x: int, user: Annotated[str, Injected]) -> int:
    """Needs application context."""
    return x


@pytest.mark.parametrize(
    ("guarded", "parameter"), [(wants_call_id, "'call_id'"), (wants_context, "'user'")]
)
def test_call_ids_and_application_context_which_crewai_never_hands_over_are_refused(
    guarded: Any, parameter: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=parameter):
        as_crewai_tool(guarded)


# --- the bad-input corpus through a crew ------------------------------------------------


def _through_crewai(case: dict[str, Any]) -> bool:
    """Cases a model can send CrewAI: JSON text of an object, for a known tool (not the
    10,000-deep nesting, which no JSON encoder here writes)."""
    arguments = decode(case.get("arguments"))
    if not (
        case["name"] in ("refund", "search_orders", "buy")
        and isinstance(arguments, dict)
        and all(isinstance(key, str) for key in arguments)
    ):
        return False
    try:
        json.dumps(arguments)
    except (RecursionError, ValueError):
        return False
    return True


@tool(name="refund")
def refund_here(order_id: int, reason: str) -> str:
    """Refund an order (the corpus' refund, without the injected parameters the
    framework cannot supply).

    Args:
        order_id: The order to refund.
        reason: Why, in the customer's words.
    """
    runs.append("refund")
    return f"refunded {order_id}"


# The corpus' attempts to set refund's injected parameters: this refund has none.
INJECTED_CASES = {"inject-context", "inject-call-id"}

CORPUS_CASES = [
    case for case in CASES if _through_crewai(case) and case["id"] not in INJECTED_CASES
]


def test_the_bad_input_corpus_through_a_crew_is_answered_bounded() -> None:
    assert len(CORPUS_CASES) >= 20
    calls: list[Call] = [
        (case["name"], decode(case["arguments"]), f"call_{index}")
        for index, case in enumerate(CORPUS_CASES)
    ]
    llm = ScriptedLLM.playing([calls, "done"])
    runs.clear()
    kickoff(as_crewai_tools(Dispatcher([refund_here, search_orders, Shop().buy])), llm)
    answers = llm.tool_messages()
    assert set(answers) == {call_id for _, _, call_id in calls}
    for (_, _, call_id), case in zip(calls, CORPUS_CASES, strict=True):
        answer = answers[call_id]
        assert len(answer) <= case["max_chars"], case["id"]
        for fragment in case["expect"]:
            assert fragment in answer, (case["id"], fragment, answer[:300])
    assert runs == []


# --- the CrewAI-private names toolguard uses -------------------------------------------


def test_crewais_private_usage_claim_is_where_toolguard_calls_it() -> None:
    """``ToolguardCrewTool.run`` claims a use with ``BaseTool._claim_usage`` (CrewAI's
    own check and count, atomically): a release that moves it fails here, loudly."""
    made = as_crewai_tool(search, max_usage_count=1)
    assert made._claim_usage() is None
    limit = made._claim_usage()
    assert limit is not None and "usage limit" in limit.message


def test_guard_refuses_what_is_not_a_dispatcher_or_a_list_of_crewai_tools() -> None:
    """A wrong argument fails at the entry point, saying what it takes, never inside
    CrewAI on the first call: an agent for the dispatcher, one tool for the list, a
    plain function or a name in the list."""
    agent = Agent(role="support", goal="help", backstory="a clerk", llm=ScriptedLLM.playing([]))
    with pytest.raises(
        TypeError, match=r"guard\(tools, dispatcher\) takes a toolguard Dispatcher, got Agent"
    ):
        guard([lookup_order], agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"takes a list of CrewAI tools .*got Tool: .*\[tool\]"):
        guard(lookup_order, Dispatcher([]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item 1 is Tool"):
        guard([lookup_order, search], Dispatcher([]))  # type: ignore[list-item]
    with pytest.raises(TypeError, match="item 0 is str"):
        guard(["lookup_order"], Dispatcher([]))  # type: ignore[list-item]
    with pytest.raises(
        TypeError, match=r"as_crewai_tools\(dispatcher\) takes a toolguard Dispatcher"
    ):
        as_crewai_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_crewai_tool\(dispatcher=...\) takes a toolguard"):
        as_crewai_tool(search, dispatcher=agent)  # type: ignore[arg-type]
