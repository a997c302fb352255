"""Conformance driver: a FastMCP app, guarded in place by its one line.

Every scenario of the table (``_table.SCENARIOS``) and FastMCP's own below is played
twice through FastMCP's in-memory ``Client(app)``: on an app built in FastMCP's style,
and on the same app after ``app.add_middleware(ToolguardMiddleware(dispatcher))``;
the two runs must be identical except the answers the scenario means to change
(``_table.conforms``). In process (``await app.call_tool(...)``), a failure is raised
as FastMCP raises it, with toolguard's text.

toolguard's own server (``mcp_server``) is compared with FastMCP's native way in
``tests/integrations/test_fastmcp_server_ways.py``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from typing import Any

import fastmcp
import mcp.types as types
import pydantic
import pytest
from fastmcp import Context, FastMCP
from fastmcp.server.middleware.rate_limiting import RateLimitingMiddleware
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.fastmcp import ToolguardMiddleware

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
    crash,
    lookup,
)

NOT_APPLICABLE: dict[str, str] = {}  # every scenario of the table is played


class Internal(pydantic.BaseModel):
    ledger_row_id: int


def parse_upstream(order: int) -> str:
    """A pydantic ValidationError raised in the body (upstream data), not the model's."""
    Internal.model_validate({"ledger_row_id": "corrupt"})
    return "unreachable"


async def noted(note: str, ctx: Context) -> str:
    """FastMCP's Context: session state and progress."""
    await ctx.set_state("note", note)
    await ctx.report_progress(1, 1)
    return f"kept {await ctx.get_state('note')}"


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
    scenario: Scenario,
    guarded: bool,
    runs: dict[str, int],
    counter: Counter,
    *,
    mask: bool = False,
    middleware: tuple[Any, ...] = (),
) -> FastMCP[Any]:
    app: FastMCP[Any] = FastMCP("conformance", mask_error_details=mask)
    for function in scenario.tools:
        app.tool(counted(function, runs))
    if scenario.name == "state":
        app.tool(counter.bump, name="bump")

    @app.resource("shop://policy")
    def policy() -> str:
        return "Refunds within 30 days."

    @app.prompt
    def apology(name: str) -> str:
        return f"Dear {name}, we are sorry."

    if guarded:
        app.add_middleware(ToolguardMiddleware(Dispatcher([])))  # the one line
    for other in middleware:
        app.add_middleware(other)
    return app


async def play(scenario: Scenario, guarded: bool, **options: Any) -> Observation:
    runs: dict[str, int] = {}
    counter = Counter()
    seen = Observation(runs=runs)
    results: list[Any] = []
    async with fastmcp.Client(build(scenario, guarded, runs, counter, **options)) as client:
        try:
            if scenario.name == "parallel":
                results = await asyncio.gather(
                    *(
                        client.call_tool(name, args, raise_on_error=False)
                        for name, args in scenario.calls
                    )
                )
            else:
                for name, args in scenario.calls:
                    results.append(await client.call_tool(name, args, raise_on_error=False))
        except Exception as error:
            seen.raised = type(error).__name__
        try:
            seen.final = (
                [t.model_dump() for t in await client.list_tools()],
                [r.model_dump() for r in await client.read_resource("shop://policy")],
                [
                    m.model_dump()
                    for m in (await client.get_prompt("apology", {"name": "A"})).messages
                ],
            )
        except Exception as error:
            seen.final = type(error).__name__
    for result in results:
        texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
        seen.model_saw.append(("\n".join(texts), bool(result.is_error)))
    seen.shape = [(r.structured_content, r.data, r.meta) for r in results]
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


# --- FastMCP's own scenarios ------------------------------------------------------------

BODY_VALIDATION = Scenario(
    "body_validation_error",
    (parse_upstream,),
    (("parse_upstream", {"order": 1}),),
    changes=frozenset({"model_saw", "shape", "raised"}),
    about="a pydantic ValidationError in the body is the tool's failure, not the model's "
    "arguments (issue 27: told as invalid arguments, internal fields named; FastMCP 4.0 "
    "answers it as a protocol error, so the client raises, later 4.x as an error result)",
)


@pytest.mark.parametrize("mask", [True, False])
async def test_a_validation_error_in_the_body_is_a_hidden_failure(mask: bool) -> None:
    unguarded = await play(BODY_VALIDATION, guarded=False, mask=mask)
    with capture_logs() as logs:
        guarded = await play(BODY_VALIDATION, guarded=True, mask=mask)
    conforms(BODY_VALIDATION, unguarded, guarded)
    assert guarded.raised is None  # answered as the tool's failure, whatever the version
    (hidden,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    text, is_error = guarded.model_saw[0]
    assert is_error and hidden["error_id"] in text
    assert "ledger_row_id" not in text and "Invalid arguments" not in text


RATE_LIMITED = Scenario(
    "rate_limited",
    (lookup,),
    (("lookup", {"query": "a"}), ("lookup", {"query": "b"})),
    about="another middleware's rate-limit error passes as FastMCP answers it "
    "(issue 27: answered as a hidden tool crash)",
)


async def test_another_middlewares_rate_limit_passes_untouched() -> None:
    def limiter() -> RateLimitingMiddleware:
        return RateLimitingMiddleware(max_requests_per_second=0.001, burst_capacity=1)

    unguarded = await play(RATE_LIMITED, guarded=False, middleware=(limiter(),))
    with capture_logs() as logs:
        guarded = await play(RATE_LIMITED, guarded=True, middleware=(limiter(),))
    conforms(RATE_LIMITED, unguarded, guarded)
    assert unguarded.raised is not None  # the limit was hit: FastMCP's own answer
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


CONTEXT = Scenario(
    "context",
    (noted,),
    (("noted", {"note": "blue"}),),
    about="FastMCP's Context (state, progress) and structured output: FastMCP's own",
)


async def test_fastmcps_context_is_its_own() -> None:
    conforms(CONTEXT, await play(CONTEXT, guarded=False), await play(CONTEXT, guarded=True))


async def in_process(guarded: bool, name: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """``await app.call_tool(...)``, no MCP request: what is raised, and its text."""
    scenario = Scenario("in_process", (crash, lookup), ())
    app = build(scenario, guarded, {}, Counter())
    try:
        await app.call_tool(name, arguments)
    except Exception as error:
        return type(error).__name__, str(error)
    return "nothing", ""


@pytest.mark.parametrize(
    ("name", "arguments"),
    [("crash", {"query": "x"}), ("lookpu", {}), ("lookup", {"query": ["not", "text"]})],
    ids=["hidden_failure", "unknown_tool", "bad_arguments"],
)
async def test_in_process_failures_are_raised_as_fastmcp_raises_them(
    name: str, arguments: dict[str, Any]
) -> None:
    """issue 27: guarded, ``await app.call_tool()`` returned an error result instead."""
    raised, _ = await in_process(False, name, arguments)
    guarded_raised, text = await in_process(True, name, arguments)
    assert guarded_raised == raised
    assert "hunter2" not in text
