"""A toolguard tool as an Agent Framework ``FunctionTool``, and a call's conversation."""

from __future__ import annotations

from typing import Any, Final

from agent_framework import (
    AgentSession,
    FunctionInvocationContext,
    FunctionTool,
    MiddlewareFailure,
)

from toolguard import Dispatcher, Scope, ToolCall, ToolCallFailed
from toolguard.integrations._common import declared_schema

__all__ = ["FRAMEWORK", "ToolguardFunctionTool", "failing", "scope_of"]

FRAMEWORK: Final = "agent-framework"


def scope_of(dispatcher: Dispatcher, session: object, *, outside: Scope | None = None) -> Scope:
    """The scope of a call: the conversation of its ``AgentSession``
    (``dispatcher.session(id=session.session_id)``), or, in a run without a session,
    ``outside`` (``dispatcher.scope()``, made once by the caller) or a new one."""
    if isinstance(session, AgentSession):
        return dispatcher.session(id=session.session_id).scope()
    return outside if outside is not None else dispatcher.scope()


def failing(failed: ToolCallFailed) -> MiddlewareFailure:
    """A handler's choice to fail the invocation as Agent Framework's fail-closed abort:
    its function loop turns any other exception into a result and goes on; a
    ``MiddlewareFailure`` ends the run and reaches the caller (raise it ``from`` the
    ``ToolCallFailed``, which the caller finds as its ``__cause__``)."""
    return MiddlewareFailure(str(failed))


class ToolguardFunctionTool(FunctionTool):
    """A toolguard tool that Agent Framework runs (see ``as_agent_framework_tool``).

    It declares toolguard's JSON Schema as its input model (one that keeps every
    argument as it came, so that toolguard validates them), and its function hands each
    call to the dispatcher, with the call's ``FunctionInvocationContext``.
    """

    def __init__(self, dispatcher: Dispatcher, name: str, **options: Any) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK, call_id=True)  # the call id, from the loop's context
        self._guarding = dispatcher
        super().__init__(
            name=name,
            description=guarded.description or name,
            func=self._answer,
            input_model=declared_schema(name, guarded.parameters),
            **options,
        )

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._guarding

    async def _answer(self, context: FunctionInvocationContext, **arguments: Any) -> Any:
        """One call, answered by toolguard: the tool's value on success (its text where
        the content was cut), toolguard's answer as the result on failure."""
        call_id = context.metadata.get("call_id")
        call = ToolCall(
            name=self.name,
            arguments=arguments,
            id=call_id if isinstance(call_id, str) else None,
        )
        scope = scope_of(self._guarding, context.session)
        try:
            result = await scope.adispatch(call, offload=True)
        except ToolCallFailed as failed:
            raise failing(failed) from failed
        if result.is_error or result.truncated or result.value is None:
            return result.text
        return result.value
