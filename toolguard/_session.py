"""Sessions: one conversation on a dispatcher, with budgets and breakers of its own.

A :class:`~toolguard.Dispatcher` is shared by many conversations; what one
conversation has used up must not leak into another. ``dispatcher.session()``
gives a :class:`Session` with the dispatcher's own ``dispatch``/``adispatch``/
``run``/``arun``; each of those calls is one *model step*. Sessions are safe to use
from many threads and tasks at once.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from toolguard._engine import WorkflowRuntime
from toolguard._misuse import check_calls, not_a_call
from toolguard._scope import Scope
from toolguard._values import Round, ToolCall, ToolResult
from toolguard.errors import InvalidOption, ToolDefinitionError
from toolguard.policy._values import ToolPolicy
from toolguard.runner._pipeline import Runner
from toolguard.runner._rounds import Rounds
from toolguard.sessions._steps import Opens, SessionState, State, Step, ToolState, check_step

__all__ = ["Session", "workflow_session"]


class Session:
    """One conversation on a dispatcher. Create with ``dispatcher.session()``."""

    def __init__(
        self,
        runner: Runner,
        rounds: Rounds,
        *,
        id: str | None = None,
        clock: Callable[[], float] | None = None,
        store: Opens | None = None,
    ) -> None:
        self.id = id
        self.store = store
        self._runner = runner
        self._rounds = rounds
        self._state: State = (
            SessionState(clock=clock) if store is None else store.open(id, clock=clock)
        )
        self._scope: Scope | None = None  # scope() without a step: one, made on first use

    async def _astep(self, key: str | None) -> Step:
        step = self._state.astep(key)
        if step.remote:  # a shared store's step may need a round trip first (R5)
            await step.aready()
        return step

    # --- the dispatcher's API, one model step per call ---------------------------

    def dispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        framework_values: Mapping[str, Any] | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """``Dispatcher.dispatch`` as one step of this conversation, or as part of the
        step named ``step`` (calls of one model message count once, see :meth:`admit`)."""
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise not_a_call(call, "dispatch")
        state = self._state.step(step)
        return self._runner.dispatch(call, policy, context, state, framework_values)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        offload: bool = False,
        framework_values: Mapping[str, Any] | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """``Dispatcher.adispatch`` as one step of this conversation (or of ``step``)."""
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise not_a_call(call, "adispatch")
        state = await self._astep(step)
        return await self._runner.adispatch(call, policy, context, state, offload, framework_values)

    def run(
        self,
        calls: Iterable[ToolCall],
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        step: str | None = None,
    ) -> Round:
        """``Dispatcher.run``: the round is one step of this conversation (or of ``step``)."""
        calls = check_calls(calls, "run")
        return self._rounds.run(calls, policy, context, self._state.step(step))

    async def arun(
        self,
        calls: Iterable[ToolCall],
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        step: str | None = None,
    ) -> Round:
        """``Dispatcher.arun``: the round is one step of this conversation (or of ``step``)."""
        calls = check_calls(calls, "arun")
        return await self._rounds.arun(calls, policy, context, await self._astep(step))

    # --- tools another framework runs (the in-place integrations) ---------------------

    def scope(
        self,
        *,
        step: str | None = None,
        find_step: Callable[[], Awaitable[str | None]] | None = None,
    ) -> Scope:
        """This conversation as the :class:`~toolguard.Scope` of calls of tools another
        framework runs; ``step`` names the model step they came in (the model message):
        calls with the same ``step`` count once against a model-retry budget.

        ``find_step`` instead names it late: an async function (no arguments, the step
        or ``None``) awaited once, only when a call needs its step (a failure, a
        breaker, a budget), never on a success with nothing to count; for a framework
        whose step costs a read. That scope answers on the async methods only."""
        if step is not None and type(step) is not str:
            check_step(step)
        if find_step is not None:
            if step is not None:
                raise InvalidOption("session.scope(): give step= or find_step=, not both")
            if not callable(find_step):
                raise InvalidOption(
                    f"session.scope(find_step=...) takes an async function, got {find_step!r}"
                )
        if step is None and find_step is None:  # nothing in it changes: one for all calls
            made = self._scope
            if made is None:
                made = self._scope = Scope(self._runner, self, self._state)
            return made
        return Scope(self._runner, self, self._state, step, find_step)

    def admit(self, call: ToolCall, *, step: str | None = None) -> ToolResult | None:
        """Before running a tool that runs elsewhere: ``None`` to run it, or the answer
        to send instead (its breaker is open in this conversation).

        ``step`` names the model step the call belongs to (the model message it came
        in): calls with the same ``step`` count once against a model-retry budget.
        """
        return self._runner.foreign.admit(call, self._state.step(step))

    async def aadmit(self, call: ToolCall, *, step: str | None = None) -> ToolResult | None:
        """Async :meth:`admit` (what a session on an asyncio store must use)."""
        return await self._runner.foreign.aadmit(call, await self._astep(step))

    def handle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """``Dispatcher.handle_error`` in this conversation: the failure counts against
        the tool's breaker and model-retry budget."""
        return self._runner.foreign.handle_error(
            call, error, policy=policy, step=self._state.step(step)
        )

    async def ahandle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        return await self._runner.foreign.ahandle_error(
            call, error, policy=policy, step=await self._astep(step)
        )

    def handle_result(
        self,
        call: ToolCall,
        value: Any,
        *,
        policy: ToolPolicy | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """``Dispatcher.handle_result`` in this conversation: a success after failures
        closes the tool's breaker."""
        return self._runner.foreign.handle_result(
            call, value, policy=policy, step=self._state.step(step)
        )

    async def ahandle_result(
        self,
        call: ToolCall,
        value: Any,
        *,
        policy: ToolPolicy | None = None,
        step: str | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_result` (async handlers allowed)."""
        return await self._runner.foreign.ahandle_result(
            call, value, policy=policy, step=await self._astep(step)
        )

    def state(self, tool: str) -> ToolState:
        """What this session remembers about ``tool``."""
        return self._state.state(tool)

    def reset(self, tool: str | None = None) -> None:
        """Forget budgets and close breakers: for one tool, or all of them."""
        self._state.reset(tool)

    async def astate(self, tool: str) -> ToolState:
        """Async :meth:`state` (what a session on an asyncio store must use)."""
        return await self._state.astate(tool)

    async def areset(self, tool: str | None = None) -> None:
        """Async :meth:`reset`."""
        await self._state.areset(tool)


def workflow_session(
    runtime: WorkflowRuntime,
    key: tuple[object, str | None],
    runner: Runner,
    rounds: Rounds,
    clock: Callable[[], float] | None,
    store: Opens | None,
) -> Session:
    """A session of a durable engine's workflow run: in its state, on its clock.

    ``key`` is the dispatcher and the session's id; a named session is found again
    within that run only (``docs/durable.md``).
    """
    if store is not None:
        raise ToolDefinitionError(
            f"session(): in workflow code a session's budgets and breakers live in the "
            f"workflow's own state, which the engine replays; a {store.name} store is "
            "outside it and would answer differently on replay. Open the session "
            "without a store there (docs/durable.md)."
        )
    clock = clock or runtime.now
    id = key[1]
    if id is None:
        return Session(runner, rounds, clock=clock)
    kept = runtime.sessions()
    session: Session | None = kept.get(key)
    if session is None:
        session = kept[key] = Session(runner, rounds, id=id, clock=clock)
    return session
