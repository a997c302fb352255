"""A toolguard tool as an AG2 tool: AG2's own ``FunctionTool`` kind, declaring
toolguard's schema, every call answered by toolguard."""

from __future__ import annotations

import copy
from typing import Any, Final

from ag2 import tool as ag2_tool
from ag2.annotations import Context
from ag2.events import ToolCallEvent, ToolResultEvent
from ag2.events import ToolResult as AG2ToolResult
from ag2.tools.types import FunctionTool

from toolguard import Dispatcher, ToolCall, ToolResult
from toolguard.integrations.ag2._calls import arguments_of, scope_of
from toolguard.integrations.ag2._middleware import error_event, stopping_event

__all__ = ["ToolguardAG2Tool"]

FRAMEWORK: Final = "ag2"


async def _answered_by_toolguard() -> None:
    """Stands for the tool's body in AG2's own records (``FunctionTool.source``):
    the call itself is answered by ``ToolguardAG2Tool.__call__``."""


class ToolguardAG2Tool(FunctionTool):
    """A toolguard tool that AG2 agents run (see ``as_ag2_tool``)."""

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK, call_id=True)  # AG2 hands over the call id
        placeholder = ag2_tool(_answered_by_toolguard, name=name)
        super().__init__(
            placeholder.model,
            name=name,
            description=guarded.description or name,
            schema=dict(guarded.parameters),
        )
        self._dispatcher = dispatcher

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def __deepcopy__(self, memo: dict[int, Any]) -> ToolguardAG2Tool:
        # AG2 copies a tool when it registers one (and in with_middleware): the copy
        # answers under the same dispatcher (its breakers, budgets and pools are one)
        return copy.copy(self)

    async def __call__(self, event: ToolCallEvent, context: Context) -> ToolResultEvent:
        """One call, answered by toolguard: the tool's text as AG2's ``ToolResult``
        (``final=True`` where ``return_direct`` ends the turn), a failure as AG2's
        ``ToolErrorEvent`` with toolguard's text."""
        call = ToolCall(name=self.name, arguments=arguments_of(event), id=event.id)
        scope = scope_of(self._dispatcher, context, None, call)
        result = await scope.adispatch(call, offload=True)
        return event_of(event, result)


def event_of(event: ToolCallEvent, result: ToolResult) -> ToolResultEvent:
    """toolguard's result as AG2's event for the call."""
    if result.return_direct:
        return stopping_event(event, result.text, {})
    if result.is_error:
        return error_event(event, result.text)
    return ToolResultEvent(parent_id=event.id, name=event.name, result=AG2ToolResult(result.text))
