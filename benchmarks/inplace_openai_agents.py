"""In-place rows: the Agents SDK's own function tool, unguarded and with its one line.

What the SDK's runner does per function-tool call (agents/run_internal/tool_execution.py):
await ``tool.on_invoke_tool(ToolContext, json)`` (parse and validate the JSON with the
tool's pydantic model, run the function, on failure ask the tool's
``failure_error_function``), then call the tool's ``custom_data_extractor`` on a
``FunctionToolCustomDataContext`` (built whether or not there is one). Timed on the
SDK's own ``@function_tool``, with and without ``guard([tool], Dispatcher([]))``;
``guard`` adds an extractor, so both sides build the context and call the extractor
where there is one, as the runner does. The ``ToolContext`` is built once, as in
``_peers`` (the runner's envelope, not the guard's cost). No trace is active.

The failure's unguarded side is the SDK's own error handling: the default
``failure_error_function``'s fixed message and its report (a DEBUG log, filtered);
guarded, toolguard's hidden failure (the cause logged once through structlog, here to
a no-op logger) plus the same SDK report.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from _peers import ARGS_JSON, Bench, RunAsync, Suite, does


def _setup(run: RunAsync) -> dict[str, Any]:
    import structlog
    from agents import FunctionToolCustomDataContext, function_tool
    from agents.tool_context import ToolContext

    from toolguard import Dispatcher
    from toolguard.integrations.openai_agents import guard

    logging.getLogger("openai.agents").addHandler(logging.NullHandler())
    structlog.configure(logger_factory=structlog.ReturnLoggerFactory())

    def tools() -> list[Any]:
        @function_tool
        async def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @function_tool
        async def boom(a: int, b: int) -> int:
            """Add two integers (fails)."""
            raise ValueError("database down")

        return [add, boom]

    plain_add, plain_boom = tools()
    guarded_add, guarded_boom = guard(tools(), Dispatcher([]))

    def context(name: str) -> Any:
        return ToolContext(
            context=None, tool_name=name, tool_call_id="call-1", tool_arguments=ARGS_JSON
        )

    async def call(tool: Any, ctx: Any) -> Any:
        """One call as the runner makes it: the invocation, then the tool's extractor."""
        output = await tool.on_invoke_tool(ctx, ARGS_JSON)
        data = FunctionToolCustomDataContext(
            tool_context=ctx, tool=tool, output=output, raw_item={}
        )
        extractor = tool.custom_data_extractor
        if extractor is not None:
            extracted = extractor(data)
            if inspect.isawaitable(extracted):
                await extracted
        return output

    return {
        "ag_call": call,
        "ag_plain_add": plain_add,
        "ag_plain_boom": plain_boom,
        "ag_guarded_add": guarded_add,
        "ag_guarded_boom": guarded_boom,
        "ag_ctx_add": context("add"),
        "ag_ctx_boom": context("boom"),
        "ag_sdk_default": "An error occurred while running the tool. Please try again.",
    }


def _bench(key: str, tool: str, vs: str | None) -> Bench:
    guarded = "guarded" in tool
    ok = tool.endswith("add")
    ctx = "ag_ctx_add" if ok else "ag_ctx_boom"
    check = (
        f"(await ag_call({tool}, {ctx})) == 3"
        if ok
        else f"(await ag_call({tool}, {ctx})).startswith("
        + ("\"The tool 'boom' failed\"" if guarded else "ag_sdk_default")
        + ")"
    )
    return Bench(
        key=key,
        label=(
            f"openai-agents in place: {'add' if ok else 'boom'}, "
            f"{'guarded' if guarded else 'unguarded'}"
        ),
        stmt=f"await ag_call({tool}, {ctx})",
        is_async=True,
        vs=vs,
        check=check,
        does=does(
            "json + the tool's pydantic model (the SDK's)",
            "-"
            if ok
            else ("toolguard's answer" if guarded else "the SDK's default failure_error_function"),
            "-" if ok else ("structlog, once; the SDK's DEBUG report" if guarded else "DEBUG"),
            "the value" if ok else "text",
        ),
    )


SUITE = Suite(
    group="inplace openai-agents",
    module="agents",
    versions=("openai-agents",),
    description=(
        "FunctionTool.on_invoke_tool + its custom_data_extractor, as the runner calls them, "
        "without and with guard([tool], Dispatcher([]))"
    ),
    benches=(
        _bench("inplace_openai_agents_ok_unguarded", "ag_plain_add", None),
        _bench(
            "inplace_openai_agents_ok_guarded",
            "ag_guarded_add",
            "inplace_openai_agents_ok_unguarded",
        ),
        _bench("inplace_openai_agents_fail_unguarded", "ag_plain_boom", None),
        _bench(
            "inplace_openai_agents_fail_guarded",
            "ag_guarded_boom",
            "inplace_openai_agents_fail_unguarded",
        ),
    ),
    setup=_setup,
)
