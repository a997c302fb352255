"""No per-call introspection: a dispatch builds no validator and reads no signature.

Checked structurally, not by timing: a profile hook counts calls into the functions
that do that work (``inspect``'s signature reader, ``typing.get_type_hints``,
``pydantic.TypeAdapter``, and pydantic's ``create_schema_validator``, through which
every pydantic validator is built) while 1,000 dispatches run. Matching on code
objects catches every route in (``inspect.signature``, ``Signature.from_callable``,
``from inspect import signature`` ...). A positive control shows the hook sees the
work when a tool is decorated.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import sys
import typing
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import CodeType, FrameType
from typing import Any

import pydantic
import pytest
from pydantic.plugin import _schema_validator

import toolguard
from toolguard import Dispatcher, ToolCall, ToolError, tool

DISPATCHES = 1000

WATCHED: dict[CodeType, str] = {
    inspect._signature_from_callable.__code__: "inspect signature",  # type: ignore[attr-defined]
    typing.get_type_hints.__code__: "typing.get_type_hints",
    pydantic.TypeAdapter.__init__.__code__: "pydantic.TypeAdapter()",
    _schema_validator.create_schema_validator.__code__: "pydantic validator build",
}


@contextmanager
def introspection_calls() -> Iterator[Counter[str]]:
    """Count calls into the watched functions on this thread while the block runs."""
    counts: Counter[str] = Counter()
    previous = sys.getprofile()

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            name = WATCHED.get(frame.f_code)
            if name is not None:
                counts[name] += 1

    sys.setprofile(hook)
    try:
        yield counts
    finally:
        sys.setprofile(previous)


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def add_later(a: int, b: int) -> int:
    """Add two integers, asynchronously."""
    return a + b


@tool
def boom(a: int) -> int:
    """Always fails, with a hidden cause."""
    raise ValueError(f"database down for {a}")


@tool
def refuse(a: int) -> int:
    """Always fails, with a message for the model."""
    raise ToolError(f"There is no order {a}.")


def _calls() -> list[ToolCall]:
    return [
        ToolCall(name="add", arguments={"a": 1, "b": 2}, id="1"),
        ToolCall(name="add", arguments=json.dumps({"a": 1, "b": 2}), id="2"),
        ToolCall(name="boom", arguments={"a": 1}, id="3"),
        ToolCall(name="refuse", arguments={"a": 1}, id="4"),
        ToolCall(name="add", arguments={"a": "x", "b": 2}, id="5"),
        ToolCall(name="ad", arguments={"a": 1}, id="6"),
    ]


def test_the_hook_sees_a_validator_built_when_a_tool_is_decorated() -> None:
    """Positive control: without it, zero below could mean a blind hook."""

    def multiply(a: int, b: int) -> int:
        return a * b

    with introspection_calls() as counts:
        Dispatcher([tool(multiply)])
    assert counts["inspect signature"] >= 1
    assert counts["pydantic validator build"] >= 1


def test_1000_sync_dispatches_build_no_validator_and_read_no_signature() -> None:
    """Success, JSON, hidden failure, ToolError, bad arguments, unknown tool: no introspection."""
    dispatcher = Dispatcher([add, add_later, boom, refuse])
    calls = _calls()
    with introspection_calls() as counts:
        results = [dispatcher.dispatch(calls[i % len(calls)]) for i in range(DISPATCHES)]
    assert dict(counts) == {}
    assert [r.is_error for r in results[: len(calls)]] == [False, False, True, True, True, True]


def test_1000_async_dispatches_build_no_validator_and_read_no_signature() -> None:
    """adispatch of an async tool, and a round through arun, do no introspection either."""
    dispatcher = Dispatcher([add, add_later, boom, refuse])
    async_call = ToolCall(name="add_later", arguments={"a": 1, "b": 2}, id="7")
    calls = [*_calls(), async_call]

    async def main() -> None:
        for i in range(DISPATCHES):
            await dispatcher.adispatch(calls[i % len(calls)])
        await dispatcher.arun(calls)

    with introspection_calls() as counts:
        asyncio.run(main())
    assert dict(counts) == {}


def test_tool_invoke_reuses_what_decoration_built() -> None:
    """``Tool.invoke`` (one guarded call under the global defaults) introspects nothing."""
    add.invoke({"a": 1, "b": 2})
    with introspection_calls() as counts:
        for _ in range(DISPATCHES):
            add.invoke({"a": 1, "b": 2})
    assert dict(counts) == {}


def test_configure_between_dispatches_rebuilds_no_validator() -> None:
    """A ``configure()`` change is picked up on the next call without re-introspecting."""
    dispatcher = Dispatcher([add, boom])
    failing = ToolCall(name="boom", arguments={"a": 1}, id="1")
    with introspection_calls() as counts:
        for i in range(DISPATCHES):
            if i % 100 == 0:
                toolguard.configure(log_level="info" if i % 200 else "warning")
            dispatcher.dispatch(failing)
    assert dict(counts) == {}


@pytest.mark.parametrize("arguments", [None, "", "{}"])
def test_a_tool_without_arguments_is_not_introspected_per_call(arguments: Any) -> None:
    """Empty arguments take the same prebuilt validator."""

    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    dispatcher = Dispatcher([ping])
    call = ToolCall(name="ping", arguments=arguments, id="1")
    with introspection_calls() as counts:
        for _ in range(DISPATCHES):
            assert dispatcher.dispatch(call).content == "pong"
    assert dict(counts) == {}
