"""The Pydantic AI integration, driven through the real ``Agent.run`` loop.

The model is Pydantic AI's own ``FunctionModel``, answering from a script and
recording every message list it was sent; the tool manager, retry loop, deferred
tools and capabilities are the framework's own.
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from pydantic_ai import (
    Agent,
    AgentRunResult,
    BinaryContent,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    ImageUrl,
    ModelMessage,
    ModelResponse,
    ModelRetry,
    RunContext,
    TextPart,
    Tool,
    ToolCallPart,
    ToolDefinition,
    ToolReturn,
    ToolReturnPart,
    UnexpectedModelBehavior,
    UserPromptPart,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest
from pydantic_ai.models.function import AgentInfo, FunctionModel

import toolguard
from toolguard import (
    Dispatcher,
    Image,
    Injected,
    InjectedCallId,
    RetryWithFeedback,
    Text,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
)
from toolguard.handlers import always, fail
from toolguard.integrations.pydantic_ai import (
    ToolguardCapability,
    as_pydantic_ai_tool,
    as_pydantic_ai_tools,
)
from toolguard.policy._precedence import BUILTIN_MESSAGE

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"


class Script:
    """A FunctionModel script: one list of response parts per model request."""

    __name__ = "script"  # FunctionModel names its model after the function

    def __init__(self, *steps: list[Any]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.seen.append(list(messages))
        return ModelResponse(parts=self.steps.pop(0))

    def last_round(self) -> list[ToolReturnPart]:
        """The tool returns of the last request the model was sent."""
        return self.last_round_of(-1)

    def last_round_of(self, request: int) -> list[ToolReturnPart]:
        """The tool returns the model was sent with its ``request``-th request."""
        return [part for part in self.seen[request][-1].parts if isinstance(part, ToolReturnPart)]


def call(name: str, args: dict[str, Any] | str, call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=call_id)


async def run(
    tools: Sequence[Tool[Any]],
    script: Script,
    *,
    capabilities: Sequence[AbstractCapability[Any]] = (),
    **options: Any,
) -> AgentRunResult[Any]:
    """A real ``Agent.run`` on ``script``."""
    deps = options.pop("deps", None)
    agent = Agent(
        FunctionModel(script), tools=list(tools), capabilities=list(capabilities), **options
    )
    return await agent.run("go", deps=deps)


def returns(result: AgentRunResult[Any]) -> dict[str, ToolReturnPart]:
    return {
        part.tool_call_id: part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


def hidden_event(result: AgentRunResult[Any], script: Script, logs: Logs) -> dict[str, Any]:
    """Assert SECRET is in no message (as stored and as the model saw it) and in one log event."""
    assert SECRET not in ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode()
    for messages in script.seen:
        assert SECRET not in ModelMessagesTypeAdapter.dump_json(messages).decode()
    carrying = [event for event in logs if SECRET in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]


def builtin_message(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


# --- tools used below -------------------------------------------------------------------


@toolguard.tool
def charge(card: str) -> str:
    """Charge a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@toolguard.tool
def find_order(order_id: int) -> str:
    """Find an order."""
    if order_id == 42:
        raise ToolError(f"There is no order {order_id}. Ask the user to check it.")
    return f"order {order_id}: shipped"


@toolguard.tool(return_direct=True)
def submit(text: str) -> str:
    """Submit the final answer."""
    if not text:
        raise ToolError("The answer is empty; write one.")
    return f"Submitted: {text}"


@toolguard.tool
async def book(day: str) -> str:
    """Book a table."""
    if day != "2026-05-01":
        raise RetryWithFeedback("Use an ISO date (YYYY-MM-DD); the user said May 1st 2026.")
    return f"booked for {day}"


# --- the scenarios in a real run ------------------------------------------------------------


async def test_hidden_cause_reaches_the_model_as_a_failed_result_and_is_logged_once(
    logs: Logs,
) -> None:
    script = Script([call("charge", {"card": "4242"}, "call-1")], [TextPart("Payment failed.")])
    result = await run([as_pydantic_ai_tool(charge)], script)

    event = hidden_event(result, script, logs)
    [answer] = script.last_round()
    assert event["event"] == "tool_error_hidden"
    assert (event["tool"], event["call_id"]) == ("charge", "call-1")
    assert (answer.outcome, answer.content) == (
        "failed",
        builtin_message("charge", event["error_id"]),
    )
    assert result.output == "Payment failed."


async def test_tool_error_message_reaches_the_model_as_a_failed_result(logs: Logs) -> None:
    script = Script([call("find_order", {"order_id": 42}, "call-1")], [TextPart("Which?")])
    result = await run([as_pydantic_ai_tool(find_order)], script)

    [answer] = script.last_round()
    assert (answer.outcome, answer.content) == (
        "failed",
        "There is no order 42. Ask the user to check it.",
    )
    assert result.output == "Which?"
    assert logs == []


async def test_retry_with_feedback_is_a_model_retry_and_the_corrected_call_succeeds() -> None:
    script = Script(
        [call("book", {"day": "May 1st"}, "call-1")],
        [call("book", {"day": "2026-05-01"}, "call-2")],
        [TextPart("Booked.")],
    )
    result = await run([as_pydantic_ai_tool(book)], script)

    feedback = returns(result)["call-1"]
    assert feedback.outcome == "retried"
    assert feedback.content == "Use an ISO date (YYYY-MM-DD); the user said May 1st 2026."
    assert script.last_round_of(1) == [feedback]  # the model saw the feedback
    corrected = returns(result)["call-2"]
    assert (corrected.outcome, corrected.content) == ("success", "booked for 2026-05-01")
    assert result.output == "Booked."


async def test_return_direct_result_is_the_output_and_the_model_is_not_asked_again() -> None:
    guard = Dispatcher([submit])
    script = Script([call("submit", {"text": "42"}, "call-1")], [TextPart("never asked")])
    result = await run(
        as_pydantic_ai_tools(guard), script, capabilities=[ToolguardCapability(guard)]
    )

    assert result.output == "Submitted: 42"
    assert len(script.seen) == 1
    assert returns(result)["call-1"].metadata == {
        "toolguard": {"return_direct": True, "is_error": False, "error_id": None}
    }
    # the history stays valid: every call answered, then the tool's text as the response
    messages = result.all_messages()
    last = messages[-1]
    assert isinstance(last, ModelResponse)
    assert last.parts == [TextPart(content="Submitted: 42")]
    assert last.metadata == {
        "toolguard": {"return_direct": True, "tool_name": "submit", "tool_call_id": "call-1"}
    }
    assert ModelMessagesTypeAdapter.validate_json(ModelMessagesTypeAdapter.dump_json(messages))


async def test_a_failed_return_direct_tool_never_becomes_the_output() -> None:
    guard = Dispatcher([submit])
    script = Script([call("submit", {"text": ""}, "call-1")], [TextPart("Let me write one.")])
    result = await run(
        as_pydantic_ai_tools(guard), script, capabilities=[ToolguardCapability(guard)]
    )

    [answer] = script.last_round()
    assert (answer.outcome, answer.content) == ("failed", "The answer is empty; write one.")
    assert result.output == "Let me write one."


async def test_without_the_capability_return_direct_is_only_recorded() -> None:
    script = Script([call("submit", {"text": "42"}, "c")], [TextPart("the model answered")])
    result = await run([as_pydantic_ai_tool(submit)], script)

    assert result.output == "the model answered"
    assert returns(result)["c"].metadata["toolguard"]["return_direct"] is True


async def test_invalid_arguments_are_a_model_retry_with_toolguards_message() -> None:
    ran: list[int] = []

    @toolguard.tool
    def refund(order_id: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    expected = Dispatcher([refund]).dispatch(
        ToolCall(name="refund", arguments={"order_id": "abc"}, id="x")
    )
    script = Script(
        [call("refund", {"order_id": "abc"}, "call-1"), call("refund", "[1]", "call-2")],
        [TextPart("Oops.")],
    )
    await run([as_pydantic_ai_tool(refund)], script, retries=2)

    answers = {part.tool_call_id: part for part in script.last_round()}
    assert (answers["call-1"].outcome, answers["call-1"].content) == ("retried", expected.content)
    assert answers["call-2"].content == (
        "Invalid arguments for tool 'refund':\n- the arguments must be a JSON object, got [1]"
    )
    assert ran == []


# --- policies, retries, rounds ------------------------------------------------------------------


async def test_retry_on_visible_sends_every_model_visible_failure_as_a_retry(logs: Logs) -> None:
    script = Script(
        [call("find_order", {"order_id": 42}, "c1"), call("charge", {"card": "1"}, "c2")],
        [TextPart("ok")],
    )
    guard = Dispatcher([find_order, charge])
    await run(as_pydantic_ai_tools(guard, retry_on="visible"), script)

    answers = {part.tool_call_id: part.outcome for part in script.last_round()}
    assert answers == {"c1": "retried", "c2": "failed"}  # a hidden failure is never a retry


async def test_max_model_retries_is_the_tools_retry_budget() -> None:
    guard = Dispatcher([book], overrides={"book": ToolPolicy(max_model_retries=1)})
    script = Script(
        [call("book", {"day": "May 1st"}, "c1")],
        [call("book", {"day": "1 May"}, "c2")],
        [TextPart("never reached")],
    )

    assert as_pydantic_ai_tool(book, dispatcher=guard).max_retries == 1
    with pytest.raises(UnexpectedModelBehavior, match="exceeded max retries count of 1"):
        await run(as_pydantic_ai_tools(guard), script, retries=5)


async def test_a_round_stops_if_any_call_asked_unless_the_mode_is_all() -> None:
    modes: list[tuple[Literal["any", "all"], str]] = [
        ("any", "Submitted: x"),
        ("all", "the model answered"),
    ]
    for mode, output in modes:
        guard = Dispatcher([find_order, submit], return_direct_mode=mode)
        script = Script(
            [call("find_order", {"order_id": 1}, "c1"), call("submit", {"text": "x"}, "c2")],
            [TextPart("the model answered")],
        )
        result = await run(
            as_pydantic_ai_tools(guard), script, capabilities=[ToolguardCapability(guard)]
        )
        assert result.output == output


async def test_dispatcher_overrides_and_defaults_apply_to_its_tools(logs: Logs) -> None:
    guard = Dispatcher(
        [charge, find_order],
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={"find_*": ToolPolicy(on_error=always("Override: orders are offline."))},
    )
    script = Script(
        [call("charge", {"card": "1"}, "c1"), call("find_order", {"order_id": 42}, "c2")],
        [TextPart("ok")],
    )
    result = await run(as_pydantic_ai_tools(guard), script)

    event = hidden_event(result, script, logs)
    answers = {part.tool_call_id: part.content for part in script.last_round()}
    assert answers["c1"] == f"Agent default: charge failed ({event['error_id']})."
    assert answers["c2"] == "Override: orders are offline."


async def test_a_handler_that_fails_the_invocation_fails_the_run(logs: Logs) -> None:
    guard = Dispatcher([charge], on_error=fail)
    with pytest.raises(ToolCallFailed) as raised:
        await run(as_pydantic_ai_tools(guard), Script([call("charge", {"card": "1"}, "c")]))

    assert (raised.value.tool, raised.value.call_id) == ("charge", "c")
    assert [event["event"] for event in logs] == ["tool_call_failed"]


# --- control flow -------------------------------------------------------------------------------


async def test_call_deferred_passes_through_to_pydantic_ais_deferred_tools(logs: Logs) -> None:
    @toolguard.tool
    def approve_refund(order_id: int) -> str:
        """Refund after a human approves."""
        raise CallDeferred(metadata={"order_id": order_id})

    script = Script([call("approve_refund", {"order_id": 7}, "c1")])
    result = await run(
        [as_pydantic_ai_tool(approve_refund)], script, output_type=[str, DeferredToolRequests]
    )

    assert isinstance(result.output, DeferredToolRequests)
    assert result.output.metadata == {"c1": {"order_id": 7}}
    assert logs == []


async def test_a_model_retry_raised_by_the_tool_itself_is_pydantic_ais_retry() -> None:
    @toolguard.tool
    def pick(colour: str) -> str:
        """Pick a colour."""
        if colour != "red":
            raise ModelRetry("Only red is in stock.")
        return "picked red"

    script = Script(
        [call("pick", {"colour": "blue"}, "c1")],
        [call("pick", {"colour": "red"}, "c2")],
        [TextPart("ok")],
    )
    result = await run([as_pydantic_ai_tool(pick)], script)

    assert (returns(result)["c1"].outcome, returns(result)["c1"].content) == (
        "retried",
        "Only red is in stock.",
    )
    assert returns(result)["c2"].content == "picked red"


# --- schema, injection, content -----------------------------------------------------------------


@dataclass
class User:
    name: str


async def test_injected_call_id_and_deps_come_from_the_run_context() -> None:
    @toolguard.tool
    def whoami(call_id: Annotated[str, InjectedCallId], user: Annotated[User, Injected]) -> str:
        """Who is asking."""
        return f"{user.name} via {call_id}"

    script = Script([call("whoami", {}, "call-9")], [TextPart("ok")])
    result = await run([as_pydantic_ai_tool(whoami)], script, deps=User("ann"))

    assert returns(result)["call-9"].content == "ann via call-9"


def test_the_declared_schema_is_toolguards() -> None:
    @toolguard.tool
    def search(query: str, limit: int = 3, *, call_id: Annotated[str, InjectedCallId]) -> str:
        """Search the catalogue."""
        return query

    made = as_pydantic_ai_tool(search)

    assert made.tool_def.parameters_json_schema == search.parameters
    assert made.tool_def.parameters_json_schema is not search.parameters  # a copy
    assert (made.name, made.description) == ("search", "Search the catalogue.")


async def test_content_blocks_become_text_and_binary_content() -> None:
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()

    @toolguard.tool
    def chart(name: str) -> list[Text | Image]:
        """Draw a chart."""
        return [Text(text=f"chart {name}"), Image(data=png, media_type="image/png")]

    script = Script([call("chart", {"name": "x"}, "c")], [TextPart("ok")])
    result = await run([as_pydantic_ai_tool(chart)], script)

    assert returns(result)["c"].content == [
        "chart x",
        BinaryContent(data=b"\x89PNG\r\n\x1a\n", media_type="image/png"),
    ]


def test_as_pydantic_ai_tool_refuses_what_it_cannot_serve() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="'charge' is not one of this"):
        as_pydantic_ai_tool(charge, dispatcher=Dispatcher([submit]))
    with pytest.raises(TypeError, match="only with dispatcher"):
        as_pydantic_ai_tool("charge")
    with pytest.raises(ValueError, match="retry_on='always'"):
        as_pydantic_ai_tool(charge, retry_on="always")  # type: ignore[arg-type]


# --- Pydantic AI's own injection, return values and Tool options (issue 13) -----------------


async def test_a_run_context_parameter_gets_pydantic_ais_context_and_is_in_no_schema() -> None:
    seen: list[RunContext[User]] = []

    @toolguard.tool
    def greet(ctx: RunContext[User], greeting: str) -> str:
        """Greet the user."""
        seen.append(ctx)
        return f"{greeting}, {ctx.deps.name} ({ctx.tool_call_id}, retry {ctx.retry})"

    made = as_pydantic_ai_tool(greet)
    assert made.tool_def.parameters_json_schema["properties"] == {"greeting": {"type": "string"}}
    script = Script([call("greet", {"greeting": "hi"}, "call-3")], [TextPart("ok")])
    result = await run([made], script, deps=User("ann"))

    assert returns(result)["call-3"].content == "hi, ann (call-3, retry 0)"
    [ctx] = seen
    assert isinstance(ctx, RunContext)
    assert ctx.deps == User("ann")


async def test_the_model_cannot_set_a_run_context_parameter() -> None:
    @toolguard.tool
    def greet(ctx: RunContext[User], greeting: str) -> str:
        """Greet the user."""
        return greeting

    script = Script(
        [call("greet", {"greeting": "hi", "ctx": {"deps": "evil"}}, "c")], [TextPart("ok")]
    )
    result = await run([as_pydantic_ai_tool(greet)], script, deps=User("ann"))

    answer = returns(result)["c"]
    assert answer.outcome == "retried"
    assert "'ctx': set by the application; it cannot be sent" in str(answer.content)


class InjectedToolArg:
    """A stand-in for LangChain's marker, known to toolguard by its qualified name."""


InjectedToolArg.__module__ = "langchain_core.tools.base"


def test_a_parameter_only_another_framework_supplies_is_refused_at_conversion() -> None:
    @toolguard.tool
    def lookup(query: str, state: Annotated[dict[str, Any], InjectedToolArg]) -> str:
        """Look up."""
        return query

    with pytest.raises(toolguard.ToolDefinitionError) as refused:
        as_pydantic_ai_tool(lookup)
    assert "'state'" in str(refused.value)
    assert "Pydantic AI cannot supply" in str(refused.value)


async def test_a_tool_return_passes_through_untouched_with_toolguards_decision_added() -> None:
    @toolguard.tool
    def report(order_id: int) -> ToolReturn:
        """Report on an order."""
        return ToolReturn(
            return_value={"order": order_id, "state": "shipped"},
            content=["Here is the label:", BinaryContent(data=b"PNG", media_type="image/png")],
            metadata={"trace": "t-1"},
        )

    script = Script([call("report", {"order_id": 7}, "c")], [TextPart("ok")])
    result = await run([as_pydantic_ai_tool(report)], script)

    part = returns(result)["c"]
    assert (part.outcome, part.content) == ("success", {"order": 7, "state": "shipped"})
    assert part.metadata == {
        "trace": "t-1",
        "toolguard": {"return_direct": False, "is_error": False, "error_id": None},
    }
    # the ToolReturn's separate content reached the model as Pydantic AI sends it
    request = script.seen[-1][-1]
    assert isinstance(request, ModelRequest)
    sent = [p for p in request.parts if isinstance(p, UserPromptPart)]
    assert sent and sent[0].content == [
        "Here is the label:",
        BinaryContent(data=b"PNG", media_type="image/png"),
    ]


async def test_multimodal_content_passes_through_untouched() -> None:
    @toolguard.tool
    def photo(name: str) -> list[Any]:
        """A photo."""
        return [f"photo of {name}", ImageUrl(url="https://example.com/x.png")]

    script = Script([call("photo", {"name": "x"}, "c")], [TextPart("ok")])
    result = await run([as_pydantic_ai_tool(photo)], script)

    assert returns(result)["c"].content == ["photo of x", ImageUrl(url="https://example.com/x.png")]


async def test_pydantic_ais_tool_options_are_forwarded() -> None:
    async def only_on_tuesdays(ctx: RunContext[Any], tool_def: ToolDefinition) -> ToolDefinition:
        return dataclasses.replace(tool_def, description="Find an order (prepared).")

    made = as_pydantic_ai_tool(
        find_order,
        strict=True,
        sequential=True,
        prepare=only_on_tuesdays,
        timeout=2.5,
        metadata={"team": "orders"},
    )
    assert (made.strict, made.sequential, made.timeout) == (True, True, 2.5)
    assert made.tool_def.metadata == {"team": "orders", "toolguard": {"adapter": True}}

    described: list[str | None] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        described.extend(t.description for t in info.function_tools)
        return ModelResponse(parts=[TextPart("ok")])

    await Agent(FunctionModel(model), tools=[made]).run("go")
    assert described == ["Find an order (prepared)."]


async def test_requires_approval_defers_the_call_until_a_human_approves() -> None:
    ran: list[int] = []

    @toolguard.tool
    def refund(order_id: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        return f"refunded {order_id}"

    agent = Agent(
        FunctionModel(Script([call("refund", {"order_id": 5}, "c1")], [TextPart("Refunded.")])),
        tools=[as_pydantic_ai_tool(refund, requires_approval=True)],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("refund order 5")
    assert isinstance(first.output, DeferredToolRequests)
    assert [c.tool_call_id for c in first.output.approvals] == ["c1"]
    assert ran == []

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c1": True}),
    )
    assert second.output == "Refunded."
    assert ran == [5]
    assert returns(second)["c1"].content == "refunded 5"


async def test_as_pydantic_ai_tools_forwards_options_to_every_tool() -> None:
    made = as_pydantic_ai_tools(Dispatcher([find_order, submit]), sequential=True)
    assert [t.sequential for t in made] == [True, True]


# --- sessions -------------------------------------------------------------------------------


async def test_under_the_capability_adapter_calls_run_in_the_conversations_session(
    logs: Logs,
) -> None:
    """A breaker opens across two runs of one conversation (``message_history``)."""
    ran: list[str] = []

    @toolguard.tool(breaker=toolguard.Breaker(failures=2, cooldown=60))
    def flaky(key: str) -> str:
        """A flaky backend."""
        ran.append(key)
        raise ConnectionError(f"backend down {SECRET}")

    guard = Dispatcher([flaky])
    script = Script(
        [call("flaky", {"key": "a"}, "c1")],
        [TextPart("first run over")],
        [call("flaky", {"key": "b"}, "c2")],
        [call("flaky", {"key": "c"}, "c3")],
        [TextPart("second run over")],
    )
    agent = Agent(
        FunctionModel(script),
        tools=as_pydantic_ai_tools(guard),
        capabilities=[ToolguardCapability(guard)],
    )
    first = await agent.run("go")
    second = await agent.run("again", message_history=first.all_messages())

    assert ran == ["a", "b"]  # the third call found the breaker open
    refused = returns(second)["c3"]
    assert refused.outcome == "failed"
    assert "unavailable" in str(refused.content)
    session = guard.session(id=str(first.all_messages()[-1].conversation_id))
    assert session.state("flaky").open_until is not None


async def test_a_value_cut_by_max_result_chars_goes_as_toolguards_text() -> None:
    """Any other value passes untouched (Pydantic AI serialises it), unless toolguard cut it."""

    @toolguard.tool(max_result_chars=100)
    def dump(n: int) -> dict[str, Any]:
        """Dump rows."""
        return {"rows": list(range(n))}

    script = Script(
        [call("dump", {"n": 3}, "small"), call("dump", {"n": 200}, "big")], [TextPart("ok")]
    )
    result = await run([as_pydantic_ai_tool(dump)], script)

    assert returns(result)["small"].content == {"rows": [0, 1, 2]}
    big = returns(result)["big"].content
    assert isinstance(big, str) and "output truncated" in big
