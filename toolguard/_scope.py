"""``Scope``: where a call of a tool another framework runs is answered.

An in-place integration lets its framework run the tool and asks toolguard what to
do around it. A scope is one dispatcher's policy in one conversation (a
:class:`~toolguard.Session` and the model step a call came in) or in none, with
every piece such an integration needs, public and the same for sync and asyncio
stores (the ``a``-prefixed twins await a store's step and async handlers)::

    scope = dispatcher.scope()                    # no conversation
    scope = session.scope(step=message_id)        # one model step of a conversation

    if scope.quiet(call): ...                     # nothing to do until it fails
    refused = scope.admit(call)                   # the tool's breaker is open: answer this
    value = scope.run(call, invoke)               # the framework's invocation, under the
                                                  #   tool's timeout and retries
    result = scope.failed(call, error)            # a failure, through the handler chain
    result = scope.succeeded(call, value)         # a success: cut, return_direct decided
    if scope.stands(call, value): ...             #   (or nothing to decide: no result made)
    result = scope.unknown_tool(call, available)  # a tool the framework does not have
    failed = scope.aborted(call, error, event=...)  # a call that ended in neither: logged

``toolguard.integrations.inplace`` is the one pipeline that strings these together
for every framework.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Protocol, TypeVar

import pydantic

from toolguard._values import ToolCall, ToolResult
from toolguard.errors import InvalidArguments, ToolCallFailed
from toolguard.policy._values import ToolPolicy
from toolguard.runner._foreign import as_is
from toolguard.runner._pipeline import Runner
from toolguard.schema._arguments import Arguments, any_validator
from toolguard.sessions._steps import SessionState, State, Step

__all__ = ["Conversation", "Scope"]

T = TypeVar("T")


class Conversation(Protocol):
    """What a scope says of its session (a :class:`~toolguard.Session`)."""

    @property
    def id(self) -> str | None:
        """The session's id (``None``: an anonymous session)."""
        ...


class Scope:
    """One dispatcher's policy, in one conversation or in none (see the module).

    Made by ``dispatcher.scope()`` and ``session.scope(step=...)``; cheap to make per
    call. ``session`` and ``step`` say which conversation and model step the calls
    belong to (``None``: none): calls with the same ``step`` count once against a
    model-retry budget. ``session.scope(find_step=...)`` names the step late: an async
    function awaited once, by the first async method that needs the step (a failure, a
    breaker, a budget), for a framework whose step costs a read; such a scope answers
    on the async methods only.
    """

    __slots__ = ("_bridge", "_find", "_foreign", "_key", "_local", "_runner", "_state", "session")

    def __init__(
        self,
        runner: Runner,
        session: Conversation | None = None,
        state: State | None = None,
        step: str | None = None,
        find_step: Callable[[], Awaitable[str | None]] | None = None,
    ) -> None:
        self._runner = runner
        self._foreign = runner.foreign
        self._state = state
        # a session in process memory: for a tool without a breaker, its admit asks
        # nothing and a success changes nothing (a shared store's step may renew R5)
        self._local = state is None or isinstance(state, SessionState)
        self._find = None if state is None else find_step
        # a session on an asyncio client's store: the sync methods run their async twins
        # (on a loop of their own, where no loop runs in this thread: a framework running
        # a sync tool on a worker thread under its async run)
        self._bridge = not self._local and bool(
            getattr(getattr(state, "store", None), "is_async", False)
        )
        self.session = session
        self._key = step

    @property
    def step(self) -> str | None:
        """The model step the calls belong to (``None``: each call a step of its own);
        with ``find_step``, ``None`` until it is found."""
        return self._key

    def _step(self) -> Step | None:
        if self._find is not None:
            raise TypeError(
                f"{self!r}: a scope whose step is found late (find_step=) answers on the "
                "async methods only (aadmit, afailed, asucceeded, ...)"
            )
        return None if self._state is None else self._state.step(self._key)

    def _astep(self) -> Step | None:
        return None if self._state is None else self._state.astep(self._key)

    async def _afound(self) -> Step | None:
        """The step, named now by ``find_step`` (once, at the first call that needs it;
        a ``find_step`` that raises names none: the call is a step of its own)."""
        find, self._find = self._find, None
        if find is not None:
            try:
                self._key = await find()
            except Exception:  # noqa: BLE001 - a step not found is a step of its own
                self._key = None
        return self._astep()

    # --- the policy ----------------------------------------------------------------

    def policy(self, name: str) -> ToolPolicy:
        """The policy that applies to the tool ``name`` now, every setting resolved
        (overrides, the tool's own, the agent's, the global defaults, the built-in):
        ``on_error``/``on_invalid_call`` are the whole chains."""
        if not isinstance(name, str):
            raise TypeError(f"policy() takes a tool's name (a str), got {type(name).__name__}")
        return self._foreign.policy(name)

    # --- before the tool runs ----------------------------------------------------------

    def counts(self, call: ToolCall) -> bool:
        """Whether :meth:`admit` and a success of ``call`` are counted in a
        conversation: ``False`` without one, and in a session in process memory for a
        tool without a breaker (there is nothing to ask before, nor to record after a
        success); where it is ``False``, :meth:`admit` always answers ``None``."""
        if self._state is None:
            return False
        return not self._local or self._foreign.breaker(call) is not None

    def quiet(self, call: ToolCall) -> bool:
        """Whether toolguard has nothing to do around ``call`` until it fails: nothing
        to ask before it (:meth:`admit` answers ``None``, :meth:`counts` says no),
        nothing around the invocation (no timeout or retries: :meth:`run` is
        ``invoke()`` itself) and a success that :meth:`stands` whenever toolguard
        sends its value as it is (:meth:`as_is`). One policy lookup, for the hot path
        of a framework's successes (telemetry on, a shared store's session: no)."""
        return self._local and self._foreign.quiet(call)

    as_is = staticmethod(as_is)  # whether toolguard sends a value as it is (see as_is)

    def admit(self, call: ToolCall) -> ToolResult | None:
        """``None`` to run the tool; else the answer to send instead (its breaker is
        open in this conversation). Without a conversation, always ``None``."""
        if self._bridge:
            return _bridged(self.aadmit(call))
        step = self._step()
        return None if step is None else self._foreign.admit(call, step)

    async def aadmit(self, call: ToolCall) -> ToolResult | None:
        """Async :meth:`admit` (what a session on an asyncio store must use)."""
        step = self._astep() if self._find is None else await self._afound()
        return None if step is None else await self._foreign.aadmit(call, step)

    # --- around the framework's invocation -----------------------------------------

    def run(self, call: ToolCall, invoke: Callable[[], T]) -> T:
        """``invoke()`` (the framework's own invocation of the tool) under the tool's
        ``timeout`` (on a worker thread, answered at the deadline) and ``retries``.
        What the last attempt raises propagates: answer it with :meth:`failed`."""
        return self._foreign.run(call, invoke)

    def arun(self, call: ToolCall, invoke: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """Async :meth:`run`: each attempt a task with a deadline (await what it
        returns; without a timeout or retries, ``invoke()`` itself)."""
        return self._foreign.arun(call, invoke)

    # --- after ---------------------------------------------------------------------------

    def failed(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        tool: ToolPolicy | None = None,
    ) -> ToolResult:
        """The answer to a failure: the handler chain for the call's tool name, a hidden
        cause logged once, the breaker and budget counted in the conversation.

        ``policy`` is a call level; ``tool`` the framework's own error setting for this
        tool (LangChain's ``handle_tool_error``, the Agents SDK's
        ``failure_error_function``...) as a handler at the tool level: the tool
        author's word, asked after any override. Control flow is re-raised.
        """
        if self._bridge:
            return _bridged(self.afailed(call, error, policy=policy, tool=tool))
        return self._foreign.handle_error(call, error, policy=policy, tool=tool, step=self._step())

    async def afailed(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        tool: ToolPolicy | None = None,
    ) -> ToolResult:
        """Async :meth:`failed` (async handlers allowed)."""
        step = self._astep() if self._find is None else await self._afound()
        return await self._foreign.ahandle_error(call, error, policy=policy, tool=tool, step=step)

    def succeeded(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """The result of a success: ``value`` as content (cut per ``max_result_chars``,
        ``truncated`` then set), ``return_direct`` decided, ``value`` kept on the
        result; a success after failures closes the breaker. A value that cannot be
        serialised is a hidden failure."""
        if self._bridge:
            return _bridged(self.asucceeded(call, value, policy=policy))
        return self._foreign.handle_result(call, value, policy=policy, step=self._step())

    def stands(self, call: ToolCall, value: Any) -> bool:
        """Whether a success leaves toolguard nothing to decide, so that the framework's
        outcome stands as it is, with no :class:`~toolguard.ToolResult` made: nothing to
        count in a conversation (:meth:`counts`), no telemetry, no ``max_result_chars`` or
        ``return_direct`` for the tool, and ``value`` content toolguard can send as it
        is (text or content blocks it does not mend, or a value it serialises). Where
        this says no, :meth:`succeeded` decides (a value it cannot read included)."""
        if not self._local:
            return False
        return self._foreign.stands(call, value, counted=self._state is not None)

    async def asucceeded(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`succeeded`."""
        step = self._astep() if self._find is None else await self._afound()
        return await self._foreign.ahandle_result(call, value, policy=policy, step=step)

    def unknown_tool(self, call: ToolCall, available: Iterable[str]) -> ToolResult:
        """The answer to a call of a tool the framework does not have: toolguard's one
        wording (the closest of ``available``, the tools that exist, bounded),
        answered by ``on_invalid_call``."""
        if self._bridge:
            return _bridged(self.aunknown_tool(call, available))
        return self._foreign.unknown_tool(call, _names(available), step=self._step())

    async def aunknown_tool(self, call: ToolCall, available: Iterable[str]) -> ToolResult:
        """Async :meth:`unknown_tool`."""
        step = self._astep() if self._find is None else await self._afound()
        return await self._foreign.aunknown_tool(call, _names(available), step=step)

    def invalid_arguments(
        self, call: ToolCall, error: pydantic.ValidationError, schema: Mapping[str, Any]
    ) -> InvalidArguments:
        """A framework's own validation error of the model's arguments (a pydantic
        ``ValidationError``, against the tool's JSON ``schema``) as toolguard's
        ``InvalidArguments``: one bounded line per problem, no value echoed, a custom
        validator's message withheld unless it is model-visible. Answer it with
        :meth:`failed`."""
        if not isinstance(error, pydantic.ValidationError):
            raise TypeError(
                "invalid_arguments() takes the framework's pydantic ValidationError, got "
                f"{type(error).__name__}; any other failure is answered with failed()"
            )
        arguments = Arguments(
            tool=str(call.name),
            parameters=dict(schema),
            validator=any_validator(),
            positional=(),
            call_id_params=(),
            context_params=(),
        )
        return arguments.invalid(error)

    def aborted(self, call: ToolCall, error: BaseException, *, event: str) -> ToolCallFailed:
        """A call that ended in neither a result nor a handler's answer, where something
        must still be answered (a server whose client waits): ``error`` (a
        ``BaseException`` the tool raised itself, a control-flow signal nothing there can
        act on, a handler that raised) is logged once at ERROR as ``event``, with
        ``exc_info`` and a new error id. Returns (does not raise) the
        :class:`~toolguard.ToolCallFailed` naming the tool (bounded) and that id, with
        ``error`` as its cause, for the integration's own answer. Counts against no
        breaker or budget: nothing was decided about the tool."""
        return self._foreign.aborted(call, error, event)

    # --- the dispatcher's own tools ------------------------------------------------------

    def dispatch(
        self,
        call: ToolCall,
        *,
        context: Any = None,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """One of the dispatcher's own tools, run by toolguard, in this conversation
        and step (``Dispatcher.dispatch``, counted as part of ``step``)."""
        return self._runner.dispatch(call, None, context, self._step(), framework_values)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        context: Any = None,
        offload: bool = False,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Async :meth:`dispatch` (``offload=True``: a sync tool runs on the pool)."""
        step = self._astep() if self._find is None else await self._afound()
        return await self._runner.adispatch(call, None, context, step, offload, framework_values)

    def __repr__(self) -> str:
        session = "no session" if self.session is None else f"session {self.session.id!r}"
        return f"Scope({session}, step={self.step!r})"


def _names(available: Iterable[str]) -> tuple[str, ...]:
    """The names of the tools that exist, for :meth:`Scope.unknown_tool` (one name
    alone is refused: its letters are not the tools)."""
    if isinstance(available, str | bytes) or not isinstance(available, Iterable):
        raise TypeError(
            "unknown_tool() takes the names of the tools that exist (a list of str), "
            f"got {type(available).__name__}"
        )
    return tuple(available)


def _bridged(answer: Coroutine[Any, Any, T]) -> T:
    """A sync method's async twin, for a session on an asyncio client's store: run on
    a loop of its own where none runs in this thread (the store keeps connections per
    loop); refused where one runs (blocking it would stall every other task)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(answer)
    answer.close()
    raise TypeError(
        "this scope's session is on a store with an asyncio client and an event loop "
        "runs in this thread: use the scope's async methods (aadmit, afailed, "
        "asucceeded, aunknown_tool), or give the store a sync client"
    )
