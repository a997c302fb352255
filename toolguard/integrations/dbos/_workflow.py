"""The workflow side: tools called as DBOS steps, answered from what was recorded.

:class:`DBOSTools` lives in workflow code: each call is a step of the workflow
(``toolguard.NAME``) run with the options its policy compiles to, and the result is made
from its recorded output, in the execution's session; on recovery, a recorded step
answers from the journal and the same result is made again. Before a call of a tool with
a breaker, the time is recorded as a step (``toolguard.now``), so the breaker decides on
recovery as it did; after each call, what toolguard logged in workflow code is logged in
a step of its own (``toolguard.log``), so nothing is logged twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any, Final

from dbos import DBOS

from toolguard import Dispatcher, Round, Session, ToolCall, ToolCallFailed, ToolResult
from toolguard.integrations.dbos._runtime import RUNTIME
from toolguard.integrations.dbos._steps import PREFIX, arun_tool, run_tool, step_options
from toolguard.integrations.durable import asettle, call_payload, settle

__all__ = ["SESSION", "DBOSTools"]

SESSION: Final = "toolguard-dbos-workflow"
"""The id of the session a workflow execution's calls share by default."""


def _logged(events: list[Callable[[], None]]) -> int:
    for emit in events:
        emit()
    return len(events)


class DBOSTools:
    """A dispatcher's tools, called from DBOS workflow code as steps.

    ``call`` in a sync workflow, ``acall`` in an async one (``run``/``arun`` for a round,
    one call after the other: DBOS numbers steps in the order they start). ``session``
    is where breakers and budgets are kept: by default the execution's own (a named
    session in workflow code lives in the execution's state, on the recorded time).
    """

    def __init__(self, dispatcher: Dispatcher, *, prefix: str = PREFIX) -> None:
        self.dispatcher = dispatcher
        self.prefix = prefix

    def session(self) -> Session:
        """The session of the running workflow execution."""
        return self.dispatcher.session(id=SESSION)

    def _breaker(self, tool: str) -> bool:
        return self.dispatcher.scope().policy(tool).breaker is not None

    # --- sync workflows -------------------------------------------------------------

    def call(
        self, call: ToolCall, *, session: Session | None = None, step: str | None = None
    ) -> ToolResult:
        """One call as a step, answered from its recorded output (a sync workflow)."""
        try:
            result = self._call(call, session or self.session(), step)
        except ToolCallFailed:
            self.flush()
            raise
        self.flush()
        return result

    def _call(self, call: ToolCall, session: Session, step: str | None) -> ToolResult:
        scope = session.scope(step=step)
        tool = call.name
        if not isinstance(tool, str) or tool not in self.dispatcher.tools:
            return scope.unknown_tool(call, self.dispatcher.tools)
        if self._breaker(tool):
            RUNTIME.execution().now = DBOS.run_step({"name": "toolguard.now"}, time.time)
        refused = scope.admit(call)
        if refused is not None:
            return refused
        options = step_options(self.dispatcher, tool, prefix=self.prefix)
        try:
            crossed = DBOS.run_step(options, run_tool, self.dispatcher, call_payload(call))
        except Exception as error:  # noqa: BLE001 - never answered in the step: its root cause
            return scope.failed(call, error)
        return settle(scope, call, crossed)

    def run(self, calls: Iterable[ToolCall], *, step: str | None = None) -> Round:
        """A round, one call after the other, one model step."""
        calls = list(calls)
        session = self.session()
        outcomes: list[Any] = []
        for call in calls:
            try:
                outcomes.append(self.call(call, session=session, step=step))
            except ToolCallFailed as failed:
                outcomes.append(failed)
        return self.dispatcher.round_of(calls, outcomes)

    def flush(self) -> None:
        """Log what toolguard logged in this execution's workflow code, in a step of its
        own (a sync workflow); after each call, and before the workflow returns."""
        events = _taken()
        if events:
            DBOS.run_step({"name": "toolguard.log"}, _logged, events)

    # --- async workflows ------------------------------------------------------------

    async def acall(
        self, call: ToolCall, *, session: Session | None = None, step: str | None = None
    ) -> ToolResult:
        """Async :meth:`call` (an async workflow)."""
        try:
            result = await self._acall(call, session or self.session(), step)
        except ToolCallFailed:
            await self.aflush()
            raise
        await self.aflush()
        return result

    async def _acall(self, call: ToolCall, session: Session, step: str | None) -> ToolResult:
        scope = session.scope(step=step)
        tool = call.name
        if not isinstance(tool, str) or tool not in self.dispatcher.tools:
            return await scope.aunknown_tool(call, self.dispatcher.tools)
        if self._breaker(tool):
            now = await DBOS.run_step_async({"name": "toolguard.now"}, time.time)
            RUNTIME.execution().now = now
        refused = await scope.aadmit(call)
        if refused is not None:
            return refused
        options = step_options(self.dispatcher, tool, prefix=self.prefix)
        try:
            crossed = await DBOS.run_step_async(
                options, arun_tool, self.dispatcher, call_payload(call)
            )
        except Exception as error:  # noqa: BLE001 - never answered in the step: its root cause
            return await scope.afailed(call, error)
        return await asettle(scope, call, crossed)

    async def arun(self, calls: Iterable[ToolCall], *, step: str | None = None) -> Round:
        """Async :meth:`run`."""
        calls = list(calls)
        session = self.session()
        outcomes: list[Any] = []
        for call in calls:
            try:
                outcomes.append(await self.acall(call, session=session, step=step))
            except ToolCallFailed as failed:
                outcomes.append(failed)
        return self.dispatcher.round_of(calls, outcomes)

    async def aflush(self) -> None:
        """Async :meth:`flush`."""
        events = _taken()
        if events:
            await DBOS.run_step_async({"name": "toolguard.log"}, _logged, events)

    def __repr__(self) -> str:
        return f"DBOSTools({', '.join(self.dispatcher.tools)}, prefix={self.prefix!r})"


def _taken() -> list[Callable[[], None]]:
    """The events waiting in this execution, taken (outside a workflow: none)."""
    if DBOS.workflow_id is None:
        return []
    execution = RUNTIME.execution()
    events, execution.events = execution.events, []
    return events
