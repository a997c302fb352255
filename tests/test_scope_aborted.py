"""``Scope.aborted``: a call that ended in neither a result nor a handler's answer, at a
boundary that must answer it anyway, is logged once and named by a ``ToolCallFailed``."""

from __future__ import annotations

from typing import Any

from toolguard import Breaker, Dispatcher, ToolCall, ToolCallFailed


def test_aborted_logs_once_and_returns_the_failure_naming_the_tool(
    logs: list[dict[str, Any]],
) -> None:
    scope = Dispatcher([], external_tools=["quit"]).scope()
    error = SystemExit("password=hunter2")
    failed = scope.aborted(ToolCall(name="quit", id="c1"), error, event="server_call_aborted")
    assert isinstance(failed, ToolCallFailed)
    assert (failed.tool, failed.call_id, failed.__cause__) == ("quit", "c1", error)
    (event,) = logs
    assert event["event"] == "server_call_aborted" and event["log_level"] == "error"
    assert (event["error_id"], event["exc_info"], event["tool"]) == (failed.error_id, error, "quit")
    assert "hunter2" not in str(failed)


def test_aborted_bounds_the_name_and_counts_against_no_breaker() -> None:
    dispatcher = Dispatcher([], external_tools=["quit"], breaker=Breaker(failures=1))
    session = dispatcher.session(id="s")
    scope = session.scope(step="m1")
    failed = scope.aborted(ToolCall(name="q\x1b" * 100, id="c1"), KeyboardInterrupt(), event="e")
    assert "\x1b" not in failed.tool and len(failed.tool) < 200
    scope.aborted(ToolCall(name="quit", id="c2"), KeyboardInterrupt(), event="e")
    assert scope.admit(ToolCall(name="quit", id="c3")) is None
