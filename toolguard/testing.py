"""Helpers for testing code that uses toolguard (structlog's ``testing`` is the model).

* :func:`capture_events`: toolguard's log events during a block, as dicts (only
  toolguard's: other libraries' structlog events are dropped while it runs).
* :class:`ScriptedModel`, :func:`openai_response`, :func:`anthropic_response`: a
  model that answers from a script, in the provider's response shape, for offline
  agent-loop tests.
* :func:`assert_not_leaked`: a secret is nowhere in what you would send the model.
* :func:`assert_logged_once`: a hidden failure was logged exactly once.

With pytest, the plugin (``toolguard.pytest_plugin``) gives the fixtures
``toolguard_events`` and ``toolguard_defaults``::

    def test_lookup_hides_the_database_error(toolguard_events):
        result = agent.dispatch(ToolCall(name="lookup", arguments={"order": 42}))
        assert_not_leaked(result, "db-password")
        assert_logged_once(toolguard_events, result)
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final, NoReturn

import attrs
import structlog

from toolguard._logging import renewed
from toolguard._scripted import ScriptedModel, anthropic_response, openai_response
from toolguard._values import Round, ToolResult
from toolguard.errors import ToolCallFailed

__all__ = [
    "ScriptedModel",
    "anthropic_response",
    "assert_logged_once",
    "assert_not_leaked",
    "capture_events",
    "openai_response",
]

LOGGER_NAME: Final = "toolguard"
"""The name toolguard logs under (``structlog.get_logger("toolguard")``)."""


# --- log events -------------------------------------------------------------------------


@attrs.frozen
class _NamedLogger:
    """What the capturing factory makes: remembers the name ``get_logger`` was given."""

    name: str | None


def _named_logger(*args: Any) -> _NamedLogger:
    return _NamedLogger(args[0] if args and isinstance(args[0], str) else None)


_LEVEL_ALIASES: Final = {"warn": "warning", "exception": "error"}


@contextlib.contextmanager
def capture_events() -> Iterator[list[dict[str, Any]]]:
    """Collect toolguard's structlog events during the block, as dicts.

    Each event is the event dict as toolguard emitted it, plus ``log_level``, like
    ``structlog.testing.capture_logs()``; ``exc_info`` is the exception itself. Only
    toolguard's events are kept (those of ``structlog.get_logger("toolguard")``); while
    the block runs, every structlog event is dropped, as with ``capture_logs()``.
    structlog's previous configuration is restored afterwards.

    toolguard's own logger is captured even when the application configured structlog
    with ``cache_logger_on_first_use=True`` and toolguard logged before the block (which
    ``capture_logs()`` misses); other loggers the application cached are not seen.
    """
    events: list[dict[str, Any]] = []

    def keep(logger: Any, method_name: str, event_dict: Any) -> NoReturn:
        if getattr(logger, "name", None) == LOGGER_NAME:
            event_dict["log_level"] = _LEVEL_ALIASES.get(method_name, method_name)
            events.append(event_dict)
        raise structlog.DropEvent

    previous = structlog.get_config()
    structlog.configure(
        processors=[keep],
        logger_factory=_named_logger,
        cache_logger_on_first_use=False,
    )
    try:
        with renewed():  # a logger cached under the application's pipeline is not used
            yield events
    finally:
        structlog.configure(**previous)


_NOTHING_CAPTURED: Final = (
    ". No toolguard event was captured at all: collect them with "
    "toolguard.testing.capture_events() or the toolguard_events fixture "
    "(structlog.testing.capture_logs() misses a logger that structlog's "
    "cache_logger_on_first_use=True froze before the block)"
)


def assert_logged_once(
    events: Iterable[Mapping[str, Any]], error_id: str | ToolResult | ToolCallFailed
) -> Mapping[str, Any]:
    """Assert exactly one event carries ``error_id``; return that event.

    ``error_id`` may be the id itself, a :class:`~toolguard.ToolResult` (its
    ``error_id``) or a :class:`~toolguard.ToolCallFailed`.
    """
    if isinstance(error_id, ToolResult):
        if error_id.error_id is None:
            raise AssertionError(
                f"the result of tool {error_id.name!r} hid nothing (its error_id is None), "
                "so nothing was logged for it"
            )
        error_id = error_id.error_id
    elif isinstance(error_id, ToolCallFailed):
        error_id = error_id.error_id
    if not isinstance(error_id, str) or not error_id:
        raise TypeError(f"assert_logged_once() takes an error id, got {error_id!r}")
    seen = list(events)
    matching = [event for event in seen if event.get("error_id") == error_id]
    if len(matching) != 1:
        names = [event.get("event") for event in matching]
        hint = "" if seen else _NOTHING_CAPTURED
        raise AssertionError(
            f"error id {error_id} was logged {len(matching)} times {names} "
            f"(expected once); events: {[event.get('event') for event in seen]}{hint}"
        )
    return matching[0]


# --- leaks ----------------------------------------------------------------------------

_MAX_DEPTH: Final = 200
_CONTEXT: Final = 30
_MASK: Final = "<SECRET>"


def _variants(secret: str) -> tuple[str, ...]:
    """The secret as written, and as JSON would escape it inside a string."""
    forms = {secret, json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]}
    return tuple(sorted(forms, key=len))


def _children(value: Any) -> Iterator[tuple[str, Any]] | None:
    """The parts of ``value`` that would be serialised, by path step; ``None`` for leaves."""
    if isinstance(value, ToolResult):
        # what the model is sent: the artifact and the tool's own return value stay in
        # the process by design
        return (
            (f".{f.name}", getattr(value, f.name))
            for f in attrs.fields(ToolResult)
            if f.name not in ("artifact", "value")
        )
    if isinstance(value, Round):
        return iter(((".results", value.results), (".final", value.final)))
    if attrs.has(type(value)):
        return ((f".{f.name}", getattr(value, f.name)) for f in attrs.fields(type(value)))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return ((f".{f.name}", getattr(value, f.name)) for f in dataclasses.fields(value))
    dump = getattr(value, "model_dump", None)
    if callable(dump) and not isinstance(value, type):  # pydantic models (SDK objects)
        return iter((("", dump(mode="json")),))
    if isinstance(value, Mapping):
        return (
            part
            for key, item in value.items()
            for part in ((f"[{key!r}] (key)", key), (f"[{key!r}]", item))
        )
    if isinstance(value, list | tuple):
        return ((f"[{index}]", item) for index, item in enumerate(value))
    if isinstance(value, set | frozenset):
        return ((f"{{{index}}}", item) for index, item in enumerate(value))
    return None


def _find(
    value: Any, variants: tuple[str, ...], path: str, depth: int, seen: dict[int, Any]
) -> tuple[str, str, str] | None:
    """``(path, text, variant)`` of the first string holding the secret, or ``None``.

    ``seen`` maps the id of each object searched to the object, which keeps it alive: a
    temporary (a pydantic model's dump) freed during the search could give its address
    to the next one, which would then look searched already.
    """
    if isinstance(value, bytes | bytearray):
        value = bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, str):
        for variant in variants:
            if variant in value:
                return path or "<value>", value, variant
        return None
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return _find(str(value), variants, path, depth, seen)
    if id(value) in seen or depth > _MAX_DEPTH:
        return None
    seen[id(value)] = value
    children = _children(value)
    if children is None:
        return _find(repr(value), variants, f"repr({path or 'value'})", depth + 1, seen)
    for step, child in children:
        found = _find(child, variants, path + step, depth + 1, seen)
        if found is not None:
            return found
    return None


def assert_not_leaked(value: Any, secret: str) -> None:
    """Assert ``secret`` is nowhere in ``value``, as it would be serialised for a model.

    ``value`` may be a :class:`~toolguard.ToolResult` (its ``artifact``, never sent
    to the model, is left out), a :class:`~toolguard.Round`, provider messages
    (dicts, lists), pydantic models (SDK objects), attrs classes, dataclasses,
    strings or bytes; anything else is checked through its ``repr``. The secret is
    looked for as written and as JSON escapes it. The failure message names where
    it was found, with the secret masked.
    """
    if not isinstance(secret, str) or not secret:
        raise ValueError("assert_not_leaked() needs a non-empty secret string")
    found = _find(value, _variants(secret), "", 0, {})
    if found is None:
        return
    path, text, variant = found
    at = text.index(variant)
    excerpt = text[max(0, at - _CONTEXT) : at + len(variant) + _CONTEXT]
    for form in _variants(secret)[::-1]:  # longest first: mask whole forms
        path, excerpt = path.replace(form, _MASK), excerpt.replace(form, _MASK)
    raise AssertionError(f"the secret leaked at {path}: ...{excerpt}...")
