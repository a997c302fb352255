"""toolguard's spans through the OpenAI Agents SDK and LangGraph integrations.

Neither framework exports OpenTelemetry spans of its own offline (the Agents SDK
traces with its own tracing API, switched off here as in its other tests; LangChain
traces through LangSmith callbacks), so what is pinned is that every guarded call is
one span in the application's trace, under the application's span, through each
framework's real run loop and offline model: the tools toolguard runs
(``as_function_tools``, ``as_langchain_tools``) and, for LangChain, a plain LangChain
tool guarded in place by ``ToolguardMiddleware`` (the guard's own span).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.testing import ScriptedModel as AgentsModel
from agents.testing import assistant_message, function_call
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.tools import tool as lc_tool
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan

import toolguard
from toolguard import Dispatcher, ToolError
from toolguard.integrations.langchain import ToolguardMiddleware, as_langchain_tools
from toolguard.integrations.openai_agents import as_function_tools

from .._otel import SPANS, attributes, install, tool_spans

SECRET = "db-password=hunter2"


@pytest.fixture
def telemetry() -> Iterator[None]:
    install()
    toolguard.configure(telemetry=True)
    yield
    toolguard.reset_defaults()


@toolguard.tool
def charge(card: str) -> str:
    """Charge a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@toolguard.tool
def find_order(order_id: int) -> str:
    """Find an order."""
    if order_id == 42:
        raise ToolError("There is no order 42.")
    return f"order {order_id}: shipped"


def assert_under(spans: Sequence[ReadableSpan], request: Any) -> None:
    """Each span is in the request's trace, and its ancestors lead to the request span."""
    everything = {s.context.span_id: s for s in SPANS.get_finished_spans() if s.context}
    root = request.get_span_context()
    for span in spans:
        assert span.context is not None and span.context.trace_id == root.trace_id
        current = span
        while current.parent is not None and current.parent.span_id != root.span_id:
            current = everything[current.parent.span_id]
        assert current.parent is not None, f"{span.name} is not under the request span"


def by_call(spans: Sequence[ReadableSpan]) -> dict[str, dict[str, Any]]:
    return {str(attributes(s)["gen_ai.tool.call.id"]): attributes(s) for s in spans}


@pytest.mark.usefixtures("telemetry")
async def test_agents_sdk_runs_are_one_toolguard_span_per_call_in_the_apps_trace() -> None:
    model = AgentsModel(
        [
            [
                function_call("charge", {"card": "4242"}, call_id="c1"),
                function_call("find_order", {"order_id": 42}, call_id="c2"),
            ],
            [assistant_message("done")],
        ]
    )
    agent = Agent(
        name="shop", model=model, tools=as_function_tools(Dispatcher([charge, find_order]))
    )
    with trace.get_tracer("app").start_as_current_span("handle request") as request:
        result = await Runner.run(agent, "go", run_config=RunConfig(tracing_disabled=True))
    assert result.final_output == "done"
    spans = tool_spans()
    assert_under(spans, request)
    found = by_call(spans)
    assert found["c1"]["toolguard.outcome"] == "hidden_error"
    assert found["c2"]["toolguard.outcome"] == "visible_error"
    assert found["c1"]["toolguard.error_id"] in str(result.new_items)
    assert all(SECRET not in s.to_json() for s in spans)


class LangChainModel(GenericFakeChatModel):
    """LangChain's fake chat model; it accepts any tools and answers from its script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self


def calls(*items: tuple[str, dict[str, Any], str]) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": n, "args": a, "id": i} for n, a, i in items])


@pytest.mark.usefixtures("telemetry")
def test_langgraph_tool_calls_are_toolguard_spans_in_the_apps_trace() -> None:
    script = iter(
        [
            calls(("charge", {"card": "4242"}, "c1"), ("find_order", {"order_id": 7}, "c2")),
            AIMessage(content="done"),
        ]
    )
    tools = as_langchain_tools(Dispatcher([charge, find_order]))
    agent = create_agent(LangChainModel(messages=script), tools=tools)
    with trace.get_tracer("app").start_as_current_span("handle request") as request:
        state = agent.invoke({"messages": [HumanMessage("go")]})
    spans = tool_spans()
    assert_under(spans, request)
    found = by_call(spans)
    assert found["c1"]["toolguard.outcome"] == "hidden_error"
    assert found["c2"]["toolguard.outcome"] == "ok"
    [charged] = [
        m for m in state["messages"] if isinstance(m, ToolMessage) and m.tool_call_id == "c1"
    ]
    assert found["c1"]["toolguard.error_id"] in str(charged.content)


@pytest.mark.usefixtures("telemetry")
def test_a_langchain_tool_guarded_in_place_answers_in_a_span_of_the_guards() -> None:
    @lc_tool
    def search(query: str) -> str:
        """Search the web."""
        raise ConnectionError(f"proxy refused {SECRET}")

    script = iter([calls(("search", {"query": "otel"}, "c1")), AIMessage(content="done")])
    guard = ToolguardMiddleware(Dispatcher([], external_tools=["search"]))
    agent = create_agent(LangChainModel(messages=script), tools=[search], middleware=[guard])
    with trace.get_tracer("app").start_as_current_span("handle request") as request:
        agent.invoke({"messages": [HumanMessage("go")]})
    [span] = tool_spans()
    assert_under([span], request)
    assert span.name == "execute_tool search"
    assert attributes(span)["toolguard.outcome"] == "hidden_error"
    assert attributes(span)["error.type"] == "ConnectionError"
    assert SECRET not in span.to_json()


# --- MCP: the SDK's MCPServer and FastMCP, guarded in place ---------------------------


def _mcp_server(guard: Any) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("shop", middleware=[guard])
    server.tool()(lambda_lookup)
    return server


def lambda_lookup(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@pytest.mark.usefixtures("telemetry")
@pytest.mark.parametrize("framework", ["mcp", "fastmcp"])
async def test_a_tool_name_a_client_invents_is_no_metric_series_of_its_own(
    framework: str,
) -> None:
    """issue 27: every invented name became its own gen_ai.tool.name series with outcome
    visible_error; docs/telemetry.md says _OTHER / unknown_tool."""
    from .._otel import counted

    invented = [f"made_up_{framework}_{n}" for n in range(3)]
    before = counted("_OTHER", "unknown_tool")  # cumulative since the process started
    if framework == "mcp":
        from mcp import Client

        from toolguard.integrations.mcp import ToolguardMiddleware as McpGuard

        async with Client(_mcp_server(McpGuard(Dispatcher([])))) as client:
            answers = [await client.call_tool(name, {}) for name in invented]
    else:
        import fastmcp

        from toolguard.integrations.fastmcp import ToolguardMiddleware as FastGuard

        app = fastmcp.FastMCP("shop")
        app.tool(lambda_lookup)
        app.add_middleware(FastGuard(Dispatcher([])))
        async with fastmcp.Client(app) as client:
            answers = [await client.call_tool(n, {}, raise_on_error=False) for n in invented]
    assert all(answer.is_error for answer in answers)
    assert counted("_OTHER", "unknown_tool") - before == len(invented)
    assert all(counted(name, "visible_error") == 0 for name in invented)
