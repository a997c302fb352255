"""Which conversation and model step a LlamaIndex tool call belongs to.

A conversation is the agent's workflow ``Context``: the same ``Context`` reused
across ``agent.run(..., ctx=ctx)`` is one toolguard session, found again by an id
kept in the context's store (:data:`SESSION_KEY`). A model step is the run (LlamaIndex
tags every run with an id) and the agent's iteration within it (one per model message).
"""

from __future__ import annotations

import uuid
import weakref
from typing import Any, Final

from llama_index.core.instrumentation import dispatcher as instrumentation
from llama_index.core.workflow import Context

from toolguard import Dispatcher, Scope

__all__ = ["RUN_ID_TAG", "SESSION_KEY", "run_tags", "scope_of"]

SESSION_KEY: Final = "toolguard_session_id"
"""Key in the workflow ``Context``'s store of the toolguard session id of that
conversation: the same ``Context`` across runs is the same session (the id is a
plain string, so it survives ``ctx.to_dict()``/``Context.from_dict``)."""

# LlamaIndex-private names, read because no public hook says which run and which
# model message a tool call is in: the instrumentation's tags of the running
# workflow (``active_instrument_tags``, a ContextVar, with the run id under
# ``llamaindex.run_id``) and the agent's ``num_iterations`` in the context's store.
# tests/integrations/test_llama_index.py fails loudly if a release moves them.
RUN_ID_TAG: Final = "llamaindex.run_id"
run_tags: Final = instrumentation.active_instrument_tags  # type: ignore[attr-defined]  # not in its __all__; AttributeError here if moved
_ITERATION: Final = "num_iterations"

# The session id of each live Context, once read from (or written to) its store: the
# store is read once per conversation, not per call.
_known: weakref.WeakKeyDictionary[Context, str] = weakref.WeakKeyDictionary()


async def scope_of(dispatcher: Dispatcher, ctx: Any) -> Scope:
    """The scope of a call: the conversation of ``ctx`` in its model step, or no
    conversation when the agent gave no ``Context`` (or its typed state refuses
    toolguard's key). The step (a read of the context's store) is found only when a
    call needs it: a failure, a breaker, a budget; never on a plain success."""
    if not isinstance(ctx, Context):
        return dispatcher.scope()
    try:
        session_id = _known.get(ctx)
        if session_id is None:
            store = ctx.store  # a property of a property: read where it is used
            session_id = await store.get(SESSION_KEY, default=None)
            if not isinstance(session_id, str) or not session_id:
                session_id = uuid.uuid4().hex
                await store.set(SESSION_KEY, session_id)
            _known[ctx] = session_id
    except (AttributeError, KeyError, TypeError, ValueError):
        return dispatcher.scope()  # a typed state that refuses the key
    run_id = run_tags.get().get(RUN_ID_TAG)  # now: the run this call is in
    if run_id is None:
        return dispatcher.session(id=session_id).scope()

    async def step() -> str | None:
        try:
            iteration = await ctx.store.get(_ITERATION, default=None)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return None if iteration is None else f"{run_id}:{iteration}"

    return dispatcher.session(id=session_id).scope(find_step=step)
