"""One failure on its way through the handler chain, and the round it ends up in.

Shared by the sync and async paths of the dispatcher: they differ only in how a
handler is called (``handler(...)`` or ``await handler.acall(...)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, Final

import attrs

from toolguard._logging import (
    EVENT_FAILED,
    EVENT_HANDLER_RAISED,
    EVENT_HIDDEN,
    arguments_for_log,
    emit,
    new_error_id,
)
from toolguard.errors import (
    InvalidArguments,
    ModelRetriesExhausted,
    RetryWithFeedback,
    ToolCallFailed,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
    has_hidden_cause,
    is_control_flow,
    model_message,
)
from toolguard.handlers import Handler, HandlerContext, fail
from toolguard.policy import BUILTIN_MESSAGE, NEVER, Resolved, Setting
from toolguard.results import (
    Content,
    ErrorKind,
    Image,
    Round,
    Text,
    ToolCall,
    ToolResult,
    error_result,
)

if TYPE_CHECKING:
    from toolguard.session import Step

_new = object.__new__

TRUNCATED: Final = (
    "\n[toolguard: output truncated: showing the first {shown} of {total} characters]"
)


class Failure:
    """The state of one failure: its error id, visible message, and chain to ask."""

    __slots__ = (
        "attempts",
        "call",
        "chain",
        "error",
        "error_id",
        "message",
        "name",
        "resolved",
        "stop",
    )

    def __init__(
        self,
        error: Exception,
        call: ToolCall,
        name: str,
        resolved: Resolved,
        step: Step | None,
        attempts: int,
    ) -> None:
        self.call = call
        self.name = name
        self.resolved = resolved
        self.attempts = attempts
        self.chain: tuple[Setting, ...] = resolved.chain
        self.stop = False
        if step is not None:
            step.finished(name, resolved.breaker, error)
            error = step.model_retry(error, name, resolved)
            if isinstance(error, ModelRetriesExhausted):
                # the policy decides: tell the model (default), fail, or also stop
                mode = resolved.settings["model_retries_exhausted"]
                if mode.value == "fail":
                    self.chain = (Setting(fail, mode.level, mode.source),)
                self.stop = mode.value == "stop"
        self.error = error
        self.error_id = new_error_id()
        self.message = model_message(error, name)

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
        fields = {
            "error_id": error_id,
            "tool": self.name,
            "call_id": self.call.id,
            "answered_by": context.level,
            "handler": handler.name,
            "error_type": type(self.error).__name__,
            "arguments": arguments_for_log(self.call.arguments, self.resolved.redact),
            "exc_info": self.error,
        }
        if self.attempts > 1:
            fields["attempts"] = self.attempts
        return fields

    def answered(self, content: Content, handler: Handler, context: HandlerContext) -> ToolResult:
        """The result for a handler's answer (already :func:`checked`)."""
        if self.resolved.max_result_chars is not None:
            content = truncate(content, self.resolved.max_result_chars)
        hidden = self.message is None or content != self.message or has_hidden_cause(self.error)
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
        if not self.stop and return_direct is not NEVER and return_direct.applies(result):
            return attrs.evolve(result, return_direct=True)
        return result

    def raised(self, raised: Exception, handler: Handler, context: HandlerContext) -> None:
        """A handler raised: log once, and keep the original failure reachable."""
        if isinstance(raised, ToolCallFailed):
            if raised.__cause__ is None:
                raised.__cause__ = self.error
            emit("error", EVENT_FAILED, self._fields(handler, context, raised.error_id))
            return
        if is_control_flow(raised):
            return
        fields = self._fields(handler, context, self.error_id)
        fields["handler_error"] = type(raised).__name__
        emit("error", EVENT_HANDLER_RAISED, fields)
        if raised.__cause__ is None and raised.__context__ is None:
            raised.__context__ = self.error


_KINDS: Final[tuple[tuple[type[Exception], ErrorKind], ...]] = (
    (InvalidArguments, "arguments"),
    (UnknownTool, "unknown_tool"),
    (RetryWithFeedback, "feedback"),
    (ToolTimeout, "timeout"),
    (ToolUnavailable, "unavailable"),
)


def _kind(error: Exception, message: str | None) -> ErrorKind:
    # the common case first: the tool's own exception, not one of toolguard's
    if type(error).__module__ != "toolguard.errors" and not isinstance(
        error, RetryWithFeedback | ToolTimeout
    ):
        return "hidden" if message is None else "visible"
    for error_type, kind in _KINDS:
        if isinstance(error, error_type):
            return kind
    return "hidden" if message is None else "visible"


def checked(answer: Any, handler: Handler) -> Content:
    """A handler's answer as content, or a clear ``TypeError`` naming the handler."""
    if isinstance(answer, str):
        return answer
    if (
        isinstance(answer, list | tuple)
        and answer
        and all(isinstance(block, Text | Image) for block in answer)
    ):
        return tuple(answer)
    raise TypeError(
        f"handler {handler.name} answered {type(answer).__name__}; a handler answers "
        "with a str, content blocks, or None (not mine)"
    )


def truncate(content: Content, limit: int) -> Content:
    """Cut text longer than ``limit`` characters, telling the model it was cut."""
    if isinstance(content, str):
        if len(content) <= limit:
            return content
        return content[:limit] + TRUNCATED.format(shown=limit, total=len(content))
    return tuple(
        Text(text=str(truncate(block.text, limit)))
        if isinstance(block, Text) and len(block.text) > limit
        else block
        for block in content
    )


# --- rounds ---------------------------------------------------------------------------


def outcome_of(future: Future[ToolResult]) -> ToolResult | BaseException:
    """A round call's result or the exception it propagated (interrupts re-raised)."""
    try:
        return future.result()
    except ToolCallFailed as failed:
        return failed
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        return error


def assemble_round(
    calls: Sequence[ToolCall],
    outcomes: Sequence[ToolResult | BaseException],
    mode: str,
) -> Round:
    """Assemble a round; then raise the first propagating failure, if any.

    A ``ToolCallFailed`` carries the whole round (its own call answered with the
    built-in generic message), so the conversation can still be answered.
    """
    results: list[ToolResult] = []
    first: BaseException | None = None
    for call, outcome in zip(calls, outcomes, strict=True):
        if isinstance(outcome, ToolResult):
            results.append(outcome)
            continue
        if first is None:
            first = outcome
        if isinstance(outcome, ToolCallFailed):
            text = BUILTIN_MESSAGE.replace("{tool}", outcome.tool).replace(
                "{error_id}", outcome.error_id
            )
            results.append(
                ToolResult(
                    call_id=call.id,
                    name=call.name,
                    content=text,
                    is_error=True,
                    error_id=outcome.error_id,
                    error_kind="hidden",
                )
            )
        else:
            results.append(ToolResult(call_id=call.id, name=call.name, content="", is_error=True))
    stops = [result.return_direct for result in results]
    stop = bool(stops) and (all(stops) if mode == "all" else any(stops))
    final = next((r for r in results if r.return_direct), None) if stop else None
    round_ = Round(results=tuple(results), stop=stop, final=final)
    if first is not None:
        if isinstance(first, ToolCallFailed):
            first.round = round_
        raise first
    return round_
