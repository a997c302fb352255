"""``as_function_tool``: the SDK's injection, its return types, its options, sessions.

Each behaviour in a real ``Runner.run`` with the offline ``ScriptModel``.
"""

from __future__ import annotations

from typing import Annotated, Any

import pytest
from agents import (
    FunctionToolCustomDataContext,
    RunContextWrapper,
    ToolOutputText,
    UserError,
)
from agents.tool_context import ToolContext

import toolguard
from toolguard import Breaker, Dispatcher, ToolDefinitionError
from toolguard.integrations.openai_agents import as_function_tool, as_function_tools

from .test_openai_agents_support import call, outputs, run, say


class InjectedToolArg:
    """A stand-in for LangChain's injection marker, known by its qualified name."""


InjectedToolArg.__module__ = "langchain_core.tools.base"


async def test_a_tool_context_parameter_in_any_position_gets_the_calls_context() -> None:
    @toolguard.tool
    def who(note: str, ctx: ToolContext[str]) -> str:
        """Say which call this is."""
        return f"{ctx.tool_name}/{ctx.tool_call_id}/{ctx.context}: {note}"

    fn = as_function_tool(who)
    result, _ = await run([fn], [[call("who", {"note": "hi"}, "c1")], say("")], context="ann")

    assert outputs(result)["c1"].output == "who/c1/ann: hi"
    assert list(fn.params_json_schema["properties"]) == ["note"]


async def test_the_model_cannot_set_the_sdks_context_parameter() -> None:
    seen: list[object] = []

    @toolguard.tool
    def greet(ctx: RunContextWrapper[str], name: str) -> str:
        """Greet."""
        seen.append(ctx.context)
        return f"hi {name}"

    result, _ = await run(
        [as_function_tool(greet, strict_mode=False)],
        [[call("greet", {"name": "x", "ctx": "spoofed"}, "c1")], say("")],
        context="real",
    )

    assert "'ctx': set by the application; it cannot be sent" in str(outputs(result)["c1"].output)
    assert seen == []


def test_another_frameworks_parameter_is_refused_at_conversion() -> None:
    @toolguard.tool
    def remember(fact: str, state: Annotated[dict[str, Any], InjectedToolArg]) -> str:
        """Remember a fact."""
        return fact

    with pytest.raises(ToolDefinitionError, match=r"parameter 'state'.*cannot supply"):
        as_function_tool(remember)


async def test_sdk_outputs_come_back_only_where_the_return_annotation_names_them() -> None:
    @toolguard.tool
    def native(topic: str) -> ToolOutputText:
        """The SDK's text output."""
        return ToolOutputText(text=f"about {topic}")

    @toolguard.tool
    def looks_native(topic: str) -> str:
        """A string that happens to look like one."""
        return '{"type": "text", "text": "not structured"}'

    result, _ = await run(
        as_function_tools(Dispatcher([native, looks_native])),
        [[call("native", {"topic": "t"}, "c1"), call("looks_native", {"topic": "t"}, "c2")], []],
    )

    answers = outputs(result)
    assert answers["c1"].output == ToolOutputText(text="about t")
    assert answers["c2"].output == '{"type": "text", "text": "not structured"}'


async def test_a_custom_data_extractor_keeps_its_data_beside_toolguards() -> None:
    def mine(data: FunctionToolCustomDataContext) -> dict[str, Any]:
        return {"app": data.tool.name}

    @toolguard.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    result, _ = await run(
        [as_function_tool(ping, custom_data_extractor=mine)], [[call("ping", {}, "c1")], say("")]
    )

    assert outputs(result)["c1"].custom_data == {
        "app": "ping",
        "toolguard": {"return_direct": False, "is_error": False, "error_id": None},
    }


async def test_a_session_named_by_the_run_context_opens_the_breaker_of_that_conversation() -> None:
    runs: list[int] = []

    @toolguard.tool
    def charge(amount: int) -> str:
        """Charge a card."""
        runs.append(amount)
        raise ConnectionError("gateway down")

    dispatcher = Dispatcher([charge], breaker=Breaker(failures=1, cooldown=60))
    tools = as_function_tools(dispatcher, session=lambda ctx: str(ctx.context))
    result, _ = await run(
        tools,
        [[call("charge", {"amount": 1}, "c1")], [call("charge", {"amount": 2}, "c2")], say("")],
        context="thread-9",
    )

    assert "is unavailable" in str(outputs(result)["c2"].output)
    assert runs == [1]
    assert dispatcher.session(id="thread-9").state("charge").consecutive_failures == 1


async def test_a_session_function_that_names_no_session_fails_the_run_clearly() -> None:
    @toolguard.tool
    def ping() -> str:
        """Ping."""
        return "pong"

    def not_a_session(ctx: RunContextWrapper[Any]) -> Any:
        return 42

    tools = as_function_tools(Dispatcher([ping]), session=not_a_session)
    with pytest.raises(UserError) as raised:
        await run(tools, [[call("ping", {}, "c1")], say("")])
    assert isinstance(raised.value.__cause__, TypeError)
    assert "returns a toolguard Session, a session id (str) or None" in str(raised.value.__cause__)
