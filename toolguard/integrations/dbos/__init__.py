"""toolguard for DBOS (``pip install "toolguard-agents[dbos]"``): durable agents whose
tools run as DBOS steps, DBOS owning retries and the journal.

In a DBOS workflow::

    from toolguard.integrations.dbos import DBOSTools

    tools = DBOSTools(agent)

    @DBOS.workflow()
    def support(question: str) -> str:
        ...
        result = tools.call(ToolCall(name="search", arguments=args, id=call_id))

* **The step side**: each call runs as a step (``toolguard.NAME``), one attempt each,
  guarded where it runs: a failure its policy retries is raised for DBOS to retry as an
  ``EngineRetry`` (its type and an error id: what DBOS logs and pickles into
  ``operation_outputs``); anything else is answered in the step by the handler chain,
  which sees the real exception (a hidden cause logged there, once), and the answer,
  never the hidden text, is the step's recorded output.
* **The workflow side**: the result is made from the recorded output, in the
  execution's session. Importing this module registers the workflow runtime, for any
  toolguard use in DBOS workflow code (``DBOSTools``, a framework's capability): ids
  drawn from the workflow's id in order, the time and each log event recorded in a step
  of their own (``toolguard.now``, ``toolguard.log``: on recovery, read from the
  journal, not logged twice), named sessions per execution, a step's failure seen
  through to its root cause.
* **One retry owner**: a tool's ``retries`` compile into the step's ``max_attempts``,
  ``interval_seconds``, ``backoff_rate`` and a ``should_retry`` that retries only what
  toolguard hands over (:func:`step_options`, shown by ``toolguard explain --engine
  dbos``); toolguard never retries on top. Its ``timeout`` applies to each attempt, in
  the step (DBOS times out async steps only).

A function that is itself a step given to a framework is guarded with
:func:`guard_step`. See docs/durable.md.
"""

from __future__ import annotations

try:
    import dbos  # noqa: F401 - the clear error below
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.dbos needs DBOS: pip install "toolguard-agents[dbos]"'
    ) from error

from toolguard.integrations.dbos._runtime import register as _register
from toolguard.integrations.dbos._steps import (
    PREFIX,
    compiled,
    guard_step,
    should_retry,
    step_options,
)
from toolguard.integrations.dbos._workflow import SESSION, DBOSTools

__all__ = [
    "PREFIX",
    "SESSION",
    "DBOSTools",
    "compiled",
    "guard_step",
    "should_retry",
    "step_options",
]
_register()
