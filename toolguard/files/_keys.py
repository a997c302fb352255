"""Policy files: the keys an ``[agent]`` or ``[tools."NAME"]`` table holds (:data:`KEYS`),
and how ``on_error``, ``message`` and ``rules`` compose into one handler.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from toolguard._suggest import did_you_mean
from toolguard.errors import InvalidOption
from toolguard.files._values import (
    DOTTED,
    Bad,
    boolean,
    choice,
    count,
    describe,
    exceptions,
    expected,
    function,
    import_object,
    is_exception_class,
    number,
    table_of,
)
from toolguard.policy._agent import (
    RETURN_DIRECT_MODES,
    STORE_FAIL_MODES,
    STORE_SCHEMES,
    check_store,
)
from toolguard.policy._handlers import (
    MESSAGE_HANDLERS,
    NAMED_HANDLERS,
    Handler,
    answer,
    as_handler,
    fixed_message,
    named_handler,
    on,
)
from toolguard.policy._precedence import BUILTIN
from toolguard.policy._resilience import Breaker, Retry
from toolguard.policy._values import (
    EXHAUSTED_MODES,
    LOG_FRAMES,
    LOG_LEVELS,
    MIN_LOGGED_ARGUMENTS,
    MIN_RESULT_CHARS,
    ReturnDirect,
)

__all__ = ["HANDLER_NAMES", "KEYS", "Key", "compose"]

T = TypeVar("T")

_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_]\w*)\}")


# --- handlers -------------------------------------------------------------------------


@attrs.frozen
class _NeedsMessage:
    """``"generic_unless_visible"`` or ``"always"``: built once the table's ``message``
    is known."""

    name: str
    factory: Callable[[str], Handler] = attrs.field(eq=False)


HANDLER_NAMES: Final[dict[str, Handler | _NeedsMessage]] = {
    **NAMED_HANDLERS,
    **{name: _NeedsMessage(name, factory) for name, factory in MESSAGE_HANDLERS.items()},
}
"""The handler vocabulary a file may name (besides import paths and fixed messages):
the same names as in code (``toolguard.policy._handlers``)."""

_GENERIC: Final = HANDLER_NAMES["generic_unless_visible"]

_HANDLER_ALLOWED: Final = (
    f"a handler name ({', '.join(HANDLER_NAMES)}), an import path 'module:function', "
    "or a fixed message (a sentence for the model)"
)
_Ref: TypeAlias = Handler | _NeedsMessage


def _handler(value: Any) -> _Ref:
    """One handler string: a name, an import path, or a fixed message, by the rule code
    follows too (:func:`~toolguard.policy._handlers.named_handler`)."""
    if not isinstance(value, str):
        raise expected(_HANDLER_ALLOWED, value)
    if value in HANDLER_NAMES:
        return HANDLER_NAMES[value]
    if ":" in value and not any(char.isspace() for char in value):  # an import path
        found = import_object(value)
        if isinstance(found, Handler):
            return found
        return as_handler(function(value, "(error, context) -> str | None, nor a handler"))
    if DOTTED.fullmatch(value):
        module, _, attribute = value.rpartition(".")
        raise Bad(
            f"unknown handler {value!r} (did you mean {module + ':' + attribute!r}?); "
            f"allowed: {_HANDLER_ALLOWED}"
        )
    try:
        named = named_handler(value)
    except InvalidOption:
        hint = did_you_mean(value, HANDLER_NAMES)
        raise Bad(f"unknown handler {value!r}{hint}; allowed: {_HANDLER_ALLOWED}") from None
    if named is not None:  # pragma: no cover - the names are looked up above
        return named
    if not value.strip():
        raise expected(_HANDLER_ALLOWED, value)
    return fixed_message(value)


def _on_error(value: Any) -> list[_Ref]:
    if not isinstance(value, list):
        return [_handler(value)]
    if not value:
        raise Bad(f"an empty array names no handler; allowed: {_HANDLER_ALLOWED}")
    refs: list[_Ref] = []
    problems: list[Bad] = []
    for index, item in enumerate(value):
        try:
            refs.append(_handler(item))
        except Bad as bad:
            problems.append(Bad(bad.message, index))
    if problems:  # every bad item, not only the first
        raise Bad.each(problems)
    return refs


def _message(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise expected("a non-blank string", value)
    for placeholder in _PLACEHOLDER.findall(value):
        close = difflib.get_close_matches(placeholder, ("error_id", "tool"), n=1)
        if placeholder not in ("error_id", "tool") and close:
            raise Bad(
                f"unknown placeholder {{{placeholder}}} (did you mean {{{close[0]}}}?); only "
                "{error_id} and {tool} are filled in"
            )
    return value


_RULE_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "exception": exceptions,
    "handler": _handler,
    "message": _message,
}


def _rules(value: Any) -> list[tuple[tuple[type[Exception], ...], _Ref | str]]:
    allowed = "an array of tables [[...rules]], each with exception and handler or message"
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise expected(allowed, value)
    rules: list[tuple[tuple[type[Exception], ...], _Ref | str]] = []
    problems: list[Bad] = []
    for index, table in enumerate(value):
        try:
            rule = table_of(table, _RULE_FIELDS, allowed)
            if "exception" not in rule:
                raise Bad("a rule needs exception = 'package.module.ExceptionClass'")
            if "handler" in rule and "message" in rule:
                raise Bad("a rule has either handler or message, not both")
            if "handler" not in rule and "message" not in rule:
                raise Bad("a rule needs handler = '...' or message = '...'")
        except Bad as bad:
            problems.extend(bad.within(index))
            continue
        action: _Ref | str = rule["handler"] if "handler" in rule else rule["message"]
        rules.append((rule["exception"], action))
    if problems:
        raise Bad.each(problems)
    return rules


def compose(parts: dict[str, Any]) -> Handler | None:
    """``rules`` (in order), then ``on_error``, composed with ``|``; ``None``: unset.

    ``message`` is the text of the table's ``"generic_unless_visible"`` and ``"always"``
    (alone, it means ``on_error = "generic_unless_visible"``).
    """
    message: str | None = parts.get("message")
    refs: list[_Ref] | None = parts.get("on_error")
    rules: list[tuple[tuple[type[Exception], ...], _Ref | str]] = parts.get("rules", [])
    used = [
        ref for ref in (*(refs or []), *(ref for _, ref in rules)) if isinstance(ref, _NeedsMessage)
    ]
    if message is not None:
        if refs is None:
            refs = [_GENERIC]
        elif not used:
            raise Bad(
                "message is the text of generic_unless_visible (or always), which this "
                'table\'s on_error does not use; add "generic_unless_visible" to on_error, '
                "or remove message"
            )
    elif any(ref.name != "generic_unless_visible" for ref in used):
        raise Bad(
            '"always" sends this table\'s message, and the table has none; add '
            'message = "..." beside it'
        )
    builtin = BUILTIN.on_error
    assert isinstance(builtin, Handler)

    def concrete(ref: _Ref | str) -> Handler:
        if isinstance(ref, _NeedsMessage):
            return builtin if message is None else ref.factory(message)
        return fixed_message(ref) if isinstance(ref, str) else ref

    def for_types(ref: _Ref | str) -> Handler:
        # a rule's message is text, whatever it says (never looked up as a name), and
        # the answer for the types it names, as on(types, text) is in code
        return answer(ref) if isinstance(ref, str) else concrete(ref)

    members = [on(types, for_types(ref)) for types, ref in rules]
    members += [concrete(ref) for ref in refs or []]
    if not members:
        return None
    handler = members[0]
    for member in members[1:]:
        handler = handler | member
    return handler


def _invalid_call(value: Any) -> Handler:
    """``on_invalid_call``: a handler, or an array of them, composed with ``|``."""
    refs = _on_error(value)
    handlers: list[Handler] = []
    for index, ref in enumerate(refs):
        if isinstance(ref, _NeedsMessage):
            at = (index,) if isinstance(value, list) else ()
            raise Bad(
                f"{ref.name!r} takes the table's message, which belongs to on_error; for the "
                "model's own mistakes write the sentence itself, or an import path",
                *at,
            )
        handlers.append(ref)
    handler = handlers[0]
    for member in handlers[1:]:
        handler = handler | member
    return handler


# --- the other settings -----------------------------------------------------------------


def _return_direct(value: Any) -> ReturnDirect:
    if isinstance(value, bool) or value == "always":
        return ReturnDirect.of(value)
    if isinstance(value, str) and ":" in value:
        return ReturnDirect.of(function(value, "(ToolResult) -> bool"))
    hint = did_you_mean(value, ("always",)) if isinstance(value, str) else ""
    raise expected("true, false, \"always\", or an import path 'module:predicate'", value, hint)


def _log_level(value: Any) -> str:
    if isinstance(value, str) and value.lower() in LOG_LEVELS:
        return value.lower()
    return choice(value, LOG_LEVELS)


def _redact(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise expected("an array of argument key names (strings)", value)
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise Bad(f"expected a non-blank key name, got {describe(item)}", index)
    return tuple(value)


def _retry_on(value: Any) -> tuple[type[Exception], ...] | Callable[[Exception], bool]:
    if isinstance(value, str) and ":" in value:
        found = import_object(value)
        if is_exception_class(found):
            return (found,)
        return function(value, "(error) -> bool, nor an exception class")
    return exceptions(value)


_RETRY_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "attempts": lambda v: count(v, 1),
    "on": _retry_on,
    "initial": number,
    "max_delay": number,
    "jitter": lambda v: number(v, zero=True),
    "total": number,
}
_BREAKER_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "failures": lambda v: count(v, 1),
    "cooldown": number,
}


def _retries(value: Any) -> int | Retry:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    what = "an integer >= 0 (retries after the first attempt), or a table {attempts = 3, ...}"
    return _build(Retry, table_of(value, _RETRY_FIELDS, what))


def _breaker(value: Any) -> Breaker | None:
    if value is False:
        return None
    what = "a table {failures = 5, cooldown = 60}, or false"
    return _build(Breaker, table_of(value, _BREAKER_FIELDS, what))


def _store(value: Any) -> str:
    if isinstance(value, str) and (value == "memory" or value.startswith((*STORE_SCHEMES, "env:"))):
        try:
            check_store(value)
        except ValueError as error:
            raise Bad(str(error)) from None
        return value
    raise expected('"memory", a Redis URL ("redis://host:6379/0"), or "env:NAME"', value)


def _build(cls: Callable[..., T], options: dict[str, Any]) -> T:
    """``cls(**options)``, its own validation reported as a problem of this key."""
    try:
        return cls(**options)
    except (TypeError, ValueError) as error:
        raise Bad(str(error)) from None


# --- the keys a table holds: one entry per setting -----------------------------------


@attrs.frozen
class Key:
    """One key of an ``[agent]`` or ``[tools."NAME"]`` table.

    ``parse`` turns the TOML value into what ``field`` takes, raising ``Bad`` when
    it cannot. ``into`` says where the result goes: ``"policy"``, the
    :class:`~toolguard.ToolPolicy` field ``field``; ``"agent"``, the
    :class:`~toolguard.AgentPolicy` field ``field`` (round settings, ``[agent]``
    only); ``"handler"``, a part of ``on_error`` (``on_error``, ``message``, ``rules``
    are composed into one handler).
    """

    name: str
    field: str
    parse: Callable[[Any], Any]
    into: Literal["policy", "agent", "handler"] = "policy"

    @property
    def tables(self) -> tuple[str, ...]:
        return ("agent",) if self.into == "agent" else ("agent", "tools")


KEYS: Final[tuple[Key, ...]] = (
    Key("on_error", "on_error", _on_error, "handler"),
    Key("message", "on_error", _message, "handler"),
    Key("rules", "on_error", _rules, "handler"),
    Key("on_invalid_call", "on_invalid_call", _invalid_call),
    Key("return_direct", "return_direct", _return_direct),
    Key("log_level", "log_level", _log_level),
    Key("redact", "redact", _redact),
    Key(
        "max_result_chars", "max_result_chars", lambda v: count(v, MIN_RESULT_CHARS, unlimited=True)
    ),
    Key("timeout", "timeout", lambda v: number(v, unlimited=True)),
    Key("retries", "retries", _retries),
    Key("breaker", "breaker", _breaker),
    Key("max_model_retries", "max_model_retries", lambda v: count(v, 0, unlimited=True)),
    Key(
        "model_retries_exhausted",
        "model_retries_exhausted",
        lambda v: choice(v, EXHAUSTED_MODES),
    ),
    Key("log_frames", "log_frames", lambda v: choice(v, LOG_FRAMES)),
    Key(
        "max_logged_arguments",
        "max_logged_arguments",
        lambda v: count(v, MIN_LOGGED_ARGUMENTS, unlimited=True),
    ),
    Key(
        "return_direct_mode",
        "return_direct_mode",
        lambda v: choice(v, RETURN_DIRECT_MODES),
        "agent",
    ),
    Key("max_workers", "max_workers", lambda v: count(v, 1), "agent"),
    Key("max_abandoned", "max_abandoned", lambda v: count(v, 1), "agent"),
    Key("store", "store", _store, "agent"),
    Key("store_unavailable", "store_unavailable", lambda v: choice(v, STORE_FAIL_MODES), "agent"),
    Key("telemetry", "telemetry", boolean, "agent"),
)
"""Every key of ``[agent]`` and ``[tools."NAME"]``: a new setting is one more entry."""
