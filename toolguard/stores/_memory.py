"""``MemoryStore``: a session's budgets and breakers in this process (the default)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from toolguard.sessions._steps import SessionState

__all__ = ["MemoryStore"]


class MemoryStore:
    """Budgets and breakers in process memory: what ``dispatcher.session()`` uses
    unless told otherwise. Nothing is shared with another process; nothing waits.

    A session on it is the in-process state itself (no protocol calls in between),
    so a session costs exactly what it cost before stores existed.
    """

    name: Final = "memory"
    on_unavailable: Final = "fail-open"  # it is never unavailable

    def open(self, id: str | None, *, clock: Callable[[], float] | None = None) -> SessionState:
        """The state of a new session (``id`` is kept by the dispatcher, not here)."""
        return SessionState(clock=clock)

    def describe(self) -> str:
        """One line for ``explain``."""
        return "memory (this process only)"

    def __repr__(self) -> str:
        return "MemoryStore()"


MEMORY: Final = MemoryStore()
