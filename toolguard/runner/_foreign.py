"""Calls of tools another framework runs: toolguard answers them; the framework runs them.

The same answers and the same session bookkeeping as for the agent's own tools:
before the tool runs, :meth:`Foreign.admit` (is its breaker open in this
conversation?); around the framework's own invocation, :meth:`Foreign.run` (the
policy's timeout and retries); after, :meth:`Foreign.handle_error` or
:meth:`Foreign.handle_result`. Each has an async twin, which awaits a store's step
and async handlers. ``toolguard.Scope`` is the public face of this module.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

from toolguard import _engine
from toolguard._logging import emit, new_error_id
from toolguard._marks import is_control_flow
from toolguard._misuse import not_a_call, not_an_error
from toolguard._text import ID_LIMIT, shown, utf8
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed, ToolUnavailable
from toolguard.guard._content import to_content
from toolguard.guard._guard import Guard, Rules
from toolguard.policy import _config
from toolguard.policy._precedence import Resolved
from toolguard.policy._resilience import Breaker, Retry
from toolguard.policy._values import NEVER, ToolPolicy
from toolguard.runner._attempts import (
    Attempts,
    acall_with_timeout,
    call_with_timeout,
    retry_async,
    retry_sync,
    to_engine,
)
from toolguard.runner._pools import Pools
from toolguard.sessions._steps import Step

__all__ = ["Foreign", "as_is"]

T = TypeVar("T")

_NAMES_KEPT: Final = 256  # a model's invented names cannot grow the cache without end


class Foreign:
    """One agent's answers to calls of tools that run elsewhere.

    ``tool`` (in :meth:`handle_error` and :meth:`handle_result`) is the framework's
    own per-tool setting, put at the tool level of the chain: the tool author's word,
    asked after any override and before the agent's defaults.
    """

    def __init__(self, guard: Guard, pools: Pools) -> None:
        self.guard = guard
        self.pools = pools
        # a call's name as sent -> its rules, for the names toolguard echoes unchanged
        # (short and printable): every step of a call looks its tool up, and shown()
        # plus the guard's lookup cost more than the rest of a plain success
        self._names: dict[str, Rules] = {}

    def _rules(self, name: object) -> Rules:
        if type(name) is str:
            rules = self._names.get(name)
            if rules is not None:
                return rules
        echoed = shown(name)
        rules = self.guard.rules(echoed)
        if echoed is name:
            if len(self._names) >= _NAMES_KEPT:
                self._names.clear()
            self._names[echoed] = rules
        return rules

    def _resolved(
        self, call: ToolCall, policy: ToolPolicy | None = None, tool: ToolPolicy | None = None
    ) -> tuple[Rules, Resolved]:
        if type(call) is not ToolCall:
            _check_call(call)
        rules = self._rules(call.name)
        if policy is None and tool is None and rules.version == _config._version:
            return rules, rules.resolved
        return rules, self.guard.resolved(rules, policy, tool)

    def policy(self, name: str) -> ToolPolicy:
        """The policy that applies to ``name`` now, every setting resolved."""
        return self.guard.resolved(self.guard.rules(shown(name))).policy()

    # --- around the framework's invocation -----------------------------------------

    def run(self, call: ToolCall, attempt: Callable[[], T]) -> T:
        """``attempt()`` (the framework's own invocation) under the tool's timeout (on
        a worker thread with a deadline) and retries."""
        rules, resolved = self._resolved(call)
        seconds, retry = resolved.timeout, resolved.retries
        if (seconds is None and retry is None) or _engine.current() is not None:
            return attempt()  # in a durable engine's workflow code, the engine's options apply
        name = rules.name
        if seconds is not None and _engine.engine_times_out():
            seconds = None

        def once() -> T:
            if seconds is None:
                return attempt()
            run = functools.partial(contextvars.copy_context().run, attempt)
            return call_with_timeout(self.pools, run, tool=name, seconds=seconds)

        try:
            return once()
        except Exception as first:
            if retry is None or is_control_flow(first) or not retry.retryable(first):
                raise
            to_engine(retry, first, tool=name, call_id=call.id)  # an engine retries?
            counter = Attempts(name, call.id)
            return retry_sync(retry, first, once, tool=name, call_id=call.id, counter=counter)

    def arun(self, call: ToolCall, attempt: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """Async :meth:`run`: the invocation as a task with a deadline. Without a
        timeout or retries, the invocation's own awaitable (no coroutine around it)."""
        rules, resolved = self._resolved(call)
        seconds, retry = resolved.timeout, resolved.retries
        if (seconds is None and retry is None) or _engine.current() is not None:
            return attempt()  # in workflow code, the engine's options apply
        if seconds is not None and _engine.engine_times_out():
            seconds = None
        return self._arun(call, attempt, rules.name, seconds, retry)

    async def _arun(
        self,
        call: ToolCall,
        attempt: Callable[[], Awaitable[T]],
        name: str,
        seconds: float | None,
        retry: Retry | None,
    ) -> T:
        """:meth:`arun` with a timeout or retries."""

        counter = Attempts(name, call.id)

        async def once() -> T:
            if seconds is None:
                return await attempt()
            return await acall_with_timeout(
                self.pools, attempt(), tool=name, seconds=seconds, counter=counter
            )

        try:
            return await once()
        except Exception as first:
            if retry is None or is_control_flow(first) or not retry.retryable(first):
                raise
            to_engine(retry, first, tool=name, call_id=call.id)  # an engine retries?
            return await retry_async(
                retry, first, once, tool=name, call_id=call.id, counter=counter
            )

    # --- after -------------------------------------------------------------------------

    def handle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        tool: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Answer a failure of a tool that ran elsewhere; control flow is re-raised."""
        if is_control_flow(error):
            _check_error(error)
            raise error
        assert isinstance(error, Exception)
        rules, resolved = self._resolved(call, policy, tool)
        self.guard.check_sync(rules.name, resolved)
        return self.guard.failed(error, call, resolved, rules.name, step)

    async def ahandle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        tool: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        if is_control_flow(error):
            _check_error(error)
            raise error
        assert isinstance(error, Exception)
        rules, resolved = self._resolved(call, policy, tool)
        return await self.guard.afailed(error, call, resolved, rules.name, step)

    def handle_result(
        self,
        call: ToolCall,
        value: object,
        *,
        policy: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """The result of a successful call of a tool that ran elsewhere (a value that
        cannot be serialised is a hidden failure)."""
        rules, resolved = self._resolved(call, policy)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - a value's own serialiser may raise anything
            self.guard.check_sync(rules.name, resolved)
            return self.guard.failed(error, call, resolved, rules.name, step)
        if step is not None:
            step.succeeded(rules.name, resolved.breaker)
        return self.guard.succeeded(call, rules.name, content, artifact, resolved, value)

    async def ahandle_result(
        self,
        call: ToolCall,
        value: object,
        *,
        policy: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_result` (async handlers allowed)."""
        rules, resolved = self._resolved(call, policy)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - as above
            return await self.guard.afailed(error, call, resolved, rules.name, step)
        if step is not None:
            await step.asucceeded(rules.name, resolved.breaker)
        return self.guard.succeeded(call, rules.name, content, artifact, resolved, value)

    def breaker(self, call: ToolCall) -> Breaker | None:
        """The breaker of ``call``'s tool, as resolved now."""
        return self._resolved(call)[1].breaker

    def quiet(self, call: ToolCall) -> bool:
        """Whether toolguard has nothing to do around a call of ``call``'s tool until
        it fails (see ``Scope.quiet``): telemetry off and a quiet policy, one lookup."""
        if self.guard.telemetry.on:
            return False
        if type(call) is not ToolCall:
            _check_call(call)
        name = call.name  # _resolved(call) inlined: this runs on every call
        rules = self._names.get(name) if type(name) is str else None
        if rules is None:
            rules = self._rules(name)
        if rules.version == _config._version:
            return rules.resolved.quiet
        return self.guard.resolved(rules).quiet

    def stands(self, call: ToolCall, value: object, *, counted: bool = False) -> bool:
        """Whether a success of ``call``, read as ``value``, leaves nothing to decide
        (see ``Scope.stands``; ``counted``: in a session in process memory, where a
        tool with a breaker has its success recorded): no telemetry, no
        ``max_result_chars``, no ``return_direct``, and content toolguard sends as it is
        (:func:`as_is`)."""
        if self.guard.telemetry.on:
            return False
        resolved = self._resolved(call)[1]
        if resolved.max_result_chars is not None or resolved.return_direct is not NEVER:
            return False
        if counted and resolved.breaker is not None:  # a session's step records it
            return False
        return as_is(value)

    def unknown_tool(
        self, call: ToolCall, available: tuple[str, ...], *, step: Step | None = None
    ) -> ToolResult:
        """The answer to a call of a tool the framework does not have: toolguard's one
        wording (the closest name, the tools that exist), through the chain."""
        _check_call(call)
        name = shown(call.name)
        error = self.guard.unknown_tool(call, name, available)
        return self.handle_error(call, error, step=step)

    async def aunknown_tool(
        self, call: ToolCall, available: tuple[str, ...], *, step: Step | None = None
    ) -> ToolResult:
        """Async :meth:`unknown_tool`."""
        _check_call(call)
        name = shown(call.name)
        error = self.guard.unknown_tool(call, name, available)
        return await self.ahandle_error(call, error, step=step)

    def aborted(self, call: ToolCall, error: BaseException, event: str) -> ToolCallFailed:
        """Log ``error`` once as ``event`` (at ERROR, with a new error id) and return
        the ``ToolCallFailed`` that names it; nothing is counted in a conversation."""
        _check_call(call)
        error_id = new_error_id()
        name = shown(call.name)
        emit(
            "error",
            event,
            tool=name,
            call_id=None if call.id is None else shown(call.id, ID_LIMIT),
            error_id=error_id,
            error_type=type(error).__name__,
            exc_info=error,
        )
        failed = ToolCallFailed(
            f"The call of tool {name!r} was aborted (error id {error_id}).",
            tool=name,
            call_id=call.id,
            error_id=error_id,
        )
        failed.__cause__ = error
        return failed

    # --- before --------------------------------------------------------------------------

    def admit(self, call: ToolCall, step: Step) -> ToolResult | None:
        """Before a tool that runs elsewhere runs: ``None`` to run it, or the answer
        (the tool is unavailable: its breaker is open in this session)."""
        rules, resolved = self._resolved(call)
        try:
            step.check_breaker(rules.name, resolved.breaker, resolved.max_model_retries is not None)
        except ToolUnavailable as unavailable:
            return self.guard.failed(unavailable, call, resolved, rules.name, step)
        return None

    async def aadmit(self, call: ToolCall, step: Step) -> ToolResult | None:
        """Async :meth:`admit` (a store's step is awaited)."""
        rules, resolved = self._resolved(call)
        try:
            await step.acheck_breaker(
                rules.name, resolved.breaker, resolved.max_model_retries is not None
            )
        except ToolUnavailable as unavailable:
            return await self.guard.afailed(unavailable, call, resolved, rules.name, step)
        return None


def _check_call(call: object) -> None:
    """Refuse a call that is not a :class:`ToolCall` (a subclass is one)."""
    if not isinstance(call, ToolCall):
        raise not_a_call(call, None)


def _check_error(error: object) -> None:
    """Refuse an ``error`` that is not an exception (a message, an error result)."""
    if not isinstance(error, BaseException):
        raise not_an_error(error)


def as_is(value: object) -> bool:
    """Whether toolguard sends ``value`` as it is: text or content blocks it does not
    mend, or a value whose JSON it sends (one it cannot serialise: no): what
    ``Scope.stands`` asks of a value, public as ``Scope.as_is``."""
    if type(value) is str:
        return value.isascii() or utf8(value) is value
    try:
        content = to_content(value)[0]
    except Exception:  # noqa: BLE001 - handle_result answers it, as a hidden failure
        return False
    return type(content) is str or content == value
