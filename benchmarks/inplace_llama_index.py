"""LlamaIndex's own tool call, unguarded and guarded by ``guard(tools, dispatcher)``.

The path timed is the agent's own ``_call_tool(ctx, tool, kwargs)`` (the step every
``FunctionAgent`` tool call goes through: it injects the ``Context`` into a tool that
takes it, awaits ``tool.acall`` and answers an exception with ``ToolOutput(str(e),
is_error=True)``), on a ``FunctionTool`` of an async function, with a live workflow
``Context``: guarded, the conversation is read from its store. The failure's
unguarded side is LlamaIndex's own answer (``str(e)``, nothing logged); guarded, one
hidden failure of the core (logged once through the benchmark's structlog pipeline).
"""

from __future__ import annotations

from typing import Any

from _peers import ARGS, Bench, Namespace, RunAsync, Suite, does


def _setup(run: RunAsync) -> Namespace:
    from llama_index.core.agent.workflow import FunctionAgent
    from llama_index.core.llms.mock import MockFunctionCallingLLM
    from llama_index.core.tools import FunctionTool
    from llama_index.core.workflow import Context

    from toolguard import Dispatcher
    from toolguard.integrations.llama_index import guard

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def crash(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")

    plain = [FunctionTool.from_defaults(async_fn=add), FunctionTool.from_defaults(async_fn=crash)]
    guarded = guard([*plain], Dispatcher([], external_tools=["add", "crash"]))
    agent = FunctionAgent(tools=[*plain], llm=MockFunctionCallingLLM())
    ctx = Context(agent)

    async def call_tool(tool: Any) -> Any:
        return await agent._call_tool(ctx, tool, ARGS)

    return {
        "li_call": call_tool,
        "li_add": plain[0],
        "li_crash": plain[1],
        "li_add_g": guarded[0],
        "li_crash_g": guarded[1],
    }


LI_VALIDATES = "nothing (LlamaIndex checks no argument)"

SUITE = Suite(
    group="inplace-llama-index",
    module="llama_index.core",
    versions=("llama-index-core",),
    description=(
        "FunctionAgent._call_tool(ctx, tool, kwargs) on a FunctionTool of an async "
        "function, a live workflow Context, in one running loop"
    ),
    benches=(
        Bench(
            key="inplace_llama_index_ok_unguarded",
            label="llama-index: tool call, success (unguarded)",
            stmt="await li_call(li_add)",
            is_async=True,
            check="(await li_call(li_add)).content == '3'",
            does=does(LI_VALIDATES, "str(e) armed", "nothing", "ToolOutput"),
        ),
        Bench(
            key="inplace_llama_index_ok_guarded",
            label="llama-index: tool call, success (guarded)",
            stmt="await li_call(li_add_g)",
            is_async=True,
            vs="inplace_llama_index_ok_unguarded",
            check="(await li_call(li_add_g)).content == '3'",
            does=does(
                "the tool's fn_schema",
                "the handler chain armed",
                "nothing",
                "the tool's own ToolOutput",
            ),
        ),
        Bench(
            key="inplace_llama_index_failure_unguarded",
            label="llama-index: tool call, failure (unguarded: str(e))",
            stmt="await li_call(li_crash)",
            is_async=True,
            check="(await li_call(li_crash)).is_error",
            does=does(LI_VALIDATES, "str(e) to the model", "nothing", "ToolOutput(is_error)"),
        ),
        Bench(
            key="inplace_llama_index_failure_guarded",
            label="llama-index: tool call, failure (guarded: hidden)",
            stmt="await li_call(li_crash_g)",
            is_async=True,
            vs="inplace_llama_index_failure_unguarded",
            check="'error id' in (await li_call(li_crash_g)).content",
            does=does(
                "the tool's fn_schema",
                "hidden: toolguard's message with an error id",
                "once (tool_error_hidden)",
                "ToolOutput(is_error)",
            ),
        ),
    ),
    setup=_setup,
)
