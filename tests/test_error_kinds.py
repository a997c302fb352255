"""The kind of a failure (``ToolResult.error_kind``) is decided by ``isinstance`` alone,
so an application's subclass of one of toolguard's errors is of its base's kind on
every path: a tool the dispatcher runs, sync and async, and a tool that ran elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from toolguard import (
    Dispatcher,
    InvalidArguments,
    RetryWithFeedback,
    ToolCall,
    ToolError,
    ToolResult,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
    tool,
)


class AppInvalid(InvalidArguments):
    pass


class AppUnknown(UnknownTool):
    pass


class AppFeedback(RetryWithFeedback):
    pass


class AppTimeout(ToolTimeout):
    pass


class AppUnavailable(ToolUnavailable):
    pass


class AppError(ToolError):
    pass


CASES: list[tuple[Callable[[], Exception], str]] = [
    (lambda: AppInvalid("Bad arguments.", tool="t"), "arguments"),
    (lambda: AppUnknown("No such tool.", tool="t", available=()), "unknown_tool"),
    (lambda: AppFeedback("Send a date."), "feedback"),
    (lambda: AppTimeout("Too slow.", tool="t", seconds=1.0), "timeout"),
    (lambda: AppUnavailable("Down.", tool="t", retry_after=1.0), "unavailable"),
    (lambda: AppError("Visible."), "visible"),
    (lambda: ValueError("secret"), "hidden"),
]
IDS = ["invalid", "unknown", "feedback", "timeout", "unavailable", "visible", "hidden"]


def _agent(make: Callable[[], Exception]) -> Dispatcher:
    @tool
    def t() -> str:
        """Fails."""
        raise make()

    return Dispatcher([t], external_tools=["elsewhere"])


@pytest.mark.parametrize(("make", "kind"), CASES, ids=IDS)
def test_a_subclass_is_of_its_bases_kind_when_the_dispatcher_runs_the_tool(
    make: Callable[[], Exception], kind: str
) -> None:
    result = _agent(make).dispatch(ToolCall(name="t", arguments={}, id="c1"))
    assert (result.is_error, result.error_kind) == (True, kind)


@pytest.mark.parametrize(("make", "kind"), CASES, ids=IDS)
async def test_a_subclass_is_of_its_bases_kind_on_the_async_path(
    make: Callable[[], Exception], kind: str
) -> None:
    result = await _agent(make).adispatch(ToolCall(name="t", arguments={}, id="c1"))
    assert (result.is_error, result.error_kind) == (True, kind)


@pytest.mark.parametrize(("make", "kind"), CASES, ids=IDS)
async def test_a_subclass_is_of_its_bases_kind_for_a_tool_that_ran_elsewhere(
    make: Callable[[], Exception], kind: str
) -> None:
    agent = _agent(make)
    call = ToolCall(name="elsewhere", arguments={}, id="c1")
    results: list[ToolResult] = [
        agent.handle_error(call, make()),
        await agent.ahandle_error(call, make()),
    ]
    assert [(r.is_error, r.error_kind) for r in results] == [(True, kind)] * 2


@pytest.mark.parametrize(("make", "kind"), CASES[:2], ids=IDS[:2])
def test_the_models_mistakes_of_any_subclass_are_on_invalid_calls_to_answer(
    make: Callable[[], Exception], kind: str
) -> None:
    """The handler chain and the kind agree: what on_invalid_call answers is of the
    kind "arguments" or "unknown_tool", never "visible"."""

    @tool(on_invalid_call=lambda error, context: f"The call was wrong: {context.tool}.")
    def t() -> str:
        """Fails."""
        raise make()

    result = Dispatcher([t]).dispatch(ToolCall(name="t", arguments={}, id="c1"))
    assert (result.content, result.error_kind) == ("The call was wrong: t.", kind)
