"""The peers' side of ``compare.py``: the same ``add`` tool in other frameworks.

Each suite declares its cases statically (so a peer that is not installed still
shows up, as skipped) and builds what the timed statements need in ``setup``,
importing the peer lazily. Every case names the toolguard case it is compared to
(``vs``). What each peer is given per call is built once, outside the timed loop,
exactly as toolguard's ``ToolCall`` is: the envelope a framework's runner builds
from the model's message is not the guard's cost (the Agents SDK's ``ToolContext``
is timed on its own row, because it is not cheap).

Read with the installed sources (langchain-core 1.8, openai-agents 0.24, mcp 2.3,
pydantic-ai-slim 2.68); each setup says which path it times and why it is the
fair per-call one.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Bench", "Suite", "peer_suites"]

ARGS: dict[str, int] = {"a": 1, "b": 2}
ARGS_JSON = json.dumps(ARGS)
BAD_ARGS: dict[str, Any] = {"a": "x", "b": 2}
BAD_ARGS_JSON = json.dumps(BAD_ARGS)

RunAsync = Callable[[Awaitable[Any]], Any]
Namespace = dict[str, Any]


@dataclass(frozen=True)
class Bench:
    """One timed case.

    ``stmt`` is one statement, run ``n`` times in a compiled loop (``await`` allowed
    when ``is_async``); names come from the suite's namespace. ``check`` is an
    expression evaluated once before timing (awaited when ``is_async``) that must
    be true: the case really takes the path its label names. ``skip`` is a reason
    this case is not timed (``None`` to time it).
    """

    key: str
    label: str
    stmt: str = ""
    is_async: bool = False
    vs: str | None = None
    check: str | None = None
    skip: str | None = None
    note: str = ""
    unit: str = "µs"
    repeat_n: int | None = None  # a fixed number of calls per batch (rounds)
    ideal_us: float | None = None  # rounds: the wall time if nothing but the sleeps cost


@dataclass(frozen=True)
class Suite:
    """A group of cases sharing one namespace; ``module`` is what must be importable."""

    group: str
    module: str | None
    benches: tuple[Bench, ...]
    setup: Callable[[RunAsync], Namespace]
    description: str = ""
    versions: tuple[str, ...] = field(default=())


# --- LangChain ----------------------------------------------------------------------


def _langchain_setup(run: RunAsync) -> Namespace:
    from langchain_core.tools import StructuredTool, ToolException

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ToolException("database down")

    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"name": name, "args": args, "id": "call-1", "type": "tool_call"}

    return {
        "lc_add": StructuredTool.from_function(add),
        "lc_boom": StructuredTool.from_function(boom, handle_tool_error=True),
        "lc_strict": StructuredTool.from_function(add, handle_validation_error=True),
        "lc_call": call("add", ARGS),
        "lc_call_boom": call("boom", ARGS),
        "lc_call_bad": call("add", BAD_ARGS),
    }


LANGCHAIN = Suite(
    group="langchain",
    module="langchain_core",
    versions=("langchain-core",),
    description=(
        "StructuredTool.invoke with a ToolCall dict (returns a ToolMessage); failures with "
        "handle_tool_error=True on a tool raising ToolException (its message is sent), and "
        "handle_validation_error=True"
    ),
    benches=(
        Bench(
            key="langchain_invoke",
            label="langchain: StructuredTool.invoke(ToolCall)",
            stmt="lc_add.invoke(lc_call)",
            vs="dispatch_dict",
            check="lc_add.invoke(lc_call).content == '3'",
        ),
        Bench(
            key="langchain_handled_error",
            label="langchain: handle_tool_error=True, ToolException",
            stmt="lc_boom.invoke(lc_call_boom)",
            vs="dispatch_hidden_failure",
            check="lc_boom.invoke(lc_call_boom).status == 'error'",
            note="sends the exception's message; logs nothing",
        ),
        Bench(
            key="langchain_validation_error",
            label="langchain: handle_validation_error=True",
            stmt="lc_strict.invoke(lc_call_bad)",
            vs="dispatch_validation_error",
            check="lc_strict.invoke(lc_call_bad).status == 'error'",
        ),
    ),
    setup=_langchain_setup,
)


# --- OpenAI Agents SDK ----------------------------------------------------------------


def _agents_setup(run: RunAsync) -> Namespace:
    # FunctionTool.on_invoke_tool(ctx, json) is what the runner awaits per call
    # (agents/run_internal/tool_execution.py): parse + validate with the tool's
    # pydantic model, run the function (a sync one via asyncio.to_thread), and on
    # failure ask the failure_error_function (by default a fixed message) and log the
    # error at ERROR. No trace is active, so the span calls are no-ops.
    from agents import function_tool
    from agents.tool_context import ToolContext

    @function_tool
    def add_sync(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @function_tool
    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @function_tool
    async def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    def context(name: str, arguments: str) -> Any:
        return ToolContext(
            context=None, tool_name=name, tool_call_id="call-1", tool_arguments=arguments
        )

    fixed = "An error occurred while running the tool. Please try again."
    return {
        "ag_sync": add_sync,
        "ag_async": add_async,
        "ag_boom": boom,
        "ag_ctx_sync": context("add_sync", ARGS_JSON),
        "ag_ctx_async": context("add_async", ARGS_JSON),
        "ag_ctx_boom": context("boom", ARGS_JSON),
        "ag_ctx_bad": context("add_async", BAD_ARGS_JSON),
        "ag_args": ARGS_JSON,
        "ag_bad": BAD_ARGS_JSON,
        "ag_fixed": fixed,
        "ToolContext": ToolContext,
    }


AGENTS = Suite(
    group="openai-agents",
    module="agents",
    versions=("openai-agents",),
    description=(
        "FunctionTool.on_invoke_tool(ToolContext, json) awaited in one running loop; the "
        "ToolContext is built once (its construction is its own row); no trace active"
    ),
    benches=(
        Bench(
            key="agents_async",
            label="openai-agents: on_invoke_tool, async tool",
            stmt="await ag_async.on_invoke_tool(ag_ctx_async, ag_args)",
            is_async=True,
            vs="adispatch_async_json",
            check="(await ag_async.on_invoke_tool(ag_ctx_async, ag_args)) == 3",
        ),
        Bench(
            key="agents_sync",
            label="openai-agents: on_invoke_tool, sync tool",
            stmt="await ag_sync.on_invoke_tool(ag_ctx_sync, ag_args)",
            is_async=True,
            vs="dispatch_json",
            check="(await ag_sync.on_invoke_tool(ag_ctx_sync, ag_args)) == 3",
            note="a sync tool runs via asyncio.to_thread",
        ),
        Bench(
            key="agents_hidden_failure",
            label="openai-agents: failing tool, default error message",
            stmt="await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)",
            is_async=True,
            vs="dispatch_hidden_failure",
            check="(await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)) == ag_fixed",
            note="logged at ERROR to a NullHandler",
        ),
        Bench(
            key="agents_validation_error",
            label="openai-agents: invalid arguments",
            stmt="await ag_async.on_invoke_tool(ag_ctx_bad, ag_bad)",
            is_async=True,
            vs="dispatch_validation_error",
            check="(await ag_async.on_invoke_tool(ag_ctx_bad, ag_bad)) == ag_fixed",
        ),
        Bench(
            key="agents_tool_context",
            label="openai-agents: ToolContext(...) construction",
            stmt=(
                "ToolContext(context=None, tool_name='add_async', tool_call_id='call-1', "
                "tool_arguments=ag_args)"
            ),
            note="built by the runner per call; not in the rows above",
        ),
    ),
    setup=_agents_setup,
)


# --- MCP SDK (server side) --------------------------------------------------------------


def _mcp_setup(run: RunAsync) -> Namespace:
    # MCPServer._handle_call_tool(ctx, params) is the server's tools/call request
    # handler below the JSON-RPC transport: it builds the per-request Context, calls
    # MCPServer.call_tool (look up, validate, run: a sync tool on a worker thread via
    # anyio.to_thread), converts the result to a CallToolResult, and turns a failure
    # into CallToolResult(is_error=True) (logging it: INFO for a ToolError or bad
    # arguments, logger.exception for anything else). MCPServer.call_tool alone raises
    # on failure, so the handler is the path that covers every case alike.
    from mcp.server.context import ServerRequestContext
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError
    from mcp_types import CallToolRequestParams

    server = MCPServer("bench")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    @server.tool()
    async def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ToolError("There is no order 42. Ask the user to check the number.")

    request: ServerRequestContext[dict[str, Any], Any] = ServerRequestContext(
        session=None,  # type: ignore[arg-type]  # never touched by these tools
        lifespan_context={},
        protocol_version="2025-06-18",
        method="tools/call",
    )

    def params(name: str, arguments: dict[str, Any]) -> Any:
        return CallToolRequestParams(name=name, arguments=arguments)

    return {
        "mcp_handle": server._handle_call_tool,
        "mcp_req": request,
        "mcp_add": params("add", ARGS),
        "mcp_add_async": params("add_async", ARGS),
        "mcp_boom": params("boom", ARGS),
        "mcp_refuse": params("refuse", ARGS),
        "mcp_bad": params("add_async", BAD_ARGS),
        "mcp_unknown": params("ad", ARGS),
    }


def _mcp_bench(key: str, label: str, params: str, vs: str, ok: bool, note: str = "") -> Bench:
    return Bench(
        key=key,
        label=label,
        stmt=f"await mcp_handle(mcp_req, {params})",
        is_async=True,
        vs=vs,
        check=f"(await mcp_handle(mcp_req, {params})).is_error is {not ok}",
        note=note,
    )


MCP = Suite(
    group="mcp",
    module="mcp",
    versions=("mcp",),
    description=(
        "MCPServer's tools/call handler (_handle_call_tool) awaited in one running loop, "
        "without the JSON-RPC transport; failure cases use async tools"
    ),
    benches=(
        _mcp_bench("mcp_async", "mcp: tools/call handler, async tool", "mcp_add_async",
                   "adispatch_async", ok=True),
        _mcp_bench("mcp_sync", "mcp: tools/call handler, sync tool", "mcp_add", "dispatch_dict",
                   ok=True, note="a sync tool runs via anyio.to_thread"),
        _mcp_bench("mcp_hidden_failure", "mcp: failing tool (unexpected exception)", "mcp_boom",
                   "dispatch_hidden_failure", ok=False, note="logger.exception to a NullHandler"),
        _mcp_bench("mcp_tool_error", "mcp: ToolError", "mcp_refuse", "dispatch_tool_error",
                   ok=False),
        _mcp_bench("mcp_validation_error", "mcp: invalid arguments", "mcp_bad",
                   "dispatch_validation_error", ok=False),
        _mcp_bench("mcp_unknown_tool", "mcp: unknown tool", "mcp_unknown",
                   "dispatch_unknown_tool", ok=False),
    ),
    setup=_mcp_setup,
)  # fmt: skip


# --- Pydantic AI ---------------------------------------------------------------------------


def _pydantic_ai_setup(run: RunAsync) -> Namespace:
    # ToolManager.handle_call(ToolCallPart) is validate_tool_call + execute_tool_call,
    # the two calls the agent graph makes per tool call (pydantic_ai/_tool_execution.py),
    # on a ToolManager prepared for one run step (for_run_step). A sync tool runs on a
    # worker thread (anyio). A model-visible failure is ModelRetry, surfacing as
    # ToolRetryError carrying the part sent back to the model; the retry budget is only
    # charged between steps, so repeating the call within one step is steady state.
    from pydantic_ai import ModelRetry, RunContext
    from pydantic_ai.exceptions import ToolRetryError
    from pydantic_ai.messages import ToolCallPart
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.tool_manager import ToolManager
    from pydantic_ai.toolsets import FunctionToolset
    from pydantic_ai.usage import RunUsage

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ModelRetry("There is no order 42. Ask the user to check the number.")

    toolset = FunctionToolset([add, add_async, refuse], max_retries=1)
    context = RunContext(deps=None, model=TestModel(), usage=RunUsage())
    manager = run(ToolManager(toolset=toolset).for_run_step(context))

    async def retried(part: Any) -> Any:
        """What the graph does with a retry: catch it, keep the part for the model."""
        try:
            await manager.handle_call(part)
        except ToolRetryError as retry:
            return retry.tool_retry
        raise AssertionError("expected a retry")

    def part(name: str, args: dict[str, Any]) -> Any:
        return ToolCallPart(tool_name=name, args=args, tool_call_id="call-1")

    return {
        "pa_call": manager.handle_call,
        "pa_retried": retried,
        "pa_add": part("add", ARGS),
        "pa_add_async": part("add_async", ARGS),
        "pa_refuse": part("refuse", ARGS),
        "pa_bad": part("add_async", BAD_ARGS),
        "pa_unknown": part("ad", ARGS),
    }


PYDANTIC_AI = Suite(
    group="pydantic-ai",
    module="pydantic_ai",
    versions=("pydantic-ai-slim",),
    description=(
        "ToolManager.handle_call(ToolCallPart) on a manager prepared for one run step, "
        "awaited in one running loop (a RunContext with TestModel, no instrumentation)"
    ),
    benches=(
        Bench(
            key="pydantic_ai_async",
            label="pydantic-ai: handle_call, async tool",
            stmt="await pa_call(pa_add_async)",
            is_async=True,
            vs="adispatch_async",
            check="(await pa_call(pa_add_async)) == 3",
        ),
        Bench(
            key="pydantic_ai_sync",
            label="pydantic-ai: handle_call, sync tool",
            stmt="await pa_call(pa_add)",
            is_async=True,
            vs="dispatch_dict",
            check="(await pa_call(pa_add)) == 3",
            note="a sync tool runs on a worker thread",
        ),
        Bench(
            key="pydantic_ai_hidden_failure",
            label="pydantic-ai: failing tool",
            vs="dispatch_hidden_failure",
            skip=(
                "no per-call equivalent: an exception other than ModelRetry is not handled "
                "per call, it propagates and ends the run"
            ),
        ),
        Bench(
            key="pydantic_ai_model_retry",
            label="pydantic-ai: ModelRetry (model-visible)",
            stmt="await pa_retried(pa_refuse)",
            is_async=True,
            vs="dispatch_tool_error",
            check="(await pa_retried(pa_refuse)) is not None",
        ),
        Bench(
            key="pydantic_ai_validation_error",
            label="pydantic-ai: invalid arguments (retry)",
            stmt="await pa_retried(pa_bad)",
            is_async=True,
            vs="dispatch_validation_error",
            check="(await pa_retried(pa_bad)) is not None",
        ),
        Bench(
            key="pydantic_ai_unknown_tool",
            label="pydantic-ai: unknown tool (retry)",
            stmt="await pa_retried(pa_unknown)",
            is_async=True,
            vs="dispatch_unknown_tool",
            check="(await pa_retried(pa_unknown)) is not None",
        ),
    ),
    setup=_pydantic_ai_setup,
)


def peer_suites() -> tuple[Suite, ...]:
    """Every peer, in table order."""
    return (LANGCHAIN, AGENTS, MCP, PYDANTIC_AI)
