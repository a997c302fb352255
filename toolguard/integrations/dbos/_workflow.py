"""The workflow side: tools called as DBOS steps, answered from what was recorded.

:class:`DBOSTools` lives in workflow code: each call is a step of the workflow
(``toolguard.NAME``) run with the options its policy compiles to, and the result is made
from its recorded output, in the execution's session; on recovery, a recorded step
answers from the journal and the same result is made again (what toolguard logs or
reads of the time in workflow code is recorded in steps of its own: ``_runtime``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from dbos import DBOS

from toolguard import Dispatcher, Round, Session, ToolCall, ToolCallFailed, ToolResult
from toolguard.integrations.dbos._steps import PREFIX, arun_tool, run_tool, step_options
from toolguard.integrations.durable import asettle, call_payload, settle

__all__ = ["SESSION", "DBOSTools"]

SESSION: Final = "toolguard-dbos-workflow"
"""The id of the session a workflow execution's calls share by default."""


class DBOSTools:
    """A dispatcher's tools, called from DBOS workflow code as steps.

    ``call`` in a sync workflow, ``acall`` in an async one (``run``/``arun`` for a round,
    one call after the other: DBOS numbers steps in the order they start). ``session``
    is where breakers and budgets are kept: by default the execution's own (a named
    session in workflow code lives in the execution's state, on recorded time).
    """

    def __init__(self, dispatcher: Dispatcher, *, prefix: str = PREFIX) -> None:
        self.dispatcher = dispatcher
        self.prefix = prefix

    def session(self) -> Session:
        """The session of the running workflow execution."""
        return self.dispatcher.session(id=SESSION)

    def _known(self, call: ToolCall) -> str | None:
        tool = call.name
        return tool if isinstance(tool, str) and tool in self.dispatcher.tools else None

    # --- sync workflows -------------------------------------------------------------

    def call(
        self, call: ToolCall, *, session: Session | None = None, step: str | None = None
    ) -> ToolResult:
        """One call as a step, answered from its recorded output (a sync workflow)."""
        scope = (session or self.session()).scope(step=step)
        tool = self._known(call)
        if tool is None:
            return scope.unknown_tool(call, self.dispatcher.tools)
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

    # --- async workflows ------------------------------------------------------------

    async def acall(
        self, call: ToolCall, *, session: Session | None = None, step: str | None = None
    ) -> ToolResult:
        """Async :meth:`call` (an async workflow)."""
        scope = (session or self.session()).scope(step=step)
        tool = self._known(call)
        if tool is None:
            return await scope.aunknown_tool(call, self.dispatcher.tools)
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

    def __repr__(self) -> str:
        return f"DBOSTools({', '.join(self.dispatcher.tools)}, prefix={self.prefix!r})"
