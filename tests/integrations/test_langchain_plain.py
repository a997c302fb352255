"""``ToolguardMiddleware`` guarding plain LangChain tools in place: its settings.

Every test drives a real ``create_agent`` agent (LangChain's fake chat model playing
a script) whose tools are LangChain's own ``@tool``s: the app as written, plus the
middleware. What must stay as LangChain does it, unguarded against guarded, is the
conformance driver's (``conformance/test_langchain.py``); here, what the policy does
(bounded answers, ToolException, retries, timeouts, breakers, budgets, the tool's own
answers, ``max_result_chars``).
"""

from __future__ import annotations

import asyncio
import threading
import time
import warnings
from typing import Annotated, Any

import pydantic
import pytest
from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware, ToolRetryMiddleware
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool, ToolException
from langchain_core.tools import tool as lc_tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.prebuilt import InjectedState
from langgraph.types import Command, interrupt

import toolguard
from toolguard import Breaker, Dispatcher, Retry, RetryWithFeedback, ToolError, ToolPolicy
from toolguard.handlers import always, fail, generic_unless_visible, on
from toolguard.integrations.langchain import ToolguardMiddleware, ToolguardWarning

from .langchain_helpers import (
    SECRET,
    Logs,
    ScriptedModel,
    ai,
    arun,
    builtin_message,
    hidden_event,
    run,
    tool_messages,
)


def guard(*names: str, **options: Any) -> ToolguardMiddleware:
    """The one line an app adds: a middleware whose dispatcher names its plain tools."""
    tool_exceptions = options.pop("tool_exceptions", "visible")
    return ToolguardMiddleware(
        Dispatcher([], external_tools=names, **options), tool_exceptions=tool_exceptions
    )


THREAD: Any = {"configurable": {"thread_id": "thread-1"}}


# --- the model's arguments (a body's ValidationError: conformance/test_langchain.py) -------


class UpstreamReply(pydantic.BaseModel):
    balance: int
    accounts: dict[str, int]


@lc_tool
def read_balance(account: str) -> str:
    """Read an account's balance from the bank's API."""
    # an upstream reply that does not parse: its values and its keys carry secrets
    UpstreamReply.model_validate(
        {"balance": f"token={SECRET}", "accounts": {f"iban-{SECRET}": "x"}}
    )
    return "never"


@lc_tool
def transfer(amount: int, to: str) -> str:
    """Transfer money."""
    RAN.append(amount)
    return f"sent {amount} to {to}"


RAN: list[int] = []


def test_the_models_bad_arguments_get_a_bounded_message_naming_each_and_the_tool_never_runs(
    logs: Logs,
) -> None:
    RAN.clear()
    huge = "9" * 1_000_000 + "x"
    messages, _ = run(
        [transfer],
        [ai(("transfer", {"amount": huge, "too": "bob"}, "c1")), AIMessage("Oops.")],
        middleware=[guard("transfer")],
    )

    answer = tool_messages(messages)["c1"]
    assert answer.status == "error"
    assert isinstance(answer.content, str)
    assert answer.content.startswith("Invalid arguments for tool 'transfer':\n")
    assert "- 'amount': Unable to parse input string as an integer" in answer.content
    assert "- 'to': missing required argument (a string)" in answer.content
    assert len(answer.content) < 600  # a megabyte argument is echoed as an excerpt
    assert answer.response_metadata["toolguard"]["error_id"] is None
    assert RAN == []
    assert logs == []  # the model's mistake hides nothing


@lc_tool
def greet(name: str, count: Annotated[int, InjectedState("messages")]) -> str:
    """Greet someone (the injected state value does not fit its annotation)."""
    return f"hello {name}"


def test_an_injected_value_that_fails_validation_is_the_applications_failure_hidden(
    logs: Logs,
) -> None:
    messages, _ = run(
        [greet],
        [ai(("greet", {"name": "ann"}, "c1")), AIMessage("")],
        middleware=[guard("greet")],
    )

    answer = tool_messages(messages)["c1"]
    [event] = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert answer.content == builtin_message("greet", event["error_id"])
    assert isinstance(event["exc_info"], pydantic.ValidationError)


# --- issue 14: LangChain's ToolException ---------------------------------------------------


@lc_tool
def find_order(order_id: int) -> str:
    """Find an order, LangChain style."""
    try:
        raise KeyError(f"orders-db row {order_id} via {SECRET}")
    except KeyError as error:
        raise ToolException(f"There is no order {order_id}. Ask the user to check it.") from error


def test_a_tool_exception_is_model_visible_by_default_and_its_cause_is_logged(
    logs: Logs,
) -> None:
    messages, _ = run(
        [find_order],
        [ai(("find_order", {"order_id": 42}, "c1")), AIMessage("Which order?")],
        middleware=[guard("find_order")],
    )

    answer = tool_messages(messages)["c1"]
    for message in messages:
        assert SECRET not in message.model_dump_json()
    [event] = logs  # the cause: hidden, logged once, with the error id
    assert event["event"] == "tool_error_hidden"
    assert SECRET in repr(event["exc_info"].__cause__)
    assert (answer.status, answer.content) == (
        "error",
        "There is no order 42. Ask the user to check it.",
    )
    assert answer.response_metadata["toolguard"]["error_id"] == event["error_id"]
    assert isinstance(event["exc_info"], ToolException)  # handlers see LangChain's type
    assert event["error_type"] == "ToolException"


def test_tool_exceptions_hidden_treats_them_as_any_other_exception(logs: Logs) -> None:
    messages, _ = run(
        [find_order],
        [ai(("find_order", {"order_id": 42}, "c1")), AIMessage("")],
        middleware=[guard("find_order", tool_exceptions="hidden")],
    )

    answer = tool_messages(messages)["c1"]
    [event] = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert answer.content == builtin_message("find_order", event["error_id"])


def test_a_tool_exception_still_matches_handlers_for_its_type() -> None:
    class OutOfStock(ToolException):
        pass

    @lc_tool
    def reserve(item: str) -> str:
        """Reserve an item."""
        raise OutOfStock(f"{item} is out of stock.")

    messages, _ = run(
        [reserve],
        [ai(("reserve", {"item": "hat"}, "c1")), AIMessage("")],
        middleware=[
            guard(
                "reserve",
                overrides={"reserve": ToolPolicy(on_error=on(OutOfStock, always("Sold out.")))},
            )
        ],
    )

    assert tool_messages(messages)["c1"].content == "Sold out."


def test_tool_exceptions_must_be_visible_or_hidden() -> None:
    with pytest.raises(ValueError, match="tool_exceptions='shown'"):
        ToolguardMiddleware(tool_exceptions="shown")  # type: ignore[arg-type]


# --- issue 14: retries, timeouts, breakers on plain tools ------------------------------------


def flaky_tool(
    failures: int, error: type[Exception] = ConnectionError
) -> tuple[BaseTool, list[int]]:
    calls: list[int] = []

    @lc_tool
    def flaky(q: str) -> str:
        """Query a flaky backend."""
        calls.append(len(calls) + 1)
        if len(calls) <= failures:
            raise error(f"backend reset the connection ({SECRET})")
        return f"answer to {q} after {len(calls)} attempts"

    return flaky, calls


NO_WAIT = Retry(attempts=3, initial=0.001, jitter=0, sleep=lambda seconds: None)


def test_override_retries_apply_to_a_plain_tool(logs: Logs) -> None:
    flaky, calls = flaky_tool(failures=2)
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": "x"}, "c1")), AIMessage("")],
        middleware=[guard("flaky", overrides={"flaky": ToolPolicy(retries=NO_WAIT)})],
    )

    answer = tool_messages(messages)["c1"]
    assert (answer.status, answer.content) == ("success", "answer to x after 3 attempts")
    assert calls == [1, 2, 3]
    assert [event["event"] for event in logs] == ["tool_retry", "tool_retry"]


def test_retries_the_int_form_apply_and_exhausted_retries_are_answered_once(
    logs: Logs, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # tenacity's default sleep
    flaky, calls = flaky_tool(failures=5)
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": "x"}, "c1")), AIMessage("")],
        middleware=[guard("flaky", overrides={"flaky": ToolPolicy(retries=2)})],
    )

    event = hidden_event(messages, logs)
    assert calls == [1, 2, 3]
    assert tool_messages(messages)["c1"].content == builtin_message("flaky", event["error_id"])


async def test_retries_apply_to_a_plain_tool_on_the_async_path() -> None:
    flaky, calls = flaky_tool(failures=1)
    messages, _ = await arun(
        [flaky],
        [ai(("flaky", {"q": "y"}, "c1")), AIMessage("")],
        middleware=[guard(overrides={"fla*": ToolPolicy(retries=NO_WAIT)})],
    )

    assert tool_messages(messages)["c1"].content == "answer to y after 2 attempts"
    assert calls == [1, 2]


def test_retries_are_not_spent_on_the_models_bad_arguments() -> None:
    flaky, calls = flaky_tool(failures=0)
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": ["not", "text"]}, "c1")), AIMessage("")],
        middleware=[guard("flaky", overrides={"flaky": ToolPolicy(retries=NO_WAIT)})],
    )

    assert str(tool_messages(messages)["c1"].content).startswith("Invalid arguments")
    assert calls == []


@lc_tool
def slow(q: str) -> str:
    """A slow sync tool."""
    time.sleep(1.0)
    return "late"


@lc_tool
async def aslow(q: str) -> str:
    """A slow async tool."""
    await asyncio.sleep(5.0)
    return "late"


def test_a_timeout_answers_a_slow_plain_tool_at_the_deadline() -> None:
    middleware = guard("slow", overrides={"slow": ToolPolicy(timeout=0.2)})
    started = time.monotonic()
    messages, _ = run(
        [slow], [ai(("slow", {"q": "x"}, "c1")), AIMessage("")], middleware=[middleware]
    )
    took = time.monotonic() - started

    answer = tool_messages(messages)["c1"]
    assert answer.status == "error"
    assert answer.content == (
        "The tool 'slow' did not finish within 0.2 s. It may work if you try again later, "
        "or with a smaller request."
    )
    assert took < 0.9
    middleware.dispatcher.close()  # waits for the abandoned thread


async def test_a_timeout_answers_a_slow_async_plain_tool_at_the_deadline() -> None:
    started = time.monotonic()
    messages, _ = await arun(
        [aslow],
        [ai(("aslow", {"q": "x"}, "c1")), AIMessage("")],
        middleware=[guard("aslow", overrides={"aslow": ToolPolicy(timeout=0.2)})],
    )

    assert "did not finish within 0.2 s" in str(tool_messages(messages)["c1"].content)
    assert time.monotonic() - started < 2.0


def test_an_interrupt_in_a_timed_plain_tool_still_pauses_the_graph(logs: Logs) -> None:
    @lc_tool
    def approve(amount: int) -> str:
        """Ask a human (on a worker thread, under a timeout)."""
        return f"approved {amount}: {interrupt('ok?')}"

    middleware = guard("approve", overrides={"approve": ToolPolicy(timeout=5)})
    checkpointer = InMemorySaver()
    script = [ai(("approve", {"amount": 5}, "c1")), AIMessage("done")]
    agent = create_agent(
        ScriptedModel(messages=iter(script)),
        tools=[approve],
        middleware=[middleware],
        checkpointer=checkpointer,
    )
    paused = agent.invoke({"messages": [HumanMessage("pay")]}, THREAD)
    assert [i.value for i in paused["__interrupt__"]] == ["ok?"]
    resumed = agent.invoke(Command(resume="yes"), THREAD)
    assert tool_messages(resumed["messages"])["c1"].content == "approved 5: yes"
    assert logs == []


def breaking_tool() -> tuple[BaseTool, list[str]]:
    calls: list[str] = []

    @lc_tool
    def billing(q: str) -> str:
        """Query billing (down)."""
        calls.append(q)
        raise RuntimeError(f"billing down ({SECRET})")

    return billing, calls


def test_a_breaker_opens_per_langgraph_thread_and_other_threads_are_untouched() -> None:
    billing, calls = breaking_tool()
    middleware = guard(
        "billing", overrides={"billing": ToolPolicy(breaker=Breaker(failures=2, cooldown=60))}
    )
    script = [
        ai(("billing", {"q": "1"}, "c1")),
        ai(("billing", {"q": "2"}, "c2")),
        ai(("billing", {"q": "3"}, "c3")),
        AIMessage("Billing is down."),
    ]
    messages, _ = run([billing], script, middleware=[middleware], config=THREAD)

    answers = tool_messages(messages)
    assert calls == ["1", "2"]  # the third call never ran
    assert answers["c3"].status == "error"
    assert str(answers["c3"].content).startswith(
        "The tool 'billing' is unavailable: it failed 2 times in a row."
    )
    session = middleware.dispatcher.session(id="thread-1")
    assert session.state("billing").open_until is not None

    other: Any = {"configurable": {"thread_id": "thread-2"}}
    messages, _ = run(
        [billing],
        [ai(("billing", {"q": "4"}, "c4")), AIMessage("")],
        middleware=[middleware],
        config=other,
    )
    assert calls == ["1", "2", "4"]  # another conversation: its own breaker


def test_a_breaker_remembers_across_invocations_of_one_thread() -> None:
    billing, calls = breaking_tool()
    middleware = guard("billing", overrides={"billing": ToolPolicy(breaker=Breaker(failures=1))})
    for number in ("1", "2"):
        run(
            [billing],
            [ai(("billing", {"q": number}, f"c{number}")), AIMessage("")],
            middleware=[middleware],
            config=THREAD,
            checkpointer=InMemorySaver(),
        )
    assert calls == ["1"]


def test_without_a_thread_id_there_is_no_conversation_to_remember() -> None:
    billing, calls = breaking_tool()
    middleware = guard("billing", overrides={"billing": ToolPolicy(breaker=Breaker(failures=1))})
    run(
        [billing],
        [ai(("billing", {"q": "1"}, "c1")), ai(("billing", {"q": "2"}, "c2")), AIMessage("")],
        middleware=[middleware],
    )
    assert calls == ["1", "2"]


@lc_tool
def search(query: str) -> str:
    """Search; it asks the model to fix a vague query."""
    raise RetryWithFeedback(f"The query {query!r} is too vague; name a product.")


def test_the_model_retry_budget_counts_the_parallel_calls_of_one_message_once() -> None:
    middleware = guard("search", overrides={"search": ToolPolicy(max_model_retries=2)})
    script = [
        ai(("search", {"query": "a"}, "c1"), ("search", {"query": "b"}, "c2")),
        ai(("search", {"query": "c"}, "c3")),
        ai(("search", {"query": "d"}, "c4")),
        AIMessage("I give up."),
    ]
    messages, _ = run([search], script, middleware=[middleware], config=THREAD)

    answers = tool_messages(messages)
    assert answers["c1"].content == "The query 'a' is too vague; name a product. (retry 1 of 2)"
    assert answers["c2"].content == "The query 'b' is too vague; name a product. (retry 1 of 2)"
    assert answers["c3"].content == "The query 'c' is too vague; name a product. (retry 2 of 2)"
    assert str(answers["c4"].content).startswith(
        "The tool 'search' was called incorrectly too many times"
    )


def test_explain_shows_the_policy_the_middleware_applies_to_a_plain_tool() -> None:
    flaky, _ = flaky_tool(failures=1)
    dispatcher = Dispatcher(
        [],
        external_tools=["flaky"],
        timeout=30,
        overrides={"flaky": ToolPolicy(retries=NO_WAIT, on_error="Flaky is down.")},
    )
    explained = dispatcher.explain("flaky")

    assert explained["retries"] == toolguard.Setting(NO_WAIT, "override", "overrides['flaky']")
    assert explained["timeout"] == toolguard.Setting(30.0, "agent")
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": "x"}, "c1")), AIMessage("")],
        middleware=[ToolguardMiddleware(dispatcher)],
    )
    assert tool_messages(messages)["c1"].content == "answer to x after 2 attempts"


def test_an_override_for_a_plain_tool_not_named_external_is_refused_at_construction() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="external_tools"):
        Dispatcher([], overrides={"flaky": ToolPolicy(retries=2)})


# --- the tool's own answers: the author's word, at the tool level --------------------------


def _legacy(q: str) -> str:
    """A tool that answers its own ToolExceptions, LangChain style."""
    raise ToolException(f"Legacy is busy; try {q} later.")


legacy = StructuredTool.from_function(_legacy, name="legacy", handle_tool_error=True)


def test_a_tools_own_error_answer_is_kept_even_where_the_agent_default_fails() -> None:
    """``handle_tool_error`` is the tool author's word: the tool level of the chain,
    asked before the agent's ``on_error=fail``; kept as written, nothing logged."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ToolguardWarning either
        messages, _ = run(
            [legacy],
            [ai(("legacy", {"q": "1"}, "c1")), AIMessage("")],
            middleware=[guard("legacy", on_error=fail)],
        )
    answer = tool_messages(messages)["c1"]
    assert (answer.status, answer.content) == ("error", "Legacy is busy; try 1 later.")
    assert "toolguard" not in answer.response_metadata


def test_an_override_still_answers_a_tools_own_error_answer() -> None:
    messages, _ = run(
        [legacy],
        [ai(("legacy", {"q": "1"}, "c1")), AIMessage("")],
        middleware=[
            guard("legacy", overrides={"legacy": ToolPolicy(on_error=always("Legacy is off."))})
        ],
    )
    answer = tool_messages(messages)["c1"]
    assert (answer.status, answer.content) == ("error", "Legacy is off.")


def test_tool_retry_middlewares_own_answer_inside_is_kept_as_it_wrote_it(logs: Logs) -> None:
    """``on_failure="continue"`` (its default) answers with its own message, which quotes
    the exception: the app's choice, kept; ``on_failure="error"`` lets toolguard answer."""
    flaky, calls = flaky_tool(failures=9)
    retry = ToolRetryMiddleware(max_retries=1, initial_delay=0.001, jitter=False)
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": "1"}, "c1")), AIMessage("")],
        middleware=[guard("flaky"), retry],
    )
    assert calls == [1, 2]
    answer = tool_messages(messages)["c1"]
    assert answer.status == "error" and "2 attempts" in str(answer.content)
    assert logs == []


def test_tool_retry_middleware_raising_inside_lets_toolguard_answer(logs: Logs) -> None:
    flaky, calls = flaky_tool(failures=9)
    retry = ToolRetryMiddleware(
        max_retries=1, initial_delay=0.001, jitter=False, on_failure="error"
    )
    messages, _ = run(
        [flaky],
        [ai(("flaky", {"q": "1"}, "c1")), AIMessage("")],
        middleware=[guard("flaky"), retry],
    )

    event = hidden_event(messages, logs)
    assert calls == [1, 2]
    assert tool_messages(messages)["c1"].content == builtin_message("flaky", event["error_id"])


# --- issue 14: unknown tools, content, commands, tools supplied by other middleware -----------


def test_a_call_of_a_tool_the_agent_lacks_gets_a_bounded_answer_listing_its_tools() -> None:
    name = "transfer\n\x1b[31m" + "x" * 1_000_000
    messages, _ = run(
        [transfer, read_balance],
        [ai((name, {}, "c1"), ("transfr", {}, "c2")), AIMessage("")],
        middleware=[guard()],
    )

    answers = tool_messages(messages)
    first = str(answers["c1"].content)
    assert len(first) < 400 and "\n" not in first and "\x1b" not in first
    assert first.startswith("There is no tool named 'transfer\\n\\x1b[31mxxx")
    assert first.endswith("Available tools: transfer, read_balance.")
    assert answers["c2"].content == (
        "There is no tool named 'transfr' (did you mean 'transfer'?). "
        "Available tools: transfer, read_balance."
    )
    assert len(answers["c1"].name or "") < 200


class SuppliesTools(AgentMiddleware[Any, Any, Any]):
    """An inner middleware that runs a tool the ToolNode does not have."""

    def __init__(self, tool: BaseTool) -> None:
        super().__init__()
        self.extra = tool

    def wrap_tool_call(self, request: Any, handler: Any) -> Any:
        if request.tool is None and request.tool_call["name"] == self.extra.name:
            request = request.override(tool=self.extra)
        return handler(request)


def test_a_tool_an_inner_middleware_supplies_still_runs() -> None:
    messages, _ = run(
        [read_balance],
        [ai(("transfer", {"amount": 3, "to": "bob"}, "c1")), AIMessage("")],
        middleware=[guard(), SuppliesTools(transfer)],
    )
    assert tool_messages(messages)["c1"].content == "sent 3 to bob"


@lc_tool
def report(rows: int) -> str:
    """A long report."""
    return "r" * rows


def test_max_result_chars_cuts_a_plain_tools_text() -> None:
    messages, _ = run(
        [report],
        [ai(("report", {"rows": 500}, "c1")), AIMessage("")],
        middleware=[guard("report", overrides={"report": ToolPolicy(max_result_chars=100)})],
    )
    content = str(tool_messages(messages)["c1"].content)
    assert content.startswith("r" * 100 + "\n[toolguard: output truncated: showing the first 100")


@lc_tool
def screenshot(page: str) -> list[dict[str, Any]]:
    """Text and image blocks."""
    return [
        {"type": "text", "text": "t" * 80},
        {"type": "image", "base64": "A" * 400, "mime_type": "image/png"},
    ]


def test_max_result_chars_bounds_a_plain_tools_content_blocks_as_a_whole() -> None:
    messages, _ = run(
        [screenshot],
        [ai(("screenshot", {"page": "p"}, "c1")), AIMessage("")],
        middleware=[
            guard("screenshot", overrides={"screenshot": ToolPolicy(max_result_chars=100)})
        ],
    )
    content = tool_messages(messages)["c1"].content
    assert isinstance(content, list)
    assert [block["type"] for block in content] == ["text", "text"]  # type: ignore[index]
    assert "1 image(s) omitted" in content[-1]["text"]  # type: ignore[index]


LINKED: list[dict[str, Any]] = [
    {"type": "text", "text": "a caption " * 15},
    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
]


@lc_tool
def linked(page: str) -> list[dict[str, Any]]:
    """A block toolguard has no form for, beside text."""
    return LINKED


def test_max_result_chars_on_blocks_toolguard_cannot_read_warns_and_keeps_them() -> None:
    with pytest.warns(ToolguardWarning, match="max_result_chars cannot apply"):
        messages, _ = run(
            [linked],
            [ai(("linked", {"page": "p"}, "c1")), AIMessage("")],
            middleware=[guard("linked", overrides={"linked": ToolPolicy(max_result_chars=100)})],
        )
    assert tool_messages(messages)["c1"].content == LINKED


def test_blocks_toolguard_cannot_read_within_max_result_chars_pass_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        messages, _ = run(
            [linked],
            [ai(("linked", {"page": "p"}, "c1")), AIMessage("")],
            middleware=[guard("linked", overrides={"linked": ToolPolicy(max_result_chars=500)})],
        )
    assert tool_messages(messages)["c1"].content == LINKED


def test_a_plain_tool_returning_a_command_is_left_as_it_is() -> None:
    @lc_tool
    def rename(new: str, call_id: Annotated[str, InjectedToolCallId]) -> Command[Any]:
        """Rename the conversation."""
        return Command(update={"messages": [ToolMessage(f"renamed {new}", tool_call_id=call_id)]})

    messages, _ = run(
        [rename],
        [ai(("rename", {"new": "n"}, "c1")), AIMessage("done")],
        middleware=[guard("rename")],
        config=THREAD,
    )
    assert tool_messages(messages)["c1"].content == "renamed n"
    assert "toolguard" not in tool_messages(messages)["c1"].response_metadata


def test_a_tool_error_raised_by_a_plain_tool_reaches_the_model_under_a_hiding_override() -> None:
    @lc_tool
    def lookup(order_id: int) -> str:
        """Look an order up."""
        raise ToolError(f"There is no order {order_id}.")

    messages, _ = run(
        [lookup],
        [ai(("lookup", {"order_id": 1}, "c1")), AIMessage("")],
        middleware=[
            guard(
                "lookup", overrides={"lookup": ToolPolicy(on_error=generic_unless_visible("Down."))}
            )
        ],
    )
    assert tool_messages(messages)["c1"].content == "There is no order 1."


def test_the_middleware_leaves_the_tool_itself_untouched() -> None:
    run([read_balance], [ai(("read_balance", {"account": "a"}, "c0")), AIMessage("")])
    before = dict(read_balance.__dict__)  # after LangChain's own first-use caches
    run(
        [read_balance],
        [ai(("read_balance", {"account": "a"}, "c1")), AIMessage("")],
        middleware=[guard()],
    )
    assert read_balance.__dict__ == before
    with pytest.raises(pydantic.ValidationError):
        read_balance.invoke({"account": "a"})  # LangChain's own behaviour, unguarded


def test_parallel_calls_each_get_their_own_witness() -> None:
    barrier = threading.Barrier(2, timeout=5)
    seen: list[str] = []

    @lc_tool
    def both(key: str) -> str:
        """Wait for the other call, then fail differently."""
        barrier.wait()
        seen.append(key)
        if key == "bad":
            raise ToolException("bad key")
        return "ok"

    messages, _ = run(
        [both],
        [ai(("both", {"key": "bad"}, "c1"), ("both", {"key": "good"}, "c2")), AIMessage("")],
        middleware=[guard("both")],
    )
    answers = tool_messages(messages)
    assert (answers["c1"].content, answers["c2"].content) == ("bad key", "ok")
    assert sorted(seen) == ["bad", "good"]
