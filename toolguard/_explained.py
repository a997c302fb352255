"""``toolguard explain``'s two renderings of a dispatcher's settings: a table for people,
JSON for machines (values, levels, sources; the handler chains in order)."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from typing import Any, Final

import attrs

from toolguard._dispatcher import Dispatcher
from toolguard.policy._handlers import Handler
from toolguard.policy._precedence import Setting
from toolguard.policy._values import ReturnDirect, ToolPolicy

__all__ = ["Explained", "as_json", "as_table"]

_UNLIMITED: Final = frozenset({"max_result_chars", "timeout", "max_model_retries", "total"})
_VALUE_WIDTH: Final = 60


Explained = Mapping[str, Mapping[str, Setting | tuple[Setting, ...]]]


def _round(dispatcher: Dispatcher) -> dict[str, Any]:
    return {
        "return_direct_mode": dispatcher.return_direct_mode,
        "max_workers": dispatcher.max_workers,
        "max_abandoned": dispatcher.max_abandoned,
    }


def _text(name: str, value: Any) -> str:
    """A setting's value as the table shows it."""
    if value is None:
        return "unlimited" if name in _UNLIMITED else "none"
    if isinstance(value, Handler):
        return value.name
    if isinstance(value, ReturnDirect):
        return f"predicate {_json(value)}" if value.mode == "predicate" else value.mode
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple):
        return ", ".join(_text(name, item) for item in value) or "(none)"
    if attrs.has(type(value)):
        fields = [field for field in attrs.fields(type(value)) if field.repr]
        inner = (
            f"{field.name}={_inner(field.name, getattr(value, field.name))}" for field in fields
        )
        return f"{type(value).__name__}({', '.join(inner)})"
    return str(value)


def _inner(name: str, value: Any) -> str:
    text = _text(name, value)
    return f"({text})" if isinstance(value, tuple) else text


def _ordered(settings: Mapping[str, Setting | tuple[Setting, ...]]) -> list[str]:
    """Settings in ToolPolicy's field order (any others after them)."""
    order = [field.name for field in attrs.fields(ToolPolicy)]
    return sorted(settings, key=lambda name: order.index(name) if name in order else len(order))


def _json(value: Any) -> Any:
    """A setting's value as ``--json`` shows it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Handler):
        return value.name
    if isinstance(value, ReturnDirect):
        if value.mode != "predicate":
            return value.mode
        predicate = value.predicate
        return f"{getattr(predicate, '__module__', '?')}:{getattr(predicate, '__qualname__', '?')}"
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, tuple | list):
        return [_json(item) for item in value]
    if attrs.has(type(value)):
        return {
            field.name: _json(getattr(value, field.name))
            for field in attrs.fields(type(value))
            if field.repr
        }
    if callable(value):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', '?')}"
    return repr(value)


def as_json(dispatcher: Dispatcher, explained: Explained) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for tool, settings in explained.items():
        tools[tool] = {}
        for name in _ordered(settings):
            setting = settings[name]
            if isinstance(setting, tuple):
                tools[tool][name] = [
                    {"handler": s.value.name, "level": s.level, "source": s.source} for s in setting
                ]
            else:
                tools[tool][name] = {
                    "value": _json(setting.value),
                    "level": setting.level,
                    "source": setting.source,
                }
    return {**_round(dispatcher), "external_tools": list(dispatcher.external_tools), "tools": tools}


def as_table(dispatcher: Dispatcher, explained: Explained) -> str:
    round_settings = ", ".join(f"{k} = {v}" for k, v in _round(dispatcher).items())
    lines = [f"round settings: {round_settings}"]
    for tool, settings in explained.items():
        rows: list[tuple[str, str, str, str]] = [("setting", "value", "level", "source")]
        for name in _ordered(settings):
            setting = settings[name]
            chain = setting if isinstance(setting, tuple) else (setting,)
            for index, s in enumerate(chain, start=1):
                value = _text(name, s.value)
                if isinstance(setting, tuple):
                    value = f"{index}. {value}"
                wrapped = textwrap.wrap(value, _VALUE_WIDTH, subsequent_indent="   ") or [""]
                rows.append((name if index == 1 else "", wrapped[0], s.level, s.source or ""))
                rows += [("", more, "", "") for more in wrapped[1:]]
        widths = [max(len(row[column]) for row in rows) for column in range(3)]
        elsewhere = " (runs elsewhere: external_tools)" if tool in dispatcher.external_tools else ""
        lines += ["", f"tool {tool}{elsewhere}"]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append(("  " + "  ".join([*cells, row[3]])).rstrip())
    return "\n".join(lines) + "\n"
