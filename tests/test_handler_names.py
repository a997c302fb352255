"""A plain string that is a handler's name is that handler, in code as in policy files.

The design: plain strings as handlers mean the same in code and in policy files; a
string that is a handler's name (``"fail"``, ``"fail_unless_visible"``, ...) is that
handler or an error with a suggestion, never literal text sent to the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import toolguard
from tests._content import str_content
from toolguard import Dispatcher, ToolCall, ToolCallFailed, ToolError, ToolPolicy, tool
from toolguard.handlers import on

SECRET = "tgsecret-handler-names-1b7e"


def _down() -> str:
    raise RuntimeError(f"db refused {SECRET}")


def _visible() -> str:
    raise ToolError("There is no order 42; ask the user to check the number.")


def _agent(level: str, handler: Any, body: Callable[[], str] = _down) -> Dispatcher:
    """A one-tool agent with ``handler`` as ``on_error`` at ``level``."""
    if level == "tool":
        return Dispatcher([tool(name="down", check_docstring=False, on_error=handler)(body)])
    down = tool(name="down", check_docstring=False)(body)
    if level == "agent":
        return Dispatcher([down], on_error=handler)
    if level == "override":
        return Dispatcher([down], overrides={"down": ToolPolicy(on_error=handler)})
    assert level == "global"
    toolguard.configure(on_error=handler)
    return Dispatcher([down])


LEVELS = ("tool", "agent", "override", "global")


@pytest.mark.parametrize("level", LEVELS)
def test_the_string_fail_in_code_fails_the_invocation(level: str) -> None:
    """``on_error="fail"`` is the ``fail`` handler: ``ToolCallFailed``, not the word
    "fail" sent to the model as a fixed message."""
    with pytest.raises(ToolCallFailed) as raised:
        _agent(level, "fail").dispatch(ToolCall(name="down"))
    assert isinstance(raised.value.__cause__, RuntimeError)


@pytest.mark.parametrize("level", LEVELS)
def test_the_string_fail_unless_visible_in_code_is_that_handler(level: str) -> None:
    with pytest.raises(ToolCallFailed):
        _agent(level, "fail_unless_visible").dispatch(ToolCall(name="down"))
    visible = _agent(level, "fail_unless_visible", _visible).dispatch(ToolCall(name="down"))
    assert str_content(visible) == "There is no order 42; ask the user to check the number."


def test_the_string_send_exception_message_in_code_is_that_handler() -> None:
    """The handler documented to send ``str(error)``, named by a string: it sends it
    (the point is that the name is not sent as literal text)."""
    result = _agent("tool", "send_exception_message").dispatch(ToolCall(name="down"))
    assert str_content(result) == f"db refused {SECRET}"


def test_a_handler_name_inside_on_and_a_chain_is_that_handler() -> None:
    """``on(RuntimeError, "fail")`` and ``"fail" | ...`` name the handler too."""
    with pytest.raises(ToolCallFailed):
        _agent("tool", on(RuntimeError, "fail")).dispatch(ToolCall(name="down"))
    with pytest.raises(ToolCallFailed):
        _agent("tool", on(KeyError, "No such key.") | "fail").dispatch(ToolCall(name="down"))


def test_the_bare_name_generic_unless_visible_is_never_sent_as_text() -> None:
    """``"generic_unless_visible"`` needs its message (``generic_unless_visible(...)``):
    refused with a clear error, or answered by that handler, but never the name
    itself as the model's message."""
    refused: Exception | None = None
    try:
        result = _agent("tool", "generic_unless_visible").dispatch(ToolCall(name="down"))
    except (TypeError, ValueError) as error:
        refused = error
    if refused is not None:
        assert "generic_unless_visible(" in str(refused)
    else:
        assert str_content(result) != "generic_unless_visible"
        assert SECRET not in str_content(result)
