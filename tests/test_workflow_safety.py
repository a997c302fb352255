"""What the core guarantees to a durable engine's workflow code, with no engine installed.

Temporal runs workflow code in a sandbox that re-imports modules with a ``sys.modules``
of its own and refuses, at run time, threads, locks made through ``threading``, the
system clock and the global random functions; both Temporal and DBOS run workflow code
again on replay or recovery. The engines themselves are exercised in
``tests/integrations/test_temporal*.py`` and ``test_dbos*.py``; these tests pin the
core's side of the contract.
"""

from __future__ import annotations

import sys

import pytest

import toolguard
from toolguard import Dispatcher, ToolCall, tool

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
