"""``guard(tools, dispatcher)``: an app's own ``@function_tool``s under toolguard's policy.

Every run is a real ``Runner.run`` with the offline ``ScriptModel``; the tools are
the SDK's own (``function_tool`` on plain functions, an MCP server's tools converted
by the SDK), guarded in place.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    InputGuardrailTripwireTriggered,
    RunContextWrapper,
    Runner,
    RunResult,
    ToolApprovalItem,
    UserError,
    WebSearchTool,
    function_tool,
    input_guardrail,
)
from agents import Tool as AgentsTool
from agents.mcp import MCPServerStdio, MCPUtil

from toolguard import (
    AgentPolicy,
    Breaker,
    Dispatcher,
    RetryWithFeedback,
    ToolError,
    ToolPolicy,
    load_policy,
)
from toolguard.handlers import fail
from toolguard.integrations.openai_agents import (
    as_function_tool,
    guard,
    tool_use_behavior,
)
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ..test_bad_input import CASES, decode
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
SDK_DEFAULT = "An error occurred while running the tool. Please try again."


@dataclass
class Shop:
    """The app's own context object (``Runner.run(..., context=...)``)."""

    user: str
    thread_id: str = "thread-1"


ran: list[str] = []


@function_tool
def lookup_order(ctx: RunContextWrapper[Shop], order_id: int) -> str:
    """Look up the status of an order.

    Args:
        order_id: The order's number.
    """
    ran.append("lookup_order")
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 13:
        raise ConnectionError(f"orders-db refused: {SECRET}")
    return f"order {order_id} for {ctx.context.user}: shipped"


@function_tool
async def refund(order_id: int, reason: str = "late") -> str:
    """Refund an order."""
    ran.append("refund")
    raise RuntimeError(f"payments backend down: {SECRET}")


@function_tool
def final_answer(text: str) -> str:
    """Give the user the final answer and stop."""
    if not text:
        raise ToolError("The answer is empty; write one.")
    return text


@pytest.fixture(autouse=True)
def _nothing_ran() -> None:
    ran.clear()


def fresh(tools: list[FunctionTool]) -> list[AgentsTool]:
    """Copies of the module's tools: guard() guards the objects it is given, for good."""
    return [copy.copy(tool) for tool in tools]


def shop_dispatcher(**options: Any) -> Dispatcher:
    return Dispatcher([], external_tools=["lookup_order", "refund", "final_answer"], **options)


def builtin(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


def assert_hidden_once(result: RunResult, model: ScriptModel, logs: Logs) -> dict[str, Any]:
    """SECRET is in nothing the SDK produced or sent, and in exactly one log event."""
    for text in (repr(result.new_items), json.dumps(result.to_input_list()), model.sent()):
        assert SECRET not in text
    carrying = [event for event in logs if SECRET in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]


# --- failures: hidden, visible, the model's own mistakes -------------------------------------


async def test_a_hidden_cause_is_logged_once_with_the_error_id_the_model_saw(
    logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="openai.agents")
    result, model = await run(
        guard(fresh([lookup_order]), shop_dispatcher()),
        [[call("lookup_order", {"order_id": 13}, "c1")], say("Sorry.")],
        context=Shop("ann"),
    )

    event = assert_hidden_once(result, model, logs)
    answer = outputs(result)["c1"]
    assert event["event"] == "tool_error_hidden"
    assert (event["tool"], event["call_id"], event["error_type"]) == (
        "lookup_order",
        "c1",
        "ConnectionError",
    )
    assert answer.output == builtin("lookup_order", event["error_id"])
    assert answer.custom_data == {
        "toolguard": {"return_direct": False, "is_error": True, "error_id": event["error_id"]}
    }
    assert str(answer.output) in model.sent()
    assert SECRET not in caplog.text  # the SDK's own logger never got it either


async def test_a_visible_message_reaches_the_model_intact(logs: Logs) -> None:
    result, model = await run(
        guard(fresh([lookup_order]), shop_dispatcher()),
        [[call("lookup_order", {"order_id": 42}, "c1")], say("Which order?")],
        context=Shop("ann"),
    )

    answer = outputs(result)["c1"]
    assert answer.output == "There is no order 42. Ask the user to check the number."
    assert str(answer.output) in model.sent()
    assert answer.custom_data is not None
    assert answer.custom_data["toolguard"]["error_id"] is None
    assert logs == []


async def test_arguments_that_do_not_fit_get_toolguards_message_and_the_tool_never_runs() -> None:
    result, model = await run(
        guard(fresh([lookup_order]), shop_dispatcher()),
        [
            [
                call("lookup_order", {"order_id": "seven"}, "c1"),
                call("lookup_order", "{not json", "c2"),
                call("lookup_order", "[1, 2]", "c3"),
                call("lookup_order", {}, "c4"),
            ],
            say("Oops."),
        ],
        context=Shop("ann"),
    )

    answers = {key: str(item.output) for key, item in outputs(result).items()}
    assert answers["c1"].startswith("Invalid arguments for tool 'lookup_order':\n- 'order_id': ")
    assert "got 'seven'" in answers["c1"]
    assert "the arguments are not valid JSON" in answers["c2"]
    assert "the arguments must be a JSON object" in answers["c3"]
    assert "'order_id': " in answers["c4"]
    assert SDK_DEFAULT not in model.sent()
    assert ran == []


async def test_a_handler_that_fails_the_invocation_fails_the_run(logs: Logs) -> None:
    with pytest.raises(UserError) as raised:
        await run(
            guard(fresh([refund]), shop_dispatcher(on_error=fail)),
            [[call("refund", {"order_id": 1}, "c1")], say("")],
        )
    assert isinstance(raised.value.__cause__, Exception)
    assert type(raised.value.__cause__).__name__ == "ToolCallFailed"
    assert SECRET not in str(raised.value)


# --- the dispatcher's policy: defaults, overrides, files ---------------------------------------


async def test_agent_defaults_overrides_and_policy_files_apply_by_name(
    tmp_path: Path, logs: Logs
) -> None:
    policy_file = tmp_path / "shop.toml"
    policy_file.write_text(
        'version = 1\n[tools."refund"]\nmessage = "Refunds are offline; try tomorrow."\n'
    )
    dispatcher = shop_dispatcher(
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={"lookup_*": ToolPolicy(on_error="Override: orders are offline.")},
        policy=load_policy(policy_file),
    )
    result, _ = await run(
        guard(fresh([lookup_order, refund]), dispatcher),
        [
            [call("lookup_order", {"order_id": 13}, "c1"), call("refund", {"order_id": 1}, "c2")],
            say("Sorry."),
        ],
        context=Shop("ann"),
    )

    answers = outputs(result)
    assert answers["c1"].output == "Override: orders are offline."
    assert answers["c2"].output == "Refunds are offline; try tomorrow."
    assert isinstance(dispatcher.policy, AgentPolicy)
    assert sorted(event["tool"] for event in logs) == ["lookup_order", "refund"]


async def test_timeouts_and_retries_of_the_policy_apply_around_the_sdks_invocation() -> None:
    attempts: list[int] = []

    @function_tool
    async def flaky(n: int) -> str:
        """Work, eventually."""
        attempts.append(n)
        if len(attempts) < 3:
            raise ConnectionError("try again")
        return "worked"

    @function_tool
    async def stuck() -> str:
        """Never finish."""
        await asyncio.sleep(30)
        return "late"

    dispatcher = Dispatcher(
        [],
        external_tools=["flaky", "stuck"],
        overrides={
            "flaky": ToolPolicy(retries=3),
            "stuck": ToolPolicy(timeout=0.2),
        },
    )
    result, _ = await run(
        guard(fresh([flaky, stuck]), dispatcher),
        [[call("flaky", {"n": 1}, "c1"), call("stuck", {}, "c2")], say("done")],
    )

    answers = outputs(result)
    assert answers["c1"].output == "worked"
    assert attempts == [1, 1, 1]
    assert "did not finish within 0.2 s" in str(answers["c2"].output)


# --- return_direct -------------------------------------------------------------------------


async def test_return_direct_ends_the_run_on_success_only() -> None:
    dispatcher = shop_dispatcher(overrides={"final_answer": ToolPolicy(return_direct=True)})
    tools = guard(fresh([lookup_order, final_answer]), dispatcher)

    stopped, model = await run(
        tools,
        [[call("final_answer", {"text": "All done."}, "c1")], say("never asked")],
        tool_use_behavior=tool_use_behavior(dispatcher),
    )
    assert stopped.final_output == "All done."
    assert model.remaining_steps == 1

    failed, model = await run(
        tools,
        [[call("final_answer", {"text": ""}, "c1")], say("Let me write one.")],
        tool_use_behavior=tool_use_behavior(dispatcher),
    )
    assert outputs(failed)["c1"].output == "The answer is empty; write one."
    assert failed.final_output == "Let me write one."
    assert model.remaining_steps == 0


# --- sessions: breakers and budgets through the run context ---------------------------------------


async def test_a_breaker_opens_in_the_conversation_the_run_context_names(logs: Logs) -> None:
    dispatcher = shop_dispatcher(breaker=Breaker(failures=2, cooldown=60))
    tools = guard(fresh([refund]), dispatcher, session=lambda ctx: ctx.context.thread_id)
    script: list[Step] = [
        [call("refund", {"order_id": 1}, "c1")],
        [call("refund", {"order_id": 1}, "c2")],
        [call("refund", {"order_id": 1}, "c3")],
        say("The refunds service is down."),
    ]
    result, _ = await run(tools, script, context=Shop("ann", thread_id="t-1"))

    answers = outputs(result)
    assert "is unavailable" in str(answers["c3"].output)
    assert ran == ["refund", "refund"]  # the open breaker answered without running it
    assert dispatcher.session(id="t-1").state("refund").consecutive_failures == 2

    # another conversation has a breaker of its own
    other, _ = await run(
        tools, [[call("refund", {"order_id": 2}, "c1")], say("?")], context=Shop("bob", "t-2")
    )
    assert "is unavailable" not in str(outputs(other)["c1"].output)


async def test_model_retry_budgets_count_each_model_step_once() -> None:
    @function_tool
    def pick(n: int) -> str:
        """Pick a number."""
        raise RetryWithFeedback("Pick a bigger number.")

    dispatcher = Dispatcher(
        [], external_tools=["pick"], overrides={"pick": ToolPolicy(max_model_retries=1)}
    )
    session = dispatcher.session()
    result, _ = await run(
        guard(fresh([pick]), dispatcher, session=session),
        [
            [call("pick", {"n": 1}, "a1"), call("pick", {"n": 2}, "a2")],  # one step
            [call("pick", {"n": 3}, "b1")],
            say("I give up."),
        ],
    )

    answers = outputs(result)
    assert str(answers["a1"].output).startswith("Pick a bigger number.")
    assert str(answers["a2"].output).startswith("Pick a bigger number.")
    assert "called incorrectly too many times" in str(answers["b1"].output)
    assert session.state("pick").model_retries == 2


# --- the SDK's own features keep working ---------------------------------------------------------


async def test_approvals_interrupt_and_resume_a_guarded_tool() -> None:
    gated = function_tool(lambda_refund, needs_approval=True)
    agent, model = agent_with(
        guard(fresh([gated]), shop_dispatcher()),
        [[call("refund", {"order_id": 5}, "c1")], say("Refunded.")],
    )
    first = await Runner.run(agent, "refund 5", run_config=NO_TRACING)
    assert [type(item) for item in first.interruptions] == [ToolApprovalItem]

    state = first.to_state()
    state.approve(first.interruptions[0])
    resumed = await Runner.run(agent, state, run_config=NO_TRACING)

    assert outputs(resumed)["c1"].output == "refunded 5"
    assert resumed.final_output == "Refunded."
    assert model.remaining_steps == 0


def lambda_refund(order_id: int) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


lambda_refund.__name__ = "refund"


async def test_guardrails_and_is_enabled_are_the_sdks() -> None:
    @input_guardrail
    def no_refunds(context: Any, agent: Any, text: Any) -> GuardrailFunctionOutput:
        return GuardrailFunctionOutput(output_info="no", tripwire_triggered="refund" in str(text))

    hidden = function_tool(lambda_refund, is_enabled=False)
    agent, model = agent_with(
        guard(fresh([hidden, lookup_order]), shop_dispatcher()),
        [[call("lookup_order", {"order_id": 7}, "c1")], say("ok")],
        input_guardrails=[no_refunds],
    )
    result = await Runner.run(agent, "where is 7", context=Shop("ann"), run_config=NO_TRACING)
    assert outputs(result)["c1"].output == "order 7 for ann: shipped"
    assert model.offered[0] == ["lookup_order"]  # the disabled tool was never offered

    with pytest.raises(InputGuardrailTripwireTriggered):
        await Runner.run(agent, "refund 5", context=Shop("ann"), run_config=NO_TRACING)


def test_guard_keeps_the_same_tool_objects_and_leaves_other_tools_alone() -> None:
    web = WebSearchTool()
    ours = as_function_tool(
        function_tool_free(), dispatcher=Dispatcher([function_tool_free()], external_tools=[])
    )
    mine = copy.copy(lookup_order)
    schema = dict(mine.params_json_schema)
    guarded = guard([mine, web, ours], shop_dispatcher())

    assert guarded[0] is mine and guarded[1] is web and guarded[2] is ours
    assert mine.params_json_schema == schema
    assert mine.__wrapped__ is lookup_order.__wrapped__
    invoker = mine.on_invoke_tool
    assert guard(guarded, shop_dispatcher())[0] is mine
    assert mine.on_invoke_tool is invoker  # guarding again guards it once


def test_guard_hands_back_the_list_it_was_given() -> None:
    """``agent.tools = guard(agent.tools, ...)`` keeps the app's list (the SDK's
    ``clone()`` shares it); another iterable comes back as a new list."""
    tools = fresh([lookup_order, refund])
    agent = Agent(name="shop", tools=tools)
    agent.tools = guard(agent.tools, shop_dispatcher())
    assert agent.tools is tools
    assert agent.clone(name="copy").tools is tools
    again = fresh([lookup_order])
    assert guard(iter(again), shop_dispatcher()) == again


async def test_a_deep_copy_of_a_guarded_agent_is_guarded_by_the_same_dispatcher(
    logs: Logs,
) -> None:
    dispatcher = shop_dispatcher()
    agent = Agent(name="shop", tools=guard(fresh([lookup_order]), dispatcher))
    copied = copy.deepcopy(agent)
    (tool,) = copied.tools
    assert isinstance(tool, FunctionTool) and tool is not agent.tools[0]
    result, _ = await run([tool], [[call("lookup_order", {"order_id": 13}, "c1")], say("Sorry.")])
    (event,) = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert outputs(result)["c1"].output == builtin("lookup_order", event["error_id"])


def function_tool_free() -> Any:
    from toolguard import tool

    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    return ping


# --- MCP tools the SDK converted ---------------------------------------------------------------

MCP_SERVER = textwrap.dedent(
    """
    import anyio
    from mcp.server.mcpserver import MCPServer

    app = MCPServer("shop")

    @app.tool()
    def add(a: int, b: int) -> int:
        "Add two integers."
        return a + b

    @app.tool()
    async def slow() -> str:
        "Take forever."
        await anyio.sleep(30)
        return "late"

    app.run()
    """
)


async def test_an_mcp_servers_tools_are_guarded_like_any_function_tool(tmp_path: Path) -> None:
    script = tmp_path / "shop_server.py"
    script.write_text(MCP_SERVER)
    server = MCPServerStdio(
        params={"command": sys.executable, "args": [str(script)]}, client_session_timeout_seconds=20
    )
    dispatcher = Dispatcher(
        [],
        external_tools=["add", "slow"],
        overrides={
            "slow": ToolPolicy(timeout=0.3),
            "add": ToolPolicy(return_direct=True),
        },
    )
    async with server:
        listed = await server.list_tools()
        mcp_tools = [MCPUtil.to_function_tool(t, server, False) for t in listed]
        result, model = await run(
            guard(mcp_tools, dispatcher),
            [
                [call("slow", {}, "c1")],
                [call("add", {"a": 20, "b": 22}, "c2")],
                say("never asked"),
            ],
            tool_use_behavior=tool_use_behavior(dispatcher),
        )

    answers = outputs(result)
    assert "did not finish within 0.3 s" in str(answers["c1"].output)
    assert answers["c2"].output == {"type": "text", "text": "42"}  # the SDK's own output
    assert "42" in str(result.final_output)  # the run ended on add's success
    assert model.remaining_steps == 1


# --- the bad-input corpus through the in-place path ----------------------------------------------


def corpus_tools() -> list[FunctionTool]:
    """The corpus' tools (tests/test_bad_input.py) as an SDK app writes them."""

    def refund(ctx: RunContextWrapper[Any], order_id: int, reason: str) -> str:
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

    return [
        function_tool(refund),
        function_tool(search_orders, strict_mode=False),
        function_tool(buy),
    ]


def corpus_calls() -> list[tuple[dict[str, Any], Any]]:
    """Each case naming one of the tools, as the JSON text a model would send.

    Left out: unknown tool names (the SDK fails the run before any tool is asked), and
    what the SDK itself fails on while planning the round, before any tool runs: lone
    surrogates (its call fingerprint encodes UTF-8) and nesting past Python's
    recursion limit.
    """
    chosen: list[tuple[dict[str, Any], Any]] = []
    for index, case in enumerate(CASES):
        if decode(case["name"]) not in {"refund", "search_orders", "buy"}:
            continue
        arguments = decode(case.get("arguments"))
        try:
            text = "" if arguments is None else arguments
            if not isinstance(text, str):
                text = json.dumps(text)
            text.encode("utf-8")
            json.dumps(json.loads(text or "{}"), ensure_ascii=False).encode("utf-8")
        except (UnicodeEncodeError, RecursionError):
            continue
        except ValueError:
            pass  # JSON that does not parse: the model's mistake, answered below
        chosen.append((case, call(decode(case["name"]), text, f"case{index}")))
    return chosen


async def test_the_bad_input_corpus_gets_toolguards_bounded_answers_in_place(logs: Logs) -> None:
    calls = corpus_calls()
    assert len(calls) >= 50
    result, _ = await run(
        guard(corpus_tools(), Dispatcher([], external_tools=["refund", "search_orders", "buy"])),
        [[made for _, made in calls], say("ok")],
        context="the user",
    )

    answers = outputs(result)
    assert set(answers) == {made.call_id for _, made in calls}  # every call answered
    accepted = 0
    for case, made in calls:
        item = answers[made.call_id]
        text = str(item.output)
        text.encode("utf-8")
        assert len(text) <= case["max_chars"], case["id"]
        decision = (item.custom_data or {}).get("toolguard")  # only where toolguard decided
        if decision is not None:
            assert decision["is_error"]
            assert text.startswith(f"Invalid arguments for tool '{made.name}':\n- "), case["id"]
            assert decision["error_id"] is None  # the model's mistake hides nothing
        else:
            accepted += 1  # the SDK's own validation took it (it ignores extra arguments)
    assert len(ran) == accepted
    assert logs == []


# --- what guard() refuses where it is called (issue 30, point 8) ------------------------


def _plain(order_id: int) -> str:
    return f"order {order_id}"


def test_guard_refuses_an_agent_where_the_dispatcher_goes() -> None:
    from agents import Agent

    tools: list[AgentsTool] = [function_tool(_plain)]
    with pytest.raises(TypeError) as raised:
        guard(tools, Agent(name="shop", tools=tools))  # type: ignore[arg-type]  # the mistake
    message = str(raised.value)
    assert "guard(tools, dispatcher) takes a toolguard Dispatcher, got Agent" in message
    assert "Agent(..., tools=guard(tools, Dispatcher(" in message


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (lambda: function_tool(_plain), "got FunctionTool: pass the agent's tools as a list"),
        (lambda: "lookup", "got str"),
        (lambda: [_plain], "item 0 is function"),
        (lambda: [function_tool(_plain), 3], "item 1 is int"),
    ],
    ids=["one tool", "a name", "a plain function", "a number"],
)
def test_guard_refuses_what_is_not_a_list_of_sdk_tools(given: Any, said: str) -> None:
    with pytest.raises(TypeError) as raised:
        guard(given(), Dispatcher([]))
    assert said in str(raised.value)
    assert "decorate it with @function_tool" in str(raised.value)


def test_guard_keeps_hosted_tools_in_the_list_unguarded() -> None:
    hosted = WebSearchTool()
    tools = guard([function_tool(_plain), hosted], Dispatcher([]))
    assert tools[1] is hosted
