"""Exceptions: what the model may see, what must pass through, what toolguard raises.

Model-visible errors carry a message written *for the model*; everything else is
hidden:

* :class:`ToolError`: raise it with the message for the model (``raise
  ToolError("...") from cause``: the cause is logged, never sent); any exception
  with ``message_for_model() -> str`` (:class:`VisibleToModel`) is model-visible too.
* :class:`RetryWithFeedback`: "the call was wrong; here is how to fix it" (visible,
  never retried, never opens a breaker, counted against ``max_model_retries``).

Signals that pass through untouched: :class:`ControlFlow` and the types given to
:func:`register_control_flow` (frameworks' interrupts, handoffs).

What toolguard raises or answers with:

* :class:`ToolCallFailed`: a handler chose to fail the invocation (the original is
  its ``__cause__``);
* model-visible answers to the model's own mistakes and to resilience:
  :class:`InvalidArguments`, :class:`UnknownTool`, :class:`ToolTimeout`,
  :class:`ToolUnavailable`, :class:`ModelRetriesExhausted`;
* hidden failures: :class:`ResultNotSerializable` (a return value with no JSON form),
  :class:`InjectionError` (the application did not supply an injected value);
* :class:`ToolDefinitionError`: a tool, policy or dispatcher declared wrongly, raised
  when it is declared; :class:`InvalidOption`, its subclass, for a bad option (an
  unknown option name, or a value an option does not take), wherever it is given.

A failure answered in another process (a durable engine's activity or step) comes back
as a :class:`RemoteFailure`: its answer, and the error id its cause was logged under.
Inside one, a failure the engine is to retry is raised as :class:`EngineRetry`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from toolguard._marks import ControlFlow, is_control_flow, register_control_flow

if TYPE_CHECKING:
    from toolguard._values import Content, ErrorKind, Round

__all__ = [
    "ControlFlow",
    "EngineRetry",
    "InjectionError",
    "InvalidArguments",
    "InvalidOption",
    "ModelRetriesExhausted",
    "RemoteFailure",
    "ResultNotSerializable",
    "RetryWithFeedback",
    "ToolCallFailed",
    "ToolDefinitionError",
    "ToolError",
    "ToolTimeout",
    "ToolUnavailable",
    "UnknownTool",
    "VisibleToModel",
    "is_control_flow",
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
    sends the message to the model; the cause (``err``) is logged, never sent. A
    blank message is refused here (``ValueError``): the model must be told something.

    ``{error_id}`` and ``{tool}`` in the message are filled in when it is sent (as in
    fixed messages; no other braces are read): ``ToolError("No invoice 7 (ref
    {error_id}).") from err`` quotes the id its cause is logged under, so a user's
    report finds the log line. A message quoting ``{error_id}`` is logged under it
    even without a cause. The same holds for any ``message_for_model()``.
    """

    def __init__(self, message: str) -> None:
        if not isinstance(message, str) or not message.strip():
            raise ValueError(
                f"{type(self).__name__} needs a message for the model; got a blank one "
                f"({message!r}). Say what went wrong and what to do instead."
            )
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


class EngineRetry(ControlFlow):
    """A failure a durable engine retries: raised inside the engine's unit (an activity,
    a step) when the tool's policy retries the failure and this is not the unit's last
    attempt. It carries the failure's type name and an error id (its cause is logged
    there, at DEBUG, as ``tool_retry``, under that id) and nothing of its text or its
    chain: the engine logs and persists what an attempt raises. Control flow: it passes
    every guard untouched, to the engine.
    """

    def __init__(self, error_type: str, error_id: str) -> None:
        super().__init__(f"{error_type} (error id {error_id}), retried by the engine")
        self.error_type = error_type
        self.error_id = error_id

    def __reduce__(self) -> tuple[Any, ...]:  # an engine's journal may pickle it (DBOS)
        return (type(self), (self.error_type, self.error_id))


class RemoteFailure(Exception):
    """A tool's failure, answered where the tool ran: in another process (a durable
    engine's activity or step), under the same policy.

    It carries what crossed back, and nothing else: ``content``, the answer the model
    gets; ``error_id``, the id its hidden cause was logged under there, once (``None``
    when nothing was hidden); ``error_type``, the name of the exception's type;
    ``error_kind``, the answer's kind there (by default ``"hidden"`` with an error id,
    else ``"visible"``). The handler chain was asked where the exception was; here the
    guard answers with ``content``, keeps the session's books by its kind (a hidden
    failure or a timeout counts towards the breaker, a model-visible one closes it, the
    model's own mistakes change nothing) and logs nothing.
    """

    def __init__(
        self,
        content: Content,
        *,
        error_type: str,
        error_id: str | None = None,
        error_kind: ErrorKind | None = None,
    ) -> None:
        where = f"error id {error_id}" if error_id is not None else "model-visible"
        super().__init__(f"{error_type}, answered where the tool ran ({where})")
        self.content = content
        self.error_type = error_type
        self.error_id = error_id
        self.error_kind: ErrorKind = error_kind or ("visible" if error_id is None else "hidden")


class ToolDefinitionError(ValueError):
    """A tool, policy or dispatcher was declared wrongly (raised at import time)."""


class InvalidOption(ToolDefinitionError, TypeError):
    """A bad option: an unknown option name, or a value the option does not take.

    The one type raised for a bad option wherever it is given: ``@tool(...)``,
    ``ToolPolicy(...)``, ``AgentPolicy(...)``, ``Retry(...)``, ``Breaker(...)``,
    ``Dispatcher(...)``, ``dispatcher.session(...)``, ``configure(...)``, a handler
    string (``on_error="fial"``) and a policy file (:class:`~toolguard.PolicyFileError`
    is a subclass). The message names the option, suggests the closest allowed name or
    value ("did you mean ...?") and lists everything allowed.

    It is a :class:`ToolDefinitionError`, hence a ``ValueError``, and also a
    ``TypeError``: the ``except`` clauses written for the types these calls raised
    before (``TypeError`` for an unknown keyword, ``ValueError`` for a bad value)
    keep working.
    """


class ResultNotSerializable(TypeError):
    """A tool returned a value toolguard cannot turn into JSON for the model (hidden)."""


class InjectionError(Exception):
    """The application did not supply a value a tool declared as injected.

    This is the application's bug, not the model's: it is hidden from the model and
    logged like any other unmarked failure.
    """
