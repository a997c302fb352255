"""Durable engines: what crosses an activity or step boundary, and who retries.

A durable engine (Temporal, DBOS) runs each tool call as a unit of its own, an activity
or a step, that it retries, times out and journals; the workflow code around it runs
again on replay or recovery. toolguard's rule there: **the engine owns retries and the
journal**. This package holds what every engine's integration shares, on public names
only: ``toolguard.integrations.temporal`` and ``toolguard.integrations.dbos`` are built
on it, and another engine's integration can be (docs/durable.md).

* **Where the tool runs** (the activity, the step): the integration registers the
  engine's unit (``toolguard.register_engine_unit``), so the core runs one attempt per
  unit and raises ``toolguard.EngineRetry`` for a failure the policy retries before the
  engine's last attempt (its type and an error id, nothing else; the cause logged there
  at DEBUG, ``tool_retry``). :func:`aanswer` (and :func:`answer`) answers anything else
  there by the handler chain, which sees the real exception (a hidden cause logged
  there, once); the answer crosses as data: a :data:`Crossing`, the text the model gets,
  the error id, the type's name.
* **The workflow**: :func:`asettle` (and :func:`settle`) makes the result from what
  crossed, in the workflow's session (its breakers and budgets): the answer as it was
  given, its error id, nothing logged again (a :class:`~toolguard.RemoteFailure`); a
  ``RetryWithFeedback`` is answered there, where its model-retry budget is kept. A
  failure the engine gave up retrying is an :class:`EngineGaveUp`, answered there.
* A tool that is its framework's own unit (an activity function given to a framework
  as a tool): :func:`aanswer_invocation` (and :func:`answer_invocation`) keeps its
  value as it is and raises its answered failure as :class:`Answered`, carrying only
  the crossing; in workflow code, the engine's runtime sees the engine's wrapper
  through to it (a :class:`~toolguard.RemoteFailure`). :func:`guard_invocation`
  guards such a function, sync or async, for an engine's decorator.
* :func:`engine_retries`: a tool's ``retries`` and ``timeout`` as an engine's options.
"""

from toolguard.integrations.durable._answer import (
    Answered,
    EngineGaveUp,
    aanswer,
    aanswer_invocation,
    answer,
    answer_invocation,
    guard_invocation,
)
from toolguard.integrations.durable._crossing import (
    CROSSING_VERSION,
    Crossing,
    asettle,
    blocks,
    call_of,
    call_payload,
    content_of,
    crossing_failure,
    is_crossing,
    settle,
)
from toolguard.integrations.durable._retries import (
    EngineRetries,
    engine_retries,
    never_retried,
)

__all__ = [
    "CROSSING_VERSION",
    "Answered",
    "Crossing",
    "EngineGaveUp",
    "EngineRetries",
    "aanswer",
    "aanswer_invocation",
    "answer",
    "answer_invocation",
    "asettle",
    "blocks",
    "call_of",
    "call_payload",
    "content_of",
    "crossing_failure",
    "engine_retries",
    "guard_invocation",
    "is_crossing",
    "never_retried",
    "settle",
]
