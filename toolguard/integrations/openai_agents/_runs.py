"""One call as the Agents SDK hands it over: its ``ToolCall``, its conversation, its step.

The SDK gives every tool call a ``ToolContext`` (a ``RunContextWrapper``): the model's
call id, the run's context object, the run's usage. From it come

* the :class:`~toolguard.ToolCall` toolguard answers;
* the conversation's :class:`~toolguard.Session` (breakers, model-retry budgets), found
  by the application's ``session=``: a ``Session``, or a function of the run context
  that names one (``lambda ctx: ctx.context.thread_id``);
* the model step the call came in: calls answered between the same two model requests
  of one run (the run's ``usage.requests``) count once against a model-retry budget.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any, Final, TypeAlias

from agents import RunContextWrapper

from toolguard import Dispatcher, Scope, Session, ToolCall

__all__ = ["SessionFinder", "SessionSource", "call_of", "scope_for", "session_for", "step_key"]

SessionFinder: TypeAlias = Callable[[RunContextWrapper[Any]], "Session | str | None"]
"""A function of the run context naming the conversation: a ``Session``, a session id
(``dispatcher.session(id=...)``), or ``None`` (this run has no session)."""

SessionSource: TypeAlias = "Session | SessionFinder"
"""What ``session=`` takes: one ``Session`` for every call, or a :data:`SessionFinder`."""

_RUN: Final = "_toolguard_run"  # the token toolguard gives a run's usage object
_runs = itertools.count(1)


def call_of(context: Any, name: str, arguments: str) -> ToolCall:
    """The ``ToolCall`` of one SDK invocation: the model's raw JSON and its call id."""
    return ToolCall(name=name, arguments=arguments, id=getattr(context, "tool_call_id", None))


def session_for(
    source: SessionSource | None, dispatcher: Dispatcher, context: RunContextWrapper[Any]
) -> Session | None:
    """The conversation this call belongs to, or ``None`` (no session: no breakers or
    budgets, the dispatcher alone)."""
    if source is None:
        return None
    if isinstance(source, Session):
        return source
    found = source(context)
    if found is None or isinstance(found, Session):
        return found
    if isinstance(found, str):
        return dispatcher.session(id=found)
    raise TypeError(
        f"session= returned {type(found).__name__}; it returns a toolguard Session, "
        "a session id (str) or None"
    )


def scope_for(
    source: SessionSource | None, dispatcher: Dispatcher, context: RunContextWrapper[Any]
) -> Scope:
    """The :class:`~toolguard.Scope` of one call: its conversation's model step, or the
    dispatcher alone (no session)."""
    session = session_for(source, dispatcher, context)
    if session is None:
        return dispatcher.scope()
    return session.scope(step=step_key(context))


def step_key(context: RunContextWrapper[Any]) -> str | None:
    """The model step of a call: its run and the number of model requests so far.

    ``None`` (a step of its own) when the run counts no requests: a model that
    reports no usage. Then parallel calls count separately, never too few times.
    """
    usage = getattr(context, "usage", None)
    requests = getattr(usage, "requests", 0)
    if not isinstance(requests, int) or requests <= 0:
        return None
    run = getattr(usage, _RUN, None)
    if run is None:
        run = next(_runs)
        try:
            setattr(usage, _RUN, run)
        except (AttributeError, TypeError):  # a usage object that takes no attributes
            return None
    return f"agents-run-{run}:{requests}"
