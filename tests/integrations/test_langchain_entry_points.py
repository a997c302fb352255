"""LangChain's entry points refuse what they cannot use where it is passed, and the
command line inspects what an in-place LangChain user has (issue 30, point 8)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain.agents import create_agent
from langchain_core.tools import StructuredTool
from langchain_core.tools import tool as lc_tool

from toolguard import Dispatcher, ToolPolicy
from toolguard.cli import main
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.langchain import ToolguardMiddleware

from .langchain_helpers import ScriptedModel


@lc_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


TOOLS = [get_weather]
MIDDLEWARE = ToolguardMiddleware(
    Dispatcher(
        [], external_tools=["get_weather"], overrides={"get_weather": ToolPolicy(log_level="error")}
    ),
    tools=TOOLS,
)


def _agent() -> Any:
    return create_agent(ScriptedModel(messages=iter([])), tools=TOOLS)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (lambda: TOOLS, "list"),
        (lambda: get_weather, "StructuredTool"),
        (_agent, "CompiledStateGraph"),
    ],
    ids=["the tools", "a tool", "an agent"],
)
def test_the_middleware_refuses_anything_but_a_dispatcher_first(given: Any, named: str) -> None:
    with pytest.raises(TypeError) as raised:
        ToolguardMiddleware(given())
    message = str(raised.value)
    assert f"takes a toolguard Dispatcher, got {named}" in message
    assert "ToolguardMiddleware(tools=tools)" in message  # what to write instead


def test_the_middleware_refuses_a_non_tool_among_the_tools() -> None:
    with pytest.raises(TypeError, match=r"takes the agent's tools .* not int"):
        ToolguardMiddleware(tools=[get_weather, 3])  # type: ignore[list-item]  # the mistake


def test_a_providers_built_in_tool_among_the_tools_is_accepted() -> None:
    middleware = ToolguardMiddleware(tools=[get_weather, {"type": "web_search"}])
    assert middleware.dispatcher.external_tools == ("get_weather",)


def test_a_dispatcher_given_a_langchain_tool_says_to_guard_it_in_place() -> None:
    with pytest.raises(ToolDefinitionError) as raised:
        Dispatcher([get_weather])  # type: ignore[list-item]  # the mistake
    message = str(raised.value)
    assert "a StructuredTool ('get_weather'), a framework's own tool" in message
    assert "external_tools=['get_weather']" in message
    assert "args_schema" not in message  # the tool's repr is not printed


@pytest.mark.parametrize(
    "target",
    ["TOOLS", "get_weather", "MIDDLEWARE"],
)
def test_explain_reads_langchain_tools_and_a_middleware(
    target: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["explain", f"{__name__}:{target}", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    explained = json.loads(out)
    assert explained["external_tools"] == ["get_weather"]
    assert list(explained["tools"]) == ["get_weather"]
    log_level = explained["tools"]["get_weather"]["log_level"]
    if target == "MIDDLEWARE":  # the middleware's own dispatcher, its override included
        assert log_level == {
            "value": "error",
            "level": "override",
            "source": "overrides['get_weather']",
        }
    else:  # the tools alone: what the global defaults give them
        assert log_level["level"] == "builtin"


def test_explain_of_a_middleware_is_its_dispatcher(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", f"{__name__}:MIDDLEWARE"]) == 0
    assert "tool get_weather (runs elsewhere: external_tools)" in capsys.readouterr().out


def test_the_other_commands_still_refuse_langchain_tools(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """schema and serve-mcp run or describe toolguard's own tools: a framework's tool
    is a usage error there, never silently served as nothing."""
    assert main(["schema", f"{__name__}:TOOLS", "--format", "openai"]) == 2
    assert "framework's own tool" in capsys.readouterr().err


def test_a_structured_tool_is_what_the_tests_pass() -> None:
    assert isinstance(get_weather, StructuredTool)
