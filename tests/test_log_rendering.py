"""What toolguard's events look like once the application's structlog renders them.

Each test configures structlog the way its documentation does (the console renderer
with rich and without, JSON with ``format_exc_info`` or ``dict_tracebacks``, the
standard library's ``LoggerFactory`` under a ``ProcessorFormatter``), renders the real
event of a real failure, and reads the text a user would read: no value toolguard
redacts in ``arguments`` appears anywhere in it, while the traceback still says where
the tool failed (its file, function and line) and what it did not redact.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import re
import secrets
import tempfile
import traceback
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import structlog
from hypothesis import assume, given
from hypothesis import strategies as st

from tests._hypothesis import PROFILE
from toolguard import Dispatcher, ToolCall, ToolCallFailed, tool
from toolguard._text import normalised
from toolguard.guard import _locals
from toolguard.guard._locals import mask_locals
from toolguard.guard._redaction import REDACTED, Secrets, redact
from toolguard.handlers import fail
from toolguard.policy._values import DEFAULT_REDACT, LOG_FRAMES, LogFrames

Render = Callable[[Callable[[], object]], str]

_HERE = Path(tempfile.mkdtemp(prefix="toolguard-rendering-"))
_modules = itertools.count()


# --- structlog, configured as its documentation says -----------------------------------


def _printed(processors: list[Any]) -> Render:
    def render(act: Callable[[], object]) -> str:
        out = io.StringIO()
        structlog.configure(
            processors=processors,
            logger_factory=structlog.PrintLoggerFactory(out),
            cache_logger_on_first_use=False,
        )
        try:
            act()
        finally:
            structlog.reset_defaults()
        return out.getvalue()

    return render


def _stdlib(renderer: Any, *pre: Any) -> Render:
    """structlog's "rendering using structlog-based formatters within logging" recipe."""

    def render(act: Callable[[], object]) -> str:
        out = io.StringIO()
        handler = logging.StreamHandler(out)
        handler.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[
                    structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    *pre,
                    renderer,
                ],
            )
        )
        stdlib = logging.getLogger("toolguard")
        stdlib.addHandler(handler)
        stdlib.setLevel(logging.DEBUG)
        structlog.configure(
            processors=[
                structlog.stdlib.add_log_level,
                structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
            ],
            logger_factory=structlog.stdlib.LoggerFactory(),
            wrapper_class=structlog.stdlib.BoundLogger,
            cache_logger_on_first_use=False,
        )
        try:
            act()
        finally:
            structlog.reset_defaults()
            stdlib.removeHandler(handler)
            stdlib.setLevel(logging.NOTSET)
        return out.getvalue()

    return render


def _rich(show_locals: bool = True) -> Any:
    return structlog.dev.ConsoleRenderer(
        colors=False,
        exception_formatter=structlog.dev.RichTracebackFormatter(
            show_locals=show_locals, width=200, color_system=None
        ),
    )


CONFIGURATIONS: dict[str, Render] = {
    "console, rich, locals": _printed([_rich()]),
    "console, rich, no locals": _printed([_rich(show_locals=False)]),
    "console, plain": _printed(
        [
            structlog.dev.ConsoleRenderer(
                colors=False, exception_formatter=structlog.dev.plain_traceback
            )
        ]
    ),
    "json, format_exc_info": _printed(
        [structlog.processors.format_exc_info, structlog.processors.JSONRenderer()]
    ),
    "json, dict_tracebacks": _printed(
        [structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()]
    ),
    "stdlib, console, rich": _stdlib(_rich()),
    "stdlib, json, dict_tracebacks": _stdlib(
        structlog.processors.JSONRenderer(), structlog.processors.dict_tracebacks
    ),
}


def test_the_default_console_renderer_is_the_rich_one_with_locals() -> None:
    """The case the issue found: structlog's own default, with rich installed."""
    formatter = structlog.dev.ConsoleRenderer().exception_formatter
    assert isinstance(formatter, structlog.dev.RichTracebackFormatter)
    assert formatter.show_locals


def _forms(secret: str) -> set[str]:
    """The secret as any renderer could print it: as is, repr'd, JSON-escaped, both."""
    inner = repr(secret)[1:-1]
    return {
        secret,
        inner,
        json.dumps(secret)[1:-1],
        json.dumps(inner)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        json.dumps(inner, ensure_ascii=False)[1:-1],
    }


def _leaked(text: str, secret: str) -> bool:
    return any(form in text for form in _forms(secret))


# --- one tool, every configuration -------------------------------------------------------


def _connect(url: str) -> None:
    raise ConnectionError("the payment gateway refused the connection")


@tool
def charge(order_id: int, api_key: str, credentials: dict[str, str]) -> str:
    """Charge an order."""
    header = f"Bearer {api_key}"
    box = {"headers": [header], "order": order_id}  # noqa: F841 - a local to render
    _connect(f"https://pay.example/?key={credentials['password']}&order={order_id}")
    return "charged"


CHARGE_LINE = next(  # the line of charge that called _connect(...)
    number
    for number, line in enumerate(Path(__file__).read_text().splitlines(), start=1)
    if line.strip().startswith('_connect(f"https')
)


def _charge_call() -> tuple[ToolCall, str, str]:
    key, password = f"sk-live-{secrets.token_hex(8)}", f"pw-{secrets.token_hex(8)}"
    arguments = {"order_id": 42, "api_key": key, "credentials": {"password": password}}
    return ToolCall(name="charge", arguments=arguments, id="call_1"), key, password


@pytest.mark.parametrize("configuration", list(CONFIGURATIONS))
def test_a_redacted_argument_is_nowhere_in_the_rendered_event(configuration: str) -> None:
    render = CONFIGURATIONS[configuration]
    call, key, password = _charge_call()
    results: list[Any] = []
    text = render(lambda: results.append(Dispatcher([charge]).dispatch(call)))
    [result] = results
    assert result.error_id in text  # the event was rendered
    assert "[redacted]" in text
    assert not _leaked(text, key) and not _leaked(text, password)
    # the traceback still shows where the tool failed
    assert "charge" in text and "_connect" in text
    assert re.search(rf"\b{CHARGE_LINE}\b", text)
    assert "the payment gateway refused the connection" in text


@pytest.mark.parametrize("configuration", ["console, rich, locals", "json, dict_tracebacks"])
def test_locals_that_hold_no_secret_are_still_shown(configuration: str) -> None:
    call, key, _ = _charge_call()
    text = CONFIGURATIONS[configuration](lambda: Dispatcher([charge]).dispatch(call))
    assert not _leaked(text, key)
    assert re.search(r"order_id\W+42", text)  # a local of the stand-in frame, as it was
    assert re.search(r"header\W+.?\[redacted\]", text)  # derived from api_key: masked


@pytest.mark.parametrize("configuration", ["console, rich, locals", "json, dict_tracebacks"])
def test_toolguards_own_frames_hide_the_call_too(configuration: str) -> None:
    """``log_frames="all"`` keeps the runner's frames, which hold the call."""
    call, key, password = _charge_call()
    agent = Dispatcher([charge], log_frames="all")
    text = CONFIGURATIONS[configuration](lambda: agent.dispatch(call))
    assert "_pipeline.py" in text  # toolguard's frames are there
    assert not _leaked(text, key) and not _leaked(text, password)


@pytest.mark.parametrize("configuration", ["console, rich, locals", "json, dict_tracebacks"])
def test_a_failed_invocation_and_a_raising_handler_hide_it_too(configuration: str) -> None:
    call, key, _ = _charge_call()

    def broken(error: Exception, context: object) -> str:
        raise LookupError("the handler broke")

    def failing() -> None:
        with pytest.raises(ToolCallFailed):
            Dispatcher([charge], on_error=fail).dispatch(call)
        with pytest.raises(LookupError):
            Dispatcher([charge], on_error=broken).dispatch(call)

    text = CONFIGURATIONS[configuration](failing)
    assert "tool_call_failed" in text and "handler_raised" in text
    assert not _leaked(text, key)


def test_a_secret_in_an_exception_group_member_and_a_cause_is_masked() -> None:
    @tool
    def fan_out(token: str) -> str:
        """Several calls at once."""
        try:
            raise KeyError("no such account")
        except KeyError as missing:
            raise ExceptionGroup("calls failed", [_member(token)]) from missing

    token = f"tok-{secrets.token_hex(8)}"
    call = ToolCall(name="fan_out", arguments={"token": token})
    for configuration in ("console, rich, locals", "json, dict_tracebacks"):
        text = CONFIGURATIONS[configuration](lambda: Dispatcher([fan_out]).dispatch(call))
        assert "calls failed" in text and "no such account" in text and "_member" in text
        assert not _leaked(text, token), configuration


def _member(value: str) -> Exception:
    try:
        raise TimeoutError("one call timed out")
    except TimeoutError as error:
        return error


def test_the_application_keeps_the_exception_object() -> None:
    """``exc_info`` is the exception itself; only its traceback's frames changed."""
    call, key, _ = _charge_call()
    with pytest.raises(ToolCallFailed) as caught:
        _printed([structlog.processors.dict_tracebacks, structlog.processors.JSONRenderer()])(
            lambda: Dispatcher([charge], on_error=fail).dispatch(call)
        )
    cause = caught.value.__cause__
    assert isinstance(cause, ConnectionError)
    frames = []
    tb = cause.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_name, tb.tb_lineno, dict(tb.tb_frame.f_locals)))
        tb = tb.tb_next
    assert frames[0][:2] == ("charge", CHARGE_LINE)
    assert all(key not in repr(values) for _, _, values in frames)


def test_a_call_without_redacted_arguments_keeps_its_real_frames() -> None:
    @tool
    def plain(query: str) -> str:
        """No secret here."""
        raise RuntimeError("down")

    seen: list[Any] = []

    def keep(logger: Any, method: str, event: Any) -> Any:
        seen.append(event["exc_info"].__traceback__.tb_frame)
        raise structlog.DropEvent

    structlog.configure(processors=[keep])
    Dispatcher([plain]).dispatch(ToolCall(name="plain", arguments={"query": "q"}))
    assert seen[0].f_code is plain.__wrapped__.__code__  # the tool's own frame, untouched


# --- the property: any redacted name, any value -------------------------------------------------

WORDS = sorted({normalised(key) for key in DEFAULT_REDACT})


@st.composite
def secret_names(draw: st.DrawFn) -> str:
    """A parameter name the default redaction masks: a secret word, cut into parts joined
    by ``_`` or camel case, in any case, between other words."""
    word = draw(st.sampled_from(WORDS))
    cuts = sorted(draw(st.sets(st.integers(1, len(word) - 1), max_size=2)))
    parts = [word[a:b] for a, b in itertools.pairwise([0, *cuts, len(word)])]
    style = draw(st.sampled_from(["snake", "camel", "upper"]))
    if style == "snake":
        core = "_".join(parts)
    elif style == "camel":
        core = parts[0] + "".join(p.capitalize() for p in parts[1:])
    else:
        core = "_".join(parts).upper()
    before = draw(st.sampled_from(["", "x_", "my_", "user", "db_"]))
    after = draw(st.sampled_from(["", "_2", "_value", "Id"]))
    return f"{before}{core}{after}"


values = st.builds(
    lambda head, tail: f"{head}{tail}",
    st.text(st.characters(categories=("L", "N")), min_size=12, max_size=12),
    st.text(
        st.characters(categories=("L", "N", "P", "S", "Zs"), exclude_characters="\\"),
        max_size=40,
    ),
)


def _module(source: str) -> dict[str, Any]:
    """``source`` as a module with a real file, so renderers show its lines."""
    path = _HERE / f"tools_{next(_modules)}.py"
    path.write_text(source, encoding="utf-8")
    namespace: dict[str, Any] = {"__name__": path.stem}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


_TOOL = '''
def helper(value):
    raise ConnectionError("the service refused")


def lookup({name}: str, note: str) -> str:
    """Look something up."""
    header = "Bearer " + {name}
    box = {{"values": [{name}, note], "size": len({name})}}
    return helper({name})
'''


@PROFILE
@given(
    name=secret_names(),
    value=values,
    note=values,
    as_json=st.booleans(),
    frames=st.sampled_from(LOG_FRAMES),
    configuration=st.sampled_from(sorted(CONFIGURATIONS)),
)
def test_no_redacted_argument_value_is_ever_rendered(
    name: str, value: str, note: str, as_json: bool, frames: LogFrames, configuration: str
) -> None:
    assert redact({name: value, "note": note}, DEFAULT_REDACT) == {name: REDACTED, "note": note}
    assume(not any(form in note or note in form for form in _forms(value)))
    lookup = tool(_module(_TOOL.format(name=name))["lookup"])
    arguments: dict[str, Any] = {name: value, "note": note}
    call = ToolCall(name="lookup", arguments=json.dumps(arguments) if as_json else arguments)
    agent = Dispatcher([lookup], log_frames=frames)
    text = CONFIGURATIONS[configuration](lambda: agent.dispatch(call))
    assert "tool_error_hidden" in text
    assert not _leaked(text, value), (name, configuration)
    assert "lookup" in text and "helper" in text  # where it failed


# --- the stand-in frames themselves ---------------------------------------------------------


def _nested(password: str, rows: list[int]) -> None:
    total = sum(rows)  # noqa: F841 - a local to render
    # fmt: off
    {"a": 1}[
        password[:0] + "missing"
    ]
    # fmt: on


def _caught() -> KeyError:
    try:
        _nested(f"pw-{secrets.token_hex(8)}", [1, 2])
    except KeyError as error:
        return error
    raise AssertionError("unreachable")


def _secrets_of(**arguments: Any) -> Secrets:
    found = Secrets(DEFAULT_REDACT)
    redact(arguments, DEFAULT_REDACT, None, found)
    return found


def test_a_stand_in_frame_prints_exactly_as_the_real_one() -> None:
    """File, line, function, source line and the carets under the failing expression
    (a multi-line one here): the standard library's rendering does not change."""
    error = _caught()
    before = "".join(traceback.format_exception(error))
    password = error.__traceback__.tb_next.tb_frame.f_locals["password"]  # type: ignore[union-attr]
    mask_locals(error, _secrets_of(password=password))
    assert "".join(traceback.format_exception(error)) == before
    [_, stand_in] = _frames_of(error)
    assert stand_in.f_locals == {"password": REDACTED, "rows": [1, 2], "total": 3}


def _frames_of(error: BaseException) -> list[types.FrameType]:
    frames = []
    tb = error.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    return frames


def test_masking_never_raises_and_drops_the_traceback_rather_than_leak(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> object:
        raise RuntimeError("stand-ins broke")

    monkeypatch.setattr(_locals, "_stand_in", broken)
    error = _caught()
    password = _frames_of(error)[1].f_locals["password"]
    mask_locals(error, _secrets_of(password=password))
    assert error.__traceback__ is None


def test_a_local_name_compile_refuses_leaves_a_stand_in_without_locals() -> None:
    frame = _frames_of(_caught())[1]
    values = {"password": REDACTED, "rows": [1]}
    original = _locals._stand_in_code

    def refusing(names: tuple[str, ...], *shape: int) -> types.CodeType:
        if names:
            raise SyntaxError("too many arguments")
        return original(names, *shape)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_locals, "_stand_in_code", refusing)
        stand_in, _ = _locals._stand_in(frame, frame.f_lasti, frame.f_lineno, values)
    assert stand_in.f_locals == {}
    assert stand_in.f_code.co_name == "_nested"


# --- README's and SECURITY.md's promises about logs, in rendered output ------------------------


@tool
def settle(invoice: int, token: str) -> str:
    """Settle an invoice."""
    try:
        raise TimeoutError("ledger.internal:5432 did not answer")
    except TimeoutError as slow:
        error = ConnectionError("the ledger is unreachable")
        error.add_note("retried on replica 2")
        raise error from slow


@pytest.mark.parametrize("configuration", ["json, format_exc_info", "json, dict_tracebacks"])
def test_the_logging_promises_hold_in_the_rendered_output(configuration: str) -> None:
    """README ("Logging") and SECURITY.md ("What toolguard promises", "What toolguard does
    not promise"): a hidden failure is one event, under the error id the result carries,
    naming the tool, the call, the level that answered and the exception's type; the
    whole cause is there (message, cause chain, notes); secret-looking arguments are
    redacted."""
    token = f"tok-{secrets.token_hex(8)}"
    call = ToolCall(name="settle", arguments={"invoice": 7, "token": token}, id="call_9")
    results: list[Any] = []
    text = CONFIGURATIONS[configuration](
        lambda: results.append(Dispatcher([settle]).dispatch(call))
    )
    [result] = results
    events = [json.loads(line) for line in text.splitlines()]
    [event] = [e for e in events if e.get("error_id") == result.error_id]  # exactly once
    assert len(events) == 1
    assert event["event"] == "tool_error_hidden"
    assert (event["tool"], event["call_id"], event["answered_by"]) == (
        "settle",
        "call_9",
        "builtin",
    )
    assert event["error_type"] == "ConnectionError"
    assert event["arguments"] == {"invoice": 7, "token": "[redacted]"}
    rendered = json.dumps(event["exception"])
    for part in ("the ledger is unreachable", "ledger.internal:5432", "retried on replica 2"):
        assert part in rendered  # the whole cause: message, cause chain, notes
    assert not _leaked(text, token)
    assert result.error_id in result.content  # the id the model's message quotes
