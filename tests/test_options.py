"""One error type for a bad option, wherever it is given: ``InvalidOption``, with a
did-you-mean and the full list of what is allowed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import toolguard
from toolguard import (
    Dispatcher,
    InvalidOption,
    PolicyFileError,
    ToolDefinitionError,
    ToolPolicy,
    load_policy,
    tool,
)
from toolguard.handlers import always, generic_unless_visible, on


def _plain() -> str:
    return "ok"


BAD_OPTIONS: dict[str, Callable[[], Any]] = {
    "tool_name": lambda: tool(nmae="x")(_plain),  # type: ignore[call-overload]
    "dispatcher_on_error": lambda: Dispatcher([], on_eror="x"),  # type: ignore[call-arg]
    "configure_on_error": lambda: toolguard.configure(on_eror="x"),  # type: ignore[call-arg]
    "policy_log_level": lambda: ToolPolicy(log_level="loud"),
    "dispatcher_mode": lambda: Dispatcher([], return_direct_mode="anny"),  # type: ignore[arg-type]
    "handler_string": lambda: ToolPolicy(on_error="fial"),
}


@pytest.mark.parametrize("case", sorted(BAD_OPTIONS))
def test_every_bad_option_raises_invalid_option_which_old_except_clauses_still_catch(
    case: str,
) -> None:
    with pytest.raises(InvalidOption) as raised:
        BAD_OPTIONS[case]()
    error = raised.value
    assert isinstance(error, ToolDefinitionError)
    assert isinstance(error, ValueError) and isinstance(error, TypeError)
    assert "allowed" in str(error) or "handler names" in str(error)
    if case != "policy_log_level":  # 'loud' is close to no level: no suggestion
        assert "did you mean" in str(error)


def test_an_unknown_tool_option_suggests_and_lists_every_option_tool_takes() -> None:
    with pytest.raises(InvalidOption) as raised:
        tool(nmae="x")(_plain)  # type: ignore[call-overload]
    text = str(raised.value)
    assert "unknown option 'nmae' (did you mean 'name'?)" in text
    for option in ("name", "description", "check_docstring", "strict", "on_error",
                   "on_invalid_call", "max_logged_arguments"):  # fmt: skip
        assert option in text


def test_an_unknown_dispatcher_option_lists_the_dispatchers_own_options_too() -> None:
    with pytest.raises(InvalidOption) as raised:
        Dispatcher([], on_eror="x")  # type: ignore[call-arg]
    text = str(raised.value)
    assert text.startswith("Dispatcher(): unknown option 'on_eror' (did you mean 'on_error'?)")
    for option in ("overrides", "external_tools", "max_workers", "policy", "on_invalid_call"):
        assert option in text


def test_configure_names_itself_and_the_allowed_options() -> None:
    with pytest.raises(InvalidOption, match=r"^configure\(\): unknown option 'on_eror'.*allowed"):
        toolguard.configure(on_eror="x")  # type: ignore[call-arg]


def test_a_bad_value_suggests_the_closest_allowed_value_and_lists_them() -> None:
    with pytest.raises(InvalidOption) as raised:
        ToolPolicy(log_level="warnng")
    assert str(raised.value) == (
        "log_level='warnng' is not allowed (did you mean 'warning'?); "
        "allowed: debug, info, warning, error, critical"
    )


def test_a_policy_file_error_is_an_invalid_option(tmp_path: Path) -> None:
    path = tmp_path / "agent.toml"
    path.write_text('version = 1\n[agent]\nlog_level = "loud"\n')
    with pytest.raises(InvalidOption) as raised:
        load_policy(path)
    assert isinstance(raised.value, PolicyFileError)


@pytest.mark.parametrize(
    "text", ["fial", "fail_unless_visble", "send_exception_mesage", "generic_unless_visibl"]
)
def test_a_misspelt_handler_name_is_refused_with_a_suggestion_in_code(text: str) -> None:
    with pytest.raises(InvalidOption, match="did you mean"):
        Dispatcher([], on_error=text)
    with pytest.raises(InvalidOption, match="did you mean"):
        on(KeyError, text)


@pytest.mark.parametrize("name", ["generic_unless_visible", "always"])
def test_the_bare_name_of_a_message_handler_asks_for_its_message(name: str) -> None:
    with pytest.raises(InvalidOption, match=rf"write {name}\('...'\)"):
        ToolPolicy(on_error=name)


def test_a_blank_message_is_an_invalid_option() -> None:
    for make in (generic_unless_visible, always):
        with pytest.raises(InvalidOption):
            make("  ")
