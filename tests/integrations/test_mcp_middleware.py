"""``toolguard.integrations.mcp.ToolguardMiddleware`` guarding an existing ``MCPServer``.

The app below is written in the SDK's own style (``@server.tool()``, its
``Context``, a resource, a prompt, a structured return with an ``outputSchema``,
the SDK's own ``ToolError``); the guard is the one ``middleware=[...]`` line. Driven
by the SDK's own in-process client (``mcp.Client(server)``), in both connection
modes where the behaviour does not depend on a lasting connection.
"""

from __future__ import annotations

import logging
import warnings
from typing import Any

import mcp.types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ToolError as SdkToolError
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel

from tests.integrations import _mcp_tools as tools
from toolguard import Breaker, Dispatcher, ToolError, ToolPolicy, tool
from toolguard.integrations.mcp import META_ERROR_ID, META_RETURN_DIRECT, ToolguardMiddleware

RUNS: dict[str, int] = {}


class Order(BaseModel):
    order_id: int
    status: str


class Confirm(BaseModel):
    sure: bool


@tool(on_error="Shipping is down (error {error_id}).", return_direct=True)
def ship(order_id: int) -> str:
    """Ship an order (a toolguard tool, registered with the SDK's decorator)."""
    if order_id == 0:
        raise OSError(tools.SECRET)
    return f"shipped {order_id}"


def build(middleware: list[Any] | None) -> MCPServer[Any]:
    """The existing app: the SDK's own style throughout."""
    server: MCPServer[Any] = MCPServer("shop", middleware=middleware)

    @server.tool()
    async def order_status(order_id: int, ctx: Context) -> Order:
        """Look an order up."""
        await ctx.report_progress(1, 2, "looking")
        with warnings.catch_warnings():  # the SDK deprecates logging (SEP-2577)
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await ctx.info(f"looking up {order_id}")
        if order_id == 7:
            try:
                raise LookupError(tools.CAUSE_SECRET)
            except LookupError as error:
                raise ToolError("There is no order 7. Ask the user to check.") from error
        return Order(order_id=order_id, status="shipped")

    @server.tool()
    def refund(order_id: int) -> str:
        """Refund an order (its backend fails)."""
        RUNS["refund"] = RUNS.get("refund", 0) + 1
        try:
            raise KeyError(tools.CAUSE_SECRET)
        except KeyError as error:
            raise ConnectionError(f"payments refused ({tools.SECRET})") from error

    @server.tool()
    def cancel(order_id: int) -> str:
        """Cancel an order (the SDK's own ToolError)."""
        raise SdkToolError("Order 42 has shipped; it cannot be cancelled.")

    @server.tool()
    async def confirm(ctx: Context) -> str:
        """Ask the user to confirm (elicitation)."""
        answer = await ctx.elicit("Sure?", Confirm)
        return f"confirmed={answer.action == 'accept' and answer.data.sure}"

    @server.tool()
    def quit_now() -> str:
        """A tool that calls sys.exit()."""
        raise SystemExit(tools.SECRET)

    server.add_tool(ship)

    @server.resource("shop://policy")
    def policy() -> str:
        """The refund policy."""
        return "Refunds within 30 days."

    @server.prompt()
    def apology(name: str) -> str:
        """An apology to a customer."""
        return f"Dear {name}, we are sorry."

    return server


def guarded(dispatcher: Dispatcher | None = None, **options: Any) -> MCPServer[Any]:
    dispatcher = dispatcher or Dispatcher([ship])
    return build([ToolguardMiddleware(dispatcher, **options)])


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def hidden(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


async def test_context_logging_and_progress_reach_the_client_under_the_guard() -> None:
    logged: list[Any] = []
    reported: list[tuple[float, float | None, str | None]] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params.data)

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        reported.append((progress, total, message))

    async with Client(guarded(), mode="legacy", logging_callback=on_log) as client:
        result = await client.call_tool(
            "order_status", {"order_id": 42}, progress_callback=on_progress
        )
    assert result.is_error is False
    assert logged == ["looking up 42"]
    assert reported == [(1, 2, "looking")]


async def test_elicitation_through_context_works_under_the_guard() -> None:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        return types.ElicitResult(action="accept", content={"sure": True})

    async with Client(guarded(), mode="legacy", elicitation_callback=elicit) as client:
        result = await client.call_tool("confirm", {})
    assert (result.is_error, text_of(result)) == (False, "confirmed=True")


async def test_a_hidden_failure_sends_the_error_id_and_is_logged_once(
    mode: str, logs: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK would send ``Error executing tool refund`` and log the traceback; under
    the guard the client gets toolguard's message, the cause is logged once, by
    toolguard, under the id the client saw, and the SDK's traceback record is gone."""
    caplog.set_level(logging.DEBUG)
    async with Client(guarded(), mode=mode) as client:
        result = await client.call_tool("refund", {"order_id": 1})
    assert result.is_error is True
    sent = result.model_dump_json(by_alias=True)
    for secret in (tools.SECRET, tools.CAUSE_SECRET, "ConnectionError", "Traceback"):
        assert secret not in sent
    (event,) = hidden(logs)
    assert result.meta is not None and result.meta[META_ERROR_ID] == event["error_id"]
    assert f"error id {event['error_id']}" in text_of(result)
    assert isinstance(event["exc_info"], ConnectionError)
    assert tools.CAUSE_SECRET in str(event["exc_info"].__cause__)
    assert not [r for r in caplog.records if r.name == "mcp.server.mcpserver.server"]


async def test_the_sdks_own_line_stays_where_toolguard_logs_nothing(
    mode: str, logs: list[dict[str, Any]], caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK logs its own ToolError, an unknown tool and rejected arguments in one
    line each (INFO, no traceback); toolguard answers them and logs nothing, so the
    SDK's line stays, as unguarded. Its result's ``_meta`` (the server's stamp) stays
    on toolguard's answers, with toolguard's error id added where there is one."""
    caplog.set_level(logging.INFO, logger="mcp.server.mcpserver.server")

    async def run(server: MCPServer[Any]) -> tuple[list[tuple[str, str]], list[Any]]:
        caplog.clear()
        async with Client(server, mode=mode) as client:
            results = [
                await client.call_tool("cancel", {"order_id": 42}),
                await client.call_tool("nope", {}),
                await client.call_tool("refund", {"order_id": "x"}),
                await client.call_tool("refund", {"order_id": 1}),
            ]
        lines = [
            (record.levelname, record.getMessage())
            for record in caplog.records
            if record.name == "mcp.server.mcpserver.server"
        ]
        return lines, [result.meta or {} for result in results]

    plain_lines, plain_meta = await run(build(None))
    guarded_lines, guarded_meta = await run(guarded())
    assert len(plain_lines) == 4 and plain_lines[-1][0] == "ERROR"  # the crash's traceback
    assert guarded_lines == plain_lines[:3]  # the crash is logged once, by toolguard
    assert len(hidden(logs)) == 1
    assert all(plain_meta) or mode == "legacy"  # the legacy era stamps nothing
    for plain, kept in zip(plain_meta, guarded_meta, strict=True):
        assert {**plain, **kept} == kept  # the server's stamp kept
    assert META_ERROR_ID in guarded_meta[-1]


async def test_the_cause_is_captured_even_when_the_sdk_logger_is_off(
    logs: list[dict[str, Any]],
) -> None:
    """Capture does not depend on the application's logging setup (a disabled logger,
    a level above ERROR)."""
    sdk_logger = logging.getLogger("mcp.server.mcpserver.server")
    sdk_logger.disabled = True
    sdk_logger.setLevel(logging.CRITICAL)
    try:
        async with Client(guarded()) as client:
            result = await client.call_tool("refund", {"order_id": 1})
            visible = await client.call_tool("cancel", {"order_id": 42})
    finally:
        sdk_logger.disabled = False
        sdk_logger.setLevel(logging.NOTSET)
    (event,) = hidden(logs)
    assert isinstance(event["exc_info"], ConnectionError)
    assert result.meta is not None and result.meta[META_ERROR_ID] == event["error_id"]
    assert text_of(visible) == "Order 42 has shipped; it cannot be cancelled."


async def test_toolguards_visible_message_arrives_intact_under_the_sdks_masking(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    """Without the guard the SDK masks toolguard's ToolError as a crash."""
    async with Client(build(None), mode=mode) as client:
        masked = await client.call_tool("order_status", {"order_id": 7})
    async with Client(guarded(), mode=mode) as client:
        result = await client.call_tool("order_status", {"order_id": 7})
    assert text_of(masked) == "Error executing tool order_status"
    assert (result.is_error, text_of(result)) == (
        True,
        "There is no order 7. Ask the user to check.",
    )
    (event,) = hidden(logs)  # its cause: logged once
    assert tools.CAUSE_SECRET in str(event["exc_info"].__cause__)


async def test_the_sdks_own_tool_error_is_visible_by_default_and_can_be_hidden(mode: str) -> None:
    async with Client(guarded(), mode=mode) as client:
        visible = await client.call_tool("cancel", {"order_id": 42})
    async with Client(guarded(framework_errors_visible=False), mode=mode) as client:
        withheld = await client.call_tool("cancel", {"order_id": 42})
    assert text_of(visible) == "Order 42 has shipped; it cannot be cancelled."
    assert withheld.is_error is True
    assert "shipped" not in text_of(withheld)
    assert "error id" in text_of(withheld)


async def test_invalid_arguments_are_bounded_and_never_echo_the_value(mode: str) -> None:
    huge = "9" * 100 + "x" + tools.SECRET * 10_000
    async with Client(guarded(), mode=mode) as client:
        result = await client.call_tool("refund", {"order_id": huge})
    message = text_of(result)
    assert result.is_error is True
    assert message.startswith("Invalid arguments for tool 'refund':")
    assert "'order_id'" in message
    assert tools.SECRET not in message
    assert len(message) < 500


async def test_an_unknown_tool_is_answered_with_the_name_bounded(mode: str) -> None:
    async with Client(guarded(), mode=mode) as client:
        result = await client.call_tool("x\x1b[2J" + "y" * 100_000, {})
    message = text_of(result)
    assert result.is_error is True
    assert "There is no tool named" in message
    assert "\x1b" not in message
    assert len(message) < 500


async def test_overrides_by_name_apply_to_the_sdks_tools(mode: str) -> None:
    dispatcher = Dispatcher(
        [ship],
        external_tools=["refund"],
        overrides={"refund": ToolPolicy(on_error="Refunds are paused (ref {error_id}).")},
    )
    async with Client(guarded(dispatcher), mode=mode) as client:
        result = await client.call_tool("refund", {"order_id": 1})
    assert result.meta is not None
    assert text_of(result) == f"Refunds are paused (ref {result.meta[META_ERROR_ID]})."


async def test_a_toolguard_tool_keeps_its_policy_and_return_direct(mode: str) -> None:
    """``ship`` is a toolguard @tool added with ``server.add_tool``: its own on_error
    answers its failure; its return_direct is reported on success only."""
    async with Client(guarded(), mode=mode) as client:
        ok = await client.call_tool("ship", {"order_id": 3})
        failed = await client.call_tool("ship", {"order_id": 0})
    assert (ok.is_error, text_of(ok)) == (False, "shipped 3")
    assert ok.meta is not None and ok.meta[META_RETURN_DIRECT] is True
    assert failed.meta is not None
    assert text_of(failed) == f"Shipping is down (error {failed.meta[META_ERROR_ID]})."
    assert META_RETURN_DIRECT not in failed.meta


@pytest.mark.parametrize(
    ("mode", "options"),
    [
        ("legacy", {}),  # one connection: one session
        ("auto", {"session_id": lambda ctx: "customer-1"}),  # 2026-07-28: the app names it
    ],
)
async def test_a_breaker_spans_the_conversation_and_answers_without_running(
    mode: str, options: dict[str, Any]
) -> None:
    """After two failures refund is not run again in that conversation."""
    dispatcher = Dispatcher([ship], breaker=Breaker(failures=2, cooldown=60))
    RUNS["refund"] = 0
    async with Client(guarded(dispatcher, **options), mode=mode) as client:
        answers = [await client.call_tool("refund", {"order_id": 1}) for _ in range(4)]
    assert RUNS["refund"] == 2
    assert all(a.is_error for a in answers)
    assert "unavailable" in text_of(answers[3])


async def test_a_base_exception_from_a_tool_is_a_json_rpc_error_and_the_server_goes_on(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    async with Client(guarded(), mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("quit_now", {})
        after = await client.call_tool("ship", {"order_id": 5})
    assert tools.SECRET not in str(raised.value) + str(raised.value.error.data)
    (event,) = [e for e in logs if e["event"] == "mcp_call_aborted"]
    assert raised.value.error.data == {"tool": "quit_now", "error_id": event["error_id"]}
    assert text_of(after) == "shipped 5"


async def test_outside_guarded_calls_the_sdk_logger_is_as_configured(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An unguarded server in the same process still logs its traceback; the
    logger's level still filters its records."""
    guarded()  # the observer is installed
    caplog.set_level(logging.INFO)
    async with Client(build(None)) as client:
        await client.call_tool("refund", {"order_id": 1})
    assert [r for r in caplog.records if "raised an unexpected exception" in r.getMessage()]
    sdk_logger = logging.getLogger("mcp.server.mcpserver.server")
    caplog.clear()
    sdk_logger.setLevel(logging.WARNING)
    try:
        sdk_logger.info("below the level")
        sdk_logger.warning("at the level")
    finally:
        sdk_logger.setLevel(logging.NOTSET)
    assert [r.getMessage() for r in caplog.records if r.name == sdk_logger.name] == ["at the level"]


@pytest.mark.parametrize("given", [[], None, "dispatcher", MCPServer("not a dispatcher")])
def test_the_middleware_refuses_anything_but_a_dispatcher_saying_how(given: Any) -> None:
    from toolguard.integrations.fastmcp import ToolguardMiddleware as FastMCPMiddleware

    for middleware, line in (
        (ToolguardMiddleware, "MCPServer(..., middleware=[ToolguardMiddleware(dispatcher)])"),
        (FastMCPMiddleware, "mcp.add_middleware(ToolguardMiddleware(dispatcher))"),
    ):
        with pytest.raises(TypeError) as raised:
            middleware(given)
        message = str(raised.value)
        assert f"takes a toolguard Dispatcher, got {type(given).__name__}:" in message
        assert line in message and "external_tools=[...]" in message
