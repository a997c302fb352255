"""The agent's whole policy as one value (:class:`AgentPolicy`): what a policy file
holds, and what ``Dispatcher(...)``'s own options build: the agent level, the override
level, and the agent's own settings (rounds, pools, the store, telemetry).
"""

from __future__ import annotations

import typing
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final, Literal, TypeAlias

import attrs

from toolguard._text import normalised
from toolguard.errors import InvalidOption
from toolguard.policy._options import named_options, refused
from toolguard.policy._values import DEFAULT_REDACT, POLICY_FIELDS, UNSET, ToolPolicy, Unset

__all__ = [
    "AGENT_DEFAULTS",
    "RETURN_DIRECT_MODES",
    "STORE_FAIL_MODES",
    "STORE_SCHEMES",
    "AgentPolicy",
    "ReturnDirectMode",
    "check_store",
    "code_options",
]

ReturnDirectMode: TypeAlias = Literal["any", "all"]
RETURN_DIRECT_MODES: Final[tuple[ReturnDirectMode, ...]] = typing.get_args(ReturnDirectMode)


def _to_overrides(value: Mapping[str, ToolPolicy]) -> dict[str, ToolPolicy]:
    if not isinstance(value, Mapping):
        raise InvalidOption(
            f"overrides must be a mapping of name or glob to ToolPolicy, got {value!r}"
        )
    for key, policy in value.items():
        if not isinstance(key, str) or not key:
            raise InvalidOption(f"overrides: keys are tool names or globs, got {key!r}")
        if not isinstance(policy, ToolPolicy):
            raise InvalidOption(f"overrides[{key!r}] must be a ToolPolicy(...), got {policy!r}")
    return dict(value)


def _check_mode(instance: Any, attribute: Any, value: Any) -> None:
    if value is not UNSET and value not in RETURN_DIRECT_MODES:
        raise refused("return_direct_mode", value, "'any', 'all'", RETURN_DIRECT_MODES)


STORE_SCHEMES: Final = ("redis://", "rediss://", "unix://")
STORE_FAIL_MODES: Final = ("fail-open", "fail-closed")


def _check_store(instance: Any, attribute: Any, value: Any) -> None:
    if value is UNSET or value == "memory":
        return
    if isinstance(value, str) and value.startswith("env:") and value[4:].isidentifier():
        return
    if not isinstance(value, str) or not value.startswith(STORE_SCHEMES):
        raise InvalidOption(
            f"store={value!r} is not allowed; use 'memory', a Redis URL "
            "('redis://host:6379/0', 'rediss://...', 'unix://...'), or 'env:NAME' (the URL "
            "is in that environment variable)"
        )
    where = _credential_in(value)
    if where is not None:
        raise InvalidOption(
            f"store: a URL with a password ({where}) does not belong in a policy (explain "
            "shows it); use 'env:NAME', naming an environment variable that holds the URL"
        )


_SECRET_WORDS: Final = tuple(sorted({normalised(key) for key in DEFAULT_REDACT}))


def _credential_in(url: str) -> str | None:
    """Where ``url`` holds a credential: its userinfo's password, or a query parameter
    named like a secret (redis-py passes every query parameter to the connection, so
    ``?password=`` and ``?ssl_password=`` are passwords too); ``None`` when nowhere."""
    split = urllib.parse.urlsplit(url)
    try:
        if split.password:
            return "in its user info"
    except ValueError:  # a malformed port or netloc: the query is still checked
        pass
    for name, _ in urllib.parse.parse_qsl(split.query, keep_blank_values=True):
        if any(word in normalised(name) for word in _SECRET_WORDS):
            return f"its query parameter {name[:40]!r}"
    return None


def check_store(value: str) -> None:
    """Raise :class:`InvalidOption` unless ``value`` is what ``store`` accepts."""
    _check_store(None, None, value)


def _check_fail_mode(instance: Any, attribute: Any, value: Any) -> None:
    if value is not UNSET and value not in STORE_FAIL_MODES:
        raise refused("store_unavailable", value, "'fail-open', 'fail-closed'", STORE_FAIL_MODES)


def _check_defaults(instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, ToolPolicy):
        raise InvalidOption(f"defaults must be a ToolPolicy(...), got {value!r}")


def _check_positive(instance: Any, attribute: Any, value: Any) -> None:
    if value is not UNSET and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
        raise refused(attribute.name, value, "a positive int")


def _check_bool(instance: Any, attribute: Any, value: Any) -> None:
    if value is not UNSET and not isinstance(value, bool):
        raise refused(attribute.name, value, "True or False")


AGENT_DEFAULTS: Final[dict[str, Any]] = {
    "return_direct_mode": "any",
    "max_workers": 32,
    "max_abandoned": 4,
    "store": "memory",
    "store_unavailable": "fail-open",
}
"""The built-in values of the agent's own settings (see :class:`AgentPolicy`)."""


@named_options
@attrs.frozen(kw_only=True)
class AgentPolicy:
    """An agent's whole policy as one value: what a policy file holds.

    ``defaults`` is the agent level, ``overrides`` (name or glob -> ToolPolicy, in
    declaration order) the override level, plus the agent's own settings:
    ``return_direct_mode``, ``max_workers`` (the round pool's threads) and
    ``max_abandoned`` (per tool, the attempts left running past their timeout before
    the tool is answered "unavailable"), ``store`` and ``store_unavailable`` (where
    sessions keep their state), and ``telemetry`` (this agent's calls in OpenTelemetry
    spans, or not, whatever ``configure(telemetry=)`` says; unset: as it says).
    ``source`` names where it came from (a file path) for ``explain``.

    Given to ``Dispatcher(tools, policy=...)`` beside settings passed in code, the
    policy is the later word: at each level its entries come first (its agent
    handlers are asked before the code's, its scalars win), and its round settings
    replace the code's.
    """

    defaults: ToolPolicy = attrs.field(factory=ToolPolicy, validator=_check_defaults)
    overrides: dict[str, ToolPolicy] = attrs.field(factory=dict, converter=_to_overrides)
    return_direct_mode: ReturnDirectMode | Unset = attrs.field(default=UNSET, validator=_check_mode)
    max_workers: int | Unset = attrs.field(default=UNSET, validator=_check_positive)
    max_abandoned: int | Unset = attrs.field(default=UNSET, validator=_check_positive)
    # where sessions keep budgets and breakers (toolguard.stores): "memory", or a Redis
    # URL for the sessions a dispatcher makes without store=; and its failure mode
    store: str | Unset = attrs.field(default=UNSET, validator=_check_store)
    store_unavailable: str | Unset = attrs.field(default=UNSET, validator=_check_fail_mode)
    # this agent's calls in OpenTelemetry spans, whatever configure(telemetry=) says
    telemetry: bool | Unset = attrs.field(default=UNSET, validator=_check_bool)
    source: str | None = None


def code_options(code: AgentPolicy) -> dict[str, Any]:
    """The ``Dispatcher()`` options that build ``code`` again (the ones it sets): what
    ``Dispatcher.with_policy`` passes to keep an application's code settings as written."""
    options: dict[str, Any] = {
        field: getattr(code.defaults, field)
        for field in POLICY_FIELDS
        if getattr(code.defaults, field) is not UNSET
    }
    options["overrides"] = code.overrides
    for name in ("return_direct_mode", "max_workers", "max_abandoned", "telemetry"):
        value = getattr(code, name)
        options[name] = None if value is UNSET else value
    return options
