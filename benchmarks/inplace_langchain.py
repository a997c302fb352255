"""In-place rows: LangGraph's ``ToolNode`` (the tools node of ``create_agent``),
unguarded and with ``ToolguardMiddleware``'s wrappers.

One tool call through ``ToolNode`` (the state's last ``AIMessage``, a ``ToolRuntime``,
the tool's own ``invoke``, the ``ToolMessage``), with and without
``wrap_tool_call=guard.wrap_tool_call, awrap_tool_call=guard.awrap_tool_call``, the
wrappers ``create_agent`` gives its ``ToolNode`` for ``middleware=[guard]`` (there
behind LangSmith's ``traceable``, which any middleware pays and these rows leave
out). The success rows run an async tool on the async path and a sync tool on the
sync path (``ToolNode`` runs it on a thread pool of its own, made per call). The
failure's unguarded side is LangGraph's own error path, ``handle_tool_errors=True``
(the exception's repr sent; by default ``ToolNode`` raises, which is no answer);
guarded, toolguard's hidden failure (the cause logged once through structlog, here to
a no-op logger). Outside a graph ``ToolNode`` needs the runtime a graph would put in
its config: a default ``Runtime()``, as the LangGraph rows of ``_peers.py`` do.
"""

from __future__ import annotations

from typing import Any

from _peers import ARGS, Bench, RunAsync, Suite, does


def _setup(run: RunAsync) -> dict[str, Any]:
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool as lc_tool
    from langgraph.prebuilt import ToolNode
    from langgraph.runtime import Runtime

    from toolguard import Dispatcher
    from toolguard.integrations.langchain import ToolguardMiddleware

    try:  # the key a graph stores its runtime under (what langgraph.config reads)
        from langgraph._internal._constants import CONFIG_KEY_RUNTIME
    except ImportError:  # pragma: no cover - moved
        CONFIG_KEY_RUNTIME = "__pregel_runtime"

    @lc_tool
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @lc_tool
    def add_sync(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @lc_tool
    async def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    def state(name: str) -> dict[str, Any]:
        call = {"name": name, "args": ARGS, "id": "call-1", "type": "tool_call"}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    tools = [add, add_sync, boom]
    guard = ToolguardMiddleware(Dispatcher([], external_tools=[t.name for t in tools]))
    wrappers = {"wrap_tool_call": guard.wrap_tool_call, "awrap_tool_call": guard.awrap_tool_call}
    plain = ToolNode(tools)
    config = {"configurable": {CONFIG_KEY_RUNTIME: Runtime()}}
    failing = state("boom")

    async def raising() -> str:
        """ToolNode's default for a tool's exception: it escapes the node."""
        try:
            await plain.ainvoke(failing, config)
        except ValueError as error:
            return str(error)
        return "answered"

    return {
        "lci_plain": plain,
        "lci_raising": raising,
        "lci_handled": ToolNode(tools, handle_tool_errors=True),
        "lci_guarded": ToolNode(tools, **wrappers),
        "lci_config": config,
        "lci_add": state("add"),
        "lci_add_sync": state("add_sync"),
        "lci_boom": failing,
    }


def _bench(key: str, node: str, state: str, vs: str | None, *, sync: bool = False) -> Bench:
    guarded = node == "lci_guarded"
    ok = state != "lci_boom"
    method = "invoke" if sync else "ainvoke"
    call = f"{node}.{method}({state}, lci_config)"
    stmt = call if sync else f"await {call}"
    expr = call if sync else f"(await {call})"
    if ok:
        errors = "none armed" if not guarded else "toolguard's pipeline (unused)"
    else:
        errors = "toolguard's answer" if guarded else "handle_tool_errors=True: repr sent"
    return Bench(
        key=key,
        label=(
            f"langchain in place: ToolNode.{method}, {'add' if ok else 'a failure'}, "
            f"{'guarded' if guarded else 'unguarded'}"
        ),
        stmt=stmt,
        is_async=not sync,
        vs=vs,
        check=f"{expr}['messages'][0].status == {'success' if ok else 'error'!r}",
        does=does(
            "the tool's pydantic args model (langchain's StructuredTool)",
            errors,
            "structlog, once" if guarded and not ok else "callbacks, no handler configured",
            "ToolMessage",
        ),
    )


SUITE = Suite(
    group="inplace langchain",
    module="langgraph.prebuilt",
    versions=("langchain-core", "langgraph", "langgraph-prebuilt"),
    description="LangGraph's ToolNode, without and with ToolguardMiddleware's wrappers",
    benches=(
        _bench("inplace_langchain_ok_unguarded", "lci_plain", "lci_add", None),
        _bench(
            "inplace_langchain_ok_guarded",
            "lci_guarded",
            "lci_add",
            "inplace_langchain_ok_unguarded",
        ),
        _bench("inplace_langchain_ok_sync_unguarded", "lci_plain", "lci_add_sync", None, sync=True),
        _bench(
            "inplace_langchain_ok_sync_guarded",
            "lci_guarded",
            "lci_add_sync",
            "inplace_langchain_ok_sync_unguarded",
            sync=True,
        ),
        Bench(
            key="inplace_langchain_fail_raises",
            label="langchain in place: ToolNode.ainvoke, a failure, unguarded (default: raises)",
            stmt="await lci_raising()",
            is_async=True,
            check="(await lci_raising()) == 'database down'",
            does=does(
                "the tool's pydantic args model (langchain's StructuredTool)",
                "ToolNode's default handler: the exception escapes the node",
                "callbacks, no handler configured",
                "nothing (the run fails)",
            ),
        ),
        _bench("inplace_langchain_fail_unguarded", "lci_handled", "lci_boom", None),
        _bench(
            "inplace_langchain_fail_guarded",
            "lci_guarded",
            "lci_boom",
            "inplace_langchain_fail_unguarded",
        ),
    ),
    setup=_setup,
)
