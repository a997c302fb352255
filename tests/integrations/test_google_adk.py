"""The Google ADK integration, driven through ADK's real ``Runner`` and LLM flow.

The model is a scripted ``BaseLlm`` subclass (ADK's own extension point for
models): it answers each request from a script of ``types.Part`` lists and keeps
every ``LlmRequest`` it was sent, so the tests read exactly what the model saw.
The runner, tool execution, plugin callbacks, action merging and
``skip_summarization`` handling are ADK's own; nothing reaches a network.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.agents.invocation_context import LlmCallsLimitExceededError
from google.adk.apps import App
from google.adk.events import Event
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import InMemoryRunner
from google.adk.tools.function_tool import FunctionTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

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
from toolguard.integrations.google_adk import (
    ToolguardPlugin,
    as_adk_tool,
    as_adk_tools,
)

# ADK 2.0 announces its experimental features with a UserWarning (the suite makes
# warnings errors): not toolguard's behaviour, and gone in later releases.
pytestmark = pytest.mark.filterwarnings(r"ignore:\[EXPERIMENTAL\] feature:UserWarning")

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"


# --- the scripted model and a runner around it -----------------------------------------


def call(name: str, **args: Any) -> types.Part:
    return types.Part(function_call=types.FunctionCall(name=name, args=args))


def say(text: str) -> list[types.Part]:
    return [types.Part(text=text)]


class ScriptedLlm(BaseLlm):
    """An offline ADK model: one scripted response per request, every request kept."""

    model: str = "scripted"
    script: list[list[types.Part]] = []
    requests: list[LlmRequest] = []

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        # a snapshot of what the model is sent (the request's tools_dict holds live tools)
        self.requests.append(
            LlmRequest(
                contents=[c.model_copy(deep=True) for c in llm_request.contents],
                config=llm_request.config.model_copy(deep=True),
            )
        )
        parts = self.script.pop(0) if self.script else say("(script ended)")
        yield LlmResponse(
            content=types.Content(role="model", parts=parts),
            usage_metadata=types.GenerateContentResponseUsageMetadata(
                prompt_token_count=1, candidates_token_count=1, total_token_count=2
            ),
        )

    def sent(self) -> str:
        """Everything the model was sent, as one JSON text."""
        return json.dumps(
            [r.model_dump(mode="json", exclude_none=True) for r in self.requests], default=str
        )

    def responses(self) -> list[dict[str, Any]]:
        """The function responses of the last request, in order."""
        return [
            part.function_response.response or {}
            for content in self.requests[-1].contents
            for part in content.parts or ()
            if part.function_response is not None
        ]


async def run(
    tools: Sequence[Any],
    script: Sequence[list[types.Part]],
    *,
    plugin: ToolguardPlugin | None = None,
    session: str = "s1",
    **agent_options: Any,
) -> tuple[ScriptedLlm, list[Event]]:
    model = ScriptedLlm(script=list(script), requests=[])
    agent = LlmAgent(name="assistant", model=model, tools=list(tools), **agent_options)
    app = App(name="app", root_agent=agent, plugins=[plugin] if plugin is not None else [])
    runner = InMemoryRunner(app=app)
    existing = await runner.session_service.get_session(
        app_name="app", user_id="u", session_id=session
    )
    if existing is None:
        await runner.session_service.create_session(app_name="app", user_id="u", session_id=session)
    events = [
        event
        async for event in runner.run_async(
            user_id="u",
            session_id=session,
            new_message=types.Content(role="user", parts=[types.Part(text="help")]),
        )
    ]
    return model, events


def hidden_events(logs: Logs) -> Logs:
    return [e for e in logs if e["event"] == "tool_error_hidden"]


# --- an existing app's plain ADK tools ---------------------------------------------------


def lookup_order(order: int) -> dict[str, Any]:
    """Look an order up.

    Args:
        order: The order number.
    """
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    raise ConnectionError(SECRET)


def search(query: str) -> dict[str, Any]:
    """Search the catalogue."""
    return {"hits": [query.upper()]}


# Success, parallel calls, a tool's state, hidden and visible failures, an invented
# tool name, the ToolContext and the agent's callbacks, guarded against unguarded: the
# conformance driver, tests/integrations/conformance/test_google_adk.py.


async def test_without_the_plugin_adk_fails_the_run_on_a_tool_exception() -> None:
    """The behaviour the plugin replaces (pins ADK's default)."""
    with pytest.raises(ConnectionError):
        await run([lookup_order], [[call("lookup_order", order=7)], say("sorry")])


async def test_overrides_by_exact_name_and_glob_and_policy_files_apply_to_plain_tools(
    tmp_path: Path, logs: Logs
) -> None:
    policy = tmp_path / "agent.toml"
    policy.write_text(
        'version = 1\n[tools."look*"]\nmessage = "Orders are down (ref {error_id})."\n'
    )
    guard = Dispatcher(
        [],
        external_tools=["search"],
        overrides={"search": ToolPolicy(on_error="Search is down.")},
        policy=load_policy(policy),
    )

    def broken_search(query: str) -> str:
        raise RuntimeError(SECRET)

    broken = FunctionTool(broken_search)
    broken.name = "search"
    model, _ = await run(
        [lookup_order, broken],
        [[call("lookup_order", order=1), call("search", query="x")], say("ok")],
        plugin=ToolguardPlugin(guard),
    )
    first, second = model.responses()
    [event] = [e for e in hidden_events(logs) if e["tool"] == "lookup_order"]
    assert first == {"error": f"Orders are down (ref {event['error_id']})."}
    assert second == {"error": "Search is down."}
    assert SECRET not in model.sent()


async def test_every_call_of_a_parallel_round_is_answered_in_order(logs: Logs) -> None:
    model, _ = await run(
        [lookup_order, search],
        [
            [
                call("lookup_order", order=7),
                call("search", query="a"),
                call("lookup_order", order=42),
            ],
            say("ok"),
        ],
        plugin=ToolguardPlugin(),
    )
    first, second, third = model.responses()
    assert "error id" in first["error"] and second == {"hits": ["A"]}
    assert third["error"].startswith("There is no order 42")
    assert len(hidden_events(logs)) == 1


async def test_a_plain_tool_missing_an_argument_gets_adks_answer_and_never_runs() -> None:
    ran: list[int] = []

    def count(n: int) -> int:
        """Count."""
        ran.append(n)
        return n

    model, _ = await run([count], [[call("count")], say("ok")], plugin=ToolguardPlugin())
    [response] = model.responses()
    assert "error" in response and ran == []


async def test_return_direct_on_a_plain_tools_success_ends_the_turn_without_the_model() -> None:
    guard = Dispatcher(
        [], external_tools=["search"], overrides={"search": ToolPolicy(return_direct=True)}
    )
    model, events = await run(
        [search], [[call("search", query="a")], say("never")], plugin=ToolguardPlugin(guard)
    )
    assert len(model.requests) == 1
    assert events[-1].actions.skip_summarization is True and events[-1].is_final_response()
    [response] = events[-1].get_function_responses()
    assert response.response == {"hits": ["A"]}


async def test_return_direct_never_ends_the_turn_on_a_failure() -> None:
    guard = Dispatcher(
        [],
        external_tools=["lookup_order"],
        overrides={"lookup_order": ToolPolicy(return_direct=True)},
    )
    model, events = await run(
        [lookup_order],
        [[call("lookup_order", order=7)], say("sorry")],
        plugin=ToolguardPlugin(guard),
    )
    assert len(model.requests) == 2 and events[-1].content is not None
    assert events[-1].content.parts is not None and events[-1].content.parts[0].text == "sorry"


@pytest.mark.parametrize(("mode", "stops"), [("any", True), ("all", False)])
async def test_a_mixed_round_follows_the_dispatchers_mode(mode: str, stops: bool) -> None:
    guard = Dispatcher(
        [],
        external_tools=["search"],
        overrides={"search": ToolPolicy(return_direct=True)},
        return_direct_mode=mode,  # type: ignore[arg-type]
    )

    def other(x: int) -> int:
        """Other."""
        return x

    model, events = await run(
        [search, other],
        [[call("search", query="a"), call("other", x=1)], say("summary")],
        plugin=ToolguardPlugin(guard),
    )
    assert (len(model.requests) == 1) is stops
    assert bool(events[-1].actions.skip_summarization) is stops


async def test_the_conversation_is_the_adk_session_breakers_included(logs: Logs) -> None:
    guard = Dispatcher(
        [], external_tools=["lookup_order"], breaker=Breaker(failures=1, cooldown=600)
    )
    plugin = ToolguardPlugin(guard)
    await run([lookup_order], [[call("lookup_order", order=7)], say("a")], plugin=plugin)
    model, _ = await run([lookup_order], [[call("lookup_order", order=8)], say("b")], plugin=plugin)
    [response] = model.responses()
    assert "unavailable" in response["error"].lower() or "not available" in response["error"]
    assert guard.session(id="app/u/s1").state("lookup_order").open_until is not None
    other, _ = await run(
        [lookup_order], [[call("lookup_order", order=9)], say("c")], plugin=plugin, session="s2"
    )
    assert "error id" in other.responses()[0]["error"]
    assert len(hidden_events(logs)) == 2


async def test_a_handler_that_fails_the_invocation_fails_the_run() -> None:
    """ADK wraps an exception from a plugin in its RuntimeError: ToolCallFailed is its cause."""
    guard = Dispatcher([], external_tools=["lookup_order"], on_error=fail)
    with pytest.raises(RuntimeError, match="toolguard") as raised:
        await run(
            [lookup_order],
            [[call("lookup_order", order=7)], say("x")],
            plugin=ToolguardPlugin(guard),
        )
    assert isinstance(raised.value.__cause__, ToolCallFailed)
    assert isinstance(raised.value.__cause__.__cause__, ConnectionError)


async def test_adk_transfers_and_escalation_pass_through_untouched() -> None:
    def hand_over(tool_context: ToolContext) -> str:
        """Hand the user over to billing."""
        tool_context.actions.transfer_to_agent = "billing"
        return "handing over"

    billing_model = ScriptedLlm(script=[say("billing here")], requests=[])
    billing = LlmAgent(name="billing", model=billing_model)
    model, events = await run(
        [hand_over],
        [[call("hand_over")], say("never")],
        plugin=ToolguardPlugin(),
        sub_agents=[billing],
    )
    assert events[-1].author == "billing" and len(billing_model.requests) == 1
    assert len(model.requests) == 1


async def test_a_nested_agents_llm_call_limit_is_control_flow() -> None:
    def nested() -> str:
        """Run a nested agent."""
        raise LlmCallsLimitExceededError("max_llm_calls exceeded")

    with pytest.raises(LlmCallsLimitExceededError):
        await run([nested], [[call("nested")], say("x")], plugin=ToolguardPlugin())


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
    def leaky(x: int) -> int:
        """Fail."""
        raise SHAPES[shape]()

    model, _ = await run([leaky], [[call("leaky", x=1)], say("sorry")], plugin=ToolguardPlugin())
    [response] = model.responses()
    [event] = hidden_events(logs)
    assert SECRET not in model.sent() and "Hunter2" not in model.sent()
    assert event["error_id"] in response["error"]


# --- toolguard tools as ADK tools --------------------------------------------------------


@tool
def refund(
    order: int, amount: float, tool_context: ToolContext, call_id: Annotated[str, InjectedCallId]
) -> str:
    """Refund part of an order.

    Args:
        order: The order number.
        amount: How much to refund.
    """
    if amount > 100:
        raise PermissionError(SECRET)
    tool_context.state["refunded"] = amount
    return f"refunded {amount} on {order} ({call_id == tool_context.function_call_id})"


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the final answer."""
    if text == "boom":
        raise RuntimeError(SECRET)
    return text


def declarations(model: ScriptedLlm) -> dict[str, dict[str, Any]]:
    config = model.requests[0].config
    assert config is not None and config.tools
    found: dict[str, dict[str, Any]] = {}
    for declared in config.tools:
        assert isinstance(declared, types.Tool)
        for function in declared.function_declarations or ():
            assert function.name is not None
            found[function.name] = function.model_dump(mode="json", exclude_none=True)
    return found


async def test_a_converted_tool_declares_toolguards_schema_without_the_context() -> None:
    guard = Dispatcher([refund])
    model, _ = await run(as_adk_tools(guard), [say("hi")])
    declared = declarations(model)["refund"]
    assert declared["parameters_json_schema"] == refund.parameters
    assert set(refund.parameters["properties"]) == {"order", "amount"}


async def test_a_converted_tool_gets_adks_tool_context_and_the_call_id() -> None:
    guard = Dispatcher([refund])
    model, events = await run(
        as_adk_tools(guard), [[call("refund", order=3, amount=5)], say("done")]
    )
    assert model.responses() == [{"result": "refunded 5.0 on 3 (True)"}]
    state_deltas = [e.actions.state_delta for e in events if e.actions.state_delta]
    assert state_deltas == [{"refunded": 5.0}]


async def test_the_model_cannot_send_the_tool_context_and_bad_arguments_are_bounded(
    logs: Logs,
) -> None:
    guard = Dispatcher([refund])
    model, _ = await run(
        as_adk_tools(guard),
        [
            [
                call("refund", order=3, amount=5, tool_context={"state": {}}),
                call("refund", order="x" * 10_000, amount=1),
            ],
            say("done"),
        ],
    )
    spoofed, invalid = model.responses()
    assert "tool_context" in spoofed["error"] and "cannot be sent" in spoofed["error"]
    assert "order" in invalid["error"] and len(invalid["error"]) < 2_000
    assert hidden_events(logs) == []


async def test_a_converted_tools_secret_is_hidden_and_logged_once(logs: Logs) -> None:
    guard = Dispatcher([refund])
    model, _ = await run(as_adk_tools(guard), [[call("refund", order=3, amount=500)], say("sorry")])
    [response] = model.responses()
    [event] = hidden_events(logs)
    assert SECRET not in model.sent() and event["error_id"] in response["error"]


async def test_converted_return_direct_skips_summarization_on_success_only(logs: Logs) -> None:
    guard = Dispatcher([final_answer])
    model, events = await run(as_adk_tools(guard), [[call("final_answer", text="42")], say("x")])
    assert len(model.requests) == 1 and events[-1].actions.skip_summarization is True
    model, events = await run(
        as_adk_tools(guard), [[call("final_answer", text="boom")], say("after")], session="s2"
    )
    assert len(model.requests) == 2 and not events[-1].actions.skip_summarization
    assert SECRET not in model.sent()


async def test_converted_and_plain_tools_share_the_round_rule_under_the_plugin() -> None:
    guard = Dispatcher([final_answer], return_direct_mode="all")
    model, events = await run(
        [*as_adk_tools(guard), search],
        [[call("final_answer", text="42"), call("search", query="a")], say("summary")],
        plugin=ToolguardPlugin(guard),
    )
    assert len(model.requests) == 2 and not events[-1].actions.skip_summarization


class RunContext:
    """Stands in for Pydantic AI's ``RunContext``: injection types are matched by
    qualified name, and this extra's environment has no Pydantic AI."""


RunContext.__module__ = "pydantic_ai._run_context"


def test_a_parameter_of_another_framework_fails_at_conversion() -> None:
    @tool
    def needs_deps(ctx: RunContext, x: int) -> int:
        return x

    with pytest.raises(ToolDefinitionError, match=r"'ctx'.*pydantic-ai"):
        as_adk_tool(needs_deps)


def test_as_adk_tool_takes_adks_own_options() -> None:
    made = as_adk_tool(search, is_long_running=True, custom_metadata={"team": "x"})
    assert made.is_long_running and made.custom_metadata == {"team": "x"}
    assert made.name == "search"


async def test_the_same_tool_three_ways_answers_alike_on_success() -> None:
    """ADK's FunctionTool on the plain function and on the toolguard tool, and
    toolguard's adapter: the same parameters declared, the same success answer."""

    def plain(order: int, tool_context: ToolContext) -> str:
        """Look an order up.

        Args:
            order: The order number.
        """
        return f"order {order} for {tool_context.session.user_id}"

    guarded = tool(plain)
    answers = []
    for made in (FunctionTool(plain), FunctionTool(guarded), as_adk_tool(guarded)):
        model, _ = await run([made], [[call("plain", order=1)], say("ok")])
        schema = declarations(model)["plain"]
        properties = schema.get("parameters_json_schema", schema.get("parameters", {}))
        assert set(properties["properties"]) == {"order"}
        answers.append(model.responses())
    assert answers[0] == answers[1] == answers[2] == [{"result": "order 1 for u"}]


def test_the_example_app_runs_offline_here_with_the_framework() -> None:
    """examples/google_adk_app.py really runs where the extra is installed (it only prints a
    note and exits 0 where it is not, as in the `all` environment)."""
    script = Path(__file__).parents[2] / "examples" / "google_adk_app.py"
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "skipped" not in done.stdout and "Logged once" in done.stdout
    assert "hunter2" not in done.stdout.split("Logged once")[0]


def test_the_entry_points_refuse_what_is_not_a_dispatcher() -> None:
    """A wrong argument fails at the entry point, saying what it takes, never inside
    ADK on the first call: an agent or a list of tools for the dispatcher."""
    agent = LlmAgent(name="assistant", model=ScriptedLlm(script=[], requests=[]))
    with pytest.raises(
        TypeError, match="ToolguardPlugin takes a toolguard Dispatcher, got LlmAgent"
    ):
        ToolguardPlugin(agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ToolguardPlugin takes a toolguard Dispatcher, got list"):
        ToolguardPlugin([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_adk_tools\(dispatcher\) takes a toolguard"):
        as_adk_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_adk_tool\(dispatcher=...\) takes a toolguard"):
        as_adk_tool(search, dispatcher=agent)  # type: ignore[arg-type]


def refused_order(order: int) -> dict[str, Any]:
    """Look an order up (answers its own error, ADK's way).

    Args:
        order: The order number.
    """
    return {"error": f"Order {order} is archived."}


def _raising(result: Any) -> bool:
    raise RuntimeError("the predicate has a bug")


async def test_a_tools_own_error_is_decided_by_the_pipeline(logs: Logs) -> None:
    """A tool's own ``{"error": ...}`` goes through the pipeline's step 4: kept as the
    author wrote it, a ``return_direct`` predicate that raises answers no (logged once
    as ``return_direct_failed``, the run goes on), and an override may answer it."""
    guard = Dispatcher(
        [],
        external_tools=["refused_order"],
        overrides={"refused_order": ToolPolicy(return_direct=_raising)},
    )
    model, events = await run(
        [refused_order],
        [[call("refused_order", order=7)], say("ok")],
        plugin=ToolguardPlugin(guard),
    )
    assert model.responses()[0] == {"error": "Order 7 is archived."}
    assert not events[-1].actions.skip_summarization and len(model.requests) == 2
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["return_direct_failed"]
    override = Dispatcher(
        [],
        external_tools=["refused_order"],
        overrides={"refused_order": ToolPolicy(on_error=always("Orders are offline."))},
    )
    model, _ = await run(
        [refused_order],
        [[call("refused_order", order=7)], say("ok")],
        plugin=ToolguardPlugin(override),
    )
    assert model.responses()[0] == {"error": "Orders are offline."}
