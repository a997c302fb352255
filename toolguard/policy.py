"""ToolPolicy, the unset marker, and the one precedence chain.

Every level of the chain (call, override, tool, agent, global, built-in) speaks
the same language: a :class:`ToolPolicy`. Resolution turns the levels that apply
to one tool into a :class:`Resolved` policy once (at dispatcher construction, or
when ``configure()`` changed the global level), never per call.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, TypeAlias

import attrs

from toolguard.handlers import Handler, _GenericUnlessVisible, as_handler

if TYPE_CHECKING:
    from toolguard.results import ToolResult

__all__ = [
    "BUILTIN",
    "LEVELS",
    "UNSET",
    "Level",
    "ReturnDirect",
    "Resolved",
    "Setting",
    "ToolPolicy",
    "resolve",
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

# ---------------------------------------------------------------------------------
# The precedence chain, highest first. This tuple is the only place that states it.
#   call      an override passed with one dispatch (dispatch(call, policy=...))
#   override  the agent forcing a setting on a named tool or a glob of tools
#   tool      the decorator's policy (the author knows this tool's exceptions)
#   agent     the Dispatcher's defaults
#   global    configure()
#   builtin   never declines: generic message with the error id, cause logged
# Handlers are asked in this order until one answers (None = "not mine");
# a scalar setting takes the first level that sets it.
# ---------------------------------------------------------------------------------
Level: TypeAlias = Literal["call", "override", "tool", "agent", "global", "builtin"]
LEVELS: Final[tuple[Level, ...]] = ("call", "override", "tool", "agent", "global", "builtin")

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

BUILTIN_MESSAGE: Final = (
    "The tool '{tool}' failed because of an internal error (error id {error_id}). "
    "The details are not available to you. Do not retry the same call; try another "
    "approach or tell the user, quoting the error id."
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
        raise ValueError(
            f"return_direct={value!r} is not allowed; use False (never), True (stop on success), "
            "'always', or a callable (ToolResult) -> bool"
        )


NEVER: Final = ReturnDirect("never")
ON_SUCCESS: Final = ReturnDirect("on_success")
ALWAYS: Final = ReturnDirect("always")

ReturnDirectLike: TypeAlias = (
    "bool | Literal['always'] | Callable[[ToolResult], bool] | ReturnDirect"
)


def _to_handler(value: Any) -> Handler | Unset:
    if isinstance(value, _Unset):
        return UNSET
    try:
        handler: Handler = as_handler(value)
    except TypeError as error:
        raise ValueError(f"on_error={value!r}: {error}") from None
    return handler


def _to_return_direct(value: Any) -> ReturnDirect | Unset:
    return UNSET if value is UNSET else ReturnDirect.of(value)


def _to_log_level(value: Any) -> str | Unset:
    if isinstance(value, _Unset):
        return UNSET
    if isinstance(value, str) and value.lower() in LOG_LEVELS:
        return str(value.lower())
    raise ValueError(f"log_level={value!r} is not allowed; use one of {', '.join(LOG_LEVELS)}")


def _to_redact(value: Any) -> tuple[str, ...] | Unset:
    if isinstance(value, _Unset):
        return UNSET
    if isinstance(value, str) or not all(isinstance(k, str) and k for k in value):
        raise ValueError(f"redact={value!r} is not allowed; use a tuple of key names")
    return tuple(str(k).lower() for k in value)


@attrs.frozen(kw_only=True)
class ToolPolicy:
    """What one precedence level says about a tool. Unset fields are :data:`UNSET`.

    * ``on_error``: a handler (or handler-like: string, callable) asked on failure.
    * ``return_direct``: when a result asks the agent loop to stop.
    * ``log_level``: the level hidden causes are logged at (``"warning"`` built in).
    * ``redact``: argument keys whose values are masked in logs (substring match,
      case-insensitive).

    Derive variants with ``attrs.evolve(policy, field=value)``.
    """

    on_error: Handler | Unset = attrs.field(default=UNSET, converter=_to_handler)
    return_direct: ReturnDirect | Unset = attrs.field(default=UNSET, converter=_to_return_direct)
    log_level: str | Unset = attrs.field(default=UNSET, converter=_to_log_level)
    redact: tuple[str, ...] | Unset = attrs.field(default=UNSET, converter=_to_redact)

    def is_empty(self) -> bool:
        return all(getattr(self, f.name) is UNSET for f in attrs.fields(ToolPolicy))


POLICY_FIELDS: Final = tuple(f.name for f in attrs.fields(ToolPolicy))
SCALAR_FIELDS: Final = tuple(name for name in POLICY_FIELDS if name != "on_error")


def policy_from_options(options: Mapping[str, Any], *, where: str) -> ToolPolicy:
    """Build a policy from keyword options, naming ``where`` in every error."""
    unknown = [key for key in options if key not in POLICY_FIELDS]
    if unknown:
        from toolguard._suggest import did_you_mean

        key = unknown[0]
        raise TypeError(
            f"{where}: unknown option {key!r}{did_you_mean(key, POLICY_FIELDS)}; "
            f"allowed: {', '.join(POLICY_FIELDS)}"
        )
    try:
        return ToolPolicy(**options)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


BUILTIN: Final = ToolPolicy(
    on_error=_GenericUnlessVisible(BUILTIN_MESSAGE, name="generic_unless_visible(BUILTIN_MESSAGE)"),
    return_direct=NEVER,
    log_level="warning",
    redact=DEFAULT_REDACT,
)
"""The built-in level: never declines, logs hidden causes at WARNING."""


@attrs.frozen
class Setting:
    """An effective value and the precedence level that supplied it."""

    value: Any
    level: Level


@attrs.frozen
class Resolved:
    """One tool's policy with the precedence chain applied.

    ``chain`` is every handler that will be asked, in order, with its level;
    the scalar settings hold the first level that set them.
    """

    chain: tuple[tuple[Handler, Level], ...]
    return_direct: Setting
    log_level: Setting
    redact: Setting
    is_async: bool

    def explain(self) -> dict[str, Setting | tuple[Setting, ...]]:
        """Each setting's effective value and level; ``on_error`` is the whole chain."""
        explained: dict[str, Setting | tuple[Setting, ...]] = {
            "on_error": tuple(Setting(handler, level) for handler, level in self.chain)
        }
        for name in SCALAR_FIELDS:
            explained[name] = getattr(self, name)
        return explained

    def async_handler(self) -> tuple[Handler, Level] | None:
        """The first handler of the chain that can only run on the async path."""
        for handler, level in self.chain:
            if handler.is_async:
                return handler, level
        return None


def resolve(layers: Iterable[tuple[Level, ToolPolicy]]) -> Resolved:
    """Apply the precedence chain to ``layers`` (given highest first).

    The built-in level is always appended last, so every chain ends with a handler
    that never declines and every scalar has a value.
    """
    chain: list[tuple[Handler, Level]] = []
    scalars: dict[str, Setting] = {}
    for level, policy in (*layers, ("builtin", BUILTIN)):
        if policy.on_error is not UNSET:
            chain.extend((member, level) for member in policy.on_error.members())
        for name in SCALAR_FIELDS:
            value = getattr(policy, name)
            if value is not UNSET and name not in scalars:
                scalars[name] = Setting(value, level)
    return Resolved(
        chain=tuple(chain),
        is_async=any(handler.is_async for handler, _ in chain),
        **scalars,
    )
