"""The OpenAI Agents SDK integration, driven through the real ``Runner`` loop.

The model is an offline ``agents.models.interface.Model`` answering from a script of
function calls (``test_openai_agents_support.ScriptModel``); the run loop, tool
execution, ``tool_use_behavior`` and run items are the SDK's own. Tracing is off for
every run (``RunConfig(tracing_disabled=True)``), so nothing tries to reach OpenAI.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from dataclasses import dataclass
from typing import Annotated, Any, Literal

import pytest
from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    Runner,
    RunResult,
    ToolGuardrailFunctionOutput,
    ToolOutputGuardrailData,
    ToolOutputImage,
    ToolOutputText,
    UserError,
    function_tool,
    input_guardrail,
    tool_output_guardrail,
)

import toolguard
from toolguard import (
    Dispatcher,
    Image,
    Injected,
    InjectedCallId,
    Text,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
)
from toolguard.handlers import always, fail
from toolguard.integrations.openai_agents import (
    as_function_tool,
    as_function_tools,
    tool_use_behavior,
)
from toolguard.policy._precedence import BUILTIN_MESSAGE

from .test_openai_agents_support import (
    NO_TRACING,
    ScriptModel,
    Step,
    agent_with,
    call,
    outputs,
    run,
    say,
)

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"


def hidden_event(result: RunResult, model: ScriptModel, logs: Logs) -> dict[str, Any]:
    """Assert SECRET is in nothing the SDK produced and in exactly one log event."""
    produced = [
        repr(result.new_items),
        json.dumps(result.to_input_list(), default=str),
        repr(result.final_output),
        model.sent(),
    ]
    for text in produced:
        assert SECRET not in text
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
    try:
        raise KeyError(order_id)
    except KeyError as error:
        raise ToolError(f"There is no order {order_id}. Ask the user to check it.") from error


@toolguard.tool(return_direct=True)
def submit(text: str) -> str:
    """Submit the final answer."""
    if not text:
        raise ToolError("The answer is empty; write one.")
    return f"Submitted: {text}"


@toolguard.tool
async def search(query: str, limit: int = 3) -> str:
    """Search the catalogue."""
    return f"{limit} results for {query}"


# --- the three scenarios in a real run ------------------------------------------------------


async def test_hidden_cause_reaches_no_item_and_is_logged_once(logs: Logs) -> None:
    result, model = await run(
        [as_function_tool(charge)],
        [[call("charge", {"card": "4242"}, "call-1")], say("Payment failed.")],
    )

    event = hidden_event(result, model, logs)
    answer = outputs(result)["call-1"]
    assert event["event"] == "tool_error_hidden"
    assert (event["tool"], event["call_id"]) == ("charge", "call-1")
    assert answer.output == builtin_message("charge", event["error_id"])
    assert answer.custom_data == {
        "toolguard": {"return_direct": False, "is_error": True, "error_id": event["error_id"]}
    }
    assert answer.output in model.sent()  # the model was told, not the SDK's default
    assert result.final_output == "Payment failed."


async def test_tool_error_message_reaches_the_model_as_it_is(logs: Logs) -> None:
    result, model = await run(
        [as_function_tool(find_order)],
        [[call("find_order", {"order_id": 42}, "call-1")], say("Which order?")],
    )

    answer = outputs(result)["call-1"]
    assert answer.output == "There is no order 42. Ask the user to check it."
    assert answer.output in model.sent()
    assert result.final_output == "Which order?"
    # the ToolError's cause (a KeyError) is hidden: logged under the id the item carries
    [event] = logs
    assert (event["event"], event["error_type"]) == ("tool_error_hidden", "ToolError")
    assert answer.custom_data == {
        "toolguard": {"return_direct": False, "is_error": True, "error_id": event["error_id"]}
    }


async def test_return_direct_result_is_the_final_output_and_the_model_is_not_asked_again() -> None:
    guard = Dispatcher([submit])
    result, model = await run(
        as_function_tools(guard),
        [[call("submit", {"text": "42"}, "call-1")], say("never asked")],
        tool_use_behavior=tool_use_behavior(guard),
    )

    assert result.final_output == "Submitted: 42"
    assert outputs(result)["call-1"].custom_data == {
        "toolguard": {"return_direct": True, "is_error": False, "error_id": None}
    }
    assert model.remaining_steps == 1


async def test_a_failed_return_direct_tool_never_becomes_the_final_output() -> None:
    guard = Dispatcher([submit])
    result, model = await run(
        as_function_tools(guard),
        [[call("submit", {"text": ""}, "call-1")], say("Let me write one.")],
        tool_use_behavior=tool_use_behavior(guard),
    )

    assert outputs(result)["call-1"].output == "The answer is empty; write one."
    assert result.final_output == "Let me write one."
    assert model.remaining_steps == 0


async def test_a_tool_output_guardrail_that_rejects_the_result_cancels_return_direct() -> None:
    @tool_output_guardrail
    def no_submissions(data: ToolOutputGuardrailData) -> ToolGuardrailFunctionOutput:
        return ToolGuardrailFunctionOutput.reject_content("Submissions are closed.")

    guard = Dispatcher([submit])
    result, _ = await run(
        [as_function_tool(submit, dispatcher=guard, tool_output_guardrails=[no_submissions])],
        [[call("submit", {"text": "42"}, "call-1")], say("Submissions are closed, sorry.")],
        tool_use_behavior=tool_use_behavior(guard),
    )

    answer = outputs(result)["call-1"]
    assert answer.output == "Submissions are closed."
    assert answer.custom_data == {
        "toolguard": {"return_direct": False, "is_error": False, "error_id": None}
    }
    assert result.final_output == "Submissions are closed, sorry."


async def test_the_sdks_stop_at_tools_would_make_a_failure_the_final_output() -> None:
    """Why tool_use_behavior() exists: StopAtTools stops on the name, failures included."""
    result, _ = await run(
        [as_function_tool(submit)],
        [[call("submit", {"text": ""}, "call-1")], say("Let me write one.")],
        tool_use_behavior={"stop_at_tool_names": ["submit"]},
    )

    assert result.final_output == "The answer is empty; write one."


async def test_invalid_arguments_get_toolguards_message_and_the_tool_never_runs() -> None:
    ran: list[int] = []

    @toolguard.tool
    def refund(order_id: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        return "refunded"

    expected = Dispatcher([refund]).dispatch(
        ToolCall(name="refund", arguments={"order_id": "abc"}, id="x")
    )
    result, model = await run(
        [as_function_tool(refund)],
        [
            [call("refund", {"order_id": "abc"}, "call-1"), call("refund", "{not json", "call-2")],
            say("Oops."),
        ],
    )

    answers = outputs(result)
    assert answers["call-1"].output == expected.content
    assert str(answers["call-1"].output).startswith(
        "Invalid arguments for tool 'refund':\n- 'order_id': "
    )
    assert str(answers["call-2"].output).startswith(
        "Invalid arguments for tool 'refund':\n- the arguments are not valid JSON"
    )
    assert "An error occurred while running the tool" not in model.sent()
    assert ran == []


def test_run_sync_runs_the_same_pipeline(logs: Logs) -> None:
    guard = Dispatcher([charge, find_order, submit])
    agent, model = agent_with(
        as_function_tools(guard),
        [
            [call("charge", {"card": "1"}, "c1"), call("find_order", {"order_id": 7}, "c2")],
            [call("submit", {"text": "done"}, "c3")],
            say("never asked"),
        ],
        tool_use_behavior=tool_use_behavior(guard),
    )

    # run_sync runs on its thread's default event loop, made if there is none, and leaves
    # it open. A thread of its own: this thread's loop (pytest-asyncio's) is not
    # replaced, and the loop run_sync made is closed, not left to the garbage collector.
    def run_sync() -> Any:
        try:
            return Runner.run_sync(agent, "go", run_config=NO_TRACING)
        finally:
            asyncio.get_event_loop_policy().get_event_loop().close()

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as thread:
        result = thread.submit(run_sync).result()

    event = hidden_event(result, model, logs)
    answers = outputs(result)
    assert answers["c1"].output == builtin_message("charge", event["error_id"])
    assert answers["c2"].output == "There is no order 7. Ask the user to check it."
    assert result.final_output == "Submitted: done"


# --- rounds, modes and policies -------------------------------------------------------------


async def test_a_round_stops_if_any_call_asked_unless_the_mode_is_all() -> None:
    script: list[Step] = [
        [call("search", {"query": "a"}, "c1"), call("submit", {"text": "x"}, "c2")],
        say("the model answered"),
    ]
    modes: list[tuple[Literal["any", "all"], str]] = [
        ("any", "Submitted: x"),
        ("all", "the model answered"),
    ]
    for mode, final in modes:
        guard = Dispatcher([search, submit], return_direct_mode=mode)
        result, _ = await run(
            as_function_tools(guard), script, tool_use_behavior=tool_use_behavior(guard)
        )
        assert result.final_output == final


async def test_dispatcher_overrides_and_defaults_apply_to_its_tools(logs: Logs) -> None:
    guard = Dispatcher(
        [charge, find_order],
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={"find_*": ToolPolicy(on_error=always("Override: orders are offline."))},
    )
    result, model = await run(
        as_function_tools(guard),
        [[call("charge", {"card": "1"}, "c1"), call("find_order", {"order_id": 1}, "c2")], say("")],
    )

    event = hidden_event(result, model, logs)
    answers = outputs(result)
    assert answers["c1"].output == f"Agent default: charge failed ({event['error_id']})."
    assert answers["c2"].output == "Override: orders are offline."


async def test_a_handler_that_fails_the_invocation_fails_the_run(logs: Logs) -> None:
    guard = Dispatcher([charge], on_error=fail)
    with pytest.raises(UserError) as raised:
        await run(as_function_tools(guard), [[call("charge", {"card": "1"}, "c")], say("")])

    failed = raised.value.__cause__
    assert isinstance(failed, ToolCallFailed)
    assert (failed.tool, failed.call_id) == ("charge", "c")
    assert SECRET not in str(raised.value)
    assert [event["event"] for event in logs] == ["tool_call_failed"]


async def test_a_guardrail_tripwire_in_a_nested_run_stops_the_outer_run(logs: Logs) -> None:
    @input_guardrail
    def refuse_everything(context: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="refused", tripwire_triggered=True)

    @toolguard.tool
    async def ask_expert(question: str) -> str:
        """Ask the expert agent."""
        expert = Agent(
            name="expert",
            model=ScriptModel([say("an answer")]),
            input_guardrails=[refuse_everything],
        )
        answer = await Runner.run(expert, question, run_config=NO_TRACING)
        return str(answer.final_output)

    with pytest.raises(InputGuardrailTripwireTriggered):
        await run([as_function_tool(ask_expert)], [[call("ask_expert", {"question": "?"}, "c")]])
    assert logs == []  # control flow: no handler saw it


# --- schema, injection, content -----------------------------------------------------------------


async def test_the_declared_schema_is_the_sdks_own_for_the_same_function() -> None:
    """What the model sees is what ``function_tool`` declares; toolguard validates."""
    fn = as_function_tool(search)
    result, _ = await run(
        [fn],
        [[call("search", {"query": "tea", "limit": 2}, "c1")], say("")],
    )

    assert isinstance(fn, FunctionTool)
    assert fn.strict_json_schema is True
    assert fn.params_json_schema == function_tool(search).params_json_schema
    assert fn.params_json_schema["required"] == ["query", "limit"]
    assert outputs(result)["c1"].output == "2 results for tea"
    assert search.parameters["required"] == ["query"]  # toolguard's own schema is untouched


def test_a_schema_that_cannot_be_strict_is_declared_non_strict() -> None:
    @toolguard.tool
    def tag(item: str, **labels: str) -> str:
        """Tag an item."""
        return item

    assert as_function_tool(tag).strict_json_schema is False
    assert as_function_tool(tag).params_json_schema == tag.parameters
    loose = as_function_tool(search, strict_mode=False)
    assert loose.strict_json_schema is False
    assert loose.params_json_schema == function_tool(search, strict_mode=False).params_json_schema
    with pytest.raises(toolguard.ToolDefinitionError, match="cannot be declared with strict"):
        as_function_tool(tag, strict_mode=True)


@dataclass
class User:
    name: str


async def test_injected_call_id_and_context_come_from_the_sdks_tool_context() -> None:
    @toolguard.tool
    def whoami(call_id: Annotated[str, InjectedCallId], user: Annotated[User, Injected]) -> str:
        """Who is asking."""
        return f"{user.name} via {call_id}"

    fn = as_function_tool(whoami)
    result, _ = await run([fn], [[call("whoami", {}, "call-9")], say("")], context=User("ann"))

    assert outputs(result)["call-9"].output == "ann via call-9"
    assert fn.params_json_schema["properties"] == {}


async def test_a_model_that_sends_an_injected_argument_is_refused() -> None:
    @toolguard.tool
    def whoami(call_id: Annotated[str, InjectedCallId]) -> str:
        """Who is asking."""
        return call_id

    result, _ = await run(
        [as_function_tool(whoami, strict_mode=False)],
        [[call("whoami", {"call_id": "spoofed"}, "c1")], say("")],
    )

    assert "'call_id': set by the application; it cannot be sent" in str(
        outputs(result)["c1"].output
    )


async def test_content_blocks_become_the_sdks_text_and_image_outputs() -> None:
    @toolguard.tool
    def chart(name: str) -> list[Text | Image]:
        """Draw a chart."""
        return [Text(text=f"chart {name}"), Image(data="iVBORw0KGgo=", media_type="image/png")]

    result, model = await run([as_function_tool(chart)], [[call("chart", {"name": "x"}, "c")], []])

    assert outputs(result)["c"].output == [
        ToolOutputText(text="chart x"),
        ToolOutputImage(image_url="data:image/png;base64,iVBORw0KGgo="),
    ]
    assert "data:image/png;base64,iVBORw0KGgo=" in model.sent()


def test_function_tool_options_pass_through_but_toolguards_own_fields_do_not() -> None:
    fn = as_function_tool(search, is_enabled=False, needs_approval=True)
    assert (fn.is_enabled, fn.needs_approval) == (False, True)
    with pytest.raises(TypeError, match="timeout_seconds"):
        as_function_tool(search, timeout_seconds=3)  # type: ignore[call-arg]


def test_as_function_tool_refuses_a_tool_the_dispatcher_does_not_have() -> None:
    with pytest.raises(toolguard.ToolDefinitionError, match="'charge' is not one of this"):
        as_function_tool(charge, dispatcher=Dispatcher([submit]))
    with pytest.raises(TypeError, match="only with dispatcher"):
        as_function_tool("charge")
