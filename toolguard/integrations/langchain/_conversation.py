"""Which conversation a LangGraph tool call belongs to: its session and its model step.

Part of :mod:`toolguard.integrations.langchain`. A LangGraph thread
(``config["configurable"]["thread_id"]``) is one conversation: its calls are answered
in ``dispatcher.session(id=thread_id).scope(step=...)``, so breakers and model-retry
budgets count per thread. The model step of a call is the ``AIMessage`` that asked for
it (its id): the parallel calls of one message count once against a budget. Without a
thread id there is no conversation to remember: ``dispatcher.scope()``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import AIMessage

from toolguard import Dispatcher, Scope

__all__ = ["scope_of", "step_key", "thread_id"]


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


def scope_of(
    dispatcher: Dispatcher,
    config: Mapping[str, Any] | None,
    state: Any,
    call_id: str | None,
    *,
    outside: Scope | None = None,
) -> Scope:
    """The scope of one call: its thread's session and model step, or, without a
    thread, ``outside`` (``dispatcher.scope()``, made once by the caller) or a new one."""
    thread = thread_id(config)
    if thread is None:
        return outside if outside is not None else dispatcher.scope()
    return dispatcher.session(id=thread).scope(step=step_key(state, call_id))
