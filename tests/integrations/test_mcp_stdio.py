"""``toolguard serve-mcp`` over a real stdio subprocess, driven with raw JSON-RPC lines.

Issue 12: a server answers every request it can parse and keeps serving. A tool
that raises a ``BaseException`` that is not an ``Exception`` (``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit``, its own ``CancelledError``, a
``BaseExceptionGroup``) gets a JSON-RPC error (logged once, no exception text),
and the next call is answered; lone surrogates never break the stream. Raw lines,
not the SDK's client, so that requests the SDK's client would never send (a
surrogate in a name, a cancelled request) are sent as a hostile client would.
"""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest

from tests.integrations import _mcp_tools as tools

ROOT = Path(__file__).resolve().parents[2]
TARGET = "tests.integrations._mcp_tools:hostile"
PROTOCOL = "2025-11-25"
WAIT = 10.0


class StdioServer:
    """``python -m toolguard.integrations.mcp TARGET`` with pipes: send lines, read replies."""

    def __init__(self, process: subprocess.Popen[bytes], stderr: Path) -> None:
        self.process = process
        self.stderr = stderr
        self._lines: queue.Queue[bytes] = queue.Queue()
        self._next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def send(self, message: dict[str, Any] | bytes) -> None:
        assert self.process.stdin is not None
        raw = message if isinstance(message, bytes) else json.dumps(message).encode()
        self.process.stdin.write(raw + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        return self._next_id

    def reply(self, request_id: int, timeout: float = WAIT) -> dict[str, Any]:
        """The response to ``request_id`` (notifications on the way are skipped)."""
        while True:
            try:
                line = self._lines.get(timeout=timeout)
            except queue.Empty:
                raise AssertionError(
                    f"no answer to request {request_id} within {timeout} s "
                    f"(server alive: {self.process.poll() is None})"
                ) from None
            message: dict[str, Any] = json.loads(line)  # every line is valid JSON (UTF-8)
            if message.get("id") == request_id:
                return message

    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.reply(self.request("tools/call", {"name": name, "arguments": arguments or {}}))

    def events(self) -> list[dict[str, Any]]:
        lines = self.stderr.read_text(encoding="utf-8", errors="replace").splitlines()
        return [json.loads(line) for line in lines if line[:1] == "{"]


@contextmanager
def serve(tmp_path: Path, target: str = TARGET) -> Iterator[StdioServer]:
    stderr = tmp_path / "server-stderr.log"
    with stderr.open("wb") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolguard.integrations.mcp", target],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
        )
        server = StdioServer(process, stderr)
        try:
            init = server.request(
                "initialize",
                {
                    "protocolVersion": PROTOCOL,
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "0"},
                },
            )
            assert "result" in server.reply(init)
            server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield server
        finally:
            assert process.stdin is not None and process.stdout is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()


def assert_aborted(reply: dict[str, Any], tool: str) -> str:
    """A JSON-RPC error without the exception's text; returns its error id."""
    assert "error" in reply, reply
    error = reply["error"]
    assert error["code"] == types.INTERNAL_ERROR
    sent = json.dumps(reply)
    assert tools.SECRET not in sent
    for name in ("SystemExit", "KeyboardInterrupt", "GeneratorExit", "CancelledError", "Group"):
        assert name not in sent
    assert error["data"]["tool"] == tool
    error_id: str = error["data"]["error_id"]
    assert f"error id {error_id}" in error["message"]
    return error_id


def text(reply: dict[str, Any]) -> str:
    (block,) = reply["result"]["content"]
    value: str = block["text"]
    return value


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StdioServer]:
    """One server for the whole module: every test also proves it is still serving."""
    with serve(tmp_path_factory.mktemp("stdio")) as running:
        yield running


ABORTING = ["exits", "interrupts", "closes", "cancels_itself", "group_exit"]


@pytest.mark.parametrize("tool", ABORTING)
def test_a_tool_raising_a_base_exception_is_answered_and_the_server_keeps_serving(
    server: StdioServer, tool: str
) -> None:
    """The aborted call gets a JSON-RPC error, logged once under the id the client saw
    (with the cause); the calls before and after it are answered."""
    assert text(server.call("add", {"a": 1, "b": 1})) == "2"
    error_id = assert_aborted(server.call(tool), tool)
    assert text(server.call("add", {"a": 2, "b": 2})) == "4"
    error_id_2 = assert_aborted(server.call(tool), tool)
    assert text(server.call("add", {"a": 3, "b": 3})) == "6"
    assert server.process.poll() is None
    logged = [e for e in server.events() if e.get("error_id") in (error_id, error_id_2)]
    assert [e["event"] for e in logged] == ["mcp_call_aborted"] * 2
    assert all(e["tool"] == tool for e in logged)
    assert all(tools.SECRET in e["exception"] for e in logged)  # the cause is in the log


def test_lone_surrogates_in_results_and_messages_are_replaced_not_fatal(
    server: StdioServer,
) -> None:
    """A result or a ToolError message holding a lone surrogate arrives with U+FFFD."""
    result = server.call("surrogate_result")
    assert result["result"]["isError"] is False
    assert text(result) == "report-\ufffd.txt"
    visible = server.call("surrogate_error")
    assert visible["result"]["isError"] is True
    assert text(visible) == "cannot open report-\ufffd.txt"
    assert text(server.call("add", {"a": 1, "b": 2})) == "3"


def test_a_hostile_tool_name_is_answered_bounded_and_escaped(server: StdioServer) -> None:
    """Control characters and a megabyte of name: an error result naming the tools,
    the name never echoed raw or whole."""
    for name in ("evil\x1b[31m\nname", "x" * 1_000_000):
        reply = server.call(name)
        assert reply["result"]["isError"] is True
        message = text(reply)
        assert "There is no tool named" in message
        assert "\x1b" not in message and "\n" not in message
        assert len(message) < 2_000
    assert text(server.call("add", {"a": 1, "b": 2})) == "3"


def test_a_line_the_sdk_cannot_parse_leaves_the_server_serving(server: StdioServer) -> None:
    """A lone-surrogate escape in the JSON (``"\\ud800"``) and a line that is not JSON:
    the SDK's transport (pydantic-core's JSON parser) rejects the line before any
    handler sees it, so it gets no answer (a known limit, documented); the server
    answers the next request."""
    server.send(b'{"jsonrpc":"2.0","id":9001,"method":"tools/call","params":{"name":"\\ud800"}}')
    server.send(b"not json at all")
    assert text(server.call("add", {"a": 1, "b": 2})) == "3"


def test_failed_invocations_and_control_flow_stay_json_rpc_errors(server: StdioServer) -> None:
    for tool in ("transfer", "escalate"):
        reply = server.call(tool, {"to": "savings"} if tool == "transfer" else {})
        assert_aborted(reply, tool)
    assert text(server.call("add", {"a": 1, "b": 2})) == "3"


def test_a_request_the_client_cancels_is_cancelled_not_aborted(server: StdioServer) -> None:
    """notifications/cancelled cancels the running call (no answer is due, and no
    aborted call is logged); the server answers the next request."""
    before = len(server.events())
    slow = server.request("tools/call", {"name": "slow", "arguments": {"seconds": 30}})
    time.sleep(0.5)
    server.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": slow, "reason": "user"},
        }
    )
    started = time.monotonic()
    assert text(server.call("add", {"a": 5, "b": 5})) == "10"
    assert time.monotonic() - started < 5
    time.sleep(0.5)
    later = server.events()[before:]
    assert not [e for e in later if e.get("event") == "mcp_call_aborted"]
