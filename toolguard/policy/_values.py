"""ToolPolicy and the unset marker: what one level of the chain says about a tool.

Every level of the precedence chain (call, override, tool, agent, global, built-in)
speaks the same language: a :class:`ToolPolicy`. How the levels combine is
``_precedence``.
"""

from __future__ import annotations

import enum
import typing
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import attrs
from typing_extensions import TypedDict, Unpack

from toolguard._suggest import did_you_mean
from toolguard.errors import InvalidOption
from toolguard.policy._handlers import Handler, HandlerLike, as_handler
from toolguard.policy._options import refused, unknown_option
from toolguard.policy._resilience import Breaker, Retry, to_breaker, to_retry, to_timeout

if TYPE_CHECKING:
    from toolguard._values import ToolResult

__all__ = [
    "ALWAYS",
    "DEFAULT_REDACT",
    "EXHAUSTED_MODES",
    "HANDLER_FIELDS",
    "LOG_FRAMES",
    "LOG_LEVELS",
    "MIN_LOGGED_ARGUMENTS",
    "MIN_RESULT_CHARS",
    "NEVER",
    "ON_SUCCESS",
    "POLICY_FIELDS",
    "SCALAR_FIELDS",
    "UNSET",
    "ExhaustedMode",
    "LogFrames",
    "PolicyOptions",
    "ReturnDirect",
    "ReturnDirectLike",
    "ToolPolicy",
    "Unset",
    "policy_from_options",
]


class _Unset(enum.Enum):
    """The marker for "this level does not set this field" (distinct from ``None``)."""

    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


Unset: TypeAlias = Literal[_Unset.UNSET]
UNSET: Final[Unset] = _Unset.UNSET

LOG_LEVELS: Final = ("debug", "info", "warning", "error", "critical")

DEFAULT_REDACT: Final = (
    "password",
    "passwd",
    "secret",
    "token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "credential",
    "private_key",
    "session",
)


@attrs.frozen
class ReturnDirect:
    """When a tool's result asks the agent loop to stop.

    Built from what ``return_direct=`` accepts: ``False`` (never), ``True`` (on
    success), ``"always"`` (success or failure), or a predicate on the
    :class:`~toolguard.ToolResult`.
    """

    mode: Literal["never", "on_success", "always", "predicate"]
    predicate: Callable[[ToolResult], bool] | None = attrs.field(default=None, eq=False)

    def applies(self, result: ToolResult) -> bool:
        if self.mode == "never":
            return False
        if self.mode == "on_success":
            return not result.is_error
        if self.mode == "always":
            return True
        assert self.predicate is not None
        return bool(self.predicate(result))

    def __repr__(self) -> str:
        if self.mode == "predicate":
            name = getattr(self.predicate, "__qualname__", self.predicate)
            return f"ReturnDirect(predicate={name})"
        return f"ReturnDirect({self.mode!r})"

    @classmethod
    def of(cls, value: ReturnDirectLike) -> ReturnDirect:
        if isinstance(value, ReturnDirect):
            return value
        if value is False:
            return NEVER
        if value is True:
            return ON_SUCCESS
        if value == "always":
            return ALWAYS
        if callable(value) and not isinstance(value, str):
            return cls("predicate", value)
        hint = did_you_mean(value, ("always",)) if isinstance(value, str) else ""
        raise InvalidOption(
            f"return_direct={value!r} is not allowed{hint}; allowed: False (never), True "
            "(stop on success), 'always', or a callable (ToolResult) -> bool"
        )


NEVER: Final = ReturnDirect("never")
ON_SUCCESS: Final = ReturnDirect("on_success")
ALWAYS: Final = ReturnDirect("always")

ReturnDirectLike: TypeAlias = (
    "bool | Literal['always'] | Callable[[ToolResult], bool] | ReturnDirect"
)
"""What ``return_direct=`` accepts."""


ExhaustedMode: TypeAlias = Literal["message", "fail", "stop"]
LogFrames: TypeAlias = Literal["tool", "all"]
LOG_FRAMES: Final[tuple[LogFrames, ...]] = typing.get_args(LogFrames)
MIN_LOGGED_ARGUMENTS: Final = 100
EXHAUSTED_MODES: Final[tuple[ExhaustedMode, ...]] = typing.get_args(ExhaustedMode)
MIN_RESULT_CHARS: Final = 100


class PolicyOptions(TypedDict, total=False):
    """The policy options, as ``tool(...)``, ``ToolPolicy(...)``, ``Dispatcher(...)``
    and ``configure(...)`` take them (see :class:`ToolPolicy` for each)."""

    on_error: HandlerLike | Unset
    on_invalid_call: HandlerLike | Unset
    return_direct: ReturnDirectLike | Unset
    log_level: str | Unset
    redact: Iterable[str] | Unset
    max_result_chars: int | Unset | None
    timeout: float | Unset | None
    retries: int | Retry | Unset | None
    breaker: Breaker | Unset | None
    max_model_retries: int | Unset | None
    model_retries_exhausted: ExhaustedMode | Unset
    log_frames: LogFrames | Unset
    max_logged_arguments: int | Unset | None


def _handler_converter(field: str) -> Callable[[Any], Handler | Unset]:
    def convert(value: HandlerLike | Unset) -> Handler | Unset:
        if isinstance(value, _Unset):
            return UNSET
        try:
            handler: Handler = as_handler(value)
        except InvalidOption as error:
            raise InvalidOption(f"{field}={value!r}: {error}") from None
        return handler

    convert.__name__ = f"_to_{field}"
    return convert


_on_error = _handler_converter("on_error")
_on_invalid_call = _handler_converter("on_invalid_call")


def _to_on_error(value: HandlerLike | Unset) -> Handler | Unset:
    return _on_error(value)


def _to_on_invalid_call(value: HandlerLike | Unset) -> Handler | Unset:
    return _on_invalid_call(value)


def _to_return_direct(value: ReturnDirectLike | Unset) -> ReturnDirect | Unset:
    return UNSET if value is UNSET else ReturnDirect.of(value)


def _to_log_level(value: Any) -> str | Unset:
    if isinstance(value, _Unset):
        return UNSET
    if isinstance(value, str) and value.lower() in LOG_LEVELS:
        return str(value.lower())
    raise refused("log_level", value, ", ".join(LOG_LEVELS), LOG_LEVELS)


def _to_redact(value: Any) -> tuple[str, ...] | Unset:
    if isinstance(value, _Unset):
        return UNSET
    if (
        isinstance(value, str)
        or not isinstance(value, Iterable)
        or not all(isinstance(k, str) and k for k in value)
    ):
        raise refused("redact", value, "a tuple of argument key names (non-blank strings)")
    return tuple(str(k).lower() for k in value)


def _to_max_result_chars(value: Any) -> int | Unset | None:
    if isinstance(value, _Unset) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_RESULT_CHARS:
        return value
    raise refused("max_result_chars", value, f"an int of at least {MIN_RESULT_CHARS}, or None")


def _resilience(field: str, convert: Callable[[Any], Any], value: Any) -> Any:
    """A resilience value, its own refusal re-raised as the one bad-option error."""
    if isinstance(value, _Unset):
        return value
    try:
        return convert(value)
    except InvalidOption:
        raise
    except (TypeError, ValueError) as error:
        text = str(error)
        prefix = f"{field}="
        raise InvalidOption(text if text.startswith(prefix) else f"{field}: {text}") from None


def _to_timeout(value: Any) -> float | Unset | None:
    return _resilience("timeout", to_timeout, value)  # type: ignore[no-any-return]  # each converter's own type


def _to_retries(value: Any) -> Retry | Unset | None:
    return _resilience("retries", to_retry, value)  # type: ignore[no-any-return]  # each converter's own type


def _to_breaker(value: Any) -> Breaker | Unset | None:
    return _resilience("breaker", to_breaker, value)  # type: ignore[no-any-return]  # each converter's own type


def _to_max_model_retries(value: Any) -> int | Unset | None:
    if isinstance(value, _Unset) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise refused("max_model_retries", value, "an int >= 0, or None")


def _to_exhausted(value: Any) -> ExhaustedMode | Unset:
    if isinstance(value, _Unset) or value in EXHAUSTED_MODES:
        return value  # type: ignore[no-any-return]  # checked: one of the Literal's
    raise refused(
        "model_retries_exhausted",
        value,
        ", ".join(repr(mode) for mode in EXHAUSTED_MODES),
        EXHAUSTED_MODES,
    )


def _to_log_frames(value: Any) -> LogFrames | Unset:
    if isinstance(value, _Unset) or value in LOG_FRAMES:
        return value  # type: ignore[no-any-return]  # checked: one of the Literal's
    raise refused("log_frames", value, ", ".join(repr(f) for f in LOG_FRAMES), LOG_FRAMES)


def _to_max_logged_arguments(value: Any) -> int | Unset | None:
    if isinstance(value, _Unset) or value is None:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value >= MIN_LOGGED_ARGUMENTS:
        return value
    raise refused(
        "max_logged_arguments", value, f"an int of at least {MIN_LOGGED_ARGUMENTS}, or None"
    )


@attrs.frozen(kw_only=True, init=False)
class ToolPolicy:
    """What one precedence level says about a tool. Unset fields are :data:`UNSET`.

    * ``on_error``: a handler (or handler-like: string, callable) asked on failure.
    * ``on_invalid_call``: the handler asked about the model's own mistakes: arguments
      that fail validation (``InvalidArguments``) and tool names it invented
      (``UnknownTool``). These never reach ``on_error``; the built-in sends
      toolguard's bounded, field-level message.
    * ``return_direct``: when a result asks the agent loop to stop.
    * ``log_level``: the level hidden causes are logged at (``"warning"`` built in).
    * ``redact``: argument keys whose values are masked in logs (substring match,
      case-insensitive).
    * ``max_result_chars``: longer content is cut, with a note telling the model
      (``None``: no limit, the built-in).
    * ``timeout``: seconds one attempt may take (``None``: no limit, the built-in).
    * ``retries``: retry transient failures: an int (retries after the first
      attempt) or a :class:`~toolguard.Retry` (``None``: never, the built-in).
    * ``breaker``: a :class:`~toolguard.Breaker` (per session; ``None``: none).
    * ``max_model_retries``: how many times per session the model may be asked to
      retry a call (``RetryWithFeedback``); ``None``: unlimited, the built-in.
    * ``model_retries_exhausted``: then ``"message"`` (tell the model to stop
      calling the tool, the built-in), ``"fail"`` (raise ``ToolCallFailed``), or
      ``"stop"`` (tell the model, and ask the round to stop).
    * ``log_frames``: a hidden cause's logged traceback starts at the tool's own frame
      (``"tool"``, the built-in) or keeps toolguard's frames above it (``"all"``).
    * ``max_logged_arguments``: characters of the model's arguments a log event holds,
      marked where cut (2,000 built in; ``None``: all of them).

    Derive variants with ``attrs.evolve(policy, field=value)``.
    """

    on_error: Handler | Unset = attrs.field(default=UNSET, converter=_to_on_error)
    on_invalid_call: Handler | Unset = attrs.field(default=UNSET, converter=_to_on_invalid_call)
    return_direct: ReturnDirect | Unset = attrs.field(default=UNSET, converter=_to_return_direct)
    log_level: str | Unset = attrs.field(default=UNSET, converter=_to_log_level)
    redact: tuple[str, ...] | Unset = attrs.field(default=UNSET, converter=_to_redact)
    max_result_chars: int | Unset | None = attrs.field(
        default=UNSET, converter=_to_max_result_chars
    )
    timeout: float | Unset | None = attrs.field(default=UNSET, converter=_to_timeout)
    retries: Retry | Unset | None = attrs.field(default=UNSET, converter=_to_retries)
    breaker: Breaker | Unset | None = attrs.field(default=UNSET, converter=_to_breaker)
    max_model_retries: int | Unset | None = attrs.field(
        default=UNSET, converter=_to_max_model_retries
    )
    model_retries_exhausted: ExhaustedMode | Unset = attrs.field(
        default=UNSET, converter=_to_exhausted
    )
    log_frames: LogFrames | Unset = attrs.field(default=UNSET, converter=_to_log_frames)
    max_logged_arguments: int | Unset | None = attrs.field(
        default=UNSET, converter=_to_max_logged_arguments
    )

    def __init__(self, **options: Unpack[PolicyOptions]) -> None:
        for key in options:
            if key not in POLICY_FIELDS:
                raise unknown_option("ToolPolicy()", key, POLICY_FIELDS)
        self.__attrs_init__(**options)

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is UNSET for f in attrs.fields(ToolPolicy))


POLICY_FIELDS: Final = tuple(f.name for f in attrs.fields(ToolPolicy))
HANDLER_FIELDS: Final = ("on_error", "on_invalid_call")
"""The fields that hold a handler chain (every level's handlers are asked in turn)."""
SCALAR_FIELDS: Final = tuple(name for name in POLICY_FIELDS if name not in HANDLER_FIELDS)


def policy_from_options(
    options: Mapping[str, Any], *, where: str, also: Iterable[str] = ()
) -> ToolPolicy:
    """Build a policy from keyword options, naming ``where`` in every error.

    ``also`` names the caller's own options (``tool(name=...)``), so that an unknown
    option's message lists every option the caller takes.
    """
    for key in options:
        if key not in POLICY_FIELDS:
            raise unknown_option(where, key, (*also, *POLICY_FIELDS))
    try:
        return ToolPolicy(**options)  # checked against POLICY_FIELDS above
    except (TypeError, ValueError) as error:
        raise InvalidOption(f"{where}: {error}") from None
