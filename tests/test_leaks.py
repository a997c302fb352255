"""Hidden causes never reach the model; visible messages always do (property-based).

The model sees what toolguard serialises: each ``ToolResult`` (every attrs field),
the ``Round``, and every provider format of them (``toolguard.formats``). A tool
raises random exceptions whose message, ``__cause__``/``__context__`` chain, notes,
attributes, class name or traceback locals carry a fresh secret, under random
policy stacks over the six precedence levels built only from handlers that are
not documented to send exception text. Properties:

* the secret is nowhere in what the model could be sent;
* it is in exactly one log event (each event rendered in full: ``str`` and ``repr``
  of every field but ``error_type``, see :func:`render`, and ``exc_info`` with its
  chain, notes, locals, ``args`` and attributes), the event whose ``error_id`` the
  result (or the ``ToolCallFailed``) carries, with ``exc_info`` the very exception
  the tool raised;
* every call of a round gets exactly one result, in call order;
* the reverse: under handlers that keep visible messages, a model-visible message
  (``ToolError``, ``message_for_model()``) arrives exactly as written.

The exceptions include groups (nested, with a visible member, a member's hidden
cause) and hostile ones (a ``__getattr__`` that raises ``KeyError``, a ``__str__`` or
``__repr__`` that raises, unhashable, a cyclic context chain). Further properties:

* a group that holds control flow (at any depth, under any handler) propagates as
  raised from every path, and nothing about it is logged as a failure;
* tool names that are not strings, or are huge or full of control characters: every
  call of a round answered, nothing echoed raw or unbounded (results, failures, logs);
* a custom validator's message (pydantic field and model validators, a dataclass
  ``__post_init__``, an attrs validator) is hidden and logged once unless its
  exception is model-visible, and every answer is bounded;
* the model's argument values a log event carries are bounded.

Speed and depth: ``tests/_hypothesis.py`` (``HYPOTHESIS_PROFILE=thorough``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib
import importlib.util
import json
import secrets
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import attrs
import pydantic
import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

import toolguard
from toolguard import (
    Dispatcher,
    Retry,
    RetryWithFeedback,
    Round,
    Text,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
    ToolTimeout,
    tool,
)
from toolguard.handlers import (
    Handler,
    fail,
    fail_unless_visible,
    generic_unless_visible,
    on,
    send_exception_message,
)
from toolguard.policy._handlers import as_handler

from ._hypothesis import PROFILE

# --- what the model could be sent -------------------------------------------------------


def _provider_formats() -> list[tuple[str, Callable[[Round], Any]]]:
    """Every provider reply function of ``toolguard.formats`` that exists (it may not)."""
    try:
        formats = importlib.import_module("toolguard.formats")
    except ImportError:  # pragma: no cover - formats/ is optional for the core
        return []
    found: list[tuple[str, Callable[[Round], Any]]] = []
    for module, names in (
        ("openai", ("messages", "response_items")),
        ("anthropic", ("message", "tool_results")),
        ("gemini", ("content", "parts")),
    ):
        for name in names:
            function = getattr(getattr(formats, module, None), name, None)
            if callable(function):
                found.append((f"{module}.{name}", function))
    call_result = getattr(getattr(formats, "mcp", None), "call_result", None)
    if callable(call_result):
        found.append(("mcp.call_result", lambda r: [call_result(x) for x in r.results]))
    return found


FORMATS = _provider_formats()


def model_bound(results: tuple[ToolResult, ...]) -> dict[str, str]:
    """Everything that could go to the model, serialised, by where it comes from."""
    round_ = Round(results=results)
    sent = {
        "results": json.dumps([attrs.asdict(r) for r in results], default=repr),
        "round": json.dumps(attrs.asdict(round_), default=repr),
    }
    for name, function in FORMATS:
        sent[name] = json.dumps(function(round_), default=repr, ensure_ascii=False)
    return sent


def assert_not_sent(results: tuple[ToolResult, ...], secret: str) -> None:
    for where, text in model_bound(results).items():
        assert secret not in text, f"the secret reached the model via {where}: {text[:500]}"


# --- what was logged --------------------------------------------------------------------


def _chain(error: BaseException) -> Iterator[BaseException]:
    """The error, its causes and contexts (suppressed or not) and group members."""
    seen: set[int] = set()
    stack = [error]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        stack.extend(e for e in (current.__cause__, current.__context__) if e is not None)
        if isinstance(current, BaseExceptionGroup):
            stack.extend(current.exceptions)


def render(event: Mapping[str, Any]) -> str:
    """An event as a log handler could render it, and then some (attributes, locals).

    ``error_type`` (the exception's class name) is left out: several events name the
    type by design (``tool_retry``, ``blank_model_message``); the cause's content is
    what is logged once. A class name that carries a secret is still checked against
    everything the model is sent, and it is in the rendered ``exc_info``.
    """
    parts = [
        f"{key}={value!s} {value!r}"
        for key, value in event.items()
        if key not in ("exc_info", "error_type")
    ]
    error = event.get("exc_info")
    if isinstance(error, BaseException):
        # Python 3.11's own traceback breaks on some hostile exceptions (a __getattr__
        # that raises KeyError for __notes__): what it can render, then the raw parts
        with contextlib.suppress(Exception):
            parts.extend(traceback.format_exception(error))
        with contextlib.suppress(Exception):
            parts.extend(
                traceback.TracebackException.from_exception(error, capture_locals=True).format()
            )
        for member in _chain(error):
            parts.append(_safe_repr(member.args))
            parts.append(_safe_repr(getattr(member, "__dict__", None)))  # notes too
    return "\n".join(parts)


def _safe_repr(value: Any) -> str:
    """``repr`` of ``value``, and of its items where its own ``repr`` raises."""
    try:
        return repr(value)
    except Exception:
        if isinstance(value, tuple | list):
            return ", ".join(_safe_repr(item) for item in value)
        if isinstance(value, dict):
            return ", ".join(f"{_safe_repr(k)}: {_safe_repr(v)}" for k, v in value.items())
        return f"<{type(value).__name__}>"


def events_mentioning(events: Iterable[Mapping[str, Any]], secret: str) -> list[Mapping[str, Any]]:
    return [event for event in events if secret in render(event)]


# --- exceptions that carry a secret ----------------------------------------------------

_INT = pydantic.TypeAdapter(int)


class ReprLeak(Exception):
    """An exception whose str and repr are the secret itself."""

    def __init__(self, secret: str) -> None:
        super().__init__("see repr")
        self.secret = secret

    def __str__(self) -> str:
        return self.secret

    def __repr__(self) -> str:
        return f"ReprLeak({self.secret})"


class BlankMarker(Exception):
    """Marked, but its model message is blank: hidden."""

    def message_for_model(self) -> str:
        return "   "


class NotStrMarker(Exception):
    """Marked, but its model message is not a str: hidden."""

    def message_for_model(self) -> Any:
        return 42


class HostileGetattr(Exception):
    """An API client's error: every missing attribute is a ``KeyError`` (not an
    ``AttributeError``), ``__notes__`` and ``message_for_model`` included."""

    def __init__(self, message: str, payload: dict[str, Any]) -> None:
        super().__init__(message)
        self._payload = payload

    def __getattr__(self, name: str) -> Any:
        return self.__dict__["_payload"][name]


class StrRaises(Exception):
    """``str()`` of it raises; its args hold the secret."""

    def __str__(self) -> str:
        raise RuntimeError("str() is not supported")


class ReprRaises(Exception):
    """``repr()`` of it raises; its str is the secret."""

    def __repr__(self) -> str:
        raise RuntimeError("repr() is not supported")


class Unhashable(Exception):
    """``__eq__`` without ``__hash__``: it cannot go in a set or be a dict key."""

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = None  # type: ignore[assignment]


PLAIN_KINDS: dict[str, type[Exception]] = {
    "Exception": Exception,
    "ValueError": ValueError,
    "RuntimeError": RuntimeError,
    "ConnectionError": ConnectionError,
    "TimeoutError": TimeoutError,  # the tool's own, not toolguard's ToolTimeout: hidden
    "PermissionError": PermissionError,
    "ZeroDivisionError": ZeroDivisionError,
    "BlankMarker": BlankMarker,
    "NotStrMarker": NotStrMarker,
}
# kinds that carry the secret by themselves, whatever the extras
CARRYING_KINDS = (
    "class_name",
    "repr",
    "group",
    "pydantic",
    "json_doc",
    "unicode",
    "oserror",
    "keyerror",
    "marked_cause",
    # exception groups: nested, with a model-visible member, a member's hidden cause
    "nested_group",
    "group_with_visible",
    "group_member_cause",
    # hostile exceptions
    "getattr_raises",
    "str_raises",
    "repr_raises",
    "unhashable",
    "context_cycle",
)
# a model-visible exception whose *cause* carries the secret
VISIBLE_KIND = "visible_with_hidden_cause"
KINDS = (*PLAIN_KINDS, *CARRYING_KINDS, VISIBLE_KIND)
EXTRAS = ("message", "attribute", "note", "local", "cause", "context")


@attrs.frozen
class Plan:
    """How one call fails: the exception kind and where else its secret goes."""

    kind: str
    extras: frozenset[str]


@st.composite
def plans(draw: st.DrawFn) -> Plan:
    kind = draw(st.sampled_from(KINDS))
    extras = set(draw(st.sets(st.sampled_from(EXTRAS), max_size=4)))
    if kind == VISIBLE_KIND and not extras & {"cause", "context"}:
        extras.add(draw(st.sampled_from(["cause", "context"])))
    if kind not in CARRYING_KINDS and not extras:
        extras.add("message")
    return Plan(kind, frozenset(extras))


def build(plan: Plan, secret: str) -> Exception:
    """The exception of ``plan``, not raised yet, with the secret in its own parts."""
    message = f"upstream refused credentials {secret}" if "message" in plan.extras else "failed"
    kind = plan.kind
    error: Exception
    if kind in PLAIN_KINDS:
        error = PLAIN_KINDS[kind](message)
    elif kind == "class_name":
        error = type(f"Leak{secret}", (Exception,), {})(message)
    elif kind == "repr":
        error = ReprLeak(secret)
    elif kind == "group":
        error = ExceptionGroup("several failures", [ValueError(secret), KeyError("x")])
    elif kind == "pydantic":
        try:
            _INT.validate_python(f"not a number {secret}")
        except pydantic.ValidationError as caught:
            error = caught
    elif kind == "json_doc":
        try:
            json.loads("{" + secret)
        except json.JSONDecodeError as caught:
            error = caught
    elif kind == "unicode":
        try:
            (secret.encode() + b"\xff").decode("utf-8")
        except UnicodeDecodeError as caught:
            error = caught
    elif kind == "oserror":
        error = FileNotFoundError(2, "No such file or directory", f"/srv/keys/{secret}.pem")
    elif kind == "keyerror":
        error = KeyError(secret)
    elif kind == "marked_cause":
        # the marker is on the cause only: wrapping a marked exception hides it
        error = RuntimeError(message)
        error.__cause__ = ToolError(f"visible only if unwrapped {secret}")
    elif kind == "nested_group":
        inner = ExceptionGroup("inner", [ValueError("y"), RuntimeError(f"vault said {secret}")])
        error = ExceptionGroup("outer", [KeyError("x"), inner])
    elif kind == "group_with_visible":
        # a visible member does not make the group visible: the rest is hidden text
        error = ExceptionGroup("several", [ToolError("The visible part."), PermissionError(secret)])
    elif kind == "group_member_cause":
        member = RuntimeError("wrapped")
        member.__cause__ = ConnectionError(f"connect as {secret}")
        error = ExceptionGroup("one failed", [member, ValueError("other")])
    elif kind == "getattr_raises":
        error = HostileGetattr(f"api said {secret}", {"status": 500})
    elif kind == "str_raises":
        error = StrRaises(f"token {secret}")
    elif kind == "repr_raises":
        error = ReprRaises(f"token {secret}")
    elif kind == "unhashable":
        error = Unhashable(f"token {secret}")
    elif kind == "context_cycle":
        error = RuntimeError(f"loop {secret}")
        other = ValueError("other")
        error.__context__, other.__context__ = other, error
    else:
        assert kind == VISIBLE_KIND
        error = ToolError("The order service is unavailable right now.")
    if "attribute" in plan.extras:
        try:
            error.detail = {"api_key": secret}  # type: ignore[attr-defined]
        except (AttributeError, TypeError):
            error.add_note(f"detail {secret}")
    if "note" in plan.extras:
        # add_note() reads __notes__ first: a hostile __getattr__ refuses it (KeyError)
        with contextlib.suppress(KeyError):
            error.add_note(f"while talking to the vault as {secret}")
    return error


def fail_with(plan: Plan, secret: str, record: Callable[[BaseException], None]) -> None:
    """Raise ``plan``'s exception (``secret`` also a local of this frame if planned).

    ``record`` keeps the instance for the test; nothing else in this frame (or the
    tool's) holds another call's secret, so traceback locals stay per call.
    """
    error = build(plan, secret)
    record(error)
    if "local" in plan.extras:
        vault_token = secret  # noqa: F841 - lives in the traceback's frame
    if "cause" in plan.extras:
        raise error from ConnectionError(f"connection to db as {secret} refused")
    if "context" in plan.extras:
        try:
            raise LookupError(f"no row for {secret}")
        except LookupError:
            raise error  # noqa: B904 - the implicit __context__ is the point
    raise error


# --- the stage: tools, plans and secrets for one example ---------------------------------


class Stage:
    """The registry tools consult: what each call key does, and what it raised."""

    def __init__(self) -> None:
        self.plans: dict[str, tuple[Plan, str]] = {}
        self.raised: dict[str, BaseException] = {}

    def act(self, key: str) -> str:
        if key not in self.plans:
            return "all good"
        plan, secret = self.plans[key]
        fail_with(plan, secret, functools.partial(self.raised.__setitem__, key))
        raise AssertionError("unreachable")  # pragma: no cover


def make_tool(stage: Stage, name: str, is_async: bool, options: dict[str, Any]) -> Any:
    if is_async:

        async def body(key: str) -> str:
            await asyncio.sleep(0)
            return stage.act(key)

    else:

        def body(key: str) -> str:  # type: ignore[misc]
            return stage.act(key)

    return tool(name=name, check_docstring=False, **options)(body)


# --- handlers that never send exception text ---------------------------------------------

FIXED_TEXTS = (
    "Something went wrong.",
    "The tool {tool} failed (error id {error_id}).",
    "{tool} is unavailable; quote {error_id} to support.",
    "Braces stay literal: {error} {0} {message} {{error_id}}",
)
TYPES = (
    ValueError,
    KeyError,
    OSError,
    LookupError,
    ToolTimeout,
    Exception,
    (ConnectionError, TimeoutError),
    ToolError,
)


def fixed_callable(text: str) -> Callable[[Exception, Any], Any]:
    def answer(error: Exception, context: Any) -> str:
        return context.fill(text)  # type: ignore[no-any-return]

    return answer


def blocks_callable(text: str) -> Callable[[Exception, Any], Any]:
    def answer(error: Exception, context: Any) -> list[Text]:
        return [Text(text=text), Text(text=f"error id {context.error_id}")]

    return answer


def declining(error: Exception, context: Any) -> None:
    return None


def async_fixed(text: str) -> Callable[[Exception, Any], Any]:
    async def answer(error: Exception, context: Any) -> str:
        await asyncio.sleep(0)
        return text

    return answer


def hiding_handlers(allow_async: bool) -> st.SearchStrategy[Handler]:
    """Handlers documented never to send exception text, composed at random."""
    text = st.sampled_from(FIXED_TEXTS)
    leaves = [
        st.builds(generic_unless_visible, text),
        st.just(fail_unless_visible),
        st.just(fail),
        text.map(as_handler),
        text.map(fixed_callable).map(as_handler),
        text.map(blocks_callable).map(as_handler),
        st.just(as_handler(declining)),
    ]
    if allow_async:
        leaves.append(text.map(async_fixed).map(as_handler))
    return st.recursive(
        st.one_of(leaves),
        lambda inner: st.one_of(
            st.builds(on, st.sampled_from(TYPES), inner),
            st.tuples(inner, inner).map(lambda pair: pair[0] | pair[1]),
        ),
        max_leaves=4,
    )


def keeping_handlers(allow_async: bool) -> st.SearchStrategy[Handler]:
    """Handlers that send a model-visible message as written (or decline)."""
    text = st.sampled_from(FIXED_TEXTS)
    # never the type of a visible error here (ToolTimeout is an OSError: not OSError)
    unrelated = st.sampled_from((KeyError, ZeroDivisionError, (ArithmeticError, UnicodeError)))
    leaves = [
        st.builds(generic_unless_visible, text),
        st.just(fail_unless_visible),
        st.just(send_exception_message),
        st.just(as_handler(declining)),
        # on() for types a visible error never is: declines, whatever it would say
        st.builds(on, unrelated, st.one_of(text, st.just(fail))),
    ]
    if allow_async:
        leaves.append(st.builds(on, unrelated, text.map(async_fixed)))
    return st.recursive(
        st.one_of(leaves),
        lambda inner: st.tuples(inner, inner).map(lambda pair: pair[0] | pair[1]),
        max_leaves=3,
    )


# --- scenarios ----------------------------------------------------------------------------

SYNC_PATHS = ("dispatch", "run", "session_dispatch", "session_run", "handle_error", "invoke")
ASYNC_PATHS = ("adispatch", "adispatch_offload", "arun", "session_arun", "ahandle_error")
ROUND_PATHS = ("run", "arun", "session_run", "session_arun")
LEVELS = ("call", "override", "tool", "agent", "global")


@attrs.frozen
class Scenario:
    path: str
    is_async_tool: bool
    handlers: dict[str, Handler | None]
    override_glob: bool
    scalars: dict[str, dict[str, Any]]  # level -> scalar settings
    calls: tuple[str | Plan, ...]  # "ok", "unknown", "bad_args" or a failure plan


NOOP_RETRY = Retry(attempts=2, on=(Exception,), initial=0.001, jitter=0, sleep=lambda s: None)


@st.composite
def scenarios(draw: st.DrawFn, handlers: Callable[[bool], st.SearchStrategy[Handler]]) -> Scenario:
    path = draw(st.sampled_from(SYNC_PATHS + ASYNC_PATHS))
    is_async_path = path in ASYNC_PATHS
    chosen = {
        level: draw(st.none() | handlers(is_async_path))
        for level in LEVELS
        if not (path == "invoke" and level in ("call", "override", "agent"))
    }
    scalars: dict[str, dict[str, Any]] = {}
    for level in ("tool", "agent", "global"):
        settings: dict[str, Any] = {}
        if draw(st.booleans()):
            settings["max_result_chars"] = draw(st.sampled_from([100, 150, None]))
        if draw(st.booleans()):
            settings["return_direct"] = draw(st.sampled_from([False, True, "always"]))
        if draw(st.integers(0, 3)) == 0:
            settings["retries"] = NOOP_RETRY
        if draw(st.integers(0, 4)) == 0 and path != "invoke":
            settings["timeout"] = 5.0  # sync tools then run on a worker thread
        scalars[level] = settings
    is_async_tool = draw(st.booleans())
    failures = plans()
    if path in ROUND_PATHS:
        others = st.sampled_from(["ok", "unknown", "bad_args"])
        calls = draw(st.lists(st.one_of(failures, others), min_size=1, max_size=4))
        if not any(isinstance(call, Plan) for call in calls):
            calls.append(draw(failures))
    else:
        calls = [draw(failures)]
    return Scenario(
        path=path,
        is_async_tool=is_async_tool,
        handlers=chosen,
        override_glob=draw(st.booleans()),
        scalars=scalars,
        calls=tuple(calls),
    )


@attrs.frozen
class Outcome:
    results: tuple[ToolResult, ...]
    failed: ToolCallFailed | None
    calls: tuple[ToolCall, ...]
    secrets: dict[str, str]  # call id -> secret
    raised: dict[str, BaseException]  # call id -> the exception the tool raised


def play(scenario: Scenario, secret_of: Callable[[int], str]) -> Outcome:
    """Run one scenario; the application's view of the outcome."""
    stage = Stage()
    options: dict[str, Any] = dict(scenario.scalars.get("tool", {}))
    if scenario.handlers.get("tool") is not None:
        options["on_error"] = scenario.handlers["tool"]
    the_tool = make_tool(stage, "lookup", scenario.is_async_tool, options)
    agent: dict[str, Any] = dict(scenario.scalars.get("agent", {}))
    if scenario.handlers.get("agent") is not None:
        agent["on_error"] = scenario.handlers["agent"]
    overrides = {}
    override = scenario.handlers.get("override")
    if override is not None:
        key = "look*" if scenario.override_glob else "lookup"
        overrides[key] = ToolPolicy(on_error=override)
    global_options = dict(scenario.scalars.get("global", {}))
    if scenario.handlers.get("global") is not None:
        global_options["on_error"] = scenario.handlers["global"]
    call_policy = None
    call_handler = scenario.handlers.get("call")
    if call_handler is not None:
        call_policy = ToolPolicy(on_error=call_handler)

    calls: list[ToolCall] = []
    secrets_by_id: dict[str, str] = {}
    for index, kind in enumerate(scenario.calls):
        call_id = f"call_{index}"
        if isinstance(kind, Plan):
            key = f"k{index}"
            secret = secret_of(index)
            stage.plans[key] = (kind, secret)
            secrets_by_id[call_id] = secret
            calls.append(ToolCall(name="lookup", arguments={"key": key}, id=call_id))
        elif kind == "ok":
            calls.append(ToolCall(name="lookup", arguments={"key": "fine"}, id=call_id))
        elif kind == "unknown":
            calls.append(ToolCall(name="lookup_everything", arguments="{}", id=call_id))
        else:
            calls.append(ToolCall(name="lookup", arguments='{"key": 7, "x": [', id=call_id))

    toolguard.configure(**global_options)
    results: tuple[ToolResult, ...] = ()
    failed: ToolCallFailed | None = None
    with Dispatcher([the_tool], overrides=overrides, **agent) as dispatcher:
        session = dispatcher.session()
        path = scenario.path
        try:
            if path == "dispatch":
                results = (dispatcher.dispatch(calls[0], policy=call_policy),)
            elif path == "adispatch":
                results = (asyncio.run(dispatcher.adispatch(calls[0], policy=call_policy)),)
            elif path == "adispatch_offload":
                coroutine = dispatcher.adispatch(calls[0], policy=call_policy, offload=True)
                results = (asyncio.run(coroutine),)
            elif path == "session_dispatch":
                results = (session.dispatch(calls[0], policy=call_policy),)
            elif path == "invoke":
                results = (the_tool.invoke(calls[0]),)
            elif path in ("handle_error", "ahandle_error"):
                try:
                    stage.act(str(calls[0].arguments["key"]))  # type: ignore[index]
                except Exception as error:
                    if path == "handle_error":
                        results = (dispatcher.handle_error(calls[0], error, policy=call_policy),)
                    else:
                        answer = dispatcher.ahandle_error(calls[0], error, policy=call_policy)
                        results = (asyncio.run(answer),)
            elif path == "run":
                results = dispatcher.run(calls, policy=call_policy).results
            elif path == "session_run":
                results = session.run(calls, policy=call_policy).results
            elif path == "arun":
                results = asyncio.run(dispatcher.arun(calls, policy=call_policy)).results
            else:
                assert path == "session_arun"
                results = asyncio.run(session.arun(calls, policy=call_policy)).results
        except ToolCallFailed as caught:
            failed = caught
            if caught.round is not None:
                results = caught.round.results
    raised = {
        call.id: stage.raised[f"k{index}"]
        for index, call in enumerate(calls)
        if call.id in secrets_by_id and f"k{index}" in stage.raised
    }
    return Outcome(tuple(results), failed, tuple(calls), secrets_by_id, raised)


def fresh_secret(index: int) -> str:
    return f"tgsecret{index}x{secrets.token_hex(16)}"


@contextlib.contextmanager
def clean_globals() -> Iterator[None]:
    toolguard.reset_defaults()
    try:
        yield
    finally:
        toolguard.reset_defaults()


# --- the properties -----------------------------------------------------------------------


@PROFILE
@given(scenario=scenarios(hiding_handlers))
def test_a_hidden_cause_never_reaches_the_model_and_is_logged_exactly_once(
    scenario: Scenario,
) -> None:
    import time

    t0 = time.perf_counter()
    with clean_globals(), capture_logs() as events:
        outcome = play(scenario, fresh_secret)
    if time.perf_counter() - t0 > 1:
        print(
            "SLOW",
            time.perf_counter() - t0,
            scenario,
            [e["event"] for e in events],
            outcome.results,
        )

    # every call of a round has exactly one result, in call order
    if scenario.path in ROUND_PATHS:
        assert [r.call_id for r in outcome.results] == [c.id for c in outcome.calls]
    else:
        assert len(outcome.results) == (0 if outcome.failed else 1)

    if outcome.failed is not None:
        assert not any(s in str(outcome.failed) for s in outcome.secrets.values())
        cause = outcome.raised.get(outcome.failed.call_id or "")
        if cause is None:  # `fail` fails visible errors too (an unknown tool, bad arguments)
            assert isinstance(outcome.failed.__cause__, ToolError)
        else:
            assert outcome.failed.__cause__ is cause

    for result in outcome.results:
        for secret in outcome.secrets.values():
            assert_not_sent((result,), secret)
    for call_id, secret in outcome.secrets.items():
        assert_not_sent(outcome.results, secret)
        mentions = events_mentioning(events, secret)
        assert len(mentions) == 1, (
            f"secret of {call_id} in {len(mentions)} events: {[e['event'] for e in mentions]}"
        )
        [event] = mentions
        assert event["event"] in ("tool_error_hidden", "tool_call_failed")
        assert event["exc_info"] is outcome.raised[call_id]
        assert event["call_id"] == call_id
        answer = next((r for r in outcome.results if r.call_id == call_id), None)
        if answer is not None:
            assert answer.is_error
            assert answer.error_id == event["error_id"]
        else:
            assert outcome.failed is not None
            assert outcome.failed.error_id == event["error_id"]


VISIBLE_MESSAGES = st.text(min_size=1, max_size=300).filter(lambda text: bool(text.strip()))


class Custom(Exception):
    """A third-party exception made model-visible by the protocol; its str is secret."""

    def __init__(self, secret: str, message: str) -> None:
        super().__init__(f"internal {secret}")
        self.message = message

    def message_for_model(self) -> str:
        return self.message


def raise_visible(kind: str, message: str, secret: str, chained: bool) -> None:
    error: Exception
    if kind == "ToolError":
        error = ToolError(message)
    elif kind == "RetryWithFeedback":
        error = RetryWithFeedback(message)
    elif kind == "ToolTimeout":
        error = ToolTimeout(message, tool="lookup", seconds=1.0)
    else:
        error = Custom(secret, message)
    if chained:
        raise error from PermissionError(f"vault said no to {secret}")
    raise error


@PROFILE
@given(
    kind=st.sampled_from(["ToolError", "RetryWithFeedback", "ToolTimeout", "Custom"]),
    message=VISIBLE_MESSAGES,
    chained=st.booleans(),
    path=st.sampled_from(["dispatch", "adispatch", "run", "arun", "session_run"]),
    is_async_tool=st.booleans(),
    levels=st.data(),
)
def test_a_model_visible_message_always_arrives_intact(
    kind: str,
    message: str,
    chained: bool,
    path: str,
    is_async_tool: bool,
    levels: st.DataObject,
) -> None:
    allow_async = path in ("adispatch", "arun")
    handlers = {
        level: levels.draw(st.none() | keeping_handlers(allow_async), label=level)
        for level in LEVELS
    }
    secret = fresh_secret(0)

    def body(key: str) -> str:
        raise_visible(kind, message, secret, chained)
        return "unreachable"

    async def abody(key: str) -> str:
        return body(key)

    options: dict[str, Any] = {} if handlers["tool"] is None else {"on_error": handlers["tool"]}
    lookup = tool(name="lookup", check_docstring=False, **options)(abody if is_async_tool else body)
    agent: dict[str, Any] = {} if handlers["agent"] is None else {"on_error": handlers["agent"]}
    overrides = {}
    if handlers["override"] is not None:
        overrides["lookup"] = ToolPolicy(on_error=handlers["override"])
    policy = None if handlers["call"] is None else ToolPolicy(on_error=handlers["call"])
    call = ToolCall(name="lookup", arguments={"key": "k"}, id="call_0")

    with clean_globals(), capture_logs() as events:
        if handlers["global"] is not None:
            toolguard.configure(on_error=handlers["global"])
        with Dispatcher([lookup], overrides=overrides, **agent) as dispatcher:
            if path == "dispatch":
                result = dispatcher.dispatch(call, policy=policy)
            elif path == "adispatch":
                result = asyncio.run(dispatcher.adispatch(call, policy=policy))
            elif path == "run":
                [result] = dispatcher.run([call], policy=policy).results
            elif path == "arun":
                [result] = asyncio.run(dispatcher.arun([call], policy=policy)).results
            else:
                [result] = dispatcher.session().run([call], policy=policy).results

    assert result.content == message
    assert result.is_error
    assert not result.return_direct
    assert_not_sent((result,), secret)
    if chained:
        # the cause was hidden: logged once, under the id the result carries
        [event] = events_mentioning(events, secret)
        assert event["event"] == "tool_error_hidden"
        assert event["error_id"] == result.error_id is not None
    else:
        # nothing was hidden: the message is the whole story, nothing is logged
        assert result.error_id is None
        assert events == []


# --- the oracle can fail: it finds a secret wherever a carrier put it ---------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("extra", [None, *EXTRAS])
def test_the_log_oracle_finds_the_secret_in_every_carrier(kind: str, extra: str | None) -> None:
    extras = frozenset() if extra is None else frozenset({extra})
    if kind == VISIBLE_KIND and not extras & {"cause", "context"}:
        extras |= {"cause"}
    if kind not in CARRYING_KINDS and not extras:
        extras = frozenset({"message"})
    secret = fresh_secret(0)
    raised: dict[str, BaseException] = {}
    with pytest.raises(Exception) as caught:
        fail_with(Plan(kind, extras), secret, functools.partial(raised.__setitem__, "k"))
    assert caught.value is raised["k"]
    assert secret in render({"event": "x", "exc_info": caught.value})
    assert secret not in render({"event": "x", "exc_info": ValueError("unrelated")})


def test_the_model_oracle_catches_a_handler_that_sends_exception_text() -> None:
    """send_exception_message is documented to send the text: the check must see it."""
    secret = fresh_secret(0)
    stage = Stage()
    stage.plans["k"] = (Plan("ValueError", frozenset({"message"})), secret)
    lookup = make_tool(stage, "lookup", False, {"on_error": send_exception_message})
    result = Dispatcher([lookup]).dispatch(ToolCall(name="lookup", arguments={"key": "k"}, id="1"))
    with pytest.raises(AssertionError, match="the secret reached the model"):
        assert_not_sent((result,), secret)


def test_every_provider_format_is_checked() -> None:
    """The leak properties serialise each provider reply format that exists."""
    names = {name for name, _ in FORMATS}
    if importlib.util.find_spec("toolguard.formats") is not None:
        assert {"openai.messages", "anthropic.message", "gemini.content", "mcp.call_result"} <= (
            names
        )


# --- exception groups holding control flow propagate as raised ------------------------------


class Handoff(toolguard.ControlFlow):
    """A handoff to another agent: control flow by subclassing."""


class FrameworkSignal(Exception):
    """A framework's own signal: control flow by registration."""


toolguard.register_control_flow(FrameworkSignal)

SIGNALS: dict[str, Callable[[], BaseException]] = {
    "ControlFlow": lambda: Handoff("to the billing agent"),
    "registered": lambda: FrameworkSignal("interrupt: ask the human"),
    "KeyboardInterrupt": KeyboardInterrupt,
}


@attrs.frozen
class GroupPlan:
    """Where the signal sits in a tree of groups whose other members carry the secret."""

    signal: str
    depth: int  # how many groups down the signal is
    siblings: tuple[str, ...]  # the hidden members beside it, one list per level
    first: bool  # the signal before its siblings, or after


def signal_group(plan: GroupPlan, secret: str) -> BaseExceptionGroup[BaseException]:
    def hidden(kind: str) -> Exception:
        if kind == "plain":
            return ValueError(f"vault said {secret}")
        if kind == "visible":
            return ToolError("The visible part.")
        member = RuntimeError("wrapped")
        member.__cause__ = ConnectionError(f"connect as {secret}")
        return member

    current: BaseException = SIGNALS[plan.signal]()
    for _ in range(plan.depth):
        others = [hidden(kind) for kind in plan.siblings]
        members = [current, *others] if plan.first else [*others, current]
        # BaseExceptionGroup() gives an ExceptionGroup when every member is an Exception
        current = BaseExceptionGroup(f"level with {secret}", members)
    assert isinstance(current, BaseExceptionGroup)
    return current


GROUP_PATHS = (
    "dispatch",
    "adispatch",
    "run",
    "arun",
    "session_dispatch",
    "session_run",
    "session_arun",
    "handle_error",
    "ahandle_error",
    "session_handle_error",
    "invoke",
)


@PROFILE
@given(
    plan=st.builds(
        GroupPlan,
        signal=st.sampled_from(sorted(SIGNALS)),
        depth=st.integers(1, 3),
        siblings=st.lists(st.sampled_from(["plain", "visible", "caused"]), max_size=3).map(tuple),
        first=st.booleans(),
    ),
    path=st.sampled_from(GROUP_PATHS),
    is_async_tool=st.booleans(),
    handler=st.none() | hiding_handlers(allow_async=False),
)
def test_a_group_holding_control_flow_propagates_as_raised(
    plan: GroupPlan, path: str, is_async_tool: bool, handler: Handler | None
) -> None:
    """A group (at any depth, beside hidden and visible members, under any handler)
    that holds control flow is control flow: the very group raised propagates out of
    every path, no handler answers it and nothing about it is logged as a failure."""
    secret = fresh_secret(0)
    group = signal_group(plan, secret)

    def body(key: str) -> str:
        raise group

    async def abody(key: str) -> str:
        await asyncio.sleep(0)
        raise group

    options: dict[str, Any] = {} if handler is None else {"on_error": handler}
    lookup = tool(name="lookup", check_docstring=False, **options)(abody if is_async_tool else body)

    @tool(check_docstring=False)
    def sibling() -> str:
        return "fine"

    call = ToolCall(name="lookup", arguments={"key": "k"}, id="call_0")
    round_calls = [call, ToolCall(name="sibling", id="call_1")]
    with clean_globals(), capture_logs() as events, Dispatcher([lookup, sibling]) as dispatcher:
        session = dispatcher.session()
        with pytest.raises(BaseException) as raised:
            if path == "dispatch":
                dispatcher.dispatch(call)
            elif path == "adispatch":
                asyncio.run(dispatcher.adispatch(call))
            elif path == "run":
                dispatcher.run(round_calls)
            elif path == "arun":
                asyncio.run(dispatcher.arun(round_calls))
            elif path == "session_dispatch":
                session.dispatch(call)
            elif path == "session_run":
                session.run(round_calls)
            elif path == "session_arun":
                asyncio.run(session.arun(round_calls))
            elif path == "handle_error":
                dispatcher.handle_error(call, group)
            elif path == "ahandle_error":
                asyncio.run(dispatcher.ahandle_error(call, group))
            elif path == "session_handle_error":
                session.handle_error(call, group, step="m1")
            else:
                assert path == "invoke"
                lookup.invoke(call)
    assert raised.value is group
    assert not events_mentioning(events, secret), [e["event"] for e in events]
    assert not [e for e in events if e["event"] in ("tool_error_hidden", "tool_call_failed")]


# --- non-str tool names: every call answered, nothing raw or unbounded echoed --------------

RAW = frozenset(chr(code) for code in (*range(0x20), 0x7F))  # C0 controls and DEL
NAMES: st.SearchStrategy[Any] = st.one_of(
    st.integers(),
    st.integers(min_value=10**30),
    st.none(),
    st.booleans(),
    st.floats(allow_nan=True),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3),
    st.just("x" * 200_000),
    st.text(alphabet=st.characters(codec="utf-8", categories=["Cc", "Cf", "Zl", "Zp"])),
    st.text(max_size=80).map(lambda text: f"lookup\x1b[31m{text}\n\x07"),
    st.just("\ud800lookup"),
    st.just(""),
)
NAME_HANDLERS: st.SearchStrategy[Any] = st.sampled_from(
    [
        None,
        "The tool {tool} failed ({error_id}).",
        generic_unless_visible("{tool} is not available ({error_id})."),
        fail,
        send_exception_message,
    ]
)


def assert_bounded_and_escaped(text: str, where: str, limit: int = 5_000) -> None:
    assert len(text) <= limit, f"{where}: {len(text)} characters"
    assert not RAW & set(text), f"{where} echoes a raw control character: {text[:200]!r}"
    text.encode("utf-8")  # valid UTF-8: no lone surrogate


@PROFILE
@given(
    names=st.lists(NAMES, min_size=1, max_size=4),
    good_at=st.lists(st.integers(0, 4), max_size=3),
    path=st.sampled_from(["dispatch", "adispatch", "run", "arun", "session_run"]),
    handler=NAME_HANDLERS,
)
def test_a_non_str_or_hostile_tool_name_is_answered_and_never_echoed_raw_or_unbounded(
    names: list[Any], good_at: list[int], path: str, handler: Any
) -> None:
    """Tool names that are not strings (ints, ``None``, lists, dicts, floats), or
    strings that are huge, empty, or full of control and format characters: each
    call gets one error result naming no raw text, its siblings are answered, in call
    order, under any agent handler; no field of any result, of a ``ToolCallFailed``
    or of a log event carries the name unbounded, raw or as invalid UTF-8."""

    @tool(check_docstring=False)
    def lookup(key: str) -> str:
        return f"found {key}"

    calls = [ToolCall(name=name, arguments={}, id=f"bad_{i}") for i, name in enumerate(names)]
    for offset, index in enumerate(sorted(good_at)):
        good = ToolCall(name="lookup", arguments={"key": "k"}, id=f"good_{offset}")
        calls.insert(min(index + offset, len(calls)), good)
    agent: dict[str, Any] = {} if handler is None else {"on_error": handler}
    failures: list[ToolCallFailed] = []
    results: list[ToolResult] = []
    with clean_globals(), capture_logs() as events, Dispatcher([lookup], **agent) as dispatcher:
        if path in ("dispatch", "adispatch"):
            for call in calls:
                try:
                    if path == "dispatch":
                        results.append(dispatcher.dispatch(call))
                    else:
                        results.append(asyncio.run(dispatcher.adispatch(call)))
                except ToolCallFailed as failed:
                    failures.append(failed)
                    results.append(
                        ToolResult(call_id=call.id, name="-", content="failed", is_error=True)
                    )
        else:
            round_: Round | None = None
            try:
                if path == "run":
                    round_ = dispatcher.run(calls)
                elif path == "arun":
                    round_ = asyncio.run(dispatcher.arun(calls))
                else:
                    round_ = dispatcher.session().run(calls)
            except ToolCallFailed as failed:
                failures.append(failed)
                round_ = failed.round
            assert round_ is not None
            results = list(round_.results)

    assert [r.call_id for r in results] == [c.id for c in calls]
    for call, result in zip(calls, results, strict=True):
        if call.name == "lookup":
            assert result.content == "found k"
            continue
        assert result.is_error
        if not any(f.call_id == call.id for f in failures):
            assert result.error_kind == "unknown_tool" or handler is not None
        assert_bounded_and_escaped(result.text, f"the content of {call.id}")
        assert_bounded_and_escaped(result.name, f"the name of {call.id}", limit=1_000)
        for where, text in model_bound((result,)).items():
            assert len(text) <= 20_000, (where, len(text))
    for failure in failures:
        assert_bounded_and_escaped(failure.tool, "ToolCallFailed.tool", limit=1_000)
        assert_bounded_and_escaped(str(failure), "str(ToolCallFailed)")
    for event in events:
        for key, value in event.items():
            if key != "exc_info":
                assert_bounded_and_escaped(str(value), f"{event['event']}.{key}", limit=10_000)


# --- validator messages: hidden unless model-visible, logged once, bounded -----------------


class VisibleValue(ValueError):
    """A validator's error made model-visible by the protocol."""

    def message_for_model(self) -> str:
        return str(self)


class ValidatorSaid:
    """What the validator raises, for one example (the validators read it)."""

    def __init__(self) -> None:
        self.error: Callable[[], Exception] | None = None

    def check(self, value: str) -> None:
        if value == "reject" and self.error is not None:
            raise self.error()


SAID = ValidatorSaid()


class FieldChecked(pydantic.BaseModel):
    value: str

    @pydantic.field_validator("value")
    @classmethod
    def known(cls, value: str) -> str:
        SAID.check(value)
        return value


class ModelChecked(pydantic.BaseModel):
    value: str

    @pydantic.model_validator(mode="after")
    def consistent(self) -> ModelChecked:
        SAID.check(self.value)
        return self


class BeforeChecked(pydantic.BaseModel):
    value: str

    @pydantic.model_validator(mode="before")
    @classmethod
    def raw(cls, data: Any) -> Any:
        SAID.check(str(data.get("value")) if isinstance(data, dict) else "")
        return data


@dataclasses.dataclass
class PostInit:
    value: str

    def __post_init__(self) -> None:
        SAID.check(self.value)


def _attrs_check(instance: Any, attribute: Any, value: str) -> None:
    SAID.check(value)


@attrs.define
class AttrsChecked:
    value: str = attrs.field(validator=_attrs_check)


VALIDATED: dict[str, type[Any]] = {
    "field_validator": FieldChecked,
    "model_validator": ModelChecked,
    "before_validator": BeforeChecked,
    "post_init": PostInit,
    "attrs": AttrsChecked,
}
HIDDEN_RAISES = ("ValueError", "AssertionError", "custom_value_error", "chained_value_error")
VISIBLE_RAISES = ("VisibleValue", "PydanticCustomError")


class RejectedValue(ValueError):
    """An application's own ValueError subclass, with the secret in an attribute too."""

    def __init__(self, message: str, detail: str) -> None:
        super().__init__(message)
        self.detail = detail


def validator_error(kind: str, text: str, secret: str) -> Callable[[], Exception]:
    """A factory of what the validator raises (``text`` holds or is the message)."""
    from pydantic_core import PydanticCustomError

    def make() -> Exception:
        if kind == "ValueError":
            return ValueError(text)
        if kind == "AssertionError":
            return AssertionError(text)
        if kind == "custom_value_error":
            return RejectedValue(text, detail=secret)
        if kind == "chained_value_error":
            error = ValueError("rejected")
            error.__cause__ = PermissionError(text)
            return error
        if kind == "VisibleValue":
            return VisibleValue(text)
        assert kind == "PydanticCustomError"
        return PydanticCustomError("rejected_value", text)

    return make


@PROFILE
@given(
    container=st.sampled_from(sorted(VALIDATED)),
    raises=st.sampled_from(HIDDEN_RAISES + VISIBLE_RAISES),
    size=st.sampled_from([0, 300, 20_000, 1_000_000]),
    path=st.sampled_from(["dispatch", "adispatch", "run", "session_run", "invoke"]),
    as_json=st.booleans(),
)
def test_a_validators_message_is_hidden_unless_model_visible_and_always_bounded(
    container: str, raises: str, size: int, path: str, as_json: bool
) -> None:
    """A custom validator of a tool's own argument type (pydantic ``field_validator``,
    ``model_validator`` before and after, a dataclass ``__post_init__``, an attrs
    validator) rejects the model's value. A message that is not model-visible
    (``ValueError``, ``AssertionError``, subclasses, a chained cause) is hidden: not in
    anything sent, the tool never runs, the text logged once under the error id the
    result carries. A model-visible one (``message_for_model()``,
    ``PydanticCustomError``) reaches the model. Either way the answer is bounded."""
    secret = fresh_secret(0)
    text = f"rejected: the lookup used the key {secret}" + "!" * size
    SAID.error = validator_error(raises, text, secret)
    ran: list[str] = []
    argument_type = VALIDATED[container]

    def body(item: Any) -> str:
        ran.append("ran")
        return "accepted"

    body.__annotations__["item"] = argument_type
    checked = tool(name="checked", check_docstring=False)(body)
    arguments: Any = {"item": {"value": "reject"}}
    if as_json:
        arguments = json.dumps(arguments)
    call = ToolCall(name="checked", arguments=arguments, id="call_0")
    try:
        with clean_globals(), capture_logs() as events, Dispatcher([checked]) as dispatcher:
            if path == "dispatch":
                result = dispatcher.dispatch(call)
            elif path == "adispatch":
                result = asyncio.run(dispatcher.adispatch(call))
            elif path == "run":
                [result] = dispatcher.run([call]).results
            elif path == "session_run":
                [result] = dispatcher.session().run([call]).results
            else:
                result = checked.invoke(call)
    finally:
        SAID.error = None

    assert ran == []
    assert result.is_error and result.error_kind == "arguments"
    assert len(result.text) <= 2_000, len(result.text)
    for where, sent in model_bound((result,)).items():
        assert len(sent) <= 10_000, (where, len(sent))
    if raises in VISIBLE_RAISES:
        assert text[:60] in result.text
        assert not events_mentioning(events, secret)
    else:
        assert_not_sent((result,), secret)
        [event] = events_mentioning(events, secret)
        assert event["event"] == "tool_error_hidden"
        assert event["error_id"] == result.error_id is not None


# --- model-supplied argument values in log events are bounded --------------------------------

HUGE_VALUES: dict[str, Callable[[], Any]] = {
    "megabyte_string": lambda: "q" * 1_000_000,
    "long_list": lambda: ["t"] * 100_000,
    "wide_object": lambda: {f"k{i}": i for i in range(50_000)},
    "escape_sequences": lambda: "\x1b[2J\x1b[31m" * 20_000,
    "huge_number": lambda: 7**4_000,
    "deep_and_wide": lambda: [[[[[["leaf"] * 40] * 40] * 40]]],
}
HUGE_KEYS: dict[str, str] = {"plain": "query", "huge": "x" * 100_000}


@PROFILE
@given(
    value_kind=st.sampled_from(sorted(HUGE_VALUES)),
    key_kind=st.sampled_from(sorted(HUGE_KEYS)),
    path=st.sampled_from(["dispatch", "run", "session_run", "handle_error"]),
)
def test_model_supplied_argument_values_in_a_log_event_are_bounded(
    value_kind: str, key_kind: str, path: str
) -> None:
    """Nothing toolguard logs is unbounded: the arguments a hidden failure's event
    carries are the model's, of any size (a megabyte string, a 100,000-item list, a
    50,000-key object, a 3,000-digit number, 100,000-character keys), and are cut
    like every other model-supplied value. The failure itself is logged once."""

    @tool(name="search", check_docstring=False)
    def search(**options: Any) -> str:
        raise RuntimeError("upstream down")

    arguments = {HUGE_KEYS[key_kind]: HUGE_VALUES[value_kind](), "page": 1}
    call = ToolCall(name="search", arguments=arguments, id="call_0")
    with clean_globals(), capture_logs() as events, Dispatcher([search]) as dispatcher:
        if path == "dispatch":
            result = dispatcher.dispatch(call)
        elif path == "run":
            [result] = dispatcher.run([call]).results
        elif path == "session_run":
            [result] = dispatcher.session().run([call]).results
        else:
            result = dispatcher.handle_error(call, RuntimeError("upstream down"))
    assert result.error_kind == "hidden"
    [event] = [e for e in events if e["event"] == "tool_error_hidden"]
    for field, logged in event.items():
        if field != "exc_info":
            assert len(repr(logged)) <= 10_000, (field, len(repr(logged)))
