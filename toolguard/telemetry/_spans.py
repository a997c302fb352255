"""OpenTelemetry spans and metrics for guarded calls (extra ``otel``), off by default.

``configure(telemetry=True)`` turns it on for the process. Each guarded call is then
one span, a child of whatever span is current, following the OpenTelemetry GenAI
semantic conventions for tool execution (:data:`CONVENTIONS`)::

    execute_tool {gen_ai.tool.name}      kind INTERNAL, status ERROR on a failure
        gen_ai.operation.name = "execute_tool", gen_ai.tool.name, gen_ai.tool.call.id,
        gen_ai.tool.description, gen_ai.tool.type, error.type
        toolguard.outcome, toolguard.answered_by, toolguard.handler,
        toolguard.error_id, toolguard.return_direct, toolguard.attempts
        events: "toolguard.retry" per failed attempt that is retried;
                "exception" for the failure (per ``record_exception``)

and two instruments: the conventions' ``gen_ai.execute_tool.duration`` histogram and
``toolguard.calls``, a counter by tool and outcome.

The hooks are one per half of the core. The runner's call (:func:`dispatch`,
:func:`adispatch`) opens the span around a whole call of one of the agent's tools,
makes it current while the tool runs (a tool's own spans nest under it) and ends it
with the result. The guard's answer (:func:`failure`, :func:`succeeded`) adds what
only the guard knows (the handler, its level, the cause); for a tool another
framework ran (``handle_error``/``handle_result``, sessions' ``admit``) no span is
open for the call, so the guard's answer is a span of its own. When telemetry is off
each hook is one attribute read (``_switch.on``, or an agent's own switch) at the call site, and
``opentelemetry`` is not imported.

Never recorded: the model's arguments and the tool's result (the conventions'
opt-in ``gen_ai.tool.call.arguments``/``gen_ai.tool.call.result``), and, unless
``record_exception="full"``, any exception's message, traceback or cause chain.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Mapping
from typing import Any, Final, Protocol

from toolguard._marks import is_control_flow
from toolguard._text import ID_LIMIT, shown
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed
from toolguard.telemetry import _switch


class _Entry(Protocol):
    name: str
    description: str | None


class Pipelines(Protocol):
    """What the hooks need of ``runner._pipeline.Runner`` (which imports this module)."""

    entries: dict[str, Any]

    def dispatch(
        self,
        call: ToolCall,
        policy: Any,
        context: Any,
        step: Any,  # the session's step, passed through to the runner
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult: ...

    async def adispatch(
        self,
        call: ToolCall,
        policy: Any,
        context: Any,
        step: Any,  # the session's step, passed through to the runner
        offload: bool,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult: ...


__all__ = [
    "CONVENTIONS",
    "OUTCOMES",
    "Traced",
    "adispatch",
    "dispatch",
    "failure",
    "outside",
    "retry",
    "succeeded",
]

CONVENTIONS: Final = (
    "OpenTelemetry GenAI semantic conventions, tool execution "
    "(open-telemetry/semantic-conventions-genai v0.1.0, status Development)"
)
"""The conventions these spans and metrics follow (pinned; see docs/telemetry.md)."""


OUTCOMES: Final[dict[str | None, str]] = {
    None: "ok",
    "visible": "visible_error",
    "feedback": "visible_error",
    "hidden": "hidden_error",
    "arguments": "invalid_call",
    "unknown_tool": "unknown_tool",
    "timeout": "timeout",
    "unavailable": "unavailable",
}
"""``toolguard.outcome`` for each ``ToolResult.error_kind``; a call that raised (a
handler failed it, or it was interrupted) is ``failed``; control flow passing
through is ``control_flow``."""

_open: contextvars.ContextVar[Traced | None] = contextvars.ContextVar(
    "toolguard_traced", default=None
)


# --- one call's span ---------------------------------------------------------------------


def _type_name(error: BaseException) -> str:
    """The exception's class as the conventions name it: ``module.QualName``."""
    cls = type(error)
    module = getattr(cls, "__module__", None)
    name = shown(getattr(cls, "__qualname__", None) or cls.__name__)
    if not isinstance(module, str) or module == "builtins":
        return name
    return f"{shown(module)}.{name}"


class Traced:
    """One call's span, from its start to its result; ``owned`` by the runner (which
    ends it) or by the guard's answer (a tool another framework ran)."""

    __slots__ = ("attempts", "call", "error", "error_id", "name", "owned", "span", "started")

    def __init__(
        self, otel: _switch.Otel, call: ToolCall, name: str, description: str | None, owned: bool
    ) -> None:
        self.call = call
        self.name = name
        self.owned = owned
        self.attempts = 1
        self.error: BaseException | None = None
        self.error_id: str | None = None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
        }
        if call.id is not None:
            attributes["gen_ai.tool.call.id"] = shown(call.id, ID_LIMIT)
        if owned:
            attributes["gen_ai.tool.type"] = "function"
        if description:
            attributes["gen_ai.tool.description"] = description
        self.span = otel.tracer.start_span(
            f"execute_tool {name}", kind=otel.kind, attributes=attributes
        )
        self.started = time.perf_counter()

    # --- what the guard knows ----------------------------------------------------------

    def log_ids(self, fields: dict[str, Any]) -> None:
        """The trace and span ids, in the hidden-cause log event (a recording span only)."""
        if self.span.is_recording():
            ids = self.span.get_span_context()
            fields["trace_id"] = format(ids.trace_id, "032x")
            fields["span_id"] = format(ids.span_id, "016x")

    def answered(self, error: Exception, handler: str, level: str, result: ToolResult) -> None:
        """A handler answered ``error`` with ``result``."""
        self.span.set_attributes({"toolguard.handler": handler, "toolguard.answered_by": level})
        self._exception(error, result.error_id)
        if not self.owned:
            self.finish(result)

    def handler_raised(
        self, error: Exception, handler: str, level: str, raised: Exception, error_id: str | None
    ) -> None:
        """A handler raised ``raised`` about ``error``: ``ToolCallFailed``, a bug, or
        control flow (``error_id`` is ``None``: nothing was logged)."""
        self.span.set_attributes({"toolguard.handler": handler, "toolguard.answered_by": level})
        if error_id is not None:
            self._exception(error, error_id)
        if not self.owned:
            self.raised(raised)

    def _exception(self, error: BaseException, error_id: str | None) -> None:
        """The failure as the conventions' exception event, per ``record_exception``."""
        self.error, self.error_id = error, error_id
        if _switch.record == "none":
            return
        attributes: dict[str, Any] = {"exception.type": _type_name(error)}
        if error_id is not None:
            attributes["toolguard.error_id"] = error_id
        if _switch.record == "full":
            try:
                self.span.record_exception(error, attributes=attributes)
                return
            except Exception:  # noqa: BLE001 - an unrenderable exception: its type only
                pass
        self.span.add_event("exception", attributes)

    def retried(self, attempt: int, error: BaseException | None, wait: float) -> None:
        """A failed attempt that will be retried, as a span event."""
        self.attempts = attempt + 1
        attributes: dict[str, Any] = {"toolguard.attempt": attempt, "toolguard.wait": wait}
        if error is not None and _switch.record != "none":
            attributes["exception.type"] = _type_name(error)
        self.span.add_event("toolguard.retry", attributes)

    # --- the end -----------------------------------------------------------------------

    def finish(self, result: ToolResult) -> None:
        """End the span with ``result``; count it (and time it, when the runner ran it)."""
        outcome = OUTCOMES.get(result.error_kind, "failed" if result.is_error else "ok")
        attributes: dict[str, Any] = {
            "toolguard.outcome": outcome,
            "toolguard.return_direct": result.return_direct,
            "toolguard.attempts": self.attempts,
        }
        if result.error_id is not None:  # the id the model's message quotes and the log holds
            attributes["toolguard.error_id"] = result.error_id
        self._end(outcome, attributes, result.is_error)

    def raised(self, error: BaseException) -> None:
        """End the span of a call that raised: a handler failed it, it was interrupted,
        or control flow passed through."""
        if isinstance(error, ToolCallFailed):
            outcome, failed = "failed", True
            attributes: dict[str, Any] = {"toolguard.error_id": error.error_id}
        elif isinstance(error, Exception) and is_control_flow(error):
            outcome, failed, attributes = "control_flow", False, {}
        else:
            outcome, failed, attributes = "failed", True, {}
            if self.error is None:  # not the guard's: an interrupt, a handler's bug
                self._exception(error, None)
        if failed and self.error_id is not None:  # a handler's bug: the id it was logged with
            attributes.setdefault("toolguard.error_id", self.error_id)
        attributes["toolguard.outcome"] = outcome
        attributes["toolguard.attempts"] = self.attempts
        self._end(outcome, attributes, failed)

    def _end(self, outcome: str, attributes: dict[str, Any], failed: bool) -> None:
        otel = _switch.otel
        assert otel is not None
        metric: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": self.name,
        }
        if failed:
            error_type = (
                outcome
                if _switch.record == "none" or self.error is None
                else _type_name(self.error)
            )
            attributes["error.type"] = error_type
            metric["error.type"] = error_type
            self.span.set_status(otel.error_status)
        self.span.set_attributes(attributes)
        self.span.end()
        if self.owned:  # the runner bounds the whole call; the guard's answer does not
            otel.duration.record(time.perf_counter() - self.started, metric)
        # a name the model invented is not a metric dimension (any string could be one)
        tool = "_OTHER" if outcome == "unknown_tool" else self.name
        otel.calls.add(1, {"gen_ai.tool.name": tool, "toolguard.outcome": outcome})


# --- the runner's call ---------------------------------------------------------------


def _begin(runner: Pipelines, call: ToolCall) -> Traced:
    otel = _switch.otel
    assert otel is not None
    try:
        entry: _Entry | None = runner.entries.get(call.name)
    except TypeError:  # an unhashable name is no tool's
        entry = None
    if entry is None:
        return Traced(otel, call, shown(call.name), None, True)
    return Traced(otel, call, entry.name, entry.description, True)


def dispatch(
    runner: Pipelines,
    call: ToolCall,
    policy: Any,
    context: Any,
    step: Any,  # the session's step, passed through to the runner
    framework_values: Mapping[str, Any] | None,
) -> ToolResult:
    """``Runner.dispatch`` inside the call's span (the span is current while it runs)."""
    otel = _switch.otel
    assert otel is not None
    traced = _begin(runner, call)
    token = otel.context.attach(otel.trace.set_span_in_context(traced.span))
    opened = _open.set(traced)
    try:
        result = runner.dispatch(call, policy, context, step, framework_values)
    except BaseException as error:
        traced.raised(error)
        raise
    finally:
        _open.reset(opened)
        otel.context.detach(token)
    traced.finish(result)
    return result


async def adispatch(
    runner: Pipelines,
    call: ToolCall,
    policy: Any,
    context: Any,
    step: Any,  # the session's step, passed through to the runner
    offload: bool,
    framework_values: Mapping[str, Any] | None,
) -> ToolResult:
    """Async :func:`dispatch`."""
    otel = _switch.otel
    assert otel is not None
    traced = _begin(runner, call)
    token = otel.context.attach(otel.trace.set_span_in_context(traced.span))
    opened = _open.set(traced)
    try:
        result = await runner.adispatch(call, policy, context, step, offload, framework_values)
    except BaseException as error:
        traced.raised(error)
        raise
    finally:
        _open.reset(opened)
        otel.context.detach(token)
    traced.finish(result)
    return result


def outside(call: ToolCall) -> bool:
    """Whether ``call`` still needs its span (none is open for this very call)."""
    traced = _open.get()
    return traced is None or traced.call is not call


def retry(attempt: int, error: BaseException | None, wait: float) -> None:
    """A retry of the call whose span is open (tenacity's ``before_sleep``)."""
    traced = _open.get()
    if traced is not None:
        traced.retried(attempt, error, wait)


# --- the guard's answer --------------------------------------------------------------


def failure(call: ToolCall, name: str) -> Traced:
    """The span a failure of ``call`` is answered in: the runner's, when it is running
    this very call, or one of the guard's own (a tool another framework ran)."""
    traced = _open.get()
    if traced is not None and traced.call is call:
        return traced
    otel = _switch.otel
    assert otel is not None
    return Traced(otel, call, name, None, False)


def succeeded(call: ToolCall, name: str, result: ToolResult) -> None:
    """A success the guard answered: a span of its own unless the runner has one open."""
    traced = _open.get()
    if traced is not None and traced.call is call:
        return
    otel = _switch.otel
    assert otel is not None
    Traced(otel, call, name, None, False).finish(result)
