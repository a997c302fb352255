"""``ToolguardCapability`` guarding an agent's own tools in place (issue 14).

The tools are plain Pydantic AI tools (``@agent.tool``, ``Tool(...)``, a toolset),
not written with ``@tool``; the agent is driven by Pydantic AI's ``FunctionModel``
through the real ``Agent.run``. The capability's ``wrap_tool_execute`` puts every
call under the dispatcher's policy, named in ``external_tools``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    AgentRunResult,
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    FunctionToolset,
    ModelMessage,
    ModelResponse,
    ModelRetry,
    RunContext,
    TextPart,
    Tool,
    ToolCallPart,
    ToolReturnPart,
    UserError,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

import toolguard
from toolguard import (
    Breaker,
    Dispatcher,
    RetryWithFeedback,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    load_policy,
)
from toolguard.handlers import fail
from toolguard.integrations.pydantic_ai import ToolguardCapability
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

    def last_round(self) -> dict[str, ToolReturnPart]:
        """The tool returns the model was sent with its last request, by call id."""
        return {
            part.tool_call_id: part
            for part in self.seen[-1][-1].parts
            if isinstance(part, ToolReturnPart)
        }


def call(name: str, args: dict[str, Any] | str, call_id: str) -> ToolCallPart:
    return ToolCallPart(name, args, tool_call_id=call_id)


def returns(result: AgentRunResult[Any]) -> dict[str, ToolReturnPart]:
    return {
        part.tool_call_id: part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    }


def assert_hidden(result: AgentRunResult[Any] | None, script: Script, logs: Logs) -> dict[str, Any]:
    """SECRET is in no message (as stored and as the model saw it) and in one log event."""
    if result is not None:
        assert SECRET not in ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode()
    for messages in script.seen:
        assert SECRET not in ModelMessagesTypeAdapter.dump_json(messages).decode()
    carrying = [event for event in logs if SECRET in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]


def builtin_message(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


@dataclass
class Shop:
    """The app's dependencies (``deps``)."""

    owner: str
    orders: dict[int, str]


def lookup_order(ctx: RunContext[Shop], order_id: int) -> str:
    """Look up an order."""
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 13:
        raise ConnectionError(f"orders-db refused: {SECRET}")
    if order_id == 7:
        raise RetryWithFeedback("Order ids here have 3 digits; ask the user again.")
    return f"{ctx.deps.owner}: order {order_id} is {ctx.deps.orders.get(order_id, 'unknown')}"


def submit(text: str) -> str:
    """Submit the final answer."""
    if not text:
        raise ToolError("The answer is empty; write one.")
    return f"Submitted: {text}"


SHOP = Shop("ann", {100: "shipped"})


def agent_of(
    script: Script,
    guard: Dispatcher | None,
    tools: Sequence[Any] = (lookup_order, submit),
    capabilities: Sequence[AbstractCapability[Any]] = (),
    **options: Any,
) -> Agent[Shop, Any]:
    """The app's agent; the one line toolguard adds is the capability."""
    guarding = [] if guard is None else [ToolguardCapability(guard)]
    return Agent(
        FunctionModel(script),
        deps_type=Shop,
        tools=list(tools),
        capabilities=[*guarding, *capabilities],
        **options,
    )


def guard_of(**options: Any) -> Dispatcher:
    return Dispatcher([], external_tools=["lookup_order", "submit"], **options)


# --- the failure that crashed the run ---------------------------------------------------------


async def test_a_hidden_cause_is_a_failed_result_quoting_the_error_id_and_logged_once(
    logs: Logs,
) -> None:
    script = Script([call("lookup_order", {"order_id": 13}, "c1")], [TextPart("Sorry.")])
    result = await agent_of(script, guard_of()).run("go", deps=SHOP)

    event = assert_hidden(result, script, logs)
    assert (event["event"], event["tool"], event["call_id"]) == (
        "tool_error_hidden",
        "lookup_order",
        "c1",
    )
    assert isinstance(event["exc_info"], ConnectionError)
    answer = script.last_round()["c1"]
    assert (answer.outcome, answer.content) == (
        "failed",
        builtin_message("lookup_order", event["error_id"]),
    )
    assert result.output == "Sorry."


async def test_the_failed_result_carries_no_trace_of_the_cause() -> None:
    """What Pydantic AI (or an outer capability) sees has no ``__context__`` to the cause."""
    seen: list[BaseException] = []

    @dataclass
    class Outer(AbstractCapability[Any]):
        async def wrap_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
        ) -> Any:
            try:
                return await handler(args)
            except Exception as error:
                seen.append(error)
                raise

    script = Script([call("lookup_order", {"order_id": 13}, "c1")], [TextPart("Sorry.")])
    agent = Agent(
        FunctionModel(script),
        deps_type=Shop,
        tools=[lookup_order],
        capabilities=[Outer(), ToolguardCapability(guard_of())],
    )
    await agent.run("go", deps=SHOP)

    [error] = seen
    assert type(error).__name__ == "ToolFailed"
    assert error.__context__ is None and error.__cause__ is None
    assert SECRET not in repr(error)


async def test_a_visible_message_arrives_intact_and_nothing_is_logged(logs: Logs) -> None:
    script = Script([call("lookup_order", {"order_id": 42}, "c1")], [TextPart("Which?")])
    await agent_of(script, guard_of()).run("go", deps=SHOP)

    answer = script.last_round()["c1"]
    assert (answer.outcome, answer.content) == (
        "failed",
        "There is no order 42. Ask the user to check the number.",
    )
    assert logs == []


async def test_retry_with_feedback_is_pydantic_ais_model_retry() -> None:
    script = Script(
        [call("lookup_order", {"order_id": 7}, "c1")],
        [call("lookup_order", {"order_id": 100}, "c2")],
        [TextPart("Shipped.")],
    )
    result = await agent_of(script, guard_of()).run("go", deps=SHOP)

    feedback = returns(result)["c1"]
    assert (feedback.outcome, feedback.content) == (
        "retried",
        "Order ids here have 3 digits; ask the user again.",
    )
    assert returns(result)["c2"].content == "ann: order 100 is shipped"


async def test_retry_on_visible_sends_model_visible_failures_as_retries() -> None:
    script = Script(
        [
            call("lookup_order", {"order_id": 42}, "c1"),
            call("lookup_order", {"order_id": 13}, "c2"),
        ],
        [TextPart("ok")],
    )
    agent = Agent(
        FunctionModel(script),
        deps_type=Shop,
        tools=[lookup_order],
        capabilities=[ToolguardCapability(guard_of(), retry_on="visible")],
        retries=3,
    )
    await agent.run("go", deps=SHOP)

    outcomes = {key: part.outcome for key, part in script.last_round().items()}
    assert outcomes == {"c1": "retried", "c2": "failed"}  # a hidden failure is never a retry


async def test_a_handler_that_fails_the_invocation_fails_the_run(logs: Logs) -> None:
    script = Script([call("lookup_order", {"order_id": 13}, "c1")])
    with pytest.raises(ToolCallFailed) as raised:
        await agent_of(script, guard_of(on_error=fail)).run("go", deps=SHOP)
    assert (raised.value.tool, raised.value.call_id) == ("lookup_order", "c1")
    assert [event["event"] for event in logs] == ["tool_call_failed"]


# --- the dispatcher's policy: overrides, defaults, files ---------------------------------------


async def test_overrides_by_name_and_glob_and_agent_defaults_apply_to_plain_tools(
    logs: Logs,
) -> None:
    def charge(card: str) -> str:
        """Charge a card."""
        raise RuntimeError(f"gateway said {SECRET}")

    def lookup_stock(item: str) -> str:
        """Look up stock."""
        raise ToolError("Stock levels are offline.")

    guard = Dispatcher(
        [],
        external_tools=["charge", "lookup_order"],
        on_error="Agent default: {tool} failed ({error_id}).",
        overrides={
            "lookup_order": ToolPolicy(on_error="Override: orders are offline."),
            "lookup_*": ToolPolicy(on_error=toolguard.handlers.generic_unless_visible("Glob.")),
        },
    )
    script = Script(
        [
            call("charge", {"card": "4242"}, "c1"),
            call("lookup_order", {"order_id": 13}, "c2"),
            call("lookup_stock", {"item": "hat"}, "c3"),
        ],
        [TextPart("ok")],
    )
    result = await agent_of(script, guard, tools=[charge, lookup_order, lookup_stock]).run(
        "go", deps=SHOP
    )

    answers = {key: part.content for key, part in script.last_round().items()}
    charged = next(e for e in logs if e.get("tool") == "charge")
    assert answers["c1"] == f"Agent default: charge failed ({charged['error_id']})."
    assert answers["c2"] == "Override: orders are offline."
    assert answers["c3"] == "Stock levels are offline."  # the glob keeps visible messages
    assert SECRET not in ModelMessagesTypeAdapter.dump_json(result.all_messages()).decode()
    for name, level in (("charge", "agent"), ("lookup_order", "override")):
        chain = guard.explain(name)["on_error"]
        assert isinstance(chain, tuple) and chain[0].level == level


async def test_a_policy_file_applies_to_plain_tools(tmp_path: Path) -> None:
    policy = tmp_path / "ops.toml"
    policy.write_text(
        "version = 1\n"
        "[agent]\n"
        'on_error = "generic_unless_visible"\n'
        'message = "Ops says: {tool} is down ({error_id})."\n'
        '[tools."lookup_order"]\n'
        "return_direct = true\n"
    )
    guard = Dispatcher([], external_tools=["lookup_order"], policy=load_policy(str(policy)))
    script = Script(
        [call("lookup_order", {"order_id": 13}, "c1")],
        [call("lookup_order", {"order_id": 100}, "c2")],
        [TextPart("never asked")],
    )
    result = await agent_of(script, guard).run("go", deps=SHOP)

    assert re.fullmatch(
        r"Ops says: lookup_order is down \([0-9a-f]+\)\.", str(returns(result)["c1"].content)
    )
    assert result.output == "ann: order 100 is shipped"  # the file's return_direct
    assert len(script.seen) == 2


# --- return_direct ------------------------------------------------------------------------------


async def test_return_direct_ends_the_run_on_success_only() -> None:
    guard = Dispatcher(
        [], external_tools=["submit"], overrides={"submit": ToolPolicy(return_direct=True)}
    )
    script = Script(
        [call("submit", {"text": ""}, "c1")],
        [call("submit", {"text": "42"}, "c2")],
        [TextPart("never asked")],
    )
    result = await agent_of(script, guard).run("go", deps=SHOP)

    assert returns(result)["c1"].outcome == "failed"  # a failure never becomes the output
    assert result.output == "Submitted: 42"
    assert len(script.seen) == 2
    assert returns(result)["c2"].metadata == {
        "toolguard": {"return_direct": True, "is_error": False, "error_id": None}
    }
    last = result.all_messages()[-1]
    assert isinstance(last, ModelResponse)
    assert last.metadata == {
        "toolguard": {"return_direct": True, "tool_name": "submit", "tool_call_id": "c2"}
    }


async def test_max_result_chars_cuts_a_plain_tools_text() -> None:
    def essay(topic: str) -> str:
        """Write an essay."""
        return "x" * 500

    guard = Dispatcher([], external_tools=["essay"], max_result_chars=100)
    script = Script([call("essay", {"topic": "t"}, "c1")], [TextPart("ok")])
    result = await agent_of(script, guard, tools=[essay]).run("go", deps=SHOP)

    content = str(returns(result)["c1"].content)
    assert content.startswith("x" * 100) and "output truncated" in content


# --- Pydantic AI's own features keep working ---------------------------------------------------


async def test_pydantic_ais_own_signals_pass_untouched(logs: Logs) -> None:
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
    result = await agent_of(script, guard_of(), tools=[pick]).run("go", deps=SHOP)

    assert (returns(result)["c1"].outcome, returns(result)["c1"].content) == (
        "retried",
        "Only red is in stock.",
    )
    assert logs == []


@pytest.mark.parametrize("guarded", [False, True])
async def test_pydantic_ais_user_error_in_a_tool_reaches_the_developer(
    guarded: bool, logs: Logs
) -> None:
    """``run_sync`` inside a sync tool is the developer's misuse: Pydantic AI raises
    its ``UserError``, guarded as unguarded (never answered as the tool's failure)."""
    inner = Agent("test")

    def delegate() -> str:
        """Ask another agent."""
        return str(inner.run_sync("hello").output)

    script = Script([call("delegate", {}, "c1")], [TextPart("done")])
    agent = agent_of(script, guard_of() if guarded else None, tools=[delegate])
    with pytest.raises(UserError, match="synchronous tool"):
        await agent.run("go", deps=SHOP)
    assert logs == []


@pytest.mark.parametrize("guarded", [False, True])
async def test_a_sub_agents_cancelled_run_is_pydantic_ais_own_answer(
    guarded: bool, logs: Logs
) -> None:
    """A sub-agent that cancels its own run inside a tool: Pydantic AI answers the
    escaping ``RunCancelled`` with its own failed return, guarded as unguarded."""
    inner = Agent(TestModel(), name="inner")

    @inner.tool
    async def stop(ctx: RunContext[object]) -> str:
        """Stop."""
        ctx.cancel()
        return "x"

    async def delegate() -> str:
        """Ask another agent."""
        return str((await inner.run("inner")).output)

    script = Script([call("delegate", {}, "c1")], [TextPart("done")])
    agent = agent_of(script, guard_of() if guarded else None, tools=[delegate])
    result = await agent.run("go", deps=SHOP)
    answered = returns(result)["c1"]
    assert answered.outcome == "failed"
    assert str(answered.content).startswith("The sub-agent run was cancelled")
    assert logs == []


async def test_approvals_and_deferred_tools_work_and_the_approved_call_is_guarded(
    logs: Logs,
) -> None:
    ran: list[int] = []

    def refund(order_id: int) -> str:
        """Refund an order."""
        ran.append(order_id)
        raise RuntimeError(f"refund backend: {SECRET}")

    def escalate(ticket: str) -> str:
        """Hand the ticket to a human."""
        raise CallDeferred(metadata={"ticket": ticket})

    script = Script(
        [call("refund", {"order_id": 5}, "c1"), call("escalate", {"ticket": "T-1"}, "c2")],
        [TextPart("Done.")],
    )
    agent = agent_of(
        script,
        Dispatcher([], external_tools=["refund", "escalate"]),
        tools=[Tool(refund, requires_approval=True), escalate],
        output_type=[str, DeferredToolRequests],
    )
    first = await agent.run("refund 5", deps=SHOP)
    assert isinstance(first.output, DeferredToolRequests)
    assert [c.tool_call_id for c in first.output.approvals] == ["c1"]
    assert first.output.metadata == {"c2": {"ticket": "T-1"}}
    assert ran == [] and logs == []

    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={"c1": True}, calls={"c2": "escalated"}
        ),
        deps=SHOP,
    )
    assert ran == [5]
    assert second.output == "Done."
    event = assert_hidden(second, script, logs)
    assert returns(second)["c1"].content == builtin_message("refund", event["error_id"])
    assert returns(second)["c2"].content == "escalated"


async def test_a_tool_asking_for_approval_itself_is_not_a_failure(logs: Logs) -> None:
    def delete(path: str) -> str:
        """Delete a file."""
        raise ApprovalRequired()

    script = Script([call("delete", {"path": "/tmp/x"}, "c1")])
    result = await agent_of(
        script, guard_of(), tools=[delete], output_type=[str, DeferredToolRequests]
    ).run("go", deps=SHOP)
    assert isinstance(result.output, DeferredToolRequests)
    assert logs == []


async def test_toolset_tools_are_guarded_too(logs: Logs) -> None:
    toolset = FunctionToolset[Shop]()

    @toolset.tool
    def weather(ctx: RunContext[Shop], city: str) -> str:
        """The weather."""
        raise TimeoutError(f"weather api {SECRET}")

    script = Script([call("weather", {"city": "Oslo"}, "c1")], [TextPart("ok")])
    agent = Agent(
        FunctionModel(script),
        deps_type=Shop,
        toolsets=[toolset],
        capabilities=[ToolguardCapability(Dispatcher([], external_tools=["weather"]))],
    )
    result = await agent.run("go", deps=SHOP)

    event = assert_hidden(result, script, logs)
    assert returns(result)["c1"].content == builtin_message("weather", event["error_id"])


async def test_without_a_dispatcher_the_global_defaults_guard_every_tool(logs: Logs) -> None:
    toolguard.configure(on_error="Global: {tool} failed.")
    script = Script([call("lookup_order", {"order_id": 13}, "c1")], [TextPart("ok")])
    agent = Agent(
        FunctionModel(script),
        deps_type=Shop,
        tools=[lookup_order],
        capabilities=[ToolguardCapability()],
    )
    await agent.run("go", deps=SHOP)
    assert script.last_round()["c1"].content == "Global: lookup_order failed."


def test_the_capability_refuses_what_it_cannot_use() -> None:
    with pytest.raises(TypeError) as raised:
        ToolguardCapability(dispatcher=[lookup_order])  # type: ignore[arg-type]
    message = str(raised.value)
    assert "ToolguardCapability(dispatcher) takes a toolguard Dispatcher, got list" in message
    assert "capabilities=[ToolguardCapability(Dispatcher([], external_tools=" in message
    assert "function" not in message  # the rejected object's repr is not printed
    with pytest.raises(ValueError, match="retry_on='always'"):
        ToolguardCapability(retry_on="always")  # type: ignore[arg-type]


# --- sessions -------------------------------------------------------------------------------


async def test_a_breaker_opens_across_the_runs_of_one_conversation(logs: Logs) -> None:
    ran: list[int] = []

    def flaky(n: int) -> str:
        """A flaky backend."""
        ran.append(n)
        raise ConnectionError("down")

    guard = Dispatcher(
        [],
        external_tools=["flaky"],
        overrides={"flaky": ToolPolicy(breaker=Breaker(failures=2, cooldown=60))},
    )
    script = Script(
        [call("flaky", {"n": 1}, "c1")],
        [TextPart("first run over")],
        [call("flaky", {"n": 2}, "c2")],
        [call("flaky", {"n": 3}, "c3")],
        [TextPart("second run over")],
        [call("flaky", {"n": 4}, "c4")],
        [TextPart("another conversation")],
    )
    agent = agent_of(script, guard, tools=[flaky])
    first = await agent.run("go", deps=SHOP)
    second = await agent.run("again", message_history=first.all_messages(), deps=SHOP)
    other = await agent.run("new conversation", deps=SHOP)

    assert ran == [1, 2, 4]  # c3 met the open breaker; another conversation has its own
    assert "unavailable" in str(returns(second)["c3"].content)
    assert returns(second)["c3"].outcome == "failed"
    assert returns(other)["c4"].outcome == "failed"
    conversation = first.all_messages()[-1].conversation_id
    assert conversation == second.all_messages()[-1].conversation_id
    assert guard.session(id=str(conversation)).state("flaky").open_until is not None


async def test_the_session_can_come_from_the_runs_deps() -> None:
    @dataclass
    class User:
        thread: str

    def flaky(n: int) -> str:
        """A flaky backend."""
        raise ConnectionError("down")

    guard = Dispatcher(
        [],
        external_tools=["flaky"],
        overrides={"flaky": ToolPolicy(breaker=Breaker(failures=1, cooldown=60))},
    )
    capability = ToolguardCapability(
        guard, session=lambda ctx: guard.session(id=f"user:{ctx.deps.thread}")
    )
    script = Script([call("flaky", {"n": 1}, "c1")], [TextPart("ok")])
    agent = Agent(FunctionModel(script), deps_type=User, tools=[flaky], capabilities=[capability])
    await agent.run("go", deps=User("t-9"))

    assert guard.session(id="user:t-9").state("flaky").open_until is not None


async def test_parallel_calls_of_one_model_response_count_once_against_the_budget() -> None:
    """``max_model_retries=1``: two retries in one response are one step; the next is over."""

    def pick(n: int) -> str:
        """Pick."""
        raise RetryWithFeedback("Pick another number.")

    guard = Dispatcher(
        [], external_tools=["pick"], overrides={"pick": ToolPolicy(max_model_retries=1)}
    )
    script = Script(
        [call("pick", {"n": 1}, "c1"), call("pick", {"n": 2}, "c2")],
        [call("pick", {"n": 3}, "c3")],
        [TextPart("I give up.")],
    )
    result = await agent_of(script, guard, tools=[pick], retries=5).run("go", deps=SHOP)

    assert [returns(result)[c].outcome for c in ("c1", "c2")] == ["retried", "retried"]
    exhausted = returns(result)["c3"]
    assert exhausted.outcome == "failed"
    assert "called incorrectly too many times" in str(exhausted.content)
