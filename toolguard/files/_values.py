"""Policy files: reading one TOML value. Each parser returns what a policy field takes,
or raises :class:`Bad` naming what is allowed (``_load`` adds the file, line and key).
"""

from __future__ import annotations

import builtins
import math
import re
from collections.abc import Callable, Sequence
from typing import Any, Final

from toolguard._suggest import did_you_mean
from toolguard.files._imports import ImportPathError, import_module, resolve
from toolguard.files._lines import KeyPath

__all__ = [
    "DOTTED",
    "EXCEPTION_ALLOWED",
    "Bad",
    "choice",
    "count",
    "describe",
    "exception",
    "exceptions",
    "expected",
    "function",
    "import_object",
    "is_exception_class",
    "number",
    "table_of",
]

DOTTED: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")
EXCEPTION_ALLOWED: Final = "an exception class: 'TimeoutError' or 'package.module.Error'"


class Bad(Exception):
    """A value that cannot be used; ``at`` continues the key path (an index, a key)."""

    def __init__(self, message: str, *at: str | int) -> None:
        super().__init__(message)
        self.message = message
        self.at: KeyPath = at
        self.more: tuple[Bad, ...] = ()

    def within(self, *at: str | int) -> list[Bad]:
        """This problem and those raised with it, each under the key path ``at``."""
        return [Bad(each.message, *at, *each.at) for each in (self, *self.more)]

    @classmethod
    def each(cls, problems: Sequence[Bad]) -> Bad:
        """Several problems (in an array of tables) raised as one."""
        first = problems[0]
        first.more = tuple(problems[1:])
        return first


def describe(value: Any) -> str:
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


def expected(allowed: str, value: Any, hint: str = "") -> Bad:
    return Bad(f"expected {allowed}, got {describe(value)}{hint}")


def choice(value: Any, choices: Sequence[str]) -> str:
    if value not in choices:
        hint = did_you_mean(value, choices) if isinstance(value, str) else ""
        quoted = [f'"{choice}"' for choice in choices]
        allowed = " or ".join(quoted) if len(quoted) == 2 else f"one of {', '.join(quoted)}"
        raise expected(allowed, value, hint)
    return str(value)


def boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise expected("true or false", value)
    return value


def count(value: Any, minimum: int, unlimited: bool = False) -> int | None:
    if unlimited and value == "unlimited":
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        allowed = f"an integer >= {minimum}" + (', or "unlimited"' if unlimited else "")
        raise expected(allowed, value)
    return value


def number(value: Any, *, zero: bool = False, unlimited: bool = False) -> float | None:
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
        raise expected(allowed + (', or "unlimited"' if unlimited else ""), value)
    return seconds


def table_of(value: Any, fields: dict[str, Callable[[Any], Any]], what: str) -> dict[str, Any]:
    """A sub-table (``{ attempts = 3 }`` or ``[agent.retries]``) parsed key by key;
    every key's problem is reported (:meth:`Bad.each`), not only the first."""
    if not isinstance(value, dict):
        raise expected(what, value)
    parsed: dict[str, Any] = {}
    problems: list[Bad] = []
    for key, item in value.items():
        if key not in fields:
            allowed = ", ".join(fields)
            problems.append(
                Bad(f"unknown key {key!r}{did_you_mean(key, fields)}; allowed: {allowed}", key)
            )
            continue
        try:
            parsed[key] = fields[key](item)
        except Bad as bad:
            problems.extend(bad.within(key))
    if problems:
        raise Bad.each(problems)
    return parsed


def import_object(path: str, written: str | None = None) -> Any:
    """The object an import path ``"package.module:attr.attr"`` names.

    ``written`` is the path as the file wrote it, for messages (``a.b.C`` for ``a.b:C``).
    """
    try:
        return resolve(path)
    except ImportPathError as problem:
        raise Bad(_import_problem(problem, written or path)) from None


def _import_problem(problem: ImportPathError, written: str) -> str:
    if problem.kind == "syntax":
        return f"{written!r} is not an import path; write 'package.module:attribute'"
    if problem.kind == "missing":
        return f"no module named {problem.missing!r} (is it installed, on sys.path?)"
    if problem.kind == "failed":
        error = problem.error
        return f"importing {problem.module!r} failed: {type(error).__name__}: {error}"
    index = problem.index
    owner = problem.attributes[index - 1] if index else problem.module
    return (
        f"{written!r}: {owner!r} has no attribute {problem.attribute!r}"
        f"{did_you_mean(problem.attribute, problem.public)}"
    )


def function(path: Any, signature: str) -> Callable[..., Any]:
    value = import_object(path)
    if isinstance(value, type) or not callable(value):
        kind = "a class" if isinstance(value, type) else f"a {type(value).__name__}"
        raise Bad(f"{path!r} is {kind}, not a function {signature}")
    return value  # type: ignore[no-any-return]  # checked callable above


def exception(path: Any) -> type[Exception]:
    """``"TimeoutError"`` (a built-in), ``"package.module.Error"`` or ``"module:Error"``."""
    if not isinstance(path, str):
        raise expected(EXCEPTION_ALLOWED, path)
    if ":" in path:
        value = import_object(path)
    elif "." not in path:
        if not hasattr(builtins, path):
            names = [n for n, v in vars(builtins).items() if is_exception_class(v)]
            raise Bad(
                f"there is no built-in exception {path!r}{did_you_mean(path, names)}; "
                "name others by their dotted path, 'package.module.ClassName'"
            )
        value = getattr(builtins, path)
    elif DOTTED.fullmatch(path):
        value = _dotted(path)
    else:
        raise Bad(f"{path!r} is not a dotted path to an exception class")
    if not isinstance(value, type) or not issubclass(value, BaseException):
        kind = "a class" if isinstance(value, type) else f"a {type(value).__name__}"
        raise Bad(f"{path!r} is {kind}, not an exception class")
    if not issubclass(value, Exception):
        raise Bad(
            f"{path!r} is not an Exception subclass: it always propagates and no handler "
            "ever sees it"
        )
    return value


def is_exception_class(value: Any) -> bool:
    return isinstance(value, type) and issubclass(value, Exception)


def _dotted(path: str) -> Any:
    """``a.b.C``: import the longest module prefix, then walk the attributes."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 1, -1):
        prefix = ".".join(parts[:cut])
        try:
            import_module(prefix)
        except ImportPathError as problem:
            if problem.kind == "missing":
                continue  # not a module: an attribute of a shorter prefix
            # "failed": reported by import_object below
        return import_object(f"{prefix}:{'.'.join(parts[cut:])}", path)
    return import_object(f"{parts[0]}:{'.'.join(parts[1:])}", path)


def exceptions(value: Any) -> tuple[type[Exception], ...]:
    if not isinstance(value, list):
        return (exception(value),)
    if not value:
        raise Bad(f"an empty array names no exception; expected {EXCEPTION_ALLOWED}")
    found: list[type[Exception]] = []
    for index, item in enumerate(value):
        try:
            found.append(exception(item))
        except Bad as bad:
            raise Bad(bad.message, index) from None
    return tuple(found)
