"""The Strands Agents integration, driven through Strands' real agent and event loop.

The model is a scripted ``strands.models.Model`` subclass (Strands' own extension
point for model providers): it streams each response from a script of content
blocks and keeps a copy of every conversation it was sent, so the tests read
exactly what the model saw. The agent loop, tool executor, hooks and
``end_turn`` handling are Strands' own; nothing reaches a network.
"""

from __future__ import annotations

import copy
import json
import logging
import subprocess
import sys
import tempfile
import warnings
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TypeVar

import pytest
from pydantic import BaseModel
from strands import Agent
from strands import tool as strands_tool
from strands.hooks import BeforeToolCallEvent, HookProvider, HookRegistry
from strands.models.model import Model
from strands.types.content import Messages
from strands.types.exceptions import EventLoopException
from strands.types.interrupt import InterruptResponseContent
from strands.types.tools import AgentTool, ToolContext, ToolSpec, ToolUse

from toolguard import (
    Breaker,
    Dispatcher,
    InjectedCallId,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    load_policy,
    tool,
)
from toolguard.errors import ToolDefinitionError
from toolguard.handlers import always, fail
from toolguard.integrations.strands import (
    ToolguardHooks,
    as_strands_tool,
    as_strands_tools,
)

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"
T = TypeVar("T", bound=BaseModel)


# --- the scripted model -------------------------------------------------------------------


def use(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"toolUse": {"name": name, "toolUseId": call_id, "input": arguments}}


def say(text: str) -> list[dict[str, Any]]:
    return [{"text": text}]


class ScriptedModel(Model):
    """An offline Strands model: one scripted message per request, every request kept."""

    def __init__(self, script: Sequence[list[dict[str, Any]]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(
        self,
        output_model: type[T],
        prompt: Messages,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[dict[str, T | Any], None]:
        raise NotImplementedError
        yield {}

    async def stream(
        self,
        messages: Messages,
        tool_specs: Any = None,
        system_prompt: str | None = None,
        **kwargs: Any,
    ) -> AsyncGenerator[Any, None]:
        self.requests.append(
            {"messages": copy.deepcopy(messages), "tool_specs": copy.deepcopy(tool_specs)}
        )
        blocks = self.script.pop(0) if self.script else say("(script ended)")
        yield {"messageStart": {"role": "assistant"}}
        for block in blocks:
            if "toolUse" in block:
                used = block["toolUse"]
                start = {"toolUse": {"name": used["name"], "toolUseId": used["toolUseId"]}}
                yield {"contentBlockStart": {"start": start}}
                delta = {"toolUse": {"input": json.dumps(used["input"])}}
                yield {"contentBlockDelta": {"delta": delta}}
            else:
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
            yield {"contentBlockStop": {}}
        stop = "tool_use" if any("toolUse" in b for b in blocks) else "end_turn"
        yield {"messageStop": {"stopReason": stop}}

    def sent(self) -> str:
        return json.dumps(self.requests, default=str)

    def results(self) -> list[dict[str, Any]]:
        """The tool results of the last request, in order."""
        last = self.requests[-1]["messages"][-1]
        return [block["toolResult"] for block in last["content"] if "toolResult" in block]


def text(result: dict[str, Any]) -> str:
    return "".join(block.get("text", "") for block in result["content"])


async def run(
    tools: Sequence[Any],
    script: Sequence[list[dict[str, Any]]],
    *,
    hooks: Sequence[HookProvider] = (),
    agent: Agent | None = None,
) -> tuple[ScriptedModel, Agent, Any]:
    model = ScriptedModel(script)
    if agent is None:
        agent = Agent(model=model, tools=list(tools), hooks=list(hooks), callback_handler=None)
    else:
        agent.model = model
    result = await agent.invoke_async("help")
    return model, agent, result


def hidden_events(logs: Logs) -> Logs:
    return [e for e in logs if e["event"] == "tool_error_hidden"]


# --- an existing app's @strands.tool functions -----------------------------------------------


@strands_tool
def lookup_order(order: int) -> str:
    """Look an order up.

    Args:
        order: The order number.
    """
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    raise ConnectionError(SECRET)


@strands_tool
def search(query: str) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
    """
    return f"hits for {query}"


async def test_strands_sends_the_exception_type_and_text_by_default() -> None:
    """The behaviour the hooks replace (pins Strands' default)."""
    model, _, _ = await run([lookup_order], [[use("lookup_order", "c1", order=7)], say("x")])
    assert text(model.results()[0]) == f"Error: ConnectionError - {SECRET}"


# Success, parallel calls, a tool's state, hidden and visible failures, an invented
# tool name, the ToolContext and an app's own AfterToolsEvent hook, guarded against
# unguarded: the conformance driver, tests/integrations/conformance/test_strands.py.


class RawLookup(AgentTool):
    """A tool written against Strands' ``AgentTool`` directly (as module and MCP
    tools are): Strands logs its failure with the traceback itself."""

    @property
    def tool_name(self) -> str:
        return "raw_lookup"

    @property
    def tool_spec(self) -> ToolSpec:
        return {
            "name": "raw_lookup",
            "description": "Look up.",
            "inputSchema": {"json": {"type": "object", "properties": {}}},
        }

    @property
    def tool_type(self) -> str:
        return "raw"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        raise ConnectionError(SECRET)
        yield


async def test_strands_own_traceback_log_of_a_raw_tools_failure_is_dropped_under_the_hooks(
    logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    await run([RawLookup()], [[use("raw_lookup", "c1")], say("x")])
    assert [r for r in caplog.records if r.exc_info], "Strands logs it without the hooks"
    caplog.clear()
    model, _, _ = await run(
        [RawLookup()], [[use("raw_lookup", "c1")], say("x")], hooks=[ToolguardHooks()]
    )
    assert not [r for r in caplog.records if r.exc_info or SECRET in r.getMessage()]
    [event] = hidden_events(logs)
    assert event["error_id"] in text(model.results()[0]) and SECRET not in model.sent()


async def test_overrides_by_exact_name_and_glob_and_policy_files_apply(
    tmp_path: Path, logs: Logs
) -> None:
    policy = tmp_path / "agent.toml"
    policy.write_text(
        'version = 1\n[tools."look*"]\nmessage = "Orders are down (ref {error_id})."\n'
    )

    @strands_tool(name="search")
    def broken_search(query: str) -> str:
        """Search."""
        raise RuntimeError(SECRET)

    guard = Dispatcher(
        [],
        external_tools=["search"],
        overrides={"search": ToolPolicy(on_error="Search is down.")},
        policy=load_policy(policy),
    )
    model, _, _ = await run(
        [lookup_order, broken_search],
        [[use("lookup_order", "c1", order=1), use("search", "c2", query="x")], say("ok")],
        hooks=[ToolguardHooks(guard)],
    )
    first, second = model.results()
    [event] = [e for e in hidden_events(logs) if e["tool"] == "lookup_order"]
    assert text(first) == f"Orders are down (ref {event['error_id']})."
    assert text(second) == "Search is down." and SECRET not in model.sent()


async def test_every_call_of_a_batch_is_answered_in_order(logs: Logs) -> None:
    model, _, _ = await run(
        [lookup_order, search],
        [
            [
                use("lookup_order", "c1", order=7),
                use("search", "c2", query="a"),
                use("lookup_order", "c3", order=42),
            ],
            say("ok"),
        ],
        hooks=[ToolguardHooks()],
    )
    results = model.results()
    assert [r["toolUseId"] for r in results] == ["c1", "c2", "c3"]
    assert "error id" in text(results[0]) and text(results[1]) == "hits for a"
    assert text(results[2]).startswith("There is no order 42")
    assert len(hidden_events(logs)) == 1


async def test_invalid_arguments_to_a_plain_tool_get_strands_answer_and_it_never_runs(
    logs: Logs,
) -> None:
    ran: list[int] = []

    @strands_tool
    def count(n: int) -> int:
        """Count.

        Args:
            n: How many.
        """
        ran.append(n)
        return n

    model, _, _ = await run(
        [count], [[use("count", "c1", n="many")], say("ok")], hooks=[ToolguardHooks()]
    )
    [result] = model.results()
    assert result["status"] == "error" and "Validation failed" in text(result)
    assert ran == [] and hidden_events(logs) == []


async def test_return_direct_on_success_ends_the_turn_with_the_tools_content() -> None:
    guard = Dispatcher(
        [], external_tools=["search"], overrides={"search": ToolPolicy(return_direct=True)}
    )
    model, agent, result = await run(
        [search], [[use("search", "c1", query="a")], say("never")], hooks=[ToolguardHooks(guard)]
    )
    assert len(model.requests) == 1
    assert str(result).strip() == "hits for a"
    assert agent.messages[-1]["content"] == [{"text": "hits for a"}]


async def test_return_direct_never_ends_the_turn_on_a_failure() -> None:
    guard = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(return_direct=True)},
    )
    model, _, result = await run(
        [lookup_order],
        [[use("lookup_order", "c1", order=7)], say("sorry")],
        hooks=[ToolguardHooks(guard)],
    )
    assert len(model.requests) == 2 and str(result).strip() == "sorry"


@pytest.mark.parametrize(("mode", "stops"), [("any", True), ("all", False)])
async def test_a_mixed_batch_follows_the_dispatchers_mode(mode: str, stops: bool) -> None:
    guard = Dispatcher(
        [],
        external_tools=["search"],
        overrides={"search": ToolPolicy(return_direct=True)},
        return_direct_mode=mode,  # type: ignore[arg-type]
    )

    @strands_tool
    def other(x: int) -> int:
        """Other.

        Args:
            x: A number.
        """
        return x

    model, _, _ = await run(
        [search, other],
        [[use("search", "c1", query="a"), use("other", "c2", x=1)], say("summary")],
        hooks=[ToolguardHooks(guard)],
    )
    assert (len(model.requests) == 1) is stops


async def test_the_conversation_is_the_agent_breakers_included(logs: Logs) -> None:
    guard = Dispatcher(
        [], external_tools=["lookup_order"], breaker=Breaker(failures=1, cooldown=600)
    )
    hooks = ToolguardHooks(guard)
    _, agent, _ = await run(
        [lookup_order], [[use("lookup_order", "c1", order=7)], say("a")], hooks=[hooks]
    )
    model, _, _ = await run([], [[use("lookup_order", "c2", order=8)], say("b")], agent=agent)
    [blocked] = model.results()
    assert blocked["status"] == "error" and "unavailable" in text(blocked).lower()
    other, _, _ = await run(
        [lookup_order], [[use("lookup_order", "c3", order=9)], say("c")], hooks=[hooks]
    )
    assert "error id" in text(other.results()[0])
    assert len(hidden_events(logs)) == 2


async def test_a_handler_that_fails_the_invocation_fails_the_run() -> None:
    """Strands wraps what fails its event loop in EventLoopException: ToolCallFailed is
    its cause."""
    guard = Dispatcher([], external_tools=["lookup_order"], on_error=fail)
    with pytest.raises(EventLoopException) as raised:
        await run(
            [lookup_order],
            [[use("lookup_order", "c1", order=7)], say("x")],
            hooks=[ToolguardHooks(guard)],
        )
    assert isinstance(raised.value.__cause__, ToolCallFailed)
    assert isinstance(raised.value.__cause__.__cause__, ConnectionError)


async def test_a_hooks_cancellation_passes_through_untouched() -> None:
    class Deny(HookProvider):
        def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
            registry.add_callback(BeforeToolCallEvent, self.deny)

        def deny(self, event: BeforeToolCallEvent) -> None:
            event.cancel_tool = "Not allowed today."

    model, _, _ = await run(
        [search], [[use("search", "c1", query="a")], say("ok")], hooks=[ToolguardHooks(), Deny()]
    )
    [result] = model.results()
    assert result["status"] == "error" and text(result) == "Not allowed today."


async def test_an_interrupt_in_a_plain_tool_halts_the_agent() -> None:
    @strands_tool(context=True)
    def approve(amount: int, tool_context: ToolContext) -> str:
        """Ask a human.

        Args:
            amount: How much.
        """
        answer = tool_context.interrupt("approval", reason={"amount": amount})
        return f"approved: {answer}"

    model, _, result = await run(
        [approve], [[use("approve", "c1", amount=5)], say("x")], hooks=[ToolguardHooks()]
    )
    assert result.stop_reason == "interrupt" and len(model.requests) == 1
    assert [i.name for i in result.interrupts] == ["approval"]


def _chained() -> Exception:
    try:
        raise KeyError(SECRET)
    except KeyError as cause:
        error = ValueError("lookup failed")
        error.__cause__ = cause
        return error


def _noted() -> Exception:
    error = RuntimeError("failed")
    error.add_note(SECRET)
    return error


SHAPES: dict[str, Callable[[], BaseException]] = {
    "message": lambda: RuntimeError(SECRET),
    "cause": _chained,
    "note": _noted,
    "group": lambda: ExceptionGroup("several", [OSError(SECRET), ValueError("x")]),
    "type name": lambda: type("Hunter2PasswordError", (Exception,), {})("db down"),
}


@pytest.mark.parametrize("shape", SHAPES)
async def test_no_shape_of_exception_leaks_its_secret_and_each_is_logged_once(
    shape: str, logs: Logs
) -> None:
    @strands_tool
    def leaky(x: int) -> int:
        """Fail.

        Args:
            x: A number.
        """
        raise SHAPES[shape]()

    model, _, _ = await run(
        [leaky], [[use("leaky", "c1", x=1)], say("sorry")], hooks=[ToolguardHooks()]
    )
    [result] = model.results()
    [event] = hidden_events(logs)
    assert SECRET not in model.sent() and "Hunter2" not in model.sent()
    assert event["error_id"] in text(result)


# --- toolguard tools as Strands tools ------------------------------------------------------


@tool
def refund(
    order: int,
    amount: float,
    tool_context: ToolContext,
    agent: Agent,
    call_id: Annotated[str, InjectedCallId],
) -> str:
    """Refund part of an order.

    Args:
        order: The order number.
        amount: How much to refund.
    """
    if amount > 100:
        raise PermissionError(SECRET)
    same = call_id == tool_context.tool_use["toolUseId"] and agent is tool_context.agent
    return f"refunded {amount} on {order} ({same})"


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the final answer.

    Args:
        text: The answer.
    """
    if text == "boom":
        raise RuntimeError(SECRET)
    return text


async def test_a_converted_tool_declares_toolguards_schema_without_injected_parameters() -> None:
    model, _, _ = await run(as_strands_tools(Dispatcher([refund])), [say("hi")])
    [spec] = model.requests[0]["tool_specs"]
    assert spec["name"] == "refund" and spec["inputSchema"]["json"] == refund.parameters
    assert set(refund.parameters["properties"]) == {"order", "amount"}


async def test_a_converted_tool_gets_the_tool_context_the_agent_and_the_call_id() -> None:
    model, _, _ = await run(
        as_strands_tools(Dispatcher([refund])),
        [[use("refund", "c1", order=3, amount=5)], say("done")],
    )
    [result] = model.results()
    assert result["status"] == "success" and text(result) == "refunded 5.0 on 3 (True)"


async def test_the_model_cannot_send_injected_parameters_and_bad_arguments_are_bounded(
    logs: Logs,
) -> None:
    model, _, _ = await run(
        as_strands_tools(Dispatcher([refund])),
        [
            [
                use("refund", "c1", order=3, amount=5, agent="me"),
                use("refund", "c2", order="x" * 10_000, amount=1),
            ],
            say("done"),
        ],
    )
    spoofed, invalid = model.results()
    assert "agent" in text(spoofed) and "cannot be sent" in text(spoofed)
    assert "order" in text(invalid) and len(text(invalid)) < 2_000
    assert hidden_events(logs) == []


async def test_a_converted_tools_secret_is_hidden_and_logged_once(logs: Logs) -> None:
    model, _, _ = await run(
        as_strands_tools(Dispatcher([refund])),
        [[use("refund", "c1", order=3, amount=500)], say("sorry")],
    )
    [result] = model.results()
    [event] = hidden_events(logs)
    assert SECRET not in model.sent() and event["error_id"] in text(result)


async def test_converted_return_direct_ends_the_turn_on_success_only() -> None:
    guard = Dispatcher([final_answer])
    model, _, result = await run(
        as_strands_tools(guard),
        [[use("final_answer", "c1", text="42")], say("x")],
        hooks=[ToolguardHooks(guard)],
    )
    assert len(model.requests) == 1 and str(result).strip() == "42"
    model, _, result = await run(
        as_strands_tools(guard),
        [[use("final_answer", "c2", text="boom")], say("after")],
        hooks=[ToolguardHooks(guard)],
    )
    assert len(model.requests) == 2 and str(result).strip() == "after"
    assert SECRET not in model.sent()


async def test_converted_return_direct_without_the_hooks_warns_once() -> None:
    guard = Dispatcher([final_answer])
    with pytest.warns(UserWarning, match="no ToolguardHooks"):
        model, _, _ = await run(
            as_strands_tools(guard), [[use("final_answer", "c1", text="42")], say("x")]
        )
    assert len(model.requests) == 2


async def test_a_stop_decision_never_outlives_its_invocation() -> None:
    """A return_direct decision no hook collected (an agent without ToolguardHooks) is
    forgotten with its invocation: another agent's call with the same tool use id is
    not stopped by it (decisions were kept process-wide, by call id)."""
    guard = Dispatcher([final_answer])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warned once per process: maybe already
        await run(as_strands_tools(guard), [[use("final_answer", "c1", text="42")], say("x")])
    model, _, _ = await run(
        [search], [[use("search", "c1", query="hats")], say("went on")], hooks=[ToolguardHooks()]
    )
    assert len(model.requests) == 2  # the model was called again: the turn did not end


async def test_an_interrupt_in_a_converted_tool_halts_the_agent_and_resumes() -> None:
    @tool
    def approve(amount: int, tool_context: ToolContext) -> str:
        """Ask a human.

        Args:
            amount: How much.
        """
        return f"approved: {tool_context.interrupt('approval', reason={'amount': amount})}"

    model, agent, result = await run(
        as_strands_tools(Dispatcher([approve])), [[use("approve", "c1", amount=5)], say("x")]
    )
    assert result.stop_reason == "interrupt" and len(model.requests) == 1
    [interrupt] = result.interrupts
    model.script = [say("approved, thanks")]
    response: InterruptResponseContent = {
        "interruptResponse": {"interruptId": interrupt.id, "response": "yes"}
    }
    resumed = await agent.invoke_async([response])
    assert str(resumed).strip() == "approved, thanks"
    assert text(model.results()[0]) == "approved: yes"


class RunContext:
    """Stands in for Pydantic AI's ``RunContext``: injection types are matched by
    qualified name, and this extra's environment has no Pydantic AI."""


RunContext.__module__ = "pydantic_ai._run_context"


def test_a_parameter_of_another_framework_fails_at_conversion() -> None:
    @tool
    def needs_deps(ctx: RunContext, x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match=r"'ctx'.*pydantic-ai"):
        as_strands_tool(needs_deps)


async def test_the_same_tool_three_ways_answers_alike_on_success() -> None:
    """Strands' @tool on the plain function and on the toolguard tool, and toolguard's
    adapter: the same parameters declared, the same success answer."""

    def plain(order: int, tool_context: ToolContext) -> str:
        """Look an order up.

        Args:
            order: The order number.
        """
        return f"order {order} ({tool_context.tool_use['toolUseId']})"

    guarded = tool(plain)
    answers = []
    for made in (
        strands_tool(context=True)(plain),
        strands_tool(context=True)(guarded),
        as_strands_tool(guarded),
    ):
        model, _, _ = await run([made], [[use("plain", "c1", order=1)], say("ok")])
        [spec] = model.requests[0]["tool_specs"]
        assert set(spec["inputSchema"]["json"]["properties"]) == {"order"}
        answers.append([(r["status"], text(r)) for r in model.results()])
    assert answers[0] == answers[1] == answers[2] == [("success", "order 1 (c1)")]


def test_the_example_app_runs_offline_here_with_the_framework() -> None:
    """examples/strands_app.py really runs where the extra is installed (it only prints a
    note and exits 0 where it is not, as in the `all` environment)."""
    script = Path(__file__).parents[2] / "examples" / "strands_app.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipped" not in done.stdout and "Logged once" in done.stdout
    assert "hunter2" not in done.stdout.split("Logged once")[0]


# --- the Strands-private names toolguard reads ----------------------------------------------


def test_the_session_manager_of_an_agent_is_where_toolguard_reads_it() -> None:
    """``session_id`` reads ``Agent._session_manager`` (no public property says which
    session an agent is in): a release that moves it fails here, loudly."""
    from strands.session.file_session_manager import FileSessionManager

    from toolguard.integrations.strands import session_id

    manager = FileSessionManager(session_id="conv-1", storage_dir=str(Path(tempfile.mkdtemp())))
    agent = Agent(model=ScriptedModel([]), session_manager=manager, callback_handler=None)
    assert agent._session_manager is manager
    assert session_id(agent) == "conv-1/default"
    assert session_id(Agent(model=ScriptedModel([]), callback_handler=None)) is None


def test_strands_tool_failure_logger_is_the_one_the_hooks_filter() -> None:
    """The hooks drop Strands' own traceback log of an answered failure from its
    executor's logger (a private module's name): it must still exist and log there."""
    import strands.tools.executors._executor as executor

    assert executor.logger.name == "strands.tools.executors._executor"


def test_the_entry_points_refuse_what_is_not_a_dispatcher() -> None:
    """A wrong argument fails at the entry point, saying what it takes, never inside
    Strands on the first call: an agent or a list of tools for the dispatcher."""
    agent = Agent(model=ScriptedModel([]), callback_handler=None)
    with pytest.raises(TypeError, match="ToolguardHooks takes a toolguard Dispatcher, got Agent"):
        ToolguardHooks(agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ToolguardHooks takes a toolguard Dispatcher, got list"):
        ToolguardHooks([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_strands_tools\(dispatcher\) takes a toolguard"):
        as_strands_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_strands_tool\(dispatcher=...\) takes a toolguard"):
        as_strands_tool(search, dispatcher=agent)  # type: ignore[arg-type]


@strands_tool
def refused_order(order: int) -> dict[str, Any]:
    """Look an order up (answers its own error, Strands' way).

    Args:
        order: The order number.
    """
    return {"status": "error", "content": [{"text": f"Order {order} is archived."}]}


def _raising(result: Any) -> bool:
    raise RuntimeError("the predicate has a bug")


async def test_a_tools_own_error_result_is_decided_by_the_pipeline(logs: Logs) -> None:
    """A tool's own error result goes through the pipeline's step 4: kept as the author
    wrote it, a ``return_direct`` predicate that raises answers no (logged once as
    ``return_direct_failed``, the turn goes on), and an override may answer it."""
    guard = Dispatcher(
        [],
        external_tools=["refused_order"],
        overrides={"refused_order": ToolPolicy(return_direct=_raising)},
    )
    script = [[use("refused_order", "c1", order=7)], say("ok")]
    model, _, _ = await run([refused_order], script, hooks=[ToolguardHooks(guard)])
    [result] = model.results()
    assert result["status"] == "error" and text(result) == "Order 7 is archived."
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["return_direct_failed"]
    override = Dispatcher(
        [],
        external_tools=["refused_order"],
        overrides={"refused_order": ToolPolicy(on_error=always("Orders are offline."))},
    )
    model, _, _ = await run([refused_order], script, hooks=[ToolguardHooks(override)])
    [result] = model.results()
    assert result["status"] == "error" and text(result) == "Orders are offline."
