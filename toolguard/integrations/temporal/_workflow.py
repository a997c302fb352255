"""The workflow side: tools called as activities, answered from what crossed back.

:class:`WorkflowTools` lives in workflow code (made in the workflow's ``__init__`` or
``run``): each call is the tool's activity, run with the options its policy compiles
to; the result is made from what crossed back, in the workflow run's own session
(breakers and budgets on Temporal's clock, replayed with the workflow). Failures the
activity never answered (Temporal timed it out, gave up on a retry) are answered here
by their root cause, with an error id from Temporal's deterministic randomness, logged
once, not again on replay.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError
from temporalio.workflow import ActivityConfig

from toolguard import Dispatcher, Round, Session, ToolCall, ToolResult
from toolguard.integrations.durable import asettle, call_payload
from toolguard.integrations.temporal._activities import PREFIX, activity_name
from toolguard.integrations.temporal._options import DEFAULT_TIMEOUT, activity_options

__all__ = ["WorkflowTools"]


class WorkflowTools:
    """A dispatcher's tools, called from Temporal workflow code as their activities.

    ``WorkflowTools(dispatcher)`` in the workflow; the worker registers the activities
    (``ToolguardPlugin(dispatcher)``, or ``tool_activities(dispatcher)``, with the same
    ``prefix``). ``session`` is where breakers and budgets are kept: by default a new
    session of this workflow run (``dispatcher.session()`` in workflow code keeps it in
    the run's state, on Temporal's clock). ``options`` adds activity options per tool
    (a ``task_queue``, a ``heartbeat_timeout``) to the compiled ones; the compiled
    ``retry_policy`` and ``start_to_close_timeout`` are the policy's, set them there.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        session: Session | None = None,
        prefix: str = PREFIX,
        default_timeout: timedelta = DEFAULT_TIMEOUT,
        options: Mapping[str, ActivityConfig] | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.session = dispatcher.session() if session is None else session
        self.prefix = prefix
        self.default_timeout = default_timeout
        self._extra = dict(options or {})
        self._rounds = 0

    def options(self, tool: str) -> ActivityConfig:
        """The activity options of ``tool``: its policy compiled, and any given."""
        compiled = activity_options(self.dispatcher, tool, default_timeout=self.default_timeout)
        return ActivityConfig(**{**compiled, **self._extra.get(tool, {})})

    async def call(self, call: ToolCall, *, step: str | None = None) -> ToolResult:
        """One call: the tool's activity, answered from what crossed back. ``step``
        names the model step (calls of one step count once against a budget)."""
        scope = self.session.scope(step=step)
        tool = call.name
        if not isinstance(tool, str) or tool not in self.dispatcher.tools:
            return await scope.aunknown_tool(call, self.dispatcher.tools)
        refused = await scope.aadmit(call)
        if refused is not None:
            return refused
        try:
            crossed = await workflow.execute_activity(
                activity_name(tool, self.prefix), call_payload(call), **self.options(tool)
            )
        except ActivityError as error:  # never answered where it ran: its root cause here
            return await scope.afailed(call, error)
        return await asettle(scope, call, crossed)

    async def run(self, calls: Iterable[ToolCall], *, step: str | None = None) -> Round:
        """A round: the calls' activities at once, one model step, one result per call
        in call order; the round's stop rule is the dispatcher's."""
        calls = list(calls)
        self._rounds += 1
        step = f"round-{self._rounds}" if step is None else step
        outcomes: Sequence[Any] = await asyncio.gather(
            *(self.call(call, step=step) for call in calls), return_exceptions=True
        )
        return self.dispatcher.round_of(calls, outcomes)

    def __repr__(self) -> str:
        return f"WorkflowTools({', '.join(self.dispatcher.tools)}, prefix={self.prefix!r})"
