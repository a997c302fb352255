"""The peers' side of ``compare.py``: the same ``add`` tool in other frameworks.

Each suite declares its cases statically (so a peer that is not installed still
shows up, as skipped) and builds what the timed statements need in ``setup``,
importing the peer lazily. Every case names the toolguard case it is compared to
(``vs``). What each peer is given per call is built once, outside the timed loop,
exactly as toolguard's ``ToolCall`` is: the envelope a framework's runner builds
from the model's message is not the guard's cost (the Agents SDK's ``ToolContext``
is timed on its own row, because it is not cheap).

Read with the installed sources (langchain-core 1.8, langgraph 1.2 with
langgraph-prebuilt 1.1, openai-agents 0.24, mcp 2.3, pydantic-ai-slim 2.68); each
setup says which path it times and why it is the fair per-call one, and every case
says what it does (:func:`does`: validation, error handling, logging, result) so
that a reader can check each pairing against the toolguard row it is compared to.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Bench", "Suite", "does", "peer_suites"]

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
    this case is not timed (``None`` to time it). ``around`` names a namespace entry:
    a zero-argument callable returning a context manager that the harness enters
    around this case's check and around every one of its batches (and leaves before
    the next case's batch), for a case that needs its own configuration (a logging
    pipeline). ``does`` says what the timed path does (see :func:`does`).
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
    around: str | None = None
    does: str = ""


@dataclass(frozen=True)
class Suite:
    """A group of cases sharing one namespace; ``module`` is what must be importable.

    ``own``: toolguard's cases, whose failures propagate (a peer's become skips).
    """

    group: str
    module: str | None
    benches: tuple[Bench, ...]
    setup: Callable[[RunAsync], Namespace]
    description: str = ""
    versions: tuple[str, ...] = field(default=())
    own: bool = False


def does(validates: str, errors: str, logs: str, returns: str) -> str:
    """What one timed path does, in the four respects a pairing must match."""
    return f"validates: {validates}; errors: {errors}; logs: {logs}; returns: {returns}"


class _Collect(logging.Handler):
    """Keeps the records a logger emits (a check, never a timed batch)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def collected(name: str) -> Iterator[list[logging.LogRecord]]:
    """The records logger ``name`` passes on while the block runs."""
    handler = _Collect()
    target = logging.getLogger(name)
    target.addHandler(handler)
    try:
        yield handler.records
    finally:
        target.removeHandler(handler)


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


LC_VALIDATES = "the tool's pydantic args model (built once, at from_function)"
LC_LOGS = "callbacks: a callback manager per call, no handler configured"

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
            does=does(LC_VALIDATES, "none armed (an exception propagates)", LC_LOGS,
                      "ToolMessage, content str(3)"),
        ),
        Bench(
            key="langchain_handled_error",
            label="langchain: handle_tool_error=True, ToolException",
            stmt="lc_boom.invoke(lc_call_boom)",
            vs="dispatch_hidden_failure",
            check="lc_boom.invoke(lc_call_boom).status == 'error'",
            note="sends the exception's message; logs nothing (toolguard hides it and logs it)",
            does=does(LC_VALIDATES, "ToolException caught, its message sent", LC_LOGS,
                      "ToolMessage(status='error')"),
        ),
        Bench(
            key="langchain_validation_error",
            label="langchain: handle_validation_error=True",
            stmt="lc_strict.invoke(lc_call_bad)",
            vs="dispatch_validation_error",
            check="lc_strict.invoke(lc_call_bad).status == 'error'",
            does=does(LC_VALIDATES, "ValidationError caught, a fixed message sent", LC_LOGS,
                      "ToolMessage(status='error')"),
        ),
    ),
    setup=_langchain_setup,
)  # fmt: skip


# --- LangGraph's ToolNode ------------------------------------------------------------


def _langgraph_setup(run: RunAsync) -> Namespace:
    # ToolNode is the node create_agent (langchain.agents) runs for the model's tool
    # calls: it reads the last AIMessage's tool_calls from the state, builds a
    # ToolRuntime per call, runs each through the tool's own invoke (sync: on a thread
    # pool made per call by get_executor_for_config; async: awaited, gathered) and
    # returns {"messages": [ToolMessage, ...]}. Outside a graph it needs the runtime the
    # graph would put in the config: a default Runtime() (no store, no context).
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.prebuilt import ToolNode
    from langgraph.runtime import Runtime

    try:  # the key the graph stores its runtime under (what langgraph.config reads)
        from langgraph._internal._constants import CONFIG_KEY_RUNTIME
    except ImportError:  # pragma: no cover - moved
        CONFIG_KEY_RUNTIME = "__pregel_runtime"

    @lc_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @lc_tool
    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @lc_tool
    async def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    def state(name: str, args: dict[str, Any]) -> dict[str, Any]:
        call = {"name": name, "args": args, "id": "call-1", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    tools = [add, add_async, boom]
    return {
        # the default error handling: invalid arguments answered, anything else raised
        "ln_node": ToolNode(tools),
        # handle_tool_errors=True: every exception answered with its repr
        "ln_handled": ToolNode(tools, handle_tool_errors=True),
        "ln_config": {"configurable": {CONFIG_KEY_RUNTIME: Runtime()}},
        "ln_add": state("add", ARGS),
        "ln_add_async": state("add_async", ARGS),
        "ln_boom": state("boom", ARGS),
        "ln_bad": state("add_async", BAD_ARGS),
        "ln_unknown": state("ad", ARGS),
    }


LN_VALIDATES = "the tool's pydantic args model (langchain's StructuredTool)"
LN_LOGS = "callbacks: a callback manager per call, no handler configured"


def _ln_bench(
    key: str,
    label: str,
    state: str,
    vs: str,
    *,
    node: str = "ln_node",
    content: str | None = None,
    error: bool = False,
    sync: bool = False,
    note: str = "",
    errors: str,
    returns: str,
) -> Bench:
    method = "invoke" if sync else "ainvoke"
    stmt = f"{node}.{method}({state}, ln_config)"
    expr = stmt if sync else f"(await {stmt})"
    wanted = f" and m.content == {content!r}" if content is not None else ""
    return Bench(
        key=key, label=label, stmt=stmt if sync else f"await {stmt}", is_async=not sync,
        vs=vs,
        check=f"(m := {expr}['messages'][0]).status == {'error' if error else 'success'!r}"
              f"{wanted}",
        note=note, does=does(LN_VALIDATES, errors, LN_LOGS, returns),
    )  # fmt: skip


LANGGRAPH = Suite(
    group="langgraph",
    module="langgraph.prebuilt",
    versions=("langgraph", "langgraph-prebuilt"),
    description=(
        "ToolNode.invoke / ainvoke of a message state holding one AIMessage tool call "
        "(what create_agent's tool node runs), with the graph's Runtime in the config"
    ),
    benches=(
        _ln_bench("langgraph_toolnode_sync", "langgraph: ToolNode.invoke, sync tool", "ln_add",
                  "adispatch_offload_dict", sync=True, content="3",
                  note="runs the call on a thread pool made per invoke: paired with "
                       "toolguard's offload=True (its default runs a sync tool inline)",
                  errors="invalid arguments answered, others raised",
                  returns="{'messages': [ToolMessage]}"),
        _ln_bench("langgraph_toolnode_async", "langgraph: ToolNode.ainvoke, async tool",
                  "ln_add_async", "adispatch_async", content="3",
                  errors="invalid arguments answered, others raised",
                  returns="{'messages': [ToolMessage]}"),
        _ln_bench("langgraph_toolnode_error", "langgraph: handle_tool_errors=True, failing tool",
                  "ln_boom", "dispatch_hidden_failure", node="ln_handled", error=True,
                  note="sends the exception's repr to the model; logs nothing (toolguard "
                       "hides it and logs it)",
                  errors="every exception caught, its repr sent",
                  returns="{'messages': [ToolMessage(status='error')]}"),
        _ln_bench("langgraph_toolnode_validation", "langgraph: invalid arguments (default)",
                  "ln_bad", "dispatch_validation_error", error=True,
                  errors="ToolInvocationError caught, the validation text sent",
                  returns="{'messages': [ToolMessage(status='error')]}"),
        _ln_bench("langgraph_toolnode_unknown", "langgraph: unknown tool", "ln_unknown",
                  "dispatch_unknown_tool", error=True,
                  errors="answered, listing every tool",
                  returns="{'messages': [ToolMessage(status='error')]}"),
    ),
    setup=_langgraph_setup,
)  # fmt: skip


# --- OpenAI Agents SDK ----------------------------------------------------------------


def _agents_setup(run: RunAsync) -> Namespace:
    # FunctionTool.on_invoke_tool(ctx, json) is what the runner awaits per call
    # (agents/run_internal/tool_execution.py): parse the JSON and validate it with the
    # tool's pydantic model, run the function (a sync one via asyncio.to_thread), and on
    # failure ask the failure_error_function (by default a fixed message) and report
    # the error (agents/tool.py, _build_handled_function_tool_error_handler): with
    # agents._debug.DONT_LOG_TOOL_DATA (the default, from OPENAI_AGENTS_DONT_LOG_TOOL_DATA
    # unset) that is logger.debug("... failed"), filtered out at WARNING before a record
    # is built, so by default nothing is logged; with the flag off (the variable set to
    # 0) it is logger.error("... failed: <input json> <error>", exc_info=error): a
    # record carrying the exception, here built and dropped by the NullHandler. No
    # trace is active, so the span calls are no-ops.
    from agents import _debug, function_tool
    from agents.tool import default_tool_error_function
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

    @contextlib.contextmanager
    def tool_data_logged() -> Iterator[None]:
        """As if run with OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0 (read at call time)."""
        saved = _debug.DONT_LOG_TOOL_DATA
        _debug.DONT_LOG_TOOL_DATA = False
        try:
            yield
        finally:
            _debug.DONT_LOG_TOOL_DATA = saved

    ctx_boom = context("boom", ARGS_JSON)

    async def logged_errors() -> int:
        """Records at WARNING or above, carrying the exception, that one failure emits."""
        with collected("openai.agents") as records:
            await boom.on_invoke_tool(ctx_boom, ARGS_JSON)
        return sum(1 for r in records if r.levelno >= logging.WARNING and r.exc_info)

    # what the SDK sends: from 0.22 a fixed message; before, it appends the exception's
    # text ("... Please try again. Error: database down")
    fixed = default_tool_error_function(context("boom", ARGS_JSON), ValueError("database down"))
    return {
        "ag_sync": add_sync,
        "ag_async": add_async,
        "ag_boom": boom,
        "ag_ctx_sync": context("add_sync", ARGS_JSON),
        "ag_ctx_async": context("add_async", ARGS_JSON),
        "ag_ctx_boom": ctx_boom,
        "ag_ctx_bad": context("add_async", BAD_ARGS_JSON),
        "ag_args": ARGS_JSON,
        "ag_bad": BAD_ARGS_JSON,
        "ag_fixed": fixed,
        "ag_generic": "An error occurred while running the tool. Please try again.",
        "ag_logged_errors": logged_errors,
        "ag_tool_data_logged": tool_data_logged,
        "ToolContext": ToolContext,
    }


AG_VALIDATES = "json.loads + the tool's pydantic model (built at decoration)"
AG_RETURNS = "the function's value as it is (the runner formats it later)"

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
            label="openai-agents: on_invoke_tool, async tool, JSON",
            stmt="await ag_async.on_invoke_tool(ag_ctx_async, ag_args)",
            is_async=True,
            vs="adispatch_async_json",
            check="(await ag_async.on_invoke_tool(ag_ctx_async, ag_args)) == 3",
            note="like for like: toolguard's adispatch of an async tool, JSON string arguments",
            does=does(AG_VALIDATES, "the failure_error_function (armed)", "nothing (DEBUG)",
                      AG_RETURNS),
        ),
        Bench(
            key="agents_sync",
            label="openai-agents: on_invoke_tool, sync tool, JSON",
            stmt="await ag_sync.on_invoke_tool(ag_ctx_sync, ag_args)",
            is_async=True,
            vs="adispatch_offload_json",
            check="(await ag_sync.on_invoke_tool(ag_ctx_sync, ag_args)) == 3",
            note="a sync tool runs via asyncio.to_thread: paired with toolguard's offload=True "
                 "(toolguard's default runs a sync tool inline, blocking the event loop)",
            does=does(AG_VALIDATES, "the failure_error_function (armed)", "nothing (DEBUG)",
                      AG_RETURNS + "; the call on a worker thread"),
        ),
        Bench(
            key="agents_hidden_failure",
            label="openai-agents: failing tool, default error message",
            stmt="await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)",
            is_async=True,
            vs="dispatch_hidden_failure",
            check="(await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)) == ag_fixed "
                  "and (await ag_logged_errors()) == 0",
            note="logs nothing by default: logger.debug, filtered at WARNING before a record "
                 "is built (toolguard builds its WARNING event with exc_info)",
            does=does(AG_VALIDATES, "caught, a fixed message sent",
                      "nothing (a DEBUG call, filtered)", "the fixed message"),
        ),
        Bench(
            key="agents_hidden_failure_logged",
            label="openai-agents: failing tool, tool-data logging on",
            stmt="await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)",
            is_async=True,
            vs="dispatch_hidden_failure",
            around="ag_tool_data_logged",
            check="(await ag_boom.on_invoke_tool(ag_ctx_boom, ag_args)) == ag_fixed "
                  "and (await ag_logged_errors()) == 1",
            note="OPENAI_AGENTS_DONT_LOG_TOOL_DATA=0: logger.error with the input JSON and "
                 "exc_info, a record built and dropped by the NullHandler",
            does=does(AG_VALIDATES, "caught, a fixed message sent",
                      "ERROR record with exc_info and the input (NullHandler)",
                      "the fixed message"),
        ),
        Bench(
            key="agents_validation_error",
            label="openai-agents: invalid arguments",
            stmt="await ag_async.on_invoke_tool(ag_ctx_bad, ag_bad)",
            is_async=True,
            vs="dispatch_validation_error",
            check="(await ag_async.on_invoke_tool(ag_ctx_bad, ag_bad)).startswith(ag_generic)",
            does=does(AG_VALIDATES, "caught, a fixed message sent", "nothing (DEBUG)",
                      "the fixed message"),
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
)  # fmt: skip


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


def _mcp_bench(
    key: str,
    label: str,
    params: str,
    vs: str,
    ok: bool,
    note: str = "",
    *,
    errors: str = "caught: CallToolResult(is_error=True)",
    logs: str = "nothing",
) -> Bench:
    return Bench(
        key=key,
        label=label,
        stmt=f"await mcp_handle(mcp_req, {params})",
        is_async=True,
        vs=vs,
        check=f"(await mcp_handle(mcp_req, {params})).is_error is {not ok}",
        note=note,
        does=does(
            "the tool's pydantic model (built at registration)",
            errors,
            logs,
            "CallToolResult (content blocks, structured content)",
        ),
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
        _mcp_bench("mcp_sync", "mcp: tools/call handler, sync tool", "mcp_add",
                   "adispatch_offload_dict", ok=True,
                   note="a sync tool runs via anyio.to_thread: paired with toolguard's "
                        "offload=True (toolguard's default runs a sync tool inline, blocking "
                        "the event loop)"),
        _mcp_bench("mcp_hidden_failure", "mcp: failing tool (unexpected exception)", "mcp_boom",
                   "dispatch_hidden_failure", ok=False, note="logger.exception to a NullHandler",
                   errors="caught, the exception's text sent",
                   logs="ERROR record with exc_info (NullHandler)"),
        _mcp_bench("mcp_tool_error", "mcp: ToolError", "mcp_refuse", "dispatch_tool_error",
                   ok=False, errors="caught, its message sent", logs="INFO (filtered)"),
        _mcp_bench("mcp_validation_error", "mcp: invalid arguments", "mcp_bad",
                   "dispatch_validation_error", ok=False,
                   errors="caught, the validation text sent", logs="INFO (filtered)"),
        _mcp_bench("mcp_unknown_tool", "mcp: unknown tool", "mcp_unknown",
                   "dispatch_unknown_tool", ok=False, errors="caught, 'Unknown tool' sent",
                   logs="INFO (filtered)"),
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


PA_VALIDATES = "the toolset's pydantic-core validator (built at registration)"
PA_RETURNS = "the function's value (the graph formats it later)"

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
            does=does(PA_VALIDATES, "ModelRetry armed", "nothing", PA_RETURNS),
        ),
        Bench(
            key="pydantic_ai_sync",
            label="pydantic-ai: handle_call, sync tool",
            stmt="await pa_call(pa_add)",
            is_async=True,
            vs="adispatch_offload_dict",
            check="(await pa_call(pa_add)) == 3",
            note="a sync tool runs on a worker thread: paired with toolguard's offload=True "
            "(toolguard's default runs a sync tool inline, blocking the event loop)",
            does=does(
                PA_VALIDATES,
                "ModelRetry armed",
                "nothing",
                PA_RETURNS + "; the call on a worker thread",
            ),
        ),
        Bench(
            key="pydantic_ai_hidden_failure",
            label="pydantic-ai: failing tool",
            vs="dispatch_hidden_failure",
            skip=(
                "no per-call equivalent: an exception other than ModelRetry is not handled "
                "per call, it propagates and ends the run"
            ),
            does=does(PA_VALIDATES, "not handled per call: it propagates", "nothing", "-"),
        ),
        Bench(
            key="pydantic_ai_model_retry",
            label="pydantic-ai: ModelRetry (model-visible)",
            stmt="await pa_retried(pa_refuse)",
            is_async=True,
            vs="dispatch_tool_error",
            check="(await pa_retried(pa_refuse)) is not None",
            does=does(
                PA_VALIDATES,
                "ModelRetry caught: a retry part for the model",
                "nothing",
                "RetryPromptPart",
            ),
        ),
        Bench(
            key="pydantic_ai_validation_error",
            label="pydantic-ai: invalid arguments (retry)",
            stmt="await pa_retried(pa_bad)",
            is_async=True,
            vs="dispatch_validation_error",
            check="(await pa_retried(pa_bad)) is not None",
            does=does(
                PA_VALIDATES, "ValidationError caught: a retry part", "nothing", "RetryPromptPart"
            ),
        ),
        Bench(
            key="pydantic_ai_unknown_tool",
            label="pydantic-ai: unknown tool (retry)",
            stmt="await pa_retried(pa_unknown)",
            is_async=True,
            vs="dispatch_unknown_tool",
            check="(await pa_retried(pa_unknown)) is not None",
            does=does("-", "unknown name caught: a retry part", "nothing", "RetryPromptPart"),
        ),
    ),
    setup=_pydantic_ai_setup,
)


def peer_suites() -> tuple[Suite, ...]:
    """Every peer, in table order, then the frameworks guarded in place (``_inplace``)."""
    from _inplace import inplace_suites

    return (LANGCHAIN, LANGGRAPH, AGENTS, MCP, PYDANTIC_AI, *inplace_suites())
