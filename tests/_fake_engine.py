"""A fake durable engine for the core's tests: its workflow runtime and its units.

Registered once, on import (registrations are for the process); each is current only
while a test sets it (``RUNNING``, ``in_unit``), so other tests see no engine.
"""

from __future__ import annotations

import contextlib
import contextvars
import random
from collections.abc import Callable, Iterator, MutableMapping
from typing import Any

from toolguard import register_engine_unit, register_workflow_runtime

__all__ = ["RUNNING", "EngineWrapper", "FakeRuntime", "FakeUnit", "in_unit"]


class FakeRuntime:
    """A workflow run as an engine would present it: seeded randomness, a clock that
    moves only when told, a replay flag, the run's own state."""

    def __init__(self, seed: int = 7) -> None:
        self.random = random.Random(seed)
        self.time = 1000.0
        self.replay = False
        self.kept: dict[Any, Any] = {}

    def error_id(self) -> str:
        return f"{self.random.getrandbits(32):08x}"

    def now(self) -> float:
        return self.time

    def log(self, emit: Callable[[], None]) -> None:
        if not self.replay:
            emit()

    def sessions(self) -> MutableMapping[Any, Any]:
        return self.kept

    def crossed(self, error: Exception, tool: str) -> Exception:
        return error.carried if isinstance(error, EngineWrapper) else error


class EngineWrapper(Exception):
    """An engine's wrapper around a failure that crossed back (an activity's error)."""

    def __init__(self, carried: Exception) -> None:
        super().__init__("activity task failed")
        self.carried = carried


RUNNING: contextvars.ContextVar[FakeRuntime | None] = contextvars.ContextVar(
    "fake_workflow", default=None
)
register_workflow_runtime(RUNNING.get)


class FakeUnit:
    """An activity or a step as an engine presents it: which attempt this is."""

    def __init__(self, attempt: int, maximum: int | None = None, *, times_out: bool = True):
        self.number = attempt
        self.last = maximum
        self.timed = times_out
        self.started = 0.0

    def attempt(self) -> int:
        return self.number

    def maximum(self) -> int | None:
        return self.last

    def elapsed(self) -> float:
        return self.started

    def times_out(self) -> bool:
        return self.timed


_UNIT: contextvars.ContextVar[FakeUnit | None] = contextvars.ContextVar("fake_unit", default=None)
register_engine_unit(_UNIT.get)


@contextlib.contextmanager
def in_unit(unit: FakeUnit) -> Iterator[FakeUnit]:
    token = _UNIT.set(unit)
    try:
        yield unit
    finally:
        _UNIT.reset(token)
