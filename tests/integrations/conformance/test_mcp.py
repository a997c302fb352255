"""Conformance driver: the MCP SDK's ``MCPServer``, guarded in place by its one line.

Every scenario of the table (``_table.SCENARIOS``) and the SDK's own below is played
twice through the SDK's in-process client (``mcp.Client(server)``): on an ``MCPServer``
built in the SDK's style, and on the same server with
``middleware=[ToolguardMiddleware(dispatcher)]``; the two runs must be identical except
the answers the scenario means to change (``_table.conforms``).

toolguard's own server (``mcp_server``) is compared with the SDK's native one in
``tests/integrations/test_mcp_server_ways.py``.
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable
from typing import Any, cast

import anyio
import mcp.types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from pydantic import BaseModel
from structlog.testing import capture_logs

from toolguard import Breaker, Dispatcher
from toolguard.integrations.mcp import META_RETURN_DIRECT, ToolguardMiddleware

from ._table import (
    SCENARIOS,
    Counter,
    Observation,
    Scenario,
    answered_bad_arguments,
    answered_hidden,
    answered_unknown,
    answered_visible,
    conforms,
)

NOT_APPLICABLE: dict[str, str] = {}  # every scenario of the table is played


# --- the SDK's own tools for its scenarios ------------------------------------------------


def locked(order: int) -> types.CallToolResult:
    """The tool tells the model about a problem itself (the MCP way)."""
    return types.CallToolResult(
        content=[types.TextContent(text=f"Order {order} is locked; try tomorrow.")],
        is_error=True,
        _meta={"app/reason": "locked"},
    )


async def slow(seconds: float) -> str:
    """Sleep; the client gives up first."""
    await asyncio.sleep(seconds)
    return "done"


class Quote(BaseModel):
    sku: str
    price: float


async def quote(sku: str, ctx: Context) -> Quote:
    """A structured result with an outputSchema, reporting progress on the way."""
    await ctx.report_progress(1, 1, "pricing")
    return Quote(sku=sku, price=2.5)


def counted(function: Callable[..., Any], runs: dict[str, int]) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(function):

        @functools.wraps(function)
        async def run_async(*args: Any, **kwargs: Any) -> Any:
            runs[function.__name__] = runs.get(function.__name__, 0) + 1
            return await function(*args, **kwargs)

        return run_async

    @functools.wraps(function)
    def run(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    return run


def build(
    scenario: Scenario, guarded: bool, runs: dict[str, int], counter: Counter, **options: Any
) -> MCPServer[Any]:
    dispatcher = Dispatcher([], **options)
    middleware = [ToolguardMiddleware(dispatcher)] if guarded else None
    server: MCPServer[Any] = MCPServer("conformance", middleware=middleware)
    for function in scenario.tools:
        server.tool()(counted(function, runs))
    if scenario.name == "state":
        server.add_tool(counter.bump, name="bump")

    @server.resource("shop://policy")
    def policy() -> str:
        return "Refunds within 30 days."

    @server.prompt()
    def apology(name: str) -> str:
        return f"Dear {name}, we are sorry."

    return server


def shape(result: types.CallToolResult) -> Any:
    """The SDK's view of a result, its text aside."""
    return result.model_dump(by_alias=True, exclude={"content"})


async def play(scenario: Scenario, guarded: bool, **options: Any) -> Observation:
    runs: dict[str, int] = {}
    counter = Counter()
    seen = Observation(runs=runs)
    async with Client(build(scenario, guarded, runs, counter, **options)) as client:
        try:
            if scenario.name == "parallel":
                results = await asyncio.gather(
                    *(client.call_tool(name, args) for name, args in scenario.calls)
                )
            else:
                results = [await client.call_tool(name, args) for name, args in scenario.calls]
        except Exception as error:
            seen.raised = type(error).__name__
            results = []
        seen.final = {
            "tools": [t.model_dump() for t in (await client.list_tools()).tools],
            "resource": (await client.read_resource("shop://policy")).model_dump(exclude={"meta"}),
            "prompt": (await client.get_prompt("apology", {"name": "Ann"})).model_dump(
                exclude={"meta"}
            ),
        }
    for result in results:
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        seen.model_saw.append(("\n".join(texts), bool(result.is_error)))
    seen.shape = [shape(result) for result in results]
    seen.state = counter.calls
    return seen


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_the_table(scenario: Scenario) -> None:
    unguarded = await play(scenario, guarded=False)
    with capture_logs() as logs:
        guarded = await play(scenario, guarded=True)
    conforms(scenario, unguarded, guarded)
    if scenario.name == "hidden_failure":
        answered_hidden(guarded, [dict(event) for event in logs])
    elif scenario.name == "visible_failure":
        answered_visible(guarded)
    elif scenario.name == "bad_arguments":
        answered_bad_arguments(guarded)
    elif scenario.name == "unknown_tool":
        answered_unknown(guarded, ["lookup"])
    else:
        assert not [e for e in logs if e["event"] == "tool_error_hidden"]


# --- the SDK's own scenarios --------------------------------------------------------------

OWN_ERROR = Scenario(
    "own_error_result",
    (locked,),
    (("locked", {"order": 7}), ("locked", {"order": 8})),
    about="a CallToolResult(isError=True) the tool returned is the tool's answer: kept, "
    "not logged, not a breaker's failure (issue 27: it became 'internal error')",
)


async def test_the_tools_own_error_result_is_kept_unlogged_and_uncounted() -> None:
    unguarded = await play(OWN_ERROR, guarded=False)
    with capture_logs() as logs:
        guarded = await play(OWN_ERROR, guarded=True, breaker=Breaker(failures=1))
    conforms(OWN_ERROR, unguarded, guarded)
    assert guarded.model_saw[0] == ("Order 7 is locked; try tomorrow.", True)
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


STRUCTURED = Scenario(
    "structured",
    (quote,),
    (("quote", {"sku": "A-1"}),),
    about="structured output, outputSchema, the request's Context: the SDK's own",
)


async def test_structured_output_and_context_are_the_sdks_own() -> None:
    unguarded = await play(STRUCTURED, guarded=False)
    guarded = await play(STRUCTURED, guarded=True)
    conforms(STRUCTURED, unguarded, guarded)
    (result,) = cast("list[dict[str, Any]]", guarded.shape)
    assert result["structuredContent"] == {"sku": "A-1", "price": 2.5}


async def test_return_direct_is_the_one_thing_added_to_a_success() -> None:
    from toolguard import ToolPolicy

    scenario = Scenario("success", (STRUCTURED.tools), STRUCTURED.calls)
    plain = await play(scenario, guarded=False)
    stops = await play(
        scenario,
        guarded=True,
        external_tools=["quote"],
        overrides={"quote": ToolPolicy(return_direct=True)},
    )
    (stopped,), (kept,) = (
        cast("list[dict[str, Any]]", stops.shape),
        cast("list[dict[str, Any]]", plain.shape),
    )
    assert stopped.pop("_meta") == {**(kept.pop("_meta") or {}), META_RETURN_DIRECT: True}
    assert stopped == kept


async def cancelled_call(guarded: bool) -> tuple[str | None, int]:
    """A call the client cancels with an anyio cancel scope (in process)."""
    runs: dict[str, int] = {}
    scenario = Scenario("cancelled", (slow,), ())
    raised: str | None = None
    async with Client(build(scenario, guarded, runs, Counter())) as client:
        try:
            with anyio.move_on_after(0.2):
                await client.call_tool("slow", {"seconds": 5})
        except Exception as error:
            raised = type(error).__name__
    return raised, runs["slow"]


async def test_a_call_cancelled_by_an_anyio_cancel_scope_stays_cancelled() -> None:
    """issue 27: guarded, the caller got MCPError(-32603) instead of its cancellation."""
    assert await cancelled_call(guarded=True) == await cancelled_call(guarded=False)
    assert await cancelled_call(guarded=True) == (None, 1)


def test_every_scenario_is_played_or_said_why_not() -> None:
    assert NOT_APPLICABLE == {}
    assert json.dumps([s.name for s in SCENARIOS])
