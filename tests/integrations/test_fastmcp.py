"""``toolguard.integrations.fastmcp.ToolguardMiddleware`` guarding an existing FastMCP app.

The app is written in FastMCP's own style (``@app.tool``, its ``Context``, a
resource, a prompt, a structured return, FastMCP's ``ToolError``); the guard is
the one ``app.add_middleware(...)`` line. Driven by FastMCP's own in-memory
``Client``. FastMCP sends ``Error calling tool 'x': {e}`` by default, secrets
included: under the guard it never does.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import fastmcp
import mcp.types as types
import pytest
from fastmcp import Context, FastMCP
from fastmcp.exceptions import ToolError as FastMCPToolError
from mcp.shared.exceptions import MCPDeprecationWarning
from pydantic import BaseModel

from tests.integrations import _mcp_tools as tools
from toolguard import Breaker, Dispatcher, ToolError, ToolPolicy, tool
from toolguard.integrations.fastmcp import ToolguardMiddleware
from toolguard.integrations.fastmcp._middleware import FASTMCP_LOGGER
from toolguard.integrations.mcp import META_ERROR_ID, META_RETURN_DIRECT

RUNS: dict[str, int] = {}


class Order(BaseModel):
    order_id: int
    status: str


@tool(on_error="Shipping is down (error {error_id}).", return_direct=True)
def ship(order_id: int) -> str:
    """Ship an order (a toolguard tool, registered with FastMCP's decorator)."""
    if order_id == 0:
        raise OSError(tools.SECRET)
    return f"shipped {order_id}"


def build(*, mask: bool = False) -> FastMCP[Any]:
    """The existing app, in FastMCP's style."""
    app: FastMCP[Any] = FastMCP("shop", mask_error_details=mask)

    @app.tool
    async def order_status(order_id: int, ctx: Context) -> Order:
        """Look an order up."""
        await ctx.report_progress(1, 2, "looking")
        with warnings.catch_warnings():  # the SDK deprecates logging (SEP-2577)
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.info(f"looking up {order_id}")
        await ctx.set_state("last_order", order_id)
        if order_id == 7:
            try:
                raise LookupError(tools.CAUSE_SECRET)
            except LookupError as error:
                raise ToolError("There is no order 7. Ask the user to check.") from error
        return Order(order_id=order_id, status="shipped")

    @app.tool
    def refund(order_id: int) -> str:
        """Refund an order (its backend fails)."""
        RUNS["refund"] = RUNS.get("refund", 0) + 1
        try:
            raise KeyError(tools.CAUSE_SECRET)
        except KeyError as error:
            raise ConnectionError(f"payments refused ({tools.SECRET})") from error

    @app.tool
    def cancel(order_id: int) -> str:
        """Cancel an order (FastMCP's own ToolError)."""
        raise FastMCPToolError("Order 42 has shipped; it cannot be cancelled.")

    @app.tool
    def quit_now() -> str:
        """A tool that calls sys.exit()."""
        raise SystemExit(tools.SECRET)

    app.tool(ship)

    @app.resource("shop://policy")
    def policy() -> str:
        """The refund policy."""
        return "Refunds within 30 days."

    @app.prompt
    def apology(name: str) -> str:
        """An apology to a customer."""
        return f"Dear {name}, we are sorry."

    return app


def guarded(
    dispatcher: Dispatcher | None = None, *, mask: bool = False, **options: Any
) -> FastMCP[Any]:
    app = build(mask=mask)
    app.add_middleware(ToolguardMiddleware(dispatcher or Dispatcher([ship]), **options))
    return app


def text_of(result: Any) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def hidden(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


async def call(app: FastMCP[Any], name: str, arguments: dict[str, Any]) -> Any:
    async with fastmcp.Client(app) as client:
        return await client.call_tool(name, arguments, raise_on_error=False)


async def test_fastmcp_sends_the_secret_by_default_and_not_under_the_guard() -> None:
    """The problem the middleware solves: ``Error calling tool 'refund': {e}``."""
    leaked = await call(build(), "refund", {"order_id": 1})
    safe = await call(guarded(), "refund", {"order_id": 1})
    assert tools.SECRET in text_of(leaked)
    assert tools.SECRET not in str(safe.content) + str(safe.meta)
    assert "error id" in text_of(safe)


async def test_context_progress_and_logging_reach_the_client_under_the_guard() -> None:
    logged: list[Any] = []
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_log(message: Any) -> None:
        logged.append(message.data)

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async with fastmcp.Client(guarded(), log_handler=on_log, progress_handler=on_progress) as c:
        result = await c.call_tool("order_status", {"order_id": 42})
    assert result.is_error is False
    assert progress == [(1, 2, "looking")]
    assert [entry["msg"] for entry in logged] == ["looking up 42"]


@pytest.mark.parametrize("mask", [False, True])
async def test_a_hidden_failure_is_logged_once_by_toolguard_not_again_by_fastmcp(
    mask: bool, logs: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    result = await call(guarded(mask=mask), "refund", {"order_id": 1})
    assert result.is_error is True
    for secret in (tools.SECRET, tools.CAUSE_SECRET, "ConnectionError"):
        assert secret not in text_of(result)
    (event,) = hidden(logs)
    assert result.meta[META_ERROR_ID] == event["error_id"]
    assert f"error id {event['error_id']}" in text_of(result)
    assert isinstance(event["exc_info"], ConnectionError)
    assert not [r for r in caplog.records if "Error calling tool" in r.getMessage()]


class _Kept(logging.Handler):
    """Every record a logger handles (FastMCP's may not propagate to the root)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


async def test_fastmcps_own_line_stays_where_toolguard_logs_nothing(
    logs: list[dict[str, Any]],
) -> None:
    """What FastMCP logs of its own ToolError, an unknown tool and rejected arguments
    stays as unguarded: toolguard answers them and logs nothing."""
    logger = logging.getLogger(FASTMCP_LOGGER)
    kept, level = _Kept(), logger.level
    logger.addHandler(kept)
    logger.setLevel(logging.INFO)

    async def run(app: FastMCP[Any]) -> list[tuple[str, str]]:
        kept.records.clear()
        for name, arguments in (
            ("cancel", {"order_id": 42}),
            ("nope", {}),
            ("refund", {"order_id": "x"}),
        ):
            await call(app, name, arguments)
        return [(record.levelname, record.getMessage()) for record in kept.records]

    try:
        plain = await run(build())
        guarded_lines = await run(guarded())
    finally:
        logger.removeHandler(kept)
        logger.setLevel(level)
    assert plain  # FastMCP logs these (else this test guards nothing)
    assert guarded_lines == plain
    assert not hidden(logs)


async def test_an_unknown_tool_leaves_fastmcps_trace_as_unguarded() -> None:
    """toolguard lists the tools for its unknown-tool answer without a span of
    FastMCP's: over the protocol a ``tools/list`` span took the call's place."""
    from tests._otel import install

    spans, _ = install()

    async def traced(app: FastMCP[Any]) -> list[tuple[str, str]]:
        spans.clear()
        await call(app, "nope", {})
        return [
            (span.name, span.status.status_code.name)
            for span in spans.get_finished_spans()
            if "fastmcp.server.name" in (span.attributes or {})
        ]

    plain = await traced(build())
    assert plain  # FastMCP traces the call (else this test guards nothing)
    assert await traced(guarded()) == plain


@pytest.mark.parametrize("mask", [False, True])
async def test_toolguards_tool_error_stays_visible_under_mask_error_details(
    mask: bool, logs: list[dict[str, Any]]
) -> None:
    result = await call(guarded(mask=mask), "order_status", {"order_id": 7})
    assert (result.is_error, text_of(result)) == (
        True,
        "There is no order 7. Ask the user to check.",
    )
    (event,) = hidden(logs)
    assert tools.CAUSE_SECRET in str(event["exc_info"].__cause__)


async def test_fastmcps_own_tool_error_is_visible_by_default_and_can_be_hidden() -> None:
    visible = await call(guarded(), "cancel", {"order_id": 42})
    withheld = await call(guarded(framework_errors_visible=False), "cancel", {"order_id": 42})
    assert text_of(visible) == "Order 42 has shipped; it cannot be cancelled."
    assert "shipped" not in text_of(withheld)
    assert "error id" in text_of(withheld)


async def test_invalid_arguments_and_unknown_tools_are_bounded() -> None:
    invalid = await call(guarded(), "refund", {"order_id": "x" + tools.SECRET * 10_000})
    unknown = await call(guarded(), "n\x1bope" * 10_000, {})
    assert text_of(invalid).startswith("Invalid arguments for tool 'refund':")
    assert tools.SECRET * 3 not in text_of(invalid)  # the model's own value: an excerpt
    assert "There is no tool named" in text_of(unknown)
    assert "\x1b" not in text_of(unknown)
    assert max(len(text_of(invalid)), len(text_of(unknown))) < 500


async def test_overrides_by_name_and_a_toolguard_tools_own_policy_apply() -> None:
    dispatcher = Dispatcher(
        [ship],
        external_tools=["refund"],
        overrides={"refund": ToolPolicy(on_error="Refunds are paused (ref {error_id}).")},
    )
    app = guarded(dispatcher)
    async with fastmcp.Client(app) as client:
        refund = await client.call_tool("refund", {"order_id": 1}, raise_on_error=False)
        ok = await client.call_tool("ship", {"order_id": 3})
        failed = await client.call_tool("ship", {"order_id": 0}, raise_on_error=False)
    assert text_of(refund) == f"Refunds are paused (ref {refund.meta[META_ERROR_ID]})."
    assert (text_of(ok), ok.meta[META_RETURN_DIRECT]) == ("shipped 3", True)
    assert text_of(failed) == f"Shipping is down (error {failed.meta[META_ERROR_ID]})."
    assert META_RETURN_DIRECT not in failed.meta


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("legacy", {}),  # FastMCP's session id: stable for the whole MCP session
        ("auto", {"session_id": lambda ctx: "customer-1"}),  # 2026-07-28: the app names it
    ],
)
async def test_a_breaker_spans_the_conversation(mode: str, options: dict[str, Any]) -> None:
    """On a handshake-era connection FastMCP's session id is the conversation; on a
    2026-07-28 connection every request is its own, so the app names it."""
    dispatcher = Dispatcher([ship], breaker=Breaker(failures=2, cooldown=60))
    RUNS["refund"] = 0
    async with fastmcp.Client(guarded(dispatcher, **options), mode=mode) as client:
        answers = [
            await client.call_tool("refund", {"order_id": 1}, raise_on_error=False)
            for _ in range(4)
        ]
    assert RUNS["refund"] == 2
    assert "unavailable" in text_of(answers[3])


async def test_a_base_exception_from_a_tool_is_answered_and_the_app_goes_on(
    logs: list[dict[str, Any]],
) -> None:
    async with fastmcp.Client(guarded()) as client:
        with pytest.raises(Exception) as raised:
            await client.call_tool("quit_now", {})
        after = await client.call_tool("ship", {"order_id": 5})
    assert tools.SECRET not in str(raised.value)
    (event,) = [e for e in logs if e["event"] == "mcp_call_aborted"]
    assert event["error_id"] in str(raised.value)
    assert text_of(after) == "shipped 5"
