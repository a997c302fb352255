"""Which conversation a LangGraph tool call belongs to: its session and its model step.

Part of :mod:`toolguard.integrations.langchain`. A LangGraph thread
(``config["configurable"]["thread_id"]``) is one conversation: its calls run in
``dispatcher.session(id=thread_id)``, so breakers and model-retry budgets count per
thread. The model step of a call is the ``AIMessage`` that asked for it (its id):
the parallel calls of one message count once against a budget. Without a thread id
there is no conversation to remember, and calls go to the dispatcher itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from toolguard._dispatcher import Dispatcher
from toolguard._session import Session
from toolguard._values import ToolCall, ToolResult

__all__ = ["Scope", "step_key", "thread_id"]


def thread_id(config: Mapping[str, Any] | None) -> str | None:
    """The LangGraph thread id of a run's config, as a str (``None`` without one)."""
    if not config:
        return None
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping):
        return None
    value = configurable.get("thread_id")
    if value is None or value == "":
        return None
    return value if isinstance(value, str) else str(value)


def _messages(state: Any) -> Sequence[Any]:
    if isinstance(state, Mapping):
        found = state.get("messages")
    elif isinstance(state, list):
        found = state
    else:
        found = getattr(state, "messages", None)
    return found if isinstance(found, list) else ()


def step_key(state: Any, call_id: str | None) -> str | None:
    """The id of the ``AIMessage`` in ``state`` that made the call ``call_id``."""
    if call_id is None:
        return None
    for message in reversed(_messages(state)):
        if isinstance(message, AIMessage) and any(
            call.get("id") == call_id for call in message.tool_calls
        ):
            return message.id
    return None


class Scope:
    """One call's conversation: a session (and its step) when the run has a thread."""

    __slots__ = ("dispatcher", "session", "step")

    def __init__(self, dispatcher: Dispatcher, session: Session | None, step: str | None) -> None:
        self.dispatcher = dispatcher
        self.session = session
        self.step = step

    @classmethod
    def of(
        cls,
        dispatcher: Dispatcher,
        config: Mapping[str, Any] | None,
        state: Any,
        call_id: str | None,
    ) -> Scope:
        thread = thread_id(config)
        if thread is None:
            return cls(dispatcher, None, None)
        return cls(dispatcher, dispatcher.session(id=thread), step_key(state, call_id))

    # --- tools another framework runs ----------------------------------------------

    def admit(self, call: ToolCall) -> ToolResult | None:
        """``None`` to run the tool; else the answer (its breaker is open here)."""
        if self.session is None:
            return None
        return self.session.admit(call, step=self.step)

    def handle_error(self, call: ToolCall, error: BaseException) -> ToolResult:
        if self.session is None:
            return self.dispatcher.handle_error(call, error)
        return self.session.handle_error(call, error, step=self.step)

    async def ahandle_error(self, call: ToolCall, error: BaseException) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.ahandle_error(call, error)
        return await self.session.ahandle_error(call, error, step=self.step)

    def handle_result(self, call: ToolCall, value: Any) -> ToolResult:
        if self.session is None:
            return self.dispatcher.handle_result(call, value)
        return self.session.handle_result(call, value, step=self.step)

    async def ahandle_result(self, call: ToolCall, value: Any) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.ahandle_result(call, value)
        return await self.session.ahandle_result(call, value, step=self.step)

    # --- the dispatcher's own tools --------------------------------------------------

    def dispatch(
        self, call: ToolCall, context: Any, framework_values: Mapping[str, Any]
    ) -> ToolResult:
        if self.session is None:
            return self.dispatcher.dispatch(
                call, context=context, framework_values=framework_values
            )
        # Session.dispatch takes no step key (each call would be a step of its own),
        # so the session's runner is asked with the step of the AIMessage.
        step = self.session._state.step(self.step)
        return self.session._runner.dispatch(call, None, context, step, framework_values)

    async def adispatch(
        self, call: ToolCall, context: Any, framework_values: Mapping[str, Any]
    ) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.adispatch(
                call, context=context, offload=True, framework_values=framework_values
            )
        step = self.session._state.step(self.step)
        return await self.session._runner.adispatch(
            call, None, context, step, True, framework_values
        )
