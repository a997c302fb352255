"""Calls of tools another framework runs: toolguard answers them, it does not run them.

The same answers and the same session bookkeeping as for the agent's own tools: before
the tool runs, :meth:`Foreign.admit` (is its breaker open in this conversation?); after,
:meth:`Foreign.handle_error` or :meth:`Foreign.handle_result`. Each has an async twin,
which awaits a store's step and async handlers.
"""

from __future__ import annotations

from toolguard._marks import is_control_flow
from toolguard._text import shown
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolUnavailable
from toolguard.guard._content import to_content
from toolguard.guard._guard import Guard
from toolguard.policy._values import ToolPolicy
from toolguard.sessions._steps import Step

__all__ = ["Foreign"]


class Foreign:
    """One agent's answers to calls of tools that run elsewhere."""

    def __init__(self, guard: Guard) -> None:
        self.guard = guard

    def handle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Answer a failure of a tool that ran elsewhere; control flow is re-raised."""
        if is_control_flow(error):
            raise error
        assert isinstance(error, Exception)
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules, policy)
        guard.check_sync(rules.name, resolved)
        return guard.failed(error, call, resolved, rules.name, step)

    async def ahandle_error(
        self,
        call: ToolCall,
        error: BaseException,
        *,
        policy: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        if is_control_flow(error):
            raise error
        assert isinstance(error, Exception)
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules, policy)
        return await guard.afailed(error, call, resolved, rules.name, step)

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
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules, policy)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - a value's own serialiser may raise anything
            guard.check_sync(rules.name, resolved)
            return guard.failed(error, call, resolved, rules.name, step)
        if step is not None:
            step.succeeded(rules.name, resolved.breaker)
        return guard.succeeded(call, rules.name, content, artifact, resolved, value)

    async def ahandle_result(
        self,
        call: ToolCall,
        value: object,
        *,
        policy: ToolPolicy | None = None,
        step: Step | None = None,
    ) -> ToolResult:
        """Async :meth:`handle_result` (async handlers allowed)."""
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules, policy)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - as above
            return await guard.afailed(error, call, resolved, rules.name, step)
        if step is not None:
            await step.asucceeded(rules.name, resolved.breaker)
        return guard.succeeded(call, rules.name, content, artifact, resolved, value)

    def admit(self, call: ToolCall, step: Step) -> ToolResult | None:
        """Before a tool that runs elsewhere runs: ``None`` to run it, or the answer
        (the tool is unavailable: its breaker is open in this session)."""
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules)
        try:
            step.check_breaker(rules.name, resolved.breaker)
        except ToolUnavailable as unavailable:
            return guard.failed(unavailable, call, resolved, rules.name, step)
        return None

    async def aadmit(self, call: ToolCall, step: Step) -> ToolResult | None:
        """Async :meth:`admit` (a store's step is awaited)."""
        guard = self.guard
        rules = guard.rules(shown(call.name))
        resolved = guard.resolved(rules)
        try:
            await step.acheck_breaker(rules.name, resolved.breaker)
        except ToolUnavailable as unavailable:
            return await guard.afailed(unavailable, call, resolved, rules.name, step)
        return None
