"""Sessions: one conversation on a dispatcher, with budgets and breakers of its own.

A :class:`~toolguard.Dispatcher` is shared by many conversations; what one
conversation has used up must not leak into another. ``dispatcher.session()``
gives a :class:`Session` with the dispatcher's own ``dispatch``/``adispatch``/
``run``/``arun``; each of those calls is one *model step*. Sessions are safe to use
from many threads and tasks at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from toolguard._policy import ToolPolicy
from toolguard._rounds import Rounds
from toolguard._runner import Runner
from toolguard._steps import SessionState, ToolState
from toolguard._values import Round, ToolCall, ToolResult

__all__ = ["Session"]


class Session:
    """One conversation on a dispatcher. Create with ``dispatcher.session()``."""

    def __init__(
        self, runner: Runner, rounds: Rounds, *, clock: Callable[[], float] | None = None
    ) -> None:
        self._runner = runner
        self._rounds = rounds
        self._state = SessionState(clock=clock)

    # --- the dispatcher's API, one model step per call ---------------------------

    def dispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """``Dispatcher.dispatch`` as one step of this conversation."""
        return self._runner.dispatch(call, policy, context, self._state.step(), framework_values)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        offload: bool = False,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """``Dispatcher.adispatch`` as one step of this conversation."""
        step = self._state.step()
        return await self._runner.adispatch(call, policy, context, step, offload, framework_values)

    def run(
        self, calls: Iterable[ToolCall], *, policy: ToolPolicy | None = None, context: Any = None
    ) -> Round:
        """``Dispatcher.run``: the round is one step of this conversation."""
        return self._rounds.run(list(calls), policy, context, self._state.step())

    async def arun(
        self, calls: Iterable[ToolCall], *, policy: ToolPolicy | None = None, context: Any = None
    ) -> Round:
        """``Dispatcher.arun``: the round is one step of this conversation."""
        return await self._rounds.arun(list(calls), policy, context, self._state.step())

    def state(self, tool: str) -> ToolState:
        """What this session remembers about ``tool``."""
        return self._state.state(tool)

    def reset(self, tool: str | None = None) -> None:
        """Forget budgets and close breakers: for one tool, or all of them."""
        self._state.reset(tool)
