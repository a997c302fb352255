"""``on_invalid_call``: the model's own mistakes (invalid arguments, invented tool names)
are their own channel, in the same precedence chain as ``on_error``."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import toolguard
from toolguard import (
    Dispatcher,
    InvalidArguments,
    Setting,
    ToolCall,
    ToolCallFailed,
    ToolPolicy,
    UnknownTool,
    load_policy,
    tool,
)
from toolguard.handlers import HandlerContext, always, fail, send_exception_message


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: The order's number.
    """
    return f"refunded {order_id}"


BAD = ToolCall(name="refund", arguments={"order_id": "forty-two"}, id="c1")
INVENTED = ToolCall(name="refnd", arguments={}, id="c2")


def test_a_custom_on_error_never_sees_invalid_arguments_nor_unknown_tools() -> None:
    """on_error answers the tool's failures only: the field-level message survives a
    custom handler, and nothing is logged as tool_error_hidden."""
    seen: list[Exception] = []

    def handler(error: Exception, context: HandlerContext) -> str:
        seen.append(error)
        return "generic"

    with capture_logs() as logs:
        dispatcher = Dispatcher([refund], on_error=handler)
        bad, invented = dispatcher.dispatch(BAD), dispatcher.dispatch(INVENTED)
    assert seen == []
    assert bad.error_kind == "arguments" and "'order_id'" in str(bad.content)
    assert invented.error_kind == "unknown_tool" and "did you mean 'refund'" in str(
        invented.content
    )
    assert bad.error_id is None and invented.error_id is None
    assert logs == []


@pytest.mark.parametrize("where", ["tool", "agent", "override", "global", "call"])
def test_fail_in_on_error_at_any_level_does_not_fail_a_model_mistake(where: str) -> None:
    """Under on_error=fail, one bad argument from the model no longer fails the invocation."""
    dispatcher, policy = _with(where, "on_error", fail)
    result = dispatcher.dispatch(BAD, policy=policy)
    assert result.is_error and result.error_kind == "arguments"


@pytest.mark.parametrize("where", ["tool", "agent", "override", "global", "call"])
def test_on_invalid_call_is_asked_at_each_level(where: str) -> None:
    dispatcher, policy = _with(where, "on_invalid_call", always("Fix the call to {tool}."))
    assert dispatcher.dispatch(BAD, policy=policy).content == "Fix the call to refund."
    explained = dispatcher.explain("refund", policy=policy)["on_invalid_call"]
    assert isinstance(explained, tuple)
    assert [s.level for s in explained] == [where, "builtin"]


def _with(where: str, field: str, handler: Any) -> tuple[Dispatcher, ToolPolicy | None]:
    options = {field: handler}
    if where == "tool":
        return Dispatcher([tool(name="refund", check_docstring=False, **options)(
            refund.__wrapped__)]), None  # fmt: skip
    if where == "agent":
        return Dispatcher([refund], **options), None
    if where == "override":
        return Dispatcher([refund], overrides={"refund": ToolPolicy(**options)}), None
    if where == "global":
        toolguard.configure(**options)
        return Dispatcher([refund]), None
    return Dispatcher([refund]), ToolPolicy(**options)


def test_fail_in_on_invalid_call_is_an_explicit_choice() -> None:
    dispatcher = Dispatcher([refund], on_invalid_call="fail")
    with pytest.raises(ToolCallFailed) as raised:
        dispatcher.dispatch(BAD)
    assert isinstance(raised.value.__cause__, InvalidArguments)
    with pytest.raises(ToolCallFailed) as raised:
        dispatcher.dispatch(INVENTED)
    assert isinstance(raised.value.__cause__, UnknownTool)


def test_on_invalid_call_handlers_receive_the_error_and_may_decline() -> None:
    got: list[type[Exception]] = []

    def note(error: Exception, context: HandlerContext) -> str | None:
        got.append(type(error))
        return None  # not mine: the built-in answers

    dispatcher = Dispatcher([refund], on_invalid_call=note)
    assert dispatcher.dispatch(BAD).error_kind == "arguments"
    assert dispatcher.dispatch(INVENTED).error_kind == "unknown_tool"
    expected: list[type[Exception]] = [InvalidArguments, UnknownTool]
    assert got == expected


def test_the_builtin_is_the_field_level_message_shown_by_explain() -> None:
    explained = Dispatcher([refund]).explain("refund")
    assert explained["on_invalid_call"] == (Setting(send_exception_message, "builtin"),)


def test_async_paths_use_the_same_channel() -> None:
    dispatcher = Dispatcher([refund], on_error=fail, on_invalid_call=always("Try again."))
    result = asyncio.run(dispatcher.adispatch(BAD))
    assert result.content == "Try again."


def test_a_tool_failure_still_goes_to_on_error_not_on_invalid_call() -> None:
    @tool(name="down", check_docstring=False)
    def down() -> str:
        raise RuntimeError("db down")

    dispatcher = Dispatcher([down], on_error="Down.", on_invalid_call=fail)
    assert dispatcher.dispatch(ToolCall(name="down")).content == "Down."


def test_a_policy_file_sets_on_invalid_call(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('version = 1\n[agent]\non_invalid_call = "fail"\n')
    dispatcher = Dispatcher([refund], policy=load_policy(path))
    with pytest.raises(ToolCallFailed):
        dispatcher.dispatch(BAD)
    [setting, _] = dispatcher.explain("refund")["on_invalid_call"]  # type: ignore[misc]
    assert (setting.value, setting.level, setting.source) == (fail, "agent", str(path))


def test_a_policy_file_refuses_a_message_handler_in_on_invalid_call(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('version = 1\n[agent]\non_invalid_call = "always"\n')
    with pytest.raises(toolguard.PolicyFileError, match="belongs to on_error"):
        load_policy(path)
