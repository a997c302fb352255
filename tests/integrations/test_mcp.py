"""toolguard.integrations.mcp against the REAL official MCP client (no mocks).

In process, every test runs twice: ``mode="auto"`` (the SDK's direct path, the
2026-07-28 protocol) and ``mode="legacy"`` (JSON-RPC over in-memory streams, the
2025-11-25 handshake). Then once over stdio, in a subprocess started exactly as
``toolguard serve-mcp MODULE:ATTR`` would be.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

import toolguard.targets
from tests.integrations import _mcp_tools as tools
from toolguard import Dispatcher, tool
from toolguard.integrations.mcp import (
    EVENT_CALL_ABORTED,
    META_ERROR_ID,
    TargetError,
    call_tool_result,
    load_target,
    mcp_server,
)

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.integrations._mcp_tools:dispatcher"


@pytest.fixture(params=["auto", "legacy"])
def mode(request: pytest.FixtureRequest) -> str:
    """The client's connection mode: modern direct path, or legacy JSON-RPC streams."""
    return str(request.param)


@asynccontextmanager
async def connect(
    mode: str, dispatcher: Dispatcher = tools.dispatcher, **options: Any
) -> AsyncIterator[Client]:
    """The official client, connected in process to a toolguard MCP server."""
    async with Client(mcp_server(dispatcher, **options), mode=mode) as client:
        yield client


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


def wire(result: types.CallToolResult) -> str:
    """Everything the client received, serialized."""
    return result.model_dump_json(by_alias=True)


def hidden_events(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


# --- tools/list ------------------------------------------------------------------------


async def test_tools_list_declares_toolguard_schema_exactly(mode: str) -> None:
    async with connect(mode) as client:
        listed = await client.list_tools()

    assert [t.name for t in listed.tools] == list(tools.dispatcher.tools)
    by_name = {t.name: t for t in listed.tools}
    assert by_name["add"].description == "Add two integers."
    assert by_name["add"].input_schema == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first addend."},
            "b": {"type": "integer", "description": "The second addend."},
        },
        "required": ["a", "b"],
        "additionalProperties": False,
    }
    for name, declared in by_name.items():
        assert declared.input_schema == tools.dispatcher.tools[name].parameters
        assert declared.output_schema is None


async def test_injected_parameters_stay_out_of_the_schema(mode: str) -> None:
    async with connect(mode, Dispatcher([tools.whoami])) as client:
        (declared,) = (await client.list_tools()).tools
    assert declared.input_schema["properties"] == {}


# --- tools/call: success ---------------------------------------------------------------


async def test_call_success_returns_the_tools_text(mode: str) -> None:
    runs = tools.RUNS["add"]
    async with connect(mode) as client:
        result = await client.call_tool("add", {"a": 1, "b": 2})

    assert result.is_error is False
    assert text_of(result) == "3"
    assert result.structured_content is None  # 3 is not a JSON object
    assert result.meta is None or META_ERROR_ID not in result.meta
    assert tools.RUNS["add"] == runs + 1


async def test_call_returning_an_object_also_sends_structured_content(mode: str) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("lookup_order", {"order_id": 42})

    expected = {"order_id": 42, "status": "shipped", "items": ["book"]}
    assert result.is_error is False
    assert json.loads(text_of(result)) == expected
    assert result.structured_content == expected


async def test_structured_content_can_be_switched_off(mode: str) -> None:
    async with connect(mode, structured_content=False) as client:
        result = await client.call_tool("lookup_order", {"order_id": 42})
    assert result.structured_content is None
    assert json.loads(text_of(result))["status"] == "shipped"


async def test_text_and_image_blocks_map_to_mcp_content_types(mode: str) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("chart", {})

    assert result.is_error is False
    text, image = result.content
    assert isinstance(text, types.TextContent)
    assert text.text == "Sales, last 7 days:"
    assert isinstance(image, types.ImageContent)
    assert (image.data, image.mime_type) == (tools.PIXEL, "image/png")
    assert result.structured_content is None


async def test_injected_context_and_call_id_reach_the_tool(mode: str) -> None:
    async with connect(mode, Dispatcher([tools.whoami]), context=lambda ctx: "alice") as client:
        result = await client.call_tool("whoami", {})

    user, call_id = text_of(result).split(" ")
    assert result.is_error is False
    assert user == "alice"
    assert call_id  # the JSON-RPC request id


# --- tools/call: failures --------------------------------------------------------------


async def test_model_visible_error_sends_its_message_and_hides_its_cause(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("lookup_order", {"order_id": 7})

    assert result.is_error is True
    assert text_of(result) == "There is no order 7. Ask the user to check the number."
    assert result.structured_content is None
    assert tools.CAUSE_SECRET not in wire(result)
    # the cause was hidden, so it was logged under the error id the result carries
    (event,) = hidden_events(logs)
    assert result.meta is not None
    assert result.meta[META_ERROR_ID] == event["error_id"]
    assert tools.CAUSE_SECRET in str(event["exc_info"].__cause__)


async def test_hidden_error_sends_a_generic_message_with_the_error_id(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("charge", {"amount": 9.99})

    assert result.is_error is True
    sent = wire(result)
    for secret in (tools.SECRET, tools.CAUSE_SECRET, "ConnectionError", "KeyError", "Traceback"):
        assert secret not in sent
    (event,) = hidden_events(logs)
    error_id = event["error_id"]
    assert f"error id {error_id}" in text_of(result)
    assert result.meta is not None
    assert result.meta[META_ERROR_ID] == error_id
    # the cause is in the server's log, once, with the tool and its whole chain
    assert event["tool"] == "charge"
    assert event["log_level"] == "warning"
    error = event["exc_info"]
    assert isinstance(error, ConnectionError)
    assert tools.SECRET in str(error)
    assert tools.CAUSE_SECRET in str(error.__cause__)


async def test_invalid_arguments_name_the_argument_and_never_run_the_tool(mode: str) -> None:
    runs = tools.RUNS["add"]
    async with connect(mode) as client:
        result = await client.call_tool("add", {"a": "one", "c": 3})

    assert result.is_error is True
    message = text_of(result)
    assert message.startswith("Invalid arguments for tool 'add':")
    assert "'a':" in message
    assert "'b': missing required argument (an integer)" in message
    assert "'c': unexpected argument; this tool accepts: a, b" in message
    assert tools.RUNS["add"] == runs


async def test_missing_arguments_are_validated_by_toolguard_too(mode: str) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("add")  # no "arguments" member at all
    assert result.is_error is True
    assert "'a': missing required argument (an integer)" in text_of(result)


async def test_unknown_tool_is_an_error_result_listing_the_tools(mode: str) -> None:
    async with connect(mode) as client:
        result = await client.call_tool("ad", {"a": 1, "b": 2})

    assert result.is_error is True
    message = text_of(result)
    assert "There is no tool named 'ad'" in message
    assert "add, lookup_order, charge, chart, transfer, escalate" in message


async def test_failed_invocation_is_a_json_rpc_error_without_the_cause(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    async with connect(mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("transfer", {"to": "savings"})

    error = raised.value
    assert error.code == types.INTERNAL_ERROR
    assert tools.SECRET not in error.message
    assert tools.SECRET not in json.dumps(error.data)
    (event,) = [event for event in logs if event["event"] == "tool_call_failed"]
    assert error.data == {"tool": "transfer", "error_id": event["error_id"]}
    assert f"error id {event['error_id']}" in error.message
    assert tools.SECRET in str(event["exc_info"])


async def test_control_flow_at_the_server_boundary_is_logged_once_not_sent(
    mode: str, logs: list[dict[str, Any]]
) -> None:
    async with connect(mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("escalate", {})

    error = raised.value
    assert error.code == types.INTERNAL_ERROR
    assert tools.SECRET not in error.message
    assert "Handoff" not in error.message
    (event,) = [event for event in logs if event["event"] == EVENT_CALL_ABORTED]
    assert isinstance(event["exc_info"], tools.Handoff)
    assert error.data == {"tool": "escalate", "error_id": event["error_id"]}
    assert not hidden_events(logs)


async def test_slow_sync_tools_run_off_the_servers_event_loop(mode: str) -> None:
    """Two calls of a sync tool that sleeps 0.3 s overlap (the server's loop is free
    while they run): together they take well under the 0.6 s they would in turn."""
    spans: list[tuple[float, float, int]] = []

    @tool
    def nap() -> str:
        """Sleep a while (sync)."""
        start = time.monotonic()
        time.sleep(0.3)
        spans.append((start, time.monotonic(), threading.get_ident()))
        return "rested"

    async with connect(mode, Dispatcher([nap])) as client:
        await client.list_tools()  # connected before the clock starts
        started = time.monotonic()
        results = await asyncio.gather(client.call_tool("nap", {}), client.call_tool("nap", {}))
        elapsed = time.monotonic() - started

    assert [(r.is_error, text_of(r)) for r in results] == [(False, "rested")] * 2
    (start_1, end_1, thread_1), (start_2, end_2, thread_2) = spans
    assert start_2 < end_1 and start_1 < end_2  # they ran at the same time
    assert threading.get_ident() not in (thread_1, thread_2)  # not on the loop's thread
    assert elapsed < 0.55


async def test_the_server_survives_failures_and_keeps_answering(mode: str) -> None:
    async with connect(mode) as client:
        with pytest.raises(MCPError):
            await client.call_tool("escalate", {})
        assert (await client.call_tool("charge", {"amount": 1})).is_error is True
        assert text_of(await client.call_tool("add", {"a": 2, "b": 2})) == "4"


# --- pure mapping ----------------------------------------------------------------------


def test_call_tool_result_never_carries_the_artifact() -> None:
    from toolguard import ToolResult

    result = ToolResult(
        call_id="1", name="t", content='{"a":1}', artifact={"raw": tools.SECRET}, return_direct=True
    )
    converted = call_tool_result(result)
    assert tools.SECRET not in converted.model_dump_json(by_alias=True)
    assert converted.structured_content == {"a": 1}
    assert converted.meta == {"toolguard/return_direct": True}


# --- MODULE:ATTR -----------------------------------------------------------------------


def test_load_target_is_toolguards_shared_one() -> None:
    """The same ``MODULE:ATTR`` rules as the ``toolguard`` command; old names kept."""
    assert load_target is toolguard.targets.load_target
    assert TargetError is toolguard.targets.TargetError


def test_load_target_accepts_a_dispatcher_a_list_or_a_tool() -> None:
    assert load_target(TARGET) is tools.dispatcher
    assert list(load_target("tests.integrations._mcp_tools:tools").tools) == ["add", "chart"]
    assert list(load_target("tests.integrations._mcp_tools:add").tools) == ["add"]


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.integrations._mcp_tools", "is not MODULE:ATTR"),
        (":dispatcher", "is not MODULE:ATTR"),
        ("tests.integrations._no_such_module:x", "no module named"),
        ("tests.integrations._mcp_tools:nope", "has no attribute 'nope'"),
        ("tests.integrations._mcp_tools:not_tools", "not a Dispatcher"),
    ],
)
def test_load_target_explains_a_bad_target(target: str, message: str) -> None:
    with pytest.raises(TargetError, match=message):
        load_target(target)


def test_a_module_whose_import_fails_is_a_bad_target_naming_the_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing dependency of the target module is reported as such (the original
    error is the cause), not as a missing target module."""
    (tmp_path / "_mcp_broken_tools.py").write_text("import _no_such_dependency_for_mcp_test\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(TargetError, match="_no_such_dependency_for_mcp_test") as raised:
        load_target("_mcp_broken_tools:dispatcher")
    cause = raised.value.__cause__
    assert isinstance(cause, ModuleNotFoundError)
    assert cause.name == "_no_such_dependency_for_mcp_test"


def test_module_entry_point_rejects_a_bad_target_with_status_2() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "toolguard.integrations.mcp", "tests.integrations._mcp_tools:nope"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert "has no attribute 'nope'" in done.stderr


# --- over stdio, in a subprocess -------------------------------------------------------


async def test_stdio_subprocess_serves_the_tools_and_logs_only_to_stderr(
    tmp_path: Path,
) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "toolguard.integrations.mcp", TARGET], cwd=ROOT
    )
    stderr_path = tmp_path / "server-stderr.log"
    with stderr_path.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = await client.list_tools()
            added = await client.call_tool("add", {"a": 20, "b": 22})
            invalid = await client.call_tool("add", {"a": 1})
            visible = await client.call_tool("lookup_order", {"order_id": 7})
            hidden = await client.call_tool("charge", {"amount": 5})
            unknown = await client.call_tool("nope", {})

    assert {t.name: t.input_schema for t in listed.tools} == {
        name: t.parameters for name, t in tools.dispatcher.tools.items()
    }
    assert (added.is_error, text_of(added)) == (False, "42")
    assert invalid.is_error is True
    assert "'b': missing required argument" in text_of(invalid)
    assert visible.is_error is True
    assert text_of(visible) == "There is no order 7. Ask the user to check the number."
    assert unknown.is_error is True
    assert "Available tools: add," in text_of(unknown)

    assert hidden.is_error is True
    for secret in (tools.SECRET, tools.CAUSE_SECRET):
        assert secret not in wire(hidden)
    assert hidden.meta is not None
    error_id = hidden.meta[META_ERROR_ID]
    assert f"error id {error_id}" in text_of(hidden)

    # structlog was unconfigured in the server process: one JSON line per event on stderr
    events = [json.loads(line) for line in stderr_path.read_text().splitlines() if line[:1] == "{"]
    (event,) = [e for e in events if e.get("error_id") == error_id]
    assert event["event"] == "tool_error_hidden"
    assert event["tool"] == "charge"
    assert tools.SECRET in event["exception"]
    assert tools.CAUSE_SECRET in event["exception"]
