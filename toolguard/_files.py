"""Policy files: TOML in, an :class:`~toolguard.AgentPolicy` out.

A policy file holds what an operator may change without touching code::

    version = 1

    [agent]                                  # the agent default level
    on_error = "generic_unless_visible"
    message = "The tool '{tool}' failed (error id {error_id})."
    log_level = "warning"

    [[agent.rules]]                          # asked before on_error, in order
    exception = "TimeoutError"
    message = "The search timed out; try again later."

    [tools."search_*"]                       # the override level, by name or glob
    on_error = "fail_unless_visible"

Every mistake is one :class:`PolicyFileError` listing each problem with the file,
the line, the key path, what was wrong and what is allowed. The keys a table may
hold are data (:data:`KEYS`): a new policy setting is one more entry there.
Loading a file imports the modules its import paths name: a policy file is code
the application trusts, like a settings module.
"""

from __future__ import annotations

import builtins
import difflib
import importlib
import math
import os
import re
import tomllib
from collections.abc import Callable, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final, Literal, TypeAlias, TypeVar

import attrs

from toolguard._handlers import (
    Handler,
    as_handler,
    fail,
    fail_unless_visible,
    generic_unless_visible,
    on,
    send_exception_message,
)
from toolguard._policy import LOG_LEVELS, AgentPolicy, ReturnDirect, ToolPolicy
from toolguard._precedence import BUILTIN, glob_problem, is_glob
from toolguard._resilience import Breaker, Retry
from toolguard._suggest import did_you_mean
from toolguard._toml_lines import KeyLines, KeyPath, format_path

__all__ = ["KEYS", "VERSION", "Key", "PolicyFileError", "Problem", "load_policy", "presets"]

VERSION: Final = 1
"""The format version this toolguard reads (``version = 1`` in every file)."""

T = TypeVar("T")

_NAME_CHARS: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
_IMPORT_PATH: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_DOTTED: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
_PLACEHOLDER: Final = re.compile(r"\{([A-Za-z_]\w*)\}")


# --- what a caller gets ------------------------------------------------------------


@attrs.frozen
class Problem:
    """One mistake: ``file:line: key: message`` (``line`` is ``None`` when unknown)."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class PolicyFileError(ValueError):
    """A policy file that cannot be used; ``problems`` lists every mistake found.

    ``str(error)`` is one ``file:line: key: message`` line per problem; ``file``,
    ``line``, ``key`` and ``message`` are the first problem's.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("PolicyFileError needs at least one problem")
        self.problems = tuple(problems)
        first = self.problems[0]
        self.file, self.line, self.key, self.message = (
            first.file,
            first.line,
            first.key,
            first.message,
        )
        super().__init__("\n".join(str(problem) for problem in self.problems))


# --- parsing values: each parser raises _Bad, naming what is allowed ----------------------


class _Bad(Exception):
    """A value that cannot be used; ``at`` continues the key path (an index, a key)."""

    def __init__(self, message: str, *at: str | int) -> None:
        super().__init__(message)
        self.message = message
        self.at: KeyPath = at
        self.more: tuple[_Bad, ...] = ()

    @classmethod
    def each(cls, problems: Sequence[_Bad]) -> _Bad:
        """Several problems (in an array of tables) raised as one."""
        first = problems[0]
        first.more = tuple(problems[1:])
        return first


def _describe(value: Any) -> str:
    """A TOML value, as an error message names it."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"the integer {value}"
    if isinstance(value, float):
        return f"the float {value}"
    if isinstance(value, str):
        return f"the string {value if len(value) <= 60 else value[:57] + '...'!r}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "a table"
    return "a date/time"


def _expected(allowed: str, value: Any, hint: str = "") -> _Bad:
    return _Bad(f"expected {allowed}, got {_describe(value)}{hint}")


def _choice(value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        quoted = [f'"{choice}"' for choice in choices]
        allowed = " or ".join(quoted) if len(quoted) == 2 else f"one of {', '.join(quoted)}"
        raise _expected(allowed, value, hint)
    return str(value)


def _count(value: Any, minimum: int, unlimited: bool = False) -> int | None:
    if unlimited and value == "unlimited":
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        allowed = f"an integer >= {minimum}" + (', or "unlimited"' if unlimited else "")
        raise _expected(allowed, value)
    return value


def _number(value: Any, *, zero: bool = False, unlimited: bool = False) -> float | None:
    """Seconds: a finite number > 0 (>= 0 when ``zero``), or "unlimited" (None)."""
    if unlimited and value == "unlimited":
        return None
    seconds = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an integer too large for a float
            seconds = math.inf
    if not math.isfinite(seconds) or seconds < 0 or (seconds == 0 and not zero):
        allowed = "a number of seconds " + (">= 0" if zero else "> 0")
        raise _expected(allowed + (', or "unlimited"' if unlimited else ""), value)
    return seconds


def _table_of(value: Any, fields: dict[str, Callable[[Any], Any]], what: str) -> dict[str, Any]:
    """A sub-table (``{ attempts = 3 }`` or ``[agent.retries]``) parsed key by key."""
    if not isinstance(value, dict):
        raise _expected(what, value)
    parsed: dict[str, Any] = {}
    for key, item in value.items():
        if key not in fields:
            raise _Bad(
                f"unknown key {key!r}{did_you_mean(key, fields)}; allowed: {', '.join(fields)}",
                key,
            )
        try:
            parsed[key] = fields[key](item)
        except _Bad as bad:
            raise _Bad(bad.message, key, *bad.at) from None
    return parsed


def _import(path: str, written: str | None = None) -> Any:
    """The object an import path ``"package.module:attr.attr"`` names.

    ``written`` is the path as the file wrote it, for messages (``a.b.C`` for ``a.b:C``).
    """
    if not _IMPORT_PATH.fullmatch(path):
        raise _Bad(f"{path!r} is not an import path; write 'package.module:attribute'")
    module_name, _, attributes = path.partition(":")
    value = _module(module_name)
    owner = repr(module_name)
    for attribute in attributes.split("."):
        if not hasattr(value, attribute):
            public = [name for name in dir(value) if not name.startswith("_")]
            raise _Bad(
                f"{written or path!r}: {owner} has no attribute {attribute!r}"
                f"{did_you_mean(attribute, public)}"
            )
        value = getattr(value, attribute)
        owner = repr(attribute)
    return value


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (name == missing or name.startswith(missing + ".")):
            raise _Bad(f"no module named {missing!r} (is it installed, on sys.path?)") from None
        raise _Bad(f"importing {name!r} failed: ModuleNotFoundError: {error}") from None
    except (Exception, SystemExit) as error:  # noqa: BLE001 - the module's own bug, reported
        raise _Bad(f"importing {name!r} failed: {type(error).__name__}: {error}") from None


def _function(path: Any, signature: str) -> Callable[..., Any]:
    value = _import(path)
    if isinstance(value, type) or not callable(value):
        kind = "a class" if isinstance(value, type) else f"a {type(value).__name__}"
        raise _Bad(f"{path!r} is {kind}, not a function {signature}")
    return value  # type: ignore[no-any-return]


def _exception(path: Any) -> type[Exception]:
    """``"TimeoutError"`` (a built-in), ``"package.module.Error"`` or ``"module:Error"``."""
    if not isinstance(path, str):
        raise _expected(_EXCEPTION_ALLOWED, path)
    if ":" in path:
        value = _import(path)
    elif "." not in path:
        if not hasattr(builtins, path):
            names = [n for n, v in vars(builtins).items() if _is_exception_class(v)]
            raise _Bad(
                f"there is no built-in exception {path!r}{did_you_mean(path, names)}; "
                "name others by their dotted path, 'package.module.ClassName'"
            )
        value = getattr(builtins, path)
    elif _DOTTED.fullmatch(path):
        value = _dotted(path)
    else:
        raise _Bad(f"{path!r} is not a dotted path to an exception class")
    if not isinstance(value, type) or not issubclass(value, BaseException):
        kind = "a class" if isinstance(value, type) else f"a {type(value).__name__}"
        raise _Bad(f"{path!r} is {kind}, not an exception class")
    if not issubclass(value, Exception):
        raise _Bad(
            f"{path!r} is not an Exception subclass: it always propagates and no handler "
            "ever sees it"
        )
    return value


def _is_exception_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Exception)


def _dotted(path: str) -> Any:
    """``a.b.C``: import the longest module prefix, then walk the attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 1, -1):
        prefix = ".".join(parts[:cut])
        try:
            importlib.import_module(prefix)
        except ModuleNotFoundError as error:
            missing = error.name or ""
            if missing and (prefix == missing or prefix.startswith(missing + ".")):
                continue  # not a module: an attribute of a shorter prefix
        except (Exception, SystemExit):  # noqa: BLE001 - reported by _import below
            pass
        return _import(f"{prefix}:{'.'.join(parts[cut:])}", path)
    return _import(f"{parts[0]}:{'.'.join(parts[1:])}", path)


def _exceptions(value: Any) -> tuple[type[Exception], ...]:
    if not isinstance(value, list):
        return (_exception(value),)
    if not value:
        raise _Bad(f"an empty array names no exception; expected {_EXCEPTION_ALLOWED}")
    found: list[type[Exception]] = []
    for index, item in enumerate(value):
        try:
            found.append(_exception(item))
        except _Bad as bad:
            raise _Bad(bad.message, index) from None
    return tuple(found)


# --- handlers -------------------------------------------------------------------------


class _Generic:
    """``"generic_unless_visible"``: built once the table's ``message`` is known."""


_GENERIC: Final = _Generic()
HANDLER_NAMES: Final[dict[str, Handler | _Generic]] = {
    "send_exception_message": send_exception_message,
    "fail": fail,
    "fail_unless_visible": fail_unless_visible,
    "generic_unless_visible": _GENERIC,
}
"""The handler vocabulary a file may name (besides import paths)."""

_HANDLER_ALLOWED: Final = (
    f"a handler name ({', '.join(HANDLER_NAMES)}) or an import path 'module:function'"
)
_EXCEPTION_ALLOWED: Final = "an exception class: 'TimeoutError' or 'package.module.Error'"
_Ref: TypeAlias = Handler | _Generic


def _handler(value: Any) -> _Ref:
    if not isinstance(value, str):
        raise _expected(_HANDLER_ALLOWED, value)
    if value in HANDLER_NAMES:
        return HANDLER_NAMES[value]
    if ":" in value:
        found = _import(value)
        if isinstance(found, Handler):
            return found
        return as_handler(_function(value, "(error, context) -> str | None, nor a handler"))
    hint = did_you_mean(value, HANDLER_NAMES)
    if not hint and "." in value and _DOTTED.fullmatch(value):
        module, _, attribute = value.rpartition(".")
        hint = f" (did you mean {module + ':' + attribute!r}?)"
    raise _Bad(f"unknown handler {value!r}{hint}; allowed: {_HANDLER_ALLOWED}")


def _on_error(value: Any) -> list[_Ref]:
    if not isinstance(value, list):
        return [_handler(value)]
    if not value:
        raise _Bad(f"an empty array names no handler; allowed: {_HANDLER_ALLOWED}")
    refs: list[_Ref] = []
    for index, item in enumerate(value):
        try:
            refs.append(_handler(item))
        except _Bad as bad:
            raise _Bad(bad.message, index) from None
    return refs


def _message(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _expected("a non-blank string", value)
    for placeholder in _PLACEHOLDER.findall(value):
        close = difflib.get_close_matches(placeholder, ("error_id", "tool"), n=1)
        if placeholder not in ("error_id", "tool") and close:
            raise _Bad(
                f"unknown placeholder {{{placeholder}}} (did you mean {{{close[0]}}}?); only "
                "{error_id} and {tool} are filled in"
            )
    return value


_RULE_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "exception": _exceptions,
    "handler": _handler,
    "message": _message,
}


def _rules(value: Any) -> list[tuple[tuple[type[Exception], ...], _Ref | str]]:
    allowed = "an array of tables [[...rules]], each with exception and handler or message"
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise _expected(allowed, value)
    rules: list[tuple[tuple[type[Exception], ...], _Ref | str]] = []
    problems: list[_Bad] = []
    for index, table in enumerate(value):
        try:
            rule = _table_of(table, _RULE_FIELDS, allowed)
            if "exception" not in rule:
                raise _Bad("a rule needs exception = 'package.module.ExceptionClass'")
            if "handler" in rule and "message" in rule:
                raise _Bad("a rule has either handler or message, not both")
            if "handler" not in rule and "message" not in rule:
                raise _Bad("a rule needs handler = '...' or message = '...'")
        except _Bad as bad:
            problems.append(_Bad(bad.message, index, *bad.at))
            continue
        action: _Ref | str = rule["handler"] if "handler" in rule else rule["message"]
        rules.append((rule["exception"], action))
    if problems:
        raise _Bad.each(problems)
    return rules


def _compose(parts: dict[str, Any]) -> Handler | None:
    """``rules`` (in order), then ``on_error``, composed with ``|``; ``None``: unset."""
    message: str | None = parts.get("message")
    refs: list[_Ref] | None = parts.get("on_error")
    rules: list[tuple[tuple[type[Exception], ...], _Ref | str]] = parts.get("rules", [])
    if message is not None:
        if refs is None:
            refs = [_GENERIC]
        elif _GENERIC not in refs and not any(ref is _GENERIC for _, ref in rules):
            raise _Bad(
                "message is the text of generic_unless_visible, which this table's on_error "
                'does not use; add "generic_unless_visible" to on_error, or remove message'
            )
    builtin = BUILTIN.on_error
    assert isinstance(builtin, Handler)
    generic = builtin if message is None else generic_unless_visible(message)

    def concrete(ref: _Ref | str) -> Handler | str:
        return generic if isinstance(ref, _Generic) else ref

    members = [on(types, concrete(ref)) for types, ref in rules]
    members += [as_handler(concrete(ref)) for ref in refs or []]
    if not members:
        return None
    handler = members[0]
    for member in members[1:]:
        handler = handler | member
    return handler


# --- the other settings -----------------------------------------------------------------


def _return_direct(value: Any) -> ReturnDirect:
    if isinstance(value, bool) or value == "always":
        return ReturnDirect.of(value)
    if isinstance(value, str) and ":" in value:
        return ReturnDirect.of(_function(value, "(ToolResult) -> bool"))
    hint = did_you_mean(value, ("always",)) if isinstance(value, str) else ""
    raise _expected("true, false, \"always\", or an import path 'module:predicate'", value, hint)


def _log_level(value: Any) -> str:
    if isinstance(value, str) and value.lower() in LOG_LEVELS:
        return value.lower()
    return _choice(value, LOG_LEVELS)


def _redact(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise _expected("an array of argument key names (strings)", value)
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise _Bad(f"expected a non-blank key name, got {_describe(item)}", index)
    return tuple(value)


def _retry_on(value: Any) -> tuple[type[Exception], ...] | Callable[[Exception], bool]:
    if isinstance(value, str) and ":" in value:
        found = _import(value)
        if _is_exception_class(found):
            return (found,)
        return _function(value, "(error) -> bool, nor an exception class")
    return _exceptions(value)


_RETRY_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "attempts": lambda v: _count(v, 1),
    "on": _retry_on,
    "initial": _number,
    "max_delay": _number,
    "jitter": lambda v: _number(v, zero=True),
    "total": _number,
}
_BREAKER_FIELDS: Final[dict[str, Callable[[Any], Any]]] = {
    "failures": lambda v: _count(v, 1),
    "cooldown": _number,
}


def _retries(value: Any) -> int | Retry:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    what = "an integer >= 0 (retries after the first attempt), or a table {attempts = 3, ...}"
    return _build(Retry, _table_of(value, _RETRY_FIELDS, what))


def _breaker(value: Any) -> Breaker | None:
    if value is False:
        return None
    what = "a table {failures = 5, cooldown = 60}, or false"
    return _build(Breaker, _table_of(value, _BREAKER_FIELDS, what))


def _build(cls: Callable[..., T], options: dict[str, Any]) -> T:
    """``cls(**options)``, its own validation reported as a problem of this key."""
    try:
        return cls(**options)
    except (TypeError, ValueError) as error:
        raise _Bad(str(error)) from None


# --- the keys a table holds: one entry per setting -----------------------------------


@attrs.frozen
class Key:
    """One key of an ``[agent]`` or ``[tools."NAME"]`` table.

    ``parse`` turns the TOML value into what ``field`` takes, raising ``_Bad`` when
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
    Key("return_direct", "return_direct", _return_direct),
    Key("log_level", "log_level", _log_level),
    Key("redact", "redact", _redact),
    Key("max_result_chars", "max_result_chars", lambda v: _count(v, 100, unlimited=True)),
    Key("timeout", "timeout", lambda v: _number(v, unlimited=True)),
    Key("retries", "retries", _retries),
    Key("breaker", "breaker", _breaker),
    Key("max_model_retries", "max_model_retries", lambda v: _count(v, 0, unlimited=True)),
    Key(
        "model_retries_exhausted",
        "model_retries_exhausted",
        lambda v: _choice(v, ("message", "fail", "stop")),
    ),
    Key("return_direct_mode", "return_direct_mode", lambda v: _choice(v, ("any", "all")), "agent"),
    Key("max_workers", "max_workers", lambda v: _count(v, 1), "agent"),
)
"""Every key of ``[agent]`` and ``[tools."NAME"]``: a new setting is one more entry."""

_TOP_KEYS: Final = ("version", "agent", "tools")


# --- loading ----------------------------------------------------------------------


class _Loader:
    """One file's document on its way to an AgentPolicy, collecting every problem."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.problems: list[tuple[KeyPath, str]] = []

    def report(self, path: KeyPath, message: str) -> None:
        self.problems.append((path, message))

    def error(self) -> PolicyFileError:
        lines = KeyLines(self.text)
        problems = [
            Problem(self.file, lines.line_of(path), format_path(path), message)
            for path, message in self.problems
        ]
        return PolicyFileError(sorted(problems, key=lambda problem: problem.line or 0))

    def policy(self, document: dict[str, Any]) -> AgentPolicy:
        for key in document:
            if key not in _TOP_KEYS:
                self.report((key,), self._unknown_top(key))
        if not self._version(document):
            raise self.error()
        agent = document.get("agent", {})
        defaults, round_settings = ToolPolicy(), dict[str, Any]()
        if isinstance(agent, dict):
            defaults, round_settings = self.table(agent, ("agent",), "agent")
        else:
            self.report(("agent",), f"expected a table ([agent]), got {_describe(agent)}")
        overrides = self.tools(document.get("tools", {}))
        if self.problems:
            raise self.error()
        try:
            return AgentPolicy(
                defaults=defaults, overrides=overrides, source=self.file, **round_settings
            )
        except (TypeError, ValueError) as error:  # pragma: no cover - the keys check first
            self.report(("agent",), str(error))
            raise self.error() from None

    def _version(self, document: dict[str, Any]) -> bool:
        version = document.get("version")
        if version is None:
            self.report(("version",), f"missing: start the file with version = {VERSION}")
        elif not isinstance(version, int) or isinstance(version, bool):
            self.report(("version",), f"expected the integer {VERSION}, got {_describe(version)}")
        elif version != VERSION:
            self.report(
                ("version",),
                f"version {version} is not supported; this toolguard reads version {VERSION}",
            )
        else:
            return True
        return False

    def _unknown_top(self, key: str) -> str:
        if any(key == k.name for k in KEYS):
            return f"{key} is an agent setting: put it in the [agent] table"
        return f"unknown key {key!r}{did_you_mean(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}"

    def tools(self, tools: Any) -> dict[str, ToolPolicy]:
        if not isinstance(tools, dict):
            self.report(("tools",), f'expected [tools."NAME"] tables, got {_describe(tools)}')
            return {}
        overrides: dict[str, ToolPolicy] = {}
        for name, table in tools.items():
            path: KeyPath = ("tools", name)
            problem = _tool_name_problem(name)
            if problem:
                self.report(path, problem)
            elif not isinstance(table, dict):
                header = f"[{format_path(path)}]"
                self.report(
                    path, f"expected a table of settings ({header}), got {_describe(table)}"
                )
            else:
                overrides[name] = self.table(table, path, "tools")[0]
        return overrides

    def table(
        self, table: dict[str, Any], path: KeyPath, kind: str
    ) -> tuple[ToolPolicy, dict[str, Any]]:
        """One ``[agent]`` or ``[tools."NAME"]`` table: its policy and round settings."""
        keys = {key.name: key for key in KEYS if kind in key.tables}
        fields: dict[str, dict[str, Any]] = {"policy": {}, "agent": {}, "handler": {}}
        for name, value in table.items():
            key = keys.get(name)
            if key is None:
                self.report((*path, name), self._unknown(name, kind, keys))
                continue
            try:
                parsed = key.parse(value)
            except _Bad as bad:
                for each in (bad, *bad.more):
                    self.report((*path, name, *each.at), each.message)
                continue
            fields[key.into][key.name if key.into == "handler" else key.field] = parsed
        try:
            handler = _compose(fields["handler"])
        except _Bad as bad:
            self.report((*path, "message"), bad.message)
        else:
            if handler is not None:
                fields["policy"]["on_error"] = handler
        try:
            return ToolPolicy(**fields["policy"]), fields["agent"]
        except (TypeError, ValueError) as error:  # pragma: no cover - the keys check first
            self.report(path, str(error))
            return ToolPolicy(), {}

    def _unknown(self, name: str, kind: str, keys: dict[str, Key]) -> str:
        if kind == "tools" and any(key.name == name for key in KEYS):
            return f"{name} applies to the whole agent; set it in [agent]"
        if kind == "agent" and name == "tools":
            return 'per-tool settings are top-level tables, [tools."NAME"], not [agent.tools]'
        return f"unknown key {name!r}{did_you_mean(name, keys)}; allowed: {', '.join(keys)}"


def _tool_name_problem(name: str) -> str | None:
    """Why ``name`` can match no tool, or ``None`` when it is a name or a usable glob."""
    if not name:
        return "a tool name cannot be empty"
    if not is_glob(name):
        if _NAME_CHARS.fullmatch(name):
            return None
        return (
            f"{name!r} is not a tool name (1-64 characters of A-Z a-z 0-9 _ -) nor a glob "
            "(*, ?, [abc]); it would match no tool"
        )
    problem = glob_problem(name)
    if problem:
        return f"bad glob {name!r}: {problem}"
    stray = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "_-*?[]!"))})
    if stray:
        chars = ", ".join(map(repr, stray))
        return f"glob {name!r} matches no tool: tool names cannot contain {chars}"
    return None


# --- reading files and presets ----------------------------------------------------------

_TOML_POSITION: Final = re.compile(r" \(at line (\d+), column (\d+)\)$| \(at end of document\)$")
_UNQUOTED_GLOB: Final = re.compile(r"^\s*\[+\s*tools\s*\.\s*[^\"'\]\s]*[*?]")


def presets() -> dict[str, Traversable]:
    """The shipped presets by name: ``toolguard/_policies/`` in an installed wheel,
    the repository's ``policies/`` in a checkout."""
    folder: Traversable = resources.files("toolguard").joinpath("_policies")
    if not folder.is_dir():
        folder = Path(__file__).resolve().parent.parent / "policies"
    if not folder.is_dir():  # pragma: no cover - a broken installation
        return {}
    return {
        entry.name.removesuffix(".toml"): entry
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    }


def load_policy(name_or_path: str | os.PathLike[str]) -> AgentPolicy:
    """Read a policy file, or a shipped preset by bare name, into an AgentPolicy.

    A bare name (``"production"``) is a preset; anything with a ``/``, a leading
    ``.`` or a ``.toml`` suffix, or a ``Path``, is a file. Every mistake, including a
    file that cannot be read or is not TOML, raises one :class:`PolicyFileError`.
    """
    if isinstance(name_or_path, os.PathLike):
        name_or_path = os.fspath(name_or_path)
    if not isinstance(name_or_path, str):
        raise TypeError(f"load_policy() takes a preset name or a path, got {name_or_path!r}")
    if _is_path(name_or_path):
        return _read(name_or_path, lambda: Path(name_or_path).read_bytes())
    shipped = presets()
    entry = shipped.get(name_or_path)
    if entry is None:
        hint = did_you_mean(name_or_path, shipped)
        local = f"; to read the file {name_or_path!r}, write ./{name_or_path}"
        raise PolicyFileError(
            [
                Problem(
                    name_or_path,
                    None,
                    "",
                    f"no preset named {name_or_path!r}{hint}; presets: {', '.join(shipped)}"
                    + (local if os.path.exists(name_or_path) else ""),
                )
            ]
        )
    return _read(str(entry), entry.read_bytes)


def _is_path(text: str) -> bool:
    separators = [s for s in ("/", os.sep, os.altsep) if s]
    return any(s in text for s in separators) or text.startswith(".") or text.endswith(".toml")


def _read(file: str, read: Callable[[], bytes]) -> AgentPolicy:
    try:
        data = read()
    except FileNotFoundError:
        raise PolicyFileError([Problem(file, None, "", "no such file")]) from None
    except IsADirectoryError:
        raise PolicyFileError([Problem(file, None, "", "is a directory, not a file")]) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise PolicyFileError([Problem(file, None, "", f"cannot read it: {reason}")]) from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise PolicyFileError(
            [
                Problem(
                    file,
                    line,
                    "",
                    f"not UTF-8 text (byte {data[error.start]:#04x}); save it as UTF-8",
                )
            ]
        ) from None
    return _parse(file, text)


def _parse(file: str, text: str) -> AgentPolicy:
    try:
        document = tomllib.loads(text)
    except ValueError as error:  # TOMLDecodeError, and int() refusing a huge number
        raise PolicyFileError([_toml_problem(file, text, error)]) from None
    except RecursionError:
        raise PolicyFileError(
            [Problem(file, None, "", "invalid TOML: nested too deeply")]
        ) from None
    return _Loader(file, text).policy(document)


def _toml_problem(file: str, text: str, error: ValueError) -> Problem:
    message = str(error)
    match = _TOML_POSITION.search(message)
    line: int | None = None
    if match:
        message = message[: match.start()]
        if match.group(1):
            line = int(match.group(1))
            message += f" (column {match.group(2)})"
        else:
            line = text.count("\n") + 1
            message += " (at the end of the file)"
    if line is not None:
        source = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
        if _UNQUOTED_GLOB.match(source):
            message += '; quote tool names with glob characters: [tools."search_*"]'
    return Problem(file, line, "", f"invalid TOML: {message}")
