"""The one precedence chain: which level's handler is asked, which level's setting wins.

Resolution turns the levels that apply to one tool into a :class:`Resolved` policy.
It runs on a tool's first call, and again on its first call after ``configure()``
changed the global level (the dispatcher caches it per config version), not per
call. Overrides name tools exactly or by glob (:class:`Overrides`).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from typing import Any, Final, Literal, TypeAlias

import attrs

from toolguard.policy._handlers import Chain, _GenericUnlessVisible, send_exception_message
from toolguard.policy._resilience import Breaker, Retry
from toolguard.policy._values import (
    DEFAULT_REDACT,
    NEVER,
    SCALAR_FIELDS,
    UNSET,
    ExhaustedMode,
    LogFrames,
    ReturnDirect,
    ToolPolicy,
)

__all__ = [
    "BUILTIN",
    "BUILTIN_MESSAGE",
    "LEVELS",
    "Layer",
    "Level",
    "Overrides",
    "Resolved",
    "Setting",
    "glob_problem",
    "is_glob",
    "resolve",
]

# ---------------------------------------------------------------------------------
# The precedence chain, highest first. This tuple is the only place that states it:
# resolve() orders the layers it is given by it.
#   call      an override passed with one dispatch (dispatch(call, policy=...))
#   override  the agent forcing a setting on a named tool or a glob of tools
#   tool      the decorator's policy (the author knows this tool's exceptions)
#   agent     the Dispatcher's defaults
#   global    configure()
#   builtin   never declines: generic message with the error id, cause logged;
#             for the model's own mistakes (on_invalid_call), the field-level message
# Handlers are asked in this order until one answers (None = "not mine");
# a scalar setting takes the first level that sets it. on_error and on_invalid_call
# are two chains over the same levels: a failure is asked one of them, never both.
# ---------------------------------------------------------------------------------
Level: TypeAlias = Literal["call", "override", "tool", "agent", "global", "builtin"]
LEVELS: Final[tuple[Level, ...]] = ("call", "override", "tool", "agent", "global", "builtin")

BUILTIN_MESSAGE: Final = (
    "The tool '{tool}' failed because of an internal error (error id {error_id}). "
    "The details are not available to you. Do not retry the same call; try another "
    "approach or tell the user, quoting the error id."
)


BUILTIN: Final = ToolPolicy(
    on_error=_GenericUnlessVisible(BUILTIN_MESSAGE, name="generic_unless_visible(BUILTIN_MESSAGE)"),
    on_invalid_call=send_exception_message,  # InvalidArguments / UnknownTool: their own words
    return_direct=NEVER,
    log_level="warning",
    redact=DEFAULT_REDACT,
    max_result_chars=None,
    timeout=None,
    retries=None,
    breaker=None,
    max_model_retries=None,
    model_retries_exhausted="message",
    log_frames="tool",
    max_logged_arguments=2_000,
)
"""The built-in level: never declines, logs hidden causes at WARNING; the model's own
mistakes get toolguard's bounded message naming what was wrong."""


@attrs.frozen
class Setting:
    """An effective value and the precedence level that supplied it.

    ``source`` says where within the level it was written (a policy file and key,
    an override's pattern); it does not take part in comparisons.
    """

    value: Any
    level: Level
    source: str | None = attrs.field(default=None, eq=False)


@attrs.frozen
class Layer:
    """One policy at one precedence level, with where it came from."""

    level: Level
    policy: ToolPolicy
    source: str | None = None


class Resolved:
    """One tool's policy with the precedence chain applied (built once, read per call).

    ``chain`` is every handler that will be asked, in order, as ``Setting(handler,
    level)``; ``invalid_chain`` the same for ``on_invalid_call`` (the model's own
    mistakes); ``settings`` holds each scalar's first setting level. The scalar
    values are also plain attributes, for the hot path.
    """

    __slots__ = (
        "_policy",
        "breaker",
        "chain",
        "invalid_chain",
        "is_async",
        "log_frames",
        "log_level",
        "max_logged_arguments",
        "max_model_retries",
        "max_result_chars",
        "model_retries_exhausted",
        "quiet",
        "redact",
        "retries",
        "return_direct",
        "settings",
        "timeout",
    )

    def __init__(
        self,
        chain: tuple[Setting, ...],
        settings: dict[str, Setting],
        invalid_chain: tuple[Setting, ...] = (),
    ) -> None:
        self.chain = chain
        self.invalid_chain = invalid_chain
        self.settings = settings
        self.is_async = any(setting.value.is_async for setting in (*chain, *invalid_chain))
        self.return_direct: ReturnDirect = settings["return_direct"].value
        self.log_level: str = settings["log_level"].value
        self.redact: tuple[str, ...] = settings["redact"].value
        self.max_result_chars: int | None = settings["max_result_chars"].value
        self.timeout: float | None = settings["timeout"].value
        self.retries: Retry | None = settings["retries"].value
        self.breaker: Breaker | None = settings["breaker"].value
        self.max_model_retries: int | None = settings["max_model_retries"].value
        self.model_retries_exhausted: ExhaustedMode = settings["model_retries_exhausted"].value
        self.log_frames: LogFrames = settings["log_frames"].value
        self.max_logged_arguments: int | None = settings["max_logged_arguments"].value
        # nothing around a call of the tool until it fails: no breaker to ask or count,
        # no timeout or retries, and a success with nothing to cut or stop on
        self.quiet = (
            self.breaker is None
            and self.timeout is None
            and self.retries is None
            and self.max_result_chars is None
            and self.return_direct is NEVER
        )
        self._policy: ToolPolicy | None = None

    def policy(self) -> ToolPolicy:
        """This resolution as one :class:`ToolPolicy` with nothing unset: each scalar's
        value, and each chain as one handler (made once, on first use)."""
        made = self._policy
        if made is None:
            scalars = {name: setting.value for name, setting in self.settings.items()}
            made = self._policy = ToolPolicy(
                on_error=Chain(tuple(setting.value for setting in self.chain)),
                on_invalid_call=Chain(tuple(setting.value for setting in self.invalid_chain)),
                **scalars,
            )
        return made

    def explain(self) -> dict[str, Setting | tuple[Setting, ...]]:
        """Each setting's effective value and level; ``on_error`` and ``on_invalid_call``
        are their whole chains."""
        return {"on_error": self.chain, "on_invalid_call": self.invalid_chain, **self.settings}

    def async_handler(self) -> Setting | None:
        """The first handler of either chain that can only run on the async path."""
        both = (*self.chain, *self.invalid_chain)
        return next((setting for setting in both if setting.value.is_async), None)


_RANK: Final = {level: rank for rank, level in enumerate(LEVELS)}


def resolve(layers: Iterable[Layer]) -> Resolved:
    """Apply the precedence chain to ``layers``.

    The layers are asked in :data:`LEVELS` order; layers of one level keep the
    order given (an exact override before globs, a policy file before the code).
    The built-in level always comes last, so every chain ends with a handler that
    never declines and every scalar has a value.
    """
    chain: list[Setting] = []
    invalid_chain: list[Setting] = []
    settings: dict[str, Setting] = {}
    ordered = sorted(layers, key=lambda layer: _RANK[layer.level])
    for layer in (*ordered, Layer("builtin", BUILTIN)):
        policy = layer.policy
        for handler, into in ((policy.on_error, chain), (policy.on_invalid_call, invalid_chain)):
            if handler is not UNSET:
                into.extend(
                    Setting(member, layer.level, layer.source) for member in handler.members()
                )
        for name in SCALAR_FIELDS:
            value = getattr(policy, name)
            if value is not UNSET and name not in settings:
                settings[name] = Setting(value, layer.level, layer.source)
    return Resolved(tuple(chain), settings, tuple(invalid_chain))


# --- the override level: exact names, then globs ------------------------------------

_GLOB_CHARS: Final = re.compile(r"[*?\[]")


def is_glob(pattern: str) -> bool:
    """Whether an override key is a glob (``*``, ``?`` or ``[``) rather than a name."""
    return _GLOB_CHARS.search(pattern) is not None


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable tool-name glob, or ``None`` when it is."""
    depth_open = None
    for index, char in enumerate(pattern):
        if char == "[" and depth_open is None:
            depth_open = index
        elif char == "]" and depth_open is not None and index > depth_open + 1:
            depth_open = None
    if depth_open is not None:
        return f"'[' at position {depth_open} is never closed; use [abc] or [!abc]"
    return None


class Overrides:
    """The override level of one agent: which layers apply to a tool name.

    Exact names are asked before globs; matching globs are asked in the order
    declared (a policy file's before the code's), each may decline.
    """

    __slots__ = ("_exact", "_globs")

    def __init__(self) -> None:
        self._exact: list[tuple[str, Layer]] = []
        self._globs: list[tuple[re.Pattern[str], Layer]] = []

    def add(self, key: str, layer: Layer) -> None:
        """Add one override; a glob that cannot match is a ``ValueError``."""
        if is_glob(key):
            problem = glob_problem(key)
            if problem:
                raise ValueError(f"bad glob: {problem}")
            self._globs.append((re.compile(fnmatch.translate(key)), layer))
        else:
            self._exact.append((key, layer))

    def layers(self, name: str) -> tuple[Layer, ...]:
        """The override layers for ``name``, in the order they are asked."""
        return (
            *(layer for key, layer in self._exact if key == name),
            *(layer for pattern, layer in self._globs if pattern.match(name)),
        )
