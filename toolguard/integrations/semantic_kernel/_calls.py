"""Which conversation, model step and model call a Semantic Kernel function call is in.

Semantic Kernel's auto function calling runs each of the model's function calls through
the kernel's ``AUTO_FUNCTION_INVOCATION`` filters (which see the call's id, the chat
history and the model message) and then the function's ``invoke``, whose
``FUNCTION_INVOCATION`` filters see the function and its arguments only. toolguard's
auto filter notes the call in a context variable (:data:`current`) for the function
filter (or a toolguard function) below it, in the same task.

A conversation is the ``ChatHistory`` the model's calls are added to: the same history
reused turn after turn is one toolguard session (an agent's thread builds a new history
for each invocation: each is a conversation then). A model step is the model message
the calls came in (one round of parallel calls).
"""

from __future__ import annotations

import uuid
import weakref
from contextvars import ContextVar
from typing import Any, Final

from toolguard import Dispatcher, Scope

__all__ = ["ModelCall", "Round", "current", "round_of", "scope_of"]


class Round:
    """The calls of one model message: its model step, and what each call decided about
    stopping, in the order they finished (for ``return_direct_mode="all"``)."""

    __slots__ = ("message", "step", "stops")

    def __init__(self, message: object) -> None:
        self.message = message  # held: its id() keys the round while it is the latest
        self.step = uuid.uuid4().hex
        self.stops: list[bool] = []


class ModelCall:
    """One function call the model made, as the auto filter saw it."""

    __slots__ = ("arguments", "escaping", "id", "scope", "stop", "taken")

    def __init__(self, call_id: str | None, arguments: dict[str, Any], scope: Scope) -> None:
        self.id = call_id
        self.arguments = arguments  # the model's own (not the application's KernelArguments)
        self.scope = scope
        self.stop = False  # whether toolguard's answer asked the round to stop
        self.taken = False  # the invocation of this call was guarded: nested ones are not
        # what must reach the application (a handler's ToolCallFailed, control flow):
        # Semantic Kernel answers every exception of a function itself, so the auto
        # filter raises it again above Semantic Kernel's handler
        self.escaping: Exception | None = None


current: Final[ContextVar[ModelCall | None]] = ContextVar(
    "toolguard_semantic_kernel_call", default=None
)


class _Conversation:
    __slots__ = ("id", "round")

    def __init__(self) -> None:
        self.id = uuid.uuid4().hex
        self.round: Round | None = None


# One entry per live ChatHistory (a pydantic model: weakly referenced, not hashable),
# dropped when the history is collected.
_conversations: dict[int, tuple[weakref.ref[Any], _Conversation]] = {}


def _conversation(history: object) -> _Conversation:
    key = id(history)
    known = _conversations.get(key)
    if known is not None and known[0]() is history:
        return known[1]
    conversation = _Conversation()
    _conversations[key] = (
        weakref.ref(history, lambda _: _conversations.pop(key, None)),
        conversation,
    )
    return conversation


def _message_of(history: Any, call: object) -> object | None:
    """The model message (in ``history``) that holds the function call ``call``."""
    message: object
    for message in reversed(getattr(history, "messages", ())):
        if any(item is call for item in getattr(message, "items", ())):
            return message
    return None


def round_of(history: Any, call: object) -> Round | None:
    """The round of the model message holding ``call`` in ``history``: the latest one of
    that conversation (a new model message starts a new round)."""
    if history is None or call is None:
        return None
    message = _message_of(history, call)
    if message is None:
        return None
    conversation = _conversation(history)
    if conversation.round is None or conversation.round.message is not message:
        conversation.round = Round(message)
    return conversation.round


def scope_of(dispatcher: Dispatcher, history: Any, model_round: Round | None) -> Scope:
    """The scope of a call: its conversation (the chat history) in its model step, or no
    conversation when Semantic Kernel gave no chat history."""
    if history is None or model_round is None:
        return dispatcher.scope()
    session = dispatcher.session(id=_conversation(history).id)
    return session.scope(step=model_round.step)
