"""What the core guarantees to a durable engine's workflow code, with no engine installed.

Temporal runs workflow code in a sandbox that re-imports modules with a ``sys.modules``
of its own and refuses, at run time, threads, locks made through ``threading``, the
system clock and the global random functions; both Temporal and DBOS run workflow code
again on replay or recovery. The engines themselves are exercised in
``tests/integrations/test_temporal*.py`` and ``test_dbos*.py``; these tests pin the
core's side of the contract.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from typing import Any, NoReturn

import pytest

import toolguard
from toolguard import Breaker, Dispatcher, ToolCall, tool

from ._otel import attributes, install, tool_spans


@tool
def add(a: int, b: int) -> int:
    return a + b


def test_an_agent_follows_configure_without_its_module_in_sys_modules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process-wide telemetry switch is an object an agent holds, not the telemetry
    module looked up in ``sys.modules`` (a sandbox's ``sys.modules`` is its own)."""
    install()
    monkeypatch.delitem(sys.modules, "toolguard.telemetry._switch")
    agent = Dispatcher([add])
    toolguard.configure(telemetry=True)
    agent.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1"))
    toolguard.configure(telemetry=False)
    agent.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c2"))
    assert [attributes(span)["gen_ai.tool.call.id"] for span in tool_spans()] == ["c1"]


def test_making_a_dispatcher_and_its_sessions_makes_no_lock_through_threading(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Temporal's sandbox refuses ``threading.Lock()`` in workflow code: a workflow that
    makes a dispatcher, opens sessions and runs calls takes no lock from ``threading``."""

    def refused(*args: object, **kwargs: object) -> NoReturn:
        raise AssertionError("threading.Lock() called")

    monkeypatch.setattr(threading, "Lock", refused)
    monkeypatch.setattr(threading, "RLock", refused)
    agent = Dispatcher([add], breaker=Breaker(failures=2))
    for session in (agent.session(), agent.session(id="conversation-1")):
        result = session.dispatch(ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1"))
        assert result.content == "3"
        assert session.state("add").consecutive_failures == 0


def test_importing_toolguard_and_a_success_import_neither_structlog_nor_rich() -> None:
    """structlog imports rich (where installed), whose import calls a global random
    function Temporal's sandbox refuses: toolguard imports structlog when it first logs."""
    code = (
        "import sys, toolguard\n"
        "def echo(a: int) -> int:\n"
        "    return a\n"
        "agent = toolguard.Dispatcher([echo])\n"
        "result = agent.dispatch(toolguard.ToolCall(name='echo', arguments={'a': 1}))\n"
        "assert result.content == '1'\n"
        "print(sorted({'structlog', 'rich'} & set(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "[]"


def test_the_first_event_imports_structlog_and_is_logged(logs: list[dict[str, Any]]) -> None:
    @tool
    def broken() -> None:
        raise ValueError("db-password=hunter2")

    result = Dispatcher([broken]).dispatch(ToolCall(name="broken", id="c1"))
    [event] = logs
    assert event["event"] == "tool_error_hidden" and event["error_id"] == result.error_id
