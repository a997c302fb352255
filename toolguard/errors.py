"""Exceptions: what the model may see, what must pass through, what toolguard raises.

Three ideas live here:

* **Model-visible errors.** :class:`ToolError`, or any exception with a
  ``message_for_model() -> str`` method (the :class:`VisibleToModel` protocol),
  carries a message written *for the model*. Everything else is hidden.
* **Control flow.** :class:`ControlFlow` subclasses, and any type passed to
  :func:`register_control_flow`, are signals (interrupts, handoffs) that pass
  through toolguard untouched, like ``KeyboardInterrupt``.
* **toolguard's own exceptions**: :class:`ToolCallFailed` (a handler chose to fail
  the invocation), :class:`InvalidArguments` and :class:`UnknownTool` (the model's
  call was wrong; model-visible), :class:`ToolDefinitionError` (a bad decorator or
  dispatcher at import time).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from toolguard._logging import EVENT_BLANK_MESSAGE, emit

if TYPE_CHECKING:
    from toolguard.results import Round

__all__ = [
    "ControlFlow",
    "InvalidArguments",
    "ModelRetriesExhausted",
    "RetryWithFeedback",
    "ToolCallFailed",
    "ToolDefinitionError",
    "ToolError",
    "ToolTimeout",
    "ToolUnavailable",
    "UnknownTool",
    "VisibleToModel",
    "is_control_flow",
    "model_message",
    "register_control_flow",
]


@runtime_checkable
class VisibleToModel(Protocol):
    """Any exception with this method is model-visible: its answer goes to the model.

    A blank answer is ignored (logged as ``blank_model_message``) and the exception
    is then treated as unmarked, that is, hidden.
    """

    def message_for_model(self) -> str: ...


class ToolError(Exception):
    """A failure whose message is written for the model.

    ``raise ToolError("There is no order 42. Ask the user to check the number.") from err``
    sends the message to the model; the cause (``err``) is logged, never sent.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def message_for_model(self) -> str:
        return self.message


class InvalidArguments(ToolError):
    """The model's arguments failed validation; the tool did not run.

    ``problems`` lists one line per bad argument (name and what was expected).
    """

    def __init__(self, message: str, *, tool: str, problems: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.tool = tool
        self.problems = problems


class UnknownTool(ToolError):
    """The model named a tool this agent does not have."""

    def __init__(self, message: str, *, tool: str, available: tuple[str, ...]) -> None:
        super().__init__(message)
        self.tool = tool
        self.available = available


class ToolTimeout(ToolError, TimeoutError):
    """A tool did not finish within its ``timeout`` (toolguard's own, model-visible)."""

    def __init__(self, message: str, *, tool: str, seconds: float) -> None:
        super().__init__(message)
        self.tool = tool
        self.seconds = seconds


class ToolUnavailable(ToolError):
    """A tool's circuit breaker is open: the call was not run (model-visible)."""

    def __init__(self, message: str, *, tool: str, retry_after: float) -> None:
        super().__init__(message)
        self.tool = tool
        self.retry_after = retry_after


class RetryWithFeedback(Exception):
    """Raised by a tool to say "the call was wrong; here is how to fix it".

    Model-visible, and distinct from a failure: it is never retried by toolguard
    and never opens a circuit breaker. Inside a :class:`~toolguard.Session` with
    ``max_model_retries`` set, the message carries the count (``retry 2 of 3``) and
    the policy decides what happens when the budget is spent.
    """

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
        self.attempt: int | None = None
        self.limit: int | None = None

    def message_for_model(self) -> str:
        if self.attempt is None or self.limit is None:
            return self.message
        return f"{self.message} (retry {self.attempt} of {self.limit})"


class ModelRetriesExhausted(ToolError):
    """The model used up a tool's ``max_model_retries`` in this session."""


class ControlFlow(Exception):
    """Base class for signals that must pass through toolguard untouched.

    No handler ever sees a ``ControlFlow``; it propagates out of ``dispatch``,
    ``adispatch``, ``run`` and ``arun`` exactly as raised.
    """


class ToolCallFailed(Exception):
    """A handler chose to fail the invocation instead of answering the model.

    The original exception is the ``__cause__``. ``tool`` is the tool's name,
    ``call_id`` the call's id and ``error_id`` the id under which the failure was
    logged. Raised from a round (``run``/``arun``), ``round`` holds every result of
    that round, the failed call's included (it carries toolguard's generic error
    text), so the conversation can still be answered.
    """

    def __init__(
        self,
        message: str,
        *,
        tool: str,
        call_id: str | None,
        error_id: str,
    ) -> None:
        super().__init__(message)
        self.tool = tool
        self.call_id = call_id
        self.error_id = error_id
        self.round: Round | None = None


class ToolDefinitionError(ValueError):
    """A tool, policy or dispatcher was declared wrongly (raised at import time)."""


class ResultNotSerializable(TypeError):
    """A tool returned a value toolguard cannot turn into JSON for the model (hidden)."""


class InjectionError(Exception):
    """The application did not supply a value a tool declared as injected.

    This is the application's bug, not the model's: it is hidden from the model and
    logged like any other unmarked failure.
    """


# --- control flow registry -------------------------------------------------------

_control_flow_types: tuple[type[BaseException], ...] = (ControlFlow,)
_control_flow_checks: tuple[Callable[[BaseException], bool], ...] = ()
_registry_lock = threading.Lock()


def register_control_flow(
    *types: type[BaseException], check: Callable[[BaseException], bool] | None = None
) -> None:
    """Treat these exception types (and their subclasses) as control flow.

    Frameworks' own signals (LangGraph's ``GraphInterrupt``, handoffs) register
    here so that they propagate out of toolguard untouched. ``check`` is for
    signals recognised per instance rather than by type (a predicate on the
    exception; it must be cheap and must not raise). Registering twice is harmless.
    """
    global _control_flow_types, _control_flow_checks
    for exc_type in types:
        if not (isinstance(exc_type, type) and issubclass(exc_type, BaseException)):
            raise TypeError(f"register_control_flow() takes exception classes, got {exc_type!r}")
    if check is not None and not callable(check):
        raise TypeError(f"register_control_flow(check=...) takes a predicate, got {check!r}")
    with _registry_lock:
        known = set(_control_flow_types)
        _control_flow_types = _control_flow_types + tuple(t for t in types if t not in known)
        if check is not None and check not in _control_flow_checks:
            _control_flow_checks = (*_control_flow_checks, check)


def is_control_flow(error: BaseException) -> bool:
    """True for exceptions that toolguard must never handle."""
    if not isinstance(error, Exception) or isinstance(error, _control_flow_types):
        return True
    return any(check(error) for check in _control_flow_checks) if _control_flow_checks else False


def has_hidden_cause(error: BaseException) -> bool:
    """True when the error chains to another exception (``from`` or implicitly)."""
    return error.__cause__ is not None or (
        error.__context__ is not None and not error.__suppress_context__
    )


def model_message(error: BaseException, tool: str) -> str | None:
    """The model-visible message of ``error``, or ``None`` when it is hidden.

    The marker is looked for on the exception as thrown, and on the exception a
    toolguard wrapper (``_toolguard_wraps``) carries; never further down
    ``__cause__``: wrapping a marked exception deliberately hides it. A blank
    message, or a ``message_for_model()`` that raises, counts as unmarked.
    """
    candidate = error
    method = getattr(type(candidate), "message_for_model", None)
    if method is None:
        wrapped = getattr(error, "_toolguard_wraps", None)
        if not isinstance(wrapped, BaseException):
            return None
        candidate = wrapped
        method = getattr(type(candidate), "message_for_model", None)
        if method is None:
            return None
    try:
        text = candidate.message_for_model()  # type: ignore[attr-defined]
    except Exception as failure:  # noqa: BLE001 - a broken marker hides, never crashes
        # its __context__ is the tool's error, which is logged once, by the failure
        failure.__suppress_context__ = True
        emit(
            "warning",
            "model_message_failed",
            tool=tool,
            error_type=type(candidate).__name__,
            exc_info=failure,
        )
        return None
    if not isinstance(text, str) or not text.strip():
        emit("warning", EVENT_BLANK_MESSAGE, tool=tool, error_type=type(candidate).__name__)
        return None
    return text
