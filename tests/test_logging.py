"""Hidden causes: never in the model's content, logged exactly once, redacted."""

from __future__ import annotations

import ast
import asyncio
import json
import logging
import re
import traceback
from pathlib import Path
from typing import Any

import attrs
import pytest
import structlog
from structlog.typing import EventDict

import toolguard
from toolguard import Dispatcher, ToolCall, ToolError, ToolPolicy, tool
from toolguard.handlers import (
    always,
    fail_unless_visible,
    generic_unless_visible,
    on,
    send_exception_message,
)

SECRET = "sk-live-7f3a9c0e51b2"


def _deep_secret_failure() -> None:
    """Raise an unmarked error whose message, cause chain and frames carry the secret."""
    password = SECRET  # noqa: F841 - a local in the traceback's frame
    try:
        try:
            raise ConnectionError(f"auth failed for {SECRET}")
        except ConnectionError as low:
            raise KeyError(f"lookup {SECRET}") from low
    except KeyError:
        error = RuntimeError(f"service error {SECRET}")
        error.add_note(f"note {SECRET}")
        raise error  # noqa: B904 - implicit __context__ chain on purpose


@tool
def leaky(query: str) -> str:
    """A tool whose failure is full of secrets."""
    _deep_secret_failure()
    return "unreachable"


HIDING = {
    "builtin": None,
    "generic_unless_visible": generic_unless_visible("Failed ({error_id})."),
    "on-declines-then-builtin": on(ValueError, "not this one"),
    "fixed": "Something went wrong in {tool}.",
}


@pytest.mark.parametrize("name", list(HIDING))
def test_a_secret_never_reaches_the_content_and_is_logged_exactly_once(
    name: str, logs: list[dict[str, Any]]
) -> None:
    handler = HIDING[name]
    options: dict[str, Any] = {} if handler is None else {"on_error": handler}
    dispatcher = Dispatcher([leaky], **options)
    result = dispatcher.dispatch(ToolCall(name="leaky", arguments={"query": "q"}, id="c1"))
    assert result.is_error
    assert SECRET not in json.dumps(attrs.asdict(result, recurse=False), default=str)
    assert result.error_id is not None
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1
    [event] = hidden
    assert event["error_id"] == result.error_id
    assert event["tool"] == "leaky"
    assert event["call_id"] == "c1"
    assert isinstance(event["exc_info"], RuntimeError)
    rendered = "".join(traceback.format_exception(event["exc_info"]))
    assert rendered.count(SECRET) >= 3  # message, note, cause chain: all in the log
    mentions = [e for e in logs if SECRET in "".join(traceback.format_exception(e["exc_info"]))]
    assert mentions == hidden


def test_fail_unless_visible_keeps_the_secret_for_the_application_only(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher([leaky], on_error=fail_unless_visible)
    with pytest.raises(toolguard.ToolCallFailed) as caught:
        dispatcher.dispatch(ToolCall(name="leaky", arguments={"query": "q"}))
    assert SECRET not in str(caught.value)
    assert SECRET in str(caught.value.__cause__)
    assert [e["event"] for e in logs] == ["tool_call_failed"]


def test_the_error_id_in_the_message_matches_the_logged_event(
    logs: list[dict[str, Any]],
) -> None:
    result = Dispatcher([leaky]).dispatch(ToolCall(name="leaky", arguments={"query": "q"}))
    assert f"(error id {result.error_id})" in result.content
    assert logs[0]["error_id"] == result.error_id


def test_a_tool_error_with_a_cause_sends_the_message_and_logs_the_cause(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def find_order(order_id: int) -> str:
        try:
            raise LookupError(f"SELECT * FROM orders WHERE token='{SECRET}'")
        except LookupError as error:
            raise ToolError(f"There is no order {order_id}.") from error

    result = Dispatcher([find_order]).dispatch(
        ToolCall(name="find_order", arguments={"order_id": 42})
    )
    assert result.content == "There is no order 42."
    assert result.error_id is not None
    [event] = logs
    assert event["event"] == "tool_error_hidden"
    assert SECRET in str(event["exc_info"].__cause__)


@tool
def find_invoice(number: int) -> str:
    """Find an invoice."""
    try:
        raise LookupError(f"SELECT * FROM invoices WHERE token='{SECRET}'")
    except LookupError as error:
        raise ToolError(
            f"The {{tool}} service has no invoice {number} (ref {{error_id}})."
        ) from error


@pytest.mark.parametrize("on_error", [None, send_exception_message, fail_unless_visible, "Down."])
def test_a_tool_errors_message_quotes_the_id_its_cause_is_logged_under(
    on_error: Any, logs: list[dict[str, Any]]
) -> None:
    """Support matches the reference a user quotes to the one log line of the cause."""
    options = {} if on_error is None else {"on_error": on_error}
    result = Dispatcher([find_invoice], **options).dispatch(
        ToolCall(name="find_invoice", arguments={"number": 7})
    )
    assert result.error_id is not None
    assert result.content == (f"The find_invoice service has no invoice 7 (ref {result.error_id}).")
    [event] = logs
    assert event["error_id"] == result.error_id and event["event"] == "tool_error_hidden"
    assert SECRET in str(event["exc_info"].__cause__)


def test_a_message_quoting_the_id_is_logged_under_it_even_with_nothing_hidden(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def pay(amount: int) -> str:
        """Pay."""
        raise ToolError("The card was declined (ref {error_id}). Ask for another card.")

    result = Dispatcher([pay]).dispatch(ToolCall(name="pay", arguments={"amount": 3}))
    assert result.content == f"The card was declined (ref {result.error_id}). Ask for another card."
    [event] = logs
    assert event["error_id"] == result.error_id


def test_the_models_own_text_echoed_in_a_validation_message_is_not_filled(
    logs: list[dict[str, Any]],
) -> None:
    result = Dispatcher([find_invoice]).dispatch(
        ToolCall(name="find_invoice", arguments={"number": "{error_id}"})
    )
    assert result.error_kind == "arguments" and "'{error_id}'" in result.content
    assert result.error_id is None and logs == []


def test_a_tool_error_without_a_cause_hides_nothing_and_logs_nothing(
    logs: list[dict[str, Any]],
) -> None:
    @tool
    def nope() -> str:
        raise ToolError("Nothing to see.")

    result = Dispatcher([nope]).dispatch(ToolCall(name="nope"))
    assert result.content == "Nothing to see."
    assert result.error_id is None
    assert logs == []


def test_a_handler_replacing_a_visible_message_counts_as_hidden(
    logs: list[dict[str, Any]],
) -> None:
    @tool(on_error=always("Service unavailable ({error_id})."))
    def nope() -> str:
        raise ToolError("internal detail the operator wants hidden")

    result = Dispatcher([nope]).dispatch(ToolCall(name="nope"))
    assert result.content == f"Service unavailable ({result.error_id})."
    assert [e["event"] for e in logs] == ["tool_error_hidden"]


def test_success_logs_nothing(logs: list[dict[str, Any]]) -> None:
    Dispatcher([tool(name="ok")(lambda: "fine")]).dispatch(ToolCall(name="ok"))
    assert logs == []


def test_arguments_are_logged_redacted(logs: list[dict[str, Any]]) -> None:
    @tool
    def login(user: str, password: str, options: dict[str, Any]) -> str:
        raise RuntimeError("nope")

    arguments = {
        "user": "alice",
        "password": SECRET,
        "options": {"API_Key": SECRET, "nested": [{"session_token": SECRET}], "mode": "x"},
    }
    Dispatcher([login]).dispatch(ToolCall(name="login", arguments=json.dumps(arguments)))
    assert logs[0]["arguments"] == {
        "user": "alice",
        "password": "[redacted]",
        "options": {
            "API_Key": "[redacted]",
            "nested": [{"session_token": "[redacted]"}],
            "mode": "x",
        },
    }


def test_redact_keys_follow_the_precedence_chain(logs: list[dict[str, Any]]) -> None:
    @tool(redact=("city",))
    def weather(city: str, password: str) -> str:
        raise RuntimeError("nope")

    Dispatcher([weather]).dispatch(
        ToolCall(name="weather", arguments={"city": "Paris", "password": "p"})
    )
    assert logs[0]["arguments"] == {"city": "[redacted]", "password": "p"}


def test_unparseable_arguments_are_logged_by_length_only(logs: list[dict[str, Any]]) -> None:
    """A failure of a tool that ran elsewhere, called with arguments that are not JSON
    (the model's invalid arguments themselves are not logged: they hide nothing)."""
    dispatcher = Dispatcher([leaky])
    call = ToolCall(name="leaky", arguments='{"query": "' + SECRET)
    dispatcher.handle_error(call, RuntimeError("down"))
    assert logs[0]["arguments"] == f"[unparsed, {len(SECRET) + 11} chars]"


def test_log_level_comes_from_the_policy(logs: list[dict[str, Any]]) -> None:
    dispatcher = Dispatcher([leaky], log_level="error")
    dispatcher.dispatch(ToolCall(name="leaky", arguments={"query": "q"}))
    assert logs[0]["log_level"] == "error"


def test_toolguard_never_configures_structlog() -> None:
    structlog.reset_defaults()
    before = structlog.get_config()
    Dispatcher([leaky]).dispatch(ToolCall(name="leaky", arguments={"query": "q"}))
    asyncio.run(Dispatcher([leaky]).adispatch(ToolCall(name="leaky", arguments={"query": "q"})))
    assert structlog.get_config() == before
    assert not structlog.is_configured()


def test_a_broken_logging_pipeline_falls_back_to_stdlib_and_never_breaks_the_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(logger: Any, method: str, event: EventDict) -> EventDict:
        raise RuntimeError("processor bug")

    structlog.configure(processors=[explode])
    with caplog.at_level(logging.WARNING, logger="toolguard"):
        result = Dispatcher([leaky]).dispatch(ToolCall(name="leaky", arguments={"query": "q"}))
    assert result.is_error and result.error_id
    [record] = caplog.records
    assert "tool_error_hidden" in record.getMessage()
    assert result.error_id in record.getMessage()
    assert record.exc_info is not None and SECRET in str(record.exc_info[1])


def test_configure_rejects_unknown_options_with_a_suggestion() -> None:
    with pytest.raises(
        TypeError, match=r"unknown option 'log_levl' \(did you mean 'log_level'\?\)"
    ):
        toolguard.configure(log_levl="info")  # type: ignore[call-arg]  # the typo under test
    with pytest.raises(ValueError, match="log_level='loud' is not allowed"):
        toolguard.configure(log_level="loud")
    assert toolguard.get_config() == ToolPolicy()


# --- the events page: docs/logging.md lists every event with its fields ----------------------

PAGE = Path(__file__).parent.parent / "docs" / "logging.md"


def _documented() -> dict[str, set[str]]:
    """The page's table: event -> its fields (a row "the same fields as X" has X's too)."""
    rows: dict[str, set[str]] = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not cells[0].startswith("`"):
            continue
        event, fields = cells[0].strip("`"), cells[3]
        named = set(re.findall(r"`(\w+)`", fields))
        same = re.match(r"the same fields as `(\w+)`", fields)
        rows[event] = named | (rows[same.group(1)] if same else set())
    return rows


def _emitted_names() -> set[str]:
    """Every event name the package can log: emit()'s name argument, EVENT_* constants,
    and the {"event": ...} a session builds."""
    found: set[str] = set()
    for path in Path(toolguard.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "emit":
                if len(node.args) > 1 and isinstance(node.args[1], ast.Constant):
                    found.add(str(node.args[1].value))
            elif isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(
                node.value, ast.Constant
            ):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name) and target.id.startswith("EVENT_"):
                        found.add(str(node.value.value))
            elif isinstance(node, ast.Dict):
                for key, value in zip(node.keys, node.values, strict=True):
                    if (
                        isinstance(key, ast.Constant)
                        and key.value == "event"
                        and isinstance(value, ast.Constant)
                    ):
                        found.add(str(value.value))
    return found


def test_the_events_page_lists_every_event_the_package_logs_and_no_other() -> None:
    emitted = _emitted_names()
    assert {"tool_error_hidden", "breaker_opened", "mcp_call_aborted"} <= emitted  # the scan
    assert set(_documented()) == emitted


def test_every_logged_event_has_only_the_fields_the_page_lists(
    logs: list[dict[str, Any]],
) -> None:
    class Blank(Exception):
        def message_for_model(self) -> str:
            return " "

    class Broken(Exception):
        def message_for_model(self) -> str:
            raise RuntimeError("marker bug")

    def explodes(result: Any) -> bool:
        raise ZeroDivisionError("predicate bug")

    def buggy(error: Exception, context: Any) -> str:
        raise LookupError("handler bug")

    @tool(retries=toolguard.Retry(attempts=2, on=(ConnectionError,), initial=0.001, jitter=0))
    def flaky(kind: str) -> str:
        """Fails in the way asked."""
        raise {"blank": Blank(), "broken": Broken(), "conn": ConnectionError("down")}.get(
            kind, RuntimeError(kind)
        )

    agent = Dispatcher([flaky])
    for kind in ("blank", "broken", "conn"):
        agent.dispatch(ToolCall(name="flaky", arguments={"kind": kind}, id="c1"))
    with pytest.raises(toolguard.ToolCallFailed):
        Dispatcher([flaky], on_error="fail").dispatch(
            ToolCall(name="flaky", arguments={"kind": "x"})
        )
    with pytest.raises(LookupError):
        Dispatcher([flaky], on_error=buggy).dispatch(
            ToolCall(name="flaky", arguments={"kind": "x"})
        )
    Dispatcher([flaky], return_direct=explodes).dispatch(
        ToolCall(name="flaky", arguments={"kind": "x"})
    )
    session = Dispatcher([flaky], breaker=toolguard.Breaker(failures=1, cooldown=60)).session()
    session.dispatch(ToolCall(name="flaky", arguments={"kind": "x"}))
    session.reset()
    documented = _documented()
    seen = {event["event"] for event in logs}
    assert seen >= {
        "tool_error_hidden",
        "tool_call_failed",
        "handler_raised",
        "blank_model_message",
        "model_message_failed",
        "return_direct_failed",
        "tool_retry",
        "breaker_opened",
        "session_reset",
    }
    for event in logs:
        fields = set(event) - {"event", "log_level"}
        assert fields <= documented[event["event"]], (event["event"], fields)
