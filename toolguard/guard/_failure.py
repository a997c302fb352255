"""One failure on its way through the handler chain: its error id, visible message,
the context each handler is given, the one log event, and the result.

Shared by the guard's sync and async chains: they differ only in how a handler is
called (``handler(...)`` or ``await handler.acall(...)``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from typing import Any, Final

import attrs
import tenacity

from toolguard._logging import (
    EVENT_FAILED,
    EVENT_HANDLER_RAISED,
    EVENT_HIDDEN,
    EVENT_RETURN_DIRECT_FAILED,
    emit,
    model_message,
    new_error_id,
)
from toolguard._marks import has_hidden_cause, is_control_flow
from toolguard._text import ID_LIMIT, shown
from toolguard._values import Content, ErrorKind, ToolCall, ToolResult, error_result
from toolguard.errors import (
    InvalidArguments,
    ModelRetriesExhausted,
    RetryWithFeedback,
    ToolCallFailed,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
)
from toolguard.guard._content import ERROR_LIMIT, sendable
from toolguard.guard._locals import mask_locals
from toolguard.guard._redaction import Secrets, arguments_for_log
from toolguard.policy._handlers import Handler, HandlerContext, fail, fill_message
from toolguard.policy._precedence import Resolved, Setting
from toolguard.policy._values import NEVER, ReturnDirect
from toolguard.telemetry import _spans as _telemetry

__all__ = ["Failure", "asks_to_stop"]

_new = object.__new__


def _limit(resolved: Resolved) -> int:
    """How long an answer to a failure may be."""
    limit = resolved.max_result_chars
    return ERROR_LIMIT if limit is None else limit


class Failure:
    """The state of one failure: its error id, visible message, and chain to ask."""

    __slots__ = (
        "attempts",
        "call",
        "chain",
        "error",
        "error_id",
        "invalid",
        "message",
        "name",
        "quotes_id",
        "resolved",
        "stop",
        "traced",
    )

    def __init__(
        self,
        error: Exception,
        call: ToolCall,
        name: str,
        resolved: Resolved,
        attempts: int,
        traced: bool,
        raised: Exception,
    ) -> None:
        """``error`` is what the chain is asked about; ``raised`` what the tool raised:
        ``error`` itself, or what a session's books made of it (a spent model-retry
        budget makes a ``ModelRetriesExhausted``)."""
        self.call = call
        self.name = name
        self.resolved = resolved
        self.attempts = attempts
        # the model's own mistakes are on_invalid_call's, never on_error's
        self.invalid = isinstance(error, _MODEL_MISTAKES)
        self.chain: tuple[Setting, ...] = resolved.invalid_chain if self.invalid else resolved.chain
        self.stop = False
        if error is not raised and isinstance(error, ModelRetriesExhausted):
            # the session spent the model-retry budget: the policy decides
            mode = resolved.settings["model_retries_exhausted"]  # tell (default), fail, stop
            if mode.value == "fail":
                self.chain = (Setting(fail, mode.level, mode.source),)
            self.stop = mode.value == "stop"
        self.error = error
        self.error_id = new_error_id()
        visible = model_message(error, name)  # the marker, read once per failure
        # a message written for the model may quote the id it is logged under
        self.quotes_id = False
        if visible is not None and "{" in visible and not self.invalid:
            self.quotes_id = "{error_id}" in visible
            visible = fill_message(visible, tool=name, error_id=self.error_id)
        self.message = None if visible is None else sendable(visible, _limit(resolved))
        # telemetry: the span this failure is answered in (the runner's, or its own)
        self.traced = _telemetry.failure(call, name) if traced else None

    @property
    def visible(self) -> bool:
        """Whether the exception carried a model-visible message (the tool answered)."""
        return self.message is not None

    def context(self, setting: Setting) -> HandlerContext:
        """What the handler at ``setting`` is told about this failure."""
        # HandlerContext(call=..., ...) without attrs' per-field frozen setters
        context: HandlerContext = _new(HandlerContext)
        context.__dict__.update(
            call=self.call,
            tool=self.name,
            error_id=self.error_id,
            level=setting.level,
            model_message=self.message,
        )
        return context

    def _fields(self, handler: Handler, context: HandlerContext, error_id: str) -> dict[str, Any]:
        """The event's fields, built once and handed to the logger as they are."""
        if self.resolved.log_frames == "tool":
            _from_the_tool(self.error)
        secrets = Secrets(self.resolved.redact)
        fields = {
            "error_id": error_id,
            "tool": self.name,
            "call_id": None if self.call.id is None else shown(self.call.id, ID_LIMIT),
            "answered_by": context.level,
            "handler": handler.name,
            "error_type": type(self.error).__name__,
            "arguments": arguments_for_log(
                self.call.arguments,
                self.resolved.redact,
                self.resolved.max_logged_arguments,
                secrets,
            ),
            "exc_info": self.error,
        }
        if secrets.wanted:  # what `arguments` hides, the traceback's locals hide too
            mask_locals(self.error, secrets)
        if self.attempts > 1:
            fields["attempts"] = self.attempts
        if self.traced is not None:  # a log line and its trace find each other
            self.traced.log_ids(fields)
        return fields

    def answered(self, content: Content, handler: Handler, context: HandlerContext) -> ToolResult:
        """The result for a handler's answer (already :func:`checked`): valid UTF-8, and
        cut at ``max_result_chars`` (:data:`ERROR_LIMIT` characters when unset)."""
        content = sendable(content, _limit(self.resolved))
        if self.invalid:
            # The model's mistake hides nothing of the tool's, whatever a handler sent;
            # only a custom validator's withheld words (a cause) are logged.
            hidden = has_hidden_cause(self.error)
        else:
            hidden = (
                self.message is None
                or content != self.message
                or self.quotes_id  # the id the model quotes leads to the log line
                or has_hidden_cause(self.error)
            )
        if hidden:
            emit(
                self.resolved.log_level,
                EVENT_HIDDEN,
                self._fields(handler, context, self.error_id),
            )
        result = error_result(
            self.call.id,
            self.name,
            content,
            return_direct=self.stop,
            error_id=self.error_id if hidden else None,
            error_kind=_kind(self.error, self.message),
        )
        return_direct = self.resolved.return_direct
        if not self.stop and return_direct is not NEVER and asks_to_stop(return_direct, result):
            result = attrs.evolve(result, return_direct=True)
        if self.traced is not None:
            self.traced.answered(self.error, handler.name, context.level, result)
        return result

    def raised(self, raised: Exception, handler: Handler, context: HandlerContext) -> None:
        """A handler raised: log once, and keep the original failure reachable."""
        if isinstance(raised, ToolCallFailed):
            if raised.__cause__ is None:
                raised.__cause__ = self.error
            emit("error", EVENT_FAILED, self._fields(handler, context, raised.error_id))
            error_id = raised.error_id
        elif is_control_flow(raised):
            error_id = None
        else:
            fields = self._fields(handler, context, self.error_id)
            fields["handler_error"] = type(raised).__name__
            emit("error", EVENT_HANDLER_RAISED, fields)
            if raised.__cause__ is None and raised.__context__ is None:
                raised.__context__ = self.error
            error_id = self.error_id
        if self.traced is not None:
            self.traced.handler_raised(self.error, handler.name, context.level, raised, error_id)


def asks_to_stop(return_direct: ReturnDirect, result: ToolResult) -> bool:
    """Whether ``result`` ends the agent loop under ``return_direct``.

    A predicate is the application's code, asked a yes-or-no question on the way out.
    One that raises answers no: the result stays as it is (no call of a round loses its
    answer, an error text never becomes the final answer), and what it raised is logged
    once as ``return_direct_failed``, at ERROR, naming the result's tool, call id and
    error id. Control flow it raises propagates.
    """
    try:
        return return_direct.applies(result)
    except Exception as error:
        if is_control_flow(error):
            raise
        # its implicit context would be the tool's failure, logged once already
        error.__suppress_context__ = True
        emit(
            "error",
            EVENT_RETURN_DIRECT_FAILED,
            tool=result.name,
            call_id=None if result.call_id is None else shown(result.call_id, ID_LIMIT),
            error_id=result.error_id,
            predicate=repr(return_direct),
            exc_info=error,
        )
        return False


_MODEL_MISTAKES: Final = (InvalidArguments, UnknownTool)
"""What ``on_invalid_call`` answers: the model's arguments, the model's tool names."""

_KINDS: Final[tuple[tuple[type[Exception], ErrorKind], ...]] = (
    (InvalidArguments, "arguments"),
    (UnknownTool, "unknown_tool"),
    (RetryWithFeedback, "feedback"),
    (ToolTimeout, "timeout"),
    (ToolUnavailable, "unavailable"),
)


_KINDED: Final = tuple(error_type for error_type, _ in _KINDS)


def _kind(error: Exception, message: str | None) -> ErrorKind:
    """The kind of a failure, by ``isinstance`` alone: an application's subclass of
    one of toolguard's errors is of its kind (one check for the common case, a tool's
    own exception)."""
    if isinstance(error, _KINDED):
        for error_type, kind in _KINDS:
            if isinstance(error, error_type):
                return kind
    return "hidden" if message is None else "visible"


def _plumbing() -> tuple[str, ...]:
    """Where the frames above a tool's own come from: toolguard's call path (the
    runner and guard packages, the public face) and the standard library and tenacity
    machinery it runs tools through."""
    package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    places = [os.path.join(package, folder) + os.sep for folder in ("runner", "guard")]
    places += [os.path.join(package, f"{name}.py") for name in ("_dispatcher", "_session", "_tool")]
    places += [os.path.dirname(os.path.abspath(module.__file__ or "")) + os.sep
               for module in (asyncio, concurrent.futures, tenacity)]  # fmt: skip
    places += [os.path.abspath(threading.__file__), os.path.abspath(contextlib.__file__)]
    return tuple(places)


_PLUMBING: Final = _plumbing()


def _from_the_tool(error: BaseException) -> None:
    """Drop toolguard's own frames from the top of ``error``'s traceback, so a logged
    traceback starts where the tool's code is (``log_frames="tool"``). A traceback of
    toolguard's frames only (a result that cannot be serialised) is kept whole."""
    top = error.__traceback__
    frame = top
    while frame is not None and frame.tb_frame.f_code.co_filename.startswith(_PLUMBING):
        frame = frame.tb_next
    if frame is not None and frame is not top:
        error.__traceback__ = frame
