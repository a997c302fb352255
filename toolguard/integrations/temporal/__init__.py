"""toolguard for Temporal (``pip install "toolguard-agents[temporal]"``): durable agents
whose tools run as activities, Temporal owning retries and the history.

Three lines, on the worker and in the workflow::

    from toolguard.integrations.temporal import ToolguardPlugin, WorkflowTools

    worker = Worker(client, task_queue="agent", workflows=[Agent], plugins=[ToolguardPlugin(agent)])

    @workflow.defn
    class Agent:
        @workflow.run
        async def run(self, question: str) -> str:
            tools = WorkflowTools(agent)          # the workflow half, in this run's state
            ...
            result = await tools.call(ToolCall(name="search", arguments=args, id=call_id))

* **The activity side** (:func:`tool_activities`, registered by the plugin): each tool
  runs guarded where it runs, one attempt per activity. A failure its policy retries is
  raised for Temporal to retry carrying only its type and an error id; any other is
  answered there by the handler chain, which sees the real exception (a hidden cause is
  logged there, once), and only the answer crosses: the model's text, the error id, the
  type's name. Control flow and Temporal's cancellation pass through.
* **The workflow side** (:class:`WorkflowTools`): the result is made from what crossed,
  in the workflow run's session (breakers and budgets on Temporal's clock). Whatever
  toolguard does in workflow code is replay-safe once this module is imported: error ids
  from ``workflow.random()``, nothing logged on replay, named sessions kept per run,
  and an ``ActivityError`` answered by its root cause (an engine timeout is a
  ``ToolTimeout``; an activity guarded by :func:`guard_activity` gives back its answer).
* **One retry owner**: a tool's ``retries`` and ``timeout`` compile into the activity's
  ``RetryPolicy`` and ``start_to_close_timeout`` (:func:`activity_options`, shown by
  ``toolguard explain --engine temporal``); toolguard never retries on top.
* **The sandbox**: :class:`ToolguardPlugin` passes toolguard through the default
  sandboxed runner and fails the workflow on ``ToolCallFailed``.

A tool written as an activity function (the Agents SDK's ``activity_as_tool``, a
framework's own activity) is guarded with :func:`guard_activity`; a framework's own
durable wrapper (Pydantic AI's ``TemporalDurability``) takes :func:`activity_options` as
its per-tool activity config. See docs/durable.md.
"""

from __future__ import annotations

try:
    import temporalio  # noqa: F401 - the clear error below
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.temporal needs Temporal: pip install "toolguard-agents[temporal]"'
    ) from error

from toolguard.integrations.temporal._activities import (
    PREFIX,
    activity_name,
    guard_activity,
    tool_activities,
)
from toolguard.integrations.temporal._options import (
    DEFAULT_TIMEOUT,
    activity_options,
    compiled,
    retry_policy,
)
from toolguard.integrations.temporal._plugin import PASSTHROUGH, ToolguardPlugin, passthrough
from toolguard.integrations.temporal._runtime import register as _register
from toolguard.integrations.temporal._workflow import WorkflowTools

__all__ = [
    "DEFAULT_TIMEOUT",
    "PASSTHROUGH",
    "PREFIX",
    "ToolguardPlugin",
    "WorkflowTools",
    "activity_name",
    "activity_options",
    "compiled",
    "guard_activity",
    "passthrough",
    "retry_policy",
    "tool_activities",
]

_register()
