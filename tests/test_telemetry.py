"""Telemetry (``configure(telemetry=True)``) through the real OpenTelemetry SDK.

One ``execute_tool {name}`` span per guarded call, a child of the current span,
with the GenAI conventions' attributes and toolguard's own; the outcome of every
path; the error id on the span equal to the log event's and the model's; what
``record_exception`` records; retries as events; rounds, sessions, async, and the
in-place path; the two instruments; nothing at all when telemetry is off.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind, StatusCode

import toolguard
from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    Retry,
    RetryWithFeedback,
    Setting,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    tool,
)
from toolguard.handlers import fail

from ._otel import attributes, counted, install, timed, tool_spans

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"


@pytest.fixture
def telemetry() -> Iterator[None]:
    """The SDK installed and cleared; toolguard's telemetry on for this test."""
    install()
    toolguard.configure(telemetry=True)
    yield
    toolguard.reset_defaults()


def only_span() -> ReadableSpan:
    [span] = tool_spans()
    return span


def outer() -> Any:
    return trace.get_tracer("tests").start_as_current_span("agent run")


# --- tools --------------------------------------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
async def add_async(a: int, b: int) -> int:
    """Add two integers, later."""
    await asyncio.sleep(0)
    return a + b


@tool
def charge(card: str) -> str:
    """Charge a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@tool
def find_order(order_id: int) -> str:
    """Find an order."""
    raise ToolError(f"There is no order {order_id}. Ask the user to check it.")


@tool
def pick(color: str) -> str:
    """Pick a color."""
    raise RetryWithFeedback("Pick one of red, green or blue.")


@tool(timeout=0.05)
def slow() -> str:
    """Sleeps past its timeout."""
    time.sleep(0.5)
    return "late"


@tool(on_error=fail)
def strict() -> str:
    """Fails the invocation."""
    raise RuntimeError(f"strict failure {SECRET}")


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Answer the user."""
    return text


class Interrupt(ControlFlow):
    """A control-flow signal."""


@tool
def interrupting() -> str:
    """Asks the human."""
    raise Interrupt("ask the human")


def dispatcher() -> Dispatcher:
    return Dispatcher(
        [add, add_async, charge, find_order, pick, slow, strict, final_answer, interrupting]
    )


def call(name: str, arguments: Any = None, call_id: str = "call-1") -> ToolCall:
    return ToolCall(name=name, arguments=arguments or {}, id=call_id)


# --- the span -----------------------------------------------------------------------------


@pytest.mark.usefixtures("telemetry")
def test_a_call_is_one_execute_tool_span_under_the_current_span() -> None:
    """Name, kind, the conventions' attributes, toolguard's, and the parent span."""
    with dispatcher() as d, outer() as run:
        result = d.dispatch(call("add", {"a": 1, "b": 2}, "call_7"))
    assert result.content == "3"
    span = only_span()
    assert span.name == "execute_tool add"
    assert span.kind is SpanKind.INTERNAL
    assert span.parent is not None
    assert span.parent.span_id == run.get_span_context().span_id
    assert span.context is not None
    assert span.context.trace_id == run.get_span_context().trace_id
    assert attributes(span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_7",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
        "toolguard.outcome": "ok",
        "toolguard.return_direct": False,
        "toolguard.attempts": 1,
    }
    assert span.status.status_code is StatusCode.UNSET
    assert not span.events


@pytest.mark.usefixtures("telemetry")
def test_the_tools_own_spans_nest_under_the_toolguard_span() -> None:
    """The span is current while the tool runs (inline, and on a timeout's thread)."""
    inner_parents: list[int] = []

    def traced_work() -> str:
        with trace.get_tracer("tests").start_as_current_span("http GET") as inner:
            assert inner.parent is not None  # type: ignore[attr-defined]
            inner_parents.append(inner.parent.span_id)  # type: ignore[attr-defined]
        return "done"

    inline = tool(name="inline", check_docstring=False)(traced_work)
    threaded = tool(name="threaded", check_docstring=False, timeout=5)(traced_work)
    with Dispatcher([inline, threaded]) as d:
        d.dispatch(call("inline"))
        d.dispatch(call("threaded"))
    spans = {span.name: span for span in tool_spans()}
    own = [spans["execute_tool inline"], spans["execute_tool threaded"]]
    assert inner_parents == [span.context.span_id for span in own if span.context is not None]


@pytest.mark.usefixtures("telemetry")
def test_a_return_direct_success_says_so_on_the_span() -> None:
    with dispatcher() as d:
        assert d.dispatch(call("final_answer", {"text": "hi"})).return_direct
    assert attributes(only_span())["toolguard.return_direct"] is True


# --- every outcome ----------------------------------------------------------------------

OUTCOMES = [
    # (tool, arguments, outcome, error.type, handler, answered_by)
    ("charge", {"card": "4242"}, "hidden_error", "RuntimeError", None, "builtin"),
    ("find_order", {"order_id": 42}, "visible_error", "toolguard.errors.ToolError", None, None),
    ("pick", {"color": "mauve"}, "visible_error", "toolguard.errors.RetryWithFeedback", None, None),
    # the model's mistakes: answered by on_invalid_call, whose built-in sends the message
    ("add", {"a": "x", "b": 2}, "invalid_call", "toolguard.errors.InvalidArguments", "send", None),
    ("ad", {"a": 1}, "unknown_tool", "toolguard.errors.UnknownTool", "send", None),
    ("slow", {}, "timeout", "toolguard.errors.ToolTimeout", None, None),
]


@pytest.mark.usefixtures("telemetry")
@pytest.mark.parametrize(
    ("name", "arguments", "outcome", "error_type", "handler", "level"), OUTCOMES
)
def test_each_failure_path_has_its_outcome_and_error_type(
    name: str, arguments: dict[str, Any], outcome: str, error_type: str, handler: Any, level: Any
) -> None:
    """ERROR status, ``error.type`` the exception's class, the handler and its level."""
    with dispatcher() as d:
        result = d.dispatch(call(name, arguments))
    assert result.is_error
    span = only_span()
    found = attributes(span)
    assert found["toolguard.outcome"] == outcome
    assert found["error.type"] == error_type
    assert found["toolguard.answered_by"] == (level or "builtin")
    expected = "send_exception_message" if handler == "send" else "generic_unless_visible"
    assert found["toolguard.handler"].startswith(expected)
    assert span.status.status_code is StatusCode.ERROR
    assert found.get("toolguard.error_id") == result.error_id
    [event] = span.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == error_type


@pytest.mark.usefixtures("telemetry")
def test_an_open_breaker_is_unavailable_and_a_failed_invocation_is_failed() -> None:
    flaky = tool(name="flaky", check_docstring=False, breaker=Breaker(failures=1, cooldown=60))(
        charge.__wrapped__
    )
    with Dispatcher([flaky, strict]) as d:
        session = d.session()
        session.dispatch(call("flaky", {"card": "1"}, "c1"))
        assert session.dispatch(call("flaky", {"card": "1"}, "c2")).error_kind == "unavailable"
        with pytest.raises(ToolCallFailed) as failed:
            d.dispatch(call("strict", {}, "c3"))
    by_call = {attributes(s)["gen_ai.tool.call.id"]: s for s in tool_spans()}
    assert attributes(by_call["c1"])["toolguard.outcome"] == "hidden_error"
    assert attributes(by_call["c2"])["toolguard.outcome"] == "unavailable"
    assert attributes(by_call["c2"])["error.type"] == "toolguard.errors.ToolUnavailable"
    strict_span = attributes(by_call["c3"])
    assert strict_span["toolguard.outcome"] == "failed"
    assert strict_span["toolguard.handler"] == "fail"
    assert strict_span["toolguard.answered_by"] == "tool"
    assert strict_span["toolguard.error_id"] == failed.value.error_id
    assert strict_span["error.type"] == "RuntimeError"
    assert by_call["c3"].status.status_code is StatusCode.ERROR


@pytest.mark.usefixtures("telemetry")
def test_control_flow_passes_through_and_its_span_is_no_error() -> None:
    with dispatcher() as d, pytest.raises(Interrupt):
        d.dispatch(call("interrupting"))
    span = only_span()
    assert attributes(span)["toolguard.outcome"] == "control_flow"
    assert "error.type" not in attributes(span)
    assert span.status.status_code is StatusCode.UNSET


# --- the error id, the log and the trace ----------------------------------------------


@pytest.mark.usefixtures("telemetry")
def test_the_error_id_on_the_span_is_the_log_events_and_the_models(logs: Logs) -> None:
    """And the log event carries the span's trace and span ids."""
    with dispatcher() as d:
        result = d.dispatch(call("charge", {"card": "4242"}))
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    span = only_span()
    assert result.error_id is not None
    assert result.error_id in result.text
    assert event["error_id"] == result.error_id == attributes(span)["toolguard.error_id"]
    assert span.context is not None
    assert event["trace_id"] == format(span.context.trace_id, "032x")
    assert event["span_id"] == format(span.context.span_id, "016x")


def test_without_telemetry_the_log_event_has_no_trace_ids(logs: Logs) -> None:
    with dispatcher() as d:
        d.dispatch(call("charge", {"card": "4242"}))
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert "trace_id" not in event
    assert "span_id" not in event


# --- record_exception ---------------------------------------------------------------------


def _exception_event(span: ReadableSpan) -> dict[str, Any]:
    [event] = [e for e in span.events if e.name == "exception"]
    return dict(event.attributes or {})


@pytest.mark.usefixtures("telemetry")
def test_record_exception_type_is_the_default_and_records_no_message() -> None:
    with dispatcher() as d:
        result = d.dispatch(call("charge", {"card": "4242"}))
    span = only_span()
    assert _exception_event(span) == {
        "exception.type": "RuntimeError",
        "toolguard.error_id": result.error_id,
    }
    assert SECRET not in span.to_json()


@pytest.mark.usefixtures("telemetry")
def test_record_exception_full_records_message_and_traceback() -> None:
    toolguard.configure(record_exception="full")
    with dispatcher() as d:
        result = d.dispatch(call("charge", {"card": "4242"}))
    event = _exception_event(only_span())
    assert event["exception.type"] == "RuntimeError"
    assert SECRET in event["exception.message"]
    assert "charge" in event["exception.stacktrace"]
    assert event["toolguard.error_id"] == result.error_id


@pytest.mark.usefixtures("telemetry")
def test_record_exception_none_records_no_event_and_names_the_outcome() -> None:
    toolguard.configure(record_exception="none")
    with dispatcher() as d:
        result = d.dispatch(call("charge", {"card": "4242"}))
    span = only_span()
    assert not span.events
    assert attributes(span)["error.type"] == "hidden_error"
    assert attributes(span)["toolguard.error_id"] == result.error_id


def test_configure_refuses_what_it_does_not_know() -> None:
    with pytest.raises(ValueError, match="record_exception='everything'"):
        toolguard.configure(record_exception="everything")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="telemetry='yes'"):
        toolguard.configure(telemetry="yes")  # type: ignore[arg-type]


def test_reset_defaults_turns_telemetry_off() -> None:
    install()
    toolguard.configure(telemetry=True, record_exception="full")
    toolguard.reset_defaults()
    with dispatcher() as d:
        d.dispatch(call("add", {"a": 1, "b": 2}))
    assert tool_spans() == []


def test_telemetry_off_imports_no_opentelemetry() -> None:
    """Off by default: a dispatch does not even import the API."""
    code = (
        "import sys, toolguard\n"
        "from toolguard import Dispatcher, ToolCall, tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n"
        "Dispatcher([add]).dispatch(ToolCall(name='add', arguments={'a': 1, 'b': 2}))\n"
        "print(sorted(m for m in sys.modules if m.startswith('opentelemetry')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# --- retries, async, rounds, sessions, the in-place path --------------------------------


@pytest.mark.usefixtures("telemetry")
def test_retries_are_one_span_with_an_event_per_retried_attempt() -> None:
    attempts: list[int] = []
    always = [False]

    def wobbly() -> str:
        attempts.append(1)
        if always[0] or len(attempts) < 3:
            raise ConnectionError(f"reset by peer {SECRET}")
        return "ok"

    retry = Retry(attempts=3, on=(ConnectionError,), initial=0.001, jitter=0, sleep=lambda s: None)
    flaky = tool(name="wobbly", check_docstring=False, retries=retry)(wobbly)
    with Dispatcher([flaky]) as d:
        assert d.dispatch(call("wobbly")).content == "ok"
        always[0] = True  # every attempt fails now
        assert d.dispatch(call("wobbly", call_id="call-2")).is_error
    ok, failed = tool_spans()
    assert attributes(ok)["toolguard.outcome"] == "ok"
    assert attributes(ok)["toolguard.attempts"] == 3
    retries = [e for e in ok.events if e.name == "toolguard.retry"]
    assert [dict(e.attributes or {})["toolguard.attempt"] for e in retries] == [1, 2]
    assert dict(retries[0].attributes or {})["exception.type"] == "ConnectionError"
    assert attributes(failed)["toolguard.attempts"] == 3
    assert attributes(failed)["toolguard.outcome"] == "hidden_error"
    assert SECRET not in ok.to_json() + failed.to_json()


@pytest.mark.usefixtures("telemetry")
async def test_async_calls_and_rounds_are_one_span_per_call_under_the_caller() -> None:
    with dispatcher() as d:
        with outer() as run:
            await d.adispatch(call("add_async", {"a": 1, "b": 2}, "a1"))
            await d.adispatch(call("add", {"a": 1, "b": 2}, "a2"), offload=True)
            round_ = await d.arun(
                [
                    call("add_async", {"a": 1, "b": 2}, "r1"),
                    call("charge", {"card": "1"}, "r2"),
                    call("nope", {}, "r3"),
                ]
            )
        assert [r.call_id for r in round_.results] == ["r1", "r2", "r3"]
    spans = {attributes(s)["gen_ai.tool.call.id"]: s for s in tool_spans()}
    assert sorted(spans) == ["a1", "a2", "r1", "r2", "r3"]
    for span in spans.values():
        assert span.parent is not None
        assert span.parent.span_id == run.get_span_context().span_id
    assert attributes(spans["r2"])["toolguard.outcome"] == "hidden_error"
    assert attributes(spans["r3"])["toolguard.outcome"] == "unknown_tool"
    assert spans["r3"].name == "execute_tool nope"


@pytest.mark.usefixtures("telemetry")
def test_a_sync_round_on_the_pool_is_one_span_per_call_under_the_caller() -> None:
    with dispatcher() as d, outer() as run:
        calls = [call("add", {"a": i, "b": 1}, f"c{i}") for i in range(3)]
        d.run([*calls, call("find_order", {"order_id": 1}, "c3")])
        d.session().run(calls[:1], step="m1")
    spans = tool_spans()
    assert len(spans) == 5
    for span in spans:
        assert span.parent is not None
        assert span.parent.span_id == run.get_span_context().span_id
    outcomes = sorted(attributes(s)["toolguard.outcome"] for s in spans)
    assert outcomes == ["ok", "ok", "ok", "ok", "visible_error"]


@pytest.mark.usefixtures("telemetry")
async def test_the_in_place_path_answers_in_spans_of_its_own(logs: Logs) -> None:
    """``handle_error``/``handle_result`` (a tool another framework ran) and sessions'."""
    d = Dispatcher([add], external_tools=["web_search"])
    session = d.session(id="thread-1")
    with outer() as run:
        answered = d.handle_error(call("web_search", {}, "e1"), RuntimeError(SECRET))
        await session.ahandle_error(call("web_search", {}, "e2"), ToolError("No results."))
        session.handle_result(call("web_search", {}, "e3"), {"hits": 3})
        await d.ahandle_result(call("web_search", {}, "e4"), "fine")
    spans = {attributes(s)["gen_ai.tool.call.id"]: s for s in tool_spans()}
    assert sorted(spans) == ["e1", "e2", "e3", "e4"]
    for span in spans.values():
        assert span.name == "execute_tool web_search"
        assert span.parent is not None
        assert span.parent.span_id == run.get_span_context().span_id
        assert "gen_ai.tool.type" not in attributes(span)  # not toolguard's to say
    assert [attributes(spans[k])["toolguard.outcome"] for k in ("e1", "e2", "e3", "e4")] == [
        "hidden_error",
        "visible_error",
        "ok",
        "ok",
    ]
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] == answered.error_id == attributes(spans["e1"])["toolguard.error_id"]
    assert spans["e1"].context is not None
    assert event["span_id"] == format(spans["e1"].context.span_id, "016x")
    assert SECRET not in spans["e1"].to_json()


@pytest.mark.usefixtures("telemetry")
def test_a_session_admit_refused_by_an_open_breaker_is_an_unavailable_span() -> None:
    d = Dispatcher(
        [add],
        external_tools=["web_search"],
        overrides={"web_search": ToolPolicy(breaker=Breaker(failures=1, cooldown=60))},
    )
    session = d.session()
    session.handle_error(call("web_search", {}, "e1"), RuntimeError("down"))
    refused = session.admit(call("web_search", {}, "e2"))
    assert refused is not None and refused.error_kind == "unavailable"
    outcomes = [attributes(s)["toolguard.outcome"] for s in tool_spans()]
    assert outcomes == ["hidden_error", "unavailable"]


@pytest.mark.usefixtures("telemetry")
def test_invoke_is_traced_too() -> None:
    assert add.invoke({"a": 2, "b": 2}).content == "4"
    assert only_span().name == "execute_tool add"


# --- metrics ------------------------------------------------------------------------------


@pytest.mark.usefixtures("telemetry")
def test_calls_are_counted_by_tool_and_outcome_and_timed() -> None:
    before = {
        "ok": counted("add", "ok"),
        "invalid": counted("add", "invalid_call"),
        "hidden": counted("charge", "hidden_error"),
        "other": counted("_OTHER", "unknown_tool"),
        "timed_add": timed("add"),
        "timed_ext": timed("web_search"),
    }
    with Dispatcher([add, charge], external_tools=["web_search"]) as d:
        d.dispatch(call("add", {"a": 1, "b": 2}))
        d.dispatch(call("add", {"a": 1, "b": 2}))
        d.dispatch(call("add", {"a": "x", "b": 2}))
        d.dispatch(call("charge", {"card": "1"}))
        d.dispatch(call("a-name-the-model-invented", {}))
        d.handle_result(call("web_search", {}), "fine")
    assert counted("add", "ok") - before["ok"] == 2
    assert counted("add", "invalid_call") - before["invalid"] == 1
    assert counted("charge", "hidden_error") - before["hidden"] == 1
    # an invented name is no metric dimension: every such call is "_OTHER"
    assert counted("_OTHER", "unknown_tool") - before["other"] == 1
    assert counted("a-name-the-model-invented", "unknown_tool") == 0
    assert timed("add") - before["timed_add"] == 3
    # a tool another framework ran: toolguard did not bound its run, so it is not timed
    assert timed("web_search") - before["timed_ext"] == 0


@pytest.mark.usefixtures("telemetry")
def test_a_handler_that_raises_fails_the_span_with_the_id_it_was_logged_with(logs: Logs) -> None:
    """The handler's bug propagates; the span names the tool's exception and the id."""

    def buggy(error: Exception, context: Any) -> str:
        raise KeyError("the handler's own bug")

    broken = tool(name="broken", check_docstring=False, on_error=buggy)(charge.__wrapped__)
    with Dispatcher([broken]) as d, pytest.raises(KeyError):
        d.dispatch(call("broken", {"card": "1"}))
    [event] = [e for e in logs if e["event"] == "handler_raised"]
    found = attributes(only_span())
    assert found["toolguard.outcome"] == "failed"
    assert found["toolguard.answered_by"] == "tool"
    assert found["error.type"] == "RuntimeError"
    assert found["toolguard.error_id"] == event["error_id"]


# --- one agent's own switch (Dispatcher(telemetry=), a policy file's key) -----------------

TRACED_FILE = """
version = 1

[agent]
telemetry = true
"""


def _all_paths(d: Dispatcher) -> None:
    d.dispatch(call("add", {"a": 1, "b": 2}, "ok"))
    d.dispatch(call("charge", {"card": "4242"}, "hidden"))
    d.handle_error(call("web_search", {}, "elsewhere"), RuntimeError(SECRET))
    d.handle_result(call("web_search", {}, "elsewhere-ok"), "fine")
    asyncio.run(d.arun([call("add_async", {"a": 1, "b": 2}, "async")]))


def test_an_agent_turns_telemetry_on_for_its_own_calls_only(logs: Logs) -> None:
    install()
    traced = Dispatcher([add, add_async, charge], telemetry=True, external_tools=["web_search"])
    plain = Dispatcher([add, add_async, charge], external_tools=["web_search"])
    _all_paths(plain)
    assert tool_spans() == []
    assert plain.explain("add")["telemetry"] == Setting(False, "builtin")
    assert traced.explain("add")["telemetry"] == Setting(True, "agent")
    _all_paths(traced)
    outcomes = {attributes(s)["gen_ai.tool.call.id"]: s for s in tool_spans()}
    assert {k: attributes(v)["toolguard.outcome"] for k, v in outcomes.items()} == {
        "ok": "ok",
        "hidden": "hidden_error",
        "elsewhere": "hidden_error",
        "elsewhere-ok": "ok",
        "async": "ok",
    }
    [*_, event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    context = outcomes["elsewhere"].context
    assert context is not None and event["span_id"] == format(context.span_id, "016x")


@pytest.mark.usefixtures("telemetry")
def test_an_agent_turns_telemetry_off_whatever_configure_says() -> None:
    quiet = Dispatcher([add, add_async, charge], telemetry=False, external_tools=["web_search"])
    _all_paths(quiet)
    assert tool_spans() == []
    assert quiet.explain("add")["telemetry"] == Setting(False, "agent")
    assert Dispatcher([add]).explain("add")["telemetry"] == Setting(True, "global")


def test_a_policy_file_turns_an_agents_telemetry_on(tmp_path: Any) -> None:
    install()
    path = tmp_path / "traced.toml"
    path.write_text(TRACED_FILE)
    d = Dispatcher([add], policy=toolguard.load_policy(path))
    assert d.explain("add")["telemetry"] == Setting(True, "agent")
    d.dispatch(call("add", {"a": 1, "b": 2}))
    assert attributes(only_span())["toolguard.outcome"] == "ok"
    # the operator's file is the later word over the code's switch
    assert Dispatcher([add], telemetry=False).explain("add")["telemetry"] == Setting(False, "agent")
    overruled = Dispatcher([add], telemetry=False, policy=toolguard.load_policy(path))
    assert overruled.explain("add")["telemetry"] == Setting(True, "agent")


def test_a_bad_telemetry_value_is_refused_in_code_and_in_a_file(tmp_path: Any) -> None:
    with pytest.raises(toolguard.InvalidOption, match="telemetry='yes' is not allowed"):
        Dispatcher([add], telemetry="yes")  # type: ignore[arg-type]
    path = tmp_path / "bad.toml"
    path.write_text(TRACED_FILE.replace("true", '"yes"'))
    with pytest.raises(toolguard.PolicyFileError) as error:
        toolguard.load_policy(path)
    assert 'bad.toml:5: agent.telemetry: expected true or false, got the string "yes"' in str(
        error.value
    ) or "agent.telemetry: expected true or false" in str(error.value)
    path.write_text(TRACED_FILE.replace("[agent]", '[tools."add"]'))
    with pytest.raises(toolguard.PolicyFileError, match="telemetry"):
        toolguard.load_policy(path)


def test_an_agent_asking_for_telemetry_without_the_extra_is_told_what_to_install() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None  # as if the extra were not installed\n"
        "from toolguard import Dispatcher, tool\n"
        "@tool\n"
        "def add(a: int, b: int) -> int:\n"
        "    '''Add.'''\n"
        "    return a + b\n"
        "Dispatcher([add])  # following configure(): nothing is imported\n"
        "Dispatcher([add], telemetry=False)\n"
        "try:\n"
        "    Dispatcher([add], telemetry=True)\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert 'pip install "toolguard-agents[otel]"' in done.stdout


def test_with_policy_keeps_the_code_s_telemetry_switch(tmp_path: Any) -> None:
    install()
    d = Dispatcher([add], telemetry=True)
    assert d.with_policy(None).explain("add")["telemetry"] == Setting(True, "agent")
    path = tmp_path / "off.toml"
    path.write_text(TRACED_FILE.replace("true", "false"))
    assert d.with_policy(toolguard.load_policy(path)).explain("add")["telemetry"] == Setting(
        False, "agent"
    )
