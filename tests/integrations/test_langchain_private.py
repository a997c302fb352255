"""The LangChain and LangGraph names toolguard's integration still stands on, pinned.

``toolguard.integrations.langchain`` uses LangChain's public hooks where there is
one (middleware hooks, callbacks, ``ToolCallRequest``, ``ToolRuntime``). Where no public
hook serves, it uses a name of LangChain's that a release could move or rename; each
is listed here with why, and a test fails loudly (never a silent change of behaviour)
if the installed LangChain moved it:

* ``BaseTool._run``/``_arun`` frames below ``BaseTool.run``/``arun``, and the parsing
  frames ``_to_args_and_kwargs``/``_parse_input``: where a tool's reported exception
  was raised (its body, the model's arguments, LangChain itself). No public hook says
  it: ``on_tool_error`` reports the exception only.
* ``langgraph.prebuilt.tool_node``'s ``ToolInvocationError`` (and its ``source``),
  ``TOOL_INVOCATION_ERROR_TEMPLATE`` and ``INVALID_TOOL_NAME_ERROR_TEMPLATE``:
  ``ToolNode`` answers bad arguments and unknown tools itself, inside the middleware's
  handler, with these texts; nothing public marks such a message as ``ToolNode``'s.
* ``create_agent`` reading hooks from the middleware's class: ``ToolguardMiddleware``
  has only the hooks it needs, so the agent is built as without it where there is
  nothing to guard.
* ``BaseTool._to_args_and_kwargs`` and ``BaseTool._injected_args_keys`` (overridden by
  ``ToolguardTool``) and ``langchain_core.tools.base._DirectlyInjectedToolArg`` (the
  marker of ``ToolRuntime``): the hook between the raw input and ``_run`` that
  LangChain's own ``Tool`` and ``StructuredTool`` override, and what LangChain leaves
  out of its callbacks' inputs.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pydantic
import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tools import base as tools_base
from langchain_core.tools import tool as lc_tool
from langchain_core.tracers.context import register_configure_hook
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime
from langgraph.prebuilt.tool_node import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_INVOCATION_ERROR_TEMPLATE,
    ToolInvocationError,
)

from toolguard import Dispatcher, ToolPolicy
from toolguard.integrations.langchain import ToolguardMiddleware
from toolguard.integrations.langchain._failures import WITNESS, Witness, install, place

from .langchain_helpers import ScriptedModel, ai


@lc_tool
def divide(a: int, b: int) -> float:
    """Divide a by b."""
    return a / b


@lc_tool(response_format="content_and_artifact")
def unpaired(a: int) -> str:
    """Declared content_and_artifact; returns a str."""
    return "no pair"


async def _only_async(a: int) -> int:
    """Async only."""
    return a


only_async = StructuredTool.from_function(coroutine=_only_async, name="only_async")


def reported(tool: BaseTool, args: dict[str, Any], *, is_async: bool = False) -> BaseException:
    """What the tool run reports to a witness (the hook toolguard registers)."""
    install()
    witness = Witness("c1")
    token = WITNESS.set(witness)
    call = {"name": tool.name, "args": args, "id": "c1", "type": "tool_call"}
    try:
        with pytest.raises(Exception) as raised:
            if is_async:
                asyncio.run(tool.ainvoke(call))
            else:
                tool.invoke(call)
    finally:
        WITNESS.reset(token)
    assert witness.saw(raised.value), "LangChain no longer reports it through on_tool_error"
    return raised.value


@pytest.mark.parametrize("is_async", [False, True])
def test_a_tool_run_reports_its_exception_to_a_configure_hook_with_the_call_id(
    is_async: bool,
) -> None:
    assert callable(register_configure_hook)
    error = reported(divide, {"a": 1, "b": 0}, is_async=is_async)
    assert isinstance(error, ZeroDivisionError)


@pytest.mark.parametrize("is_async", [False, True])
def test_the_frames_of_a_tool_run_tell_where_it_raised(is_async: bool) -> None:
    assert place(reported(divide, {"a": 1, "b": 0}, is_async=is_async)) == "body"
    assert place(reported(divide, {"a": "x", "b": 1}, is_async=is_async)) == "arguments"
    assert place(reported(unpaired, {"a": 1}, is_async=is_async)) == "langchain"
    if not is_async:
        assert place(reported(only_async, {"a": 1})) == "langchain"


def _tool_node(node: ToolNode) -> Any:
    graph = StateGraph(MessagesState)
    graph.add_node("tools", node)
    graph.add_edge(START, "tools")
    graph.add_edge("tools", END)
    return graph.compile()


def test_toolnode_answers_bad_arguments_and_unknown_tools_with_these_texts() -> None:
    seen: list[Any] = []

    def wrap(request: Any, execute: Any) -> Any:
        seen.append(request.runtime.tools)  # ToolRuntime.tools: the node's tools
        return execute(request)

    calls: list[Any] = [
        {"name": "divide", "args": {"a": "x", "b": 1}, "id": "c1", "type": "tool_call"},
        {"name": "dvide", "args": {}, "id": "c2", "type": "tool_call"},
    ]
    start: Any = {"messages": [AIMessage("", tool_calls=calls)]}
    answers = _tool_node(ToolNode([divide], wrap_tool_call=wrap)).invoke(start)["messages"][1:]
    bad, unknown = answers
    prefix = TOOL_INVOCATION_ERROR_TEMPLATE.partition("{tool_kwargs}")[0]
    assert bad.content.startswith(prefix.replace("{tool_name}", "divide"))
    assert unknown.content == INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
        requested_tool="dvide", available_tools="divide"
    )
    assert seen == [[divide], [divide]]
    with pytest.raises(ToolInvocationError) as raised:
        strict = ToolNode([divide], handle_tool_errors=False)
        _tool_node(strict).invoke({"messages": [AIMessage("", tool_calls=calls[:1])]})
    assert isinstance(raised.value.source, pydantic.ValidationError)


def _nodes(middleware: ToolguardMiddleware, tools: list[BaseTool]) -> set[str]:
    agent = create_agent(ScriptedModel(messages=iter([])), tools=tools, middleware=[middleware])
    return set(agent.get_graph().nodes)


def test_create_agent_builds_from_the_hooks_the_middleware_class_has() -> None:
    plain = Dispatcher([], external_tools=["divide"])
    stopping = Dispatcher(
        [], external_tools=["divide"], overrides={"divide": ToolPolicy(return_direct=True)}
    )
    assert "tools" not in _nodes(ToolguardMiddleware(plain, tools=[]), [])
    assert _nodes(ToolguardMiddleware(plain, tools=[divide]), [divide]) == {
        "__start__",
        "model",
        "tools",
        "__end__",
    }
    assert "ToolguardMiddleware.before_model" in _nodes(
        ToolguardMiddleware(stopping, tools=[divide]), [divide]
    )
    assert "ToolguardMiddleware.before_model" in _nodes(ToolguardMiddleware(plain), [divide])


def test_the_private_names_toolguard_tool_overrides_are_langchains_hooks() -> None:
    assert list(inspect.signature(BaseTool._to_args_and_kwargs).parameters) == [
        "self",
        "tool_input",
        "tool_call_id",
    ]
    assert "self._to_args_and_kwargs(" in inspect.getsource(BaseTool.run)
    assert "self._injected_args_keys" in inspect.getsource(BaseTool._filter_injected_args)
    assert issubclass(ToolRuntime, tools_base._DirectlyInjectedToolArg)


def test_a_guarded_agent_answers_through_these_names() -> None:
    """The end to end check: bad arguments and an unknown name, answered by toolguard."""
    agent = create_agent(
        ScriptedModel(
            messages=iter(
                [ai(("divide", {"a": "x", "b": 1}, "c1"), ("dvide", {}, "c2")), AIMessage("")]
            )
        ),
        tools=[divide],
        middleware=[ToolguardMiddleware(tools=[divide])],
    )
    messages = agent.invoke({"messages": [HumanMessage("go")]})["messages"]
    bad, unknown = (m for m in messages if isinstance(m, ToolMessage))
    assert str(bad.content).startswith("Invalid arguments for tool 'divide'")
    assert str(unknown.content).startswith("There is no tool named 'dvide'")
