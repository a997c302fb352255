"""A toolguard tool as a Haystack tool: toolguard's schema, validation and answers."""

from __future__ import annotations

from typing import Any, Final

from haystack.tools.errors import ToolInvocationError
from haystack.tools.tool import Tool

from toolguard import Dispatcher, ToolCall, ToolResult

__all__ = ["ToolguardHaystackTool"]

FRAMEWORK: Final = "haystack"


class ToolguardHaystackTool(Tool):
    """A toolguard tool that Haystack's ``Agent`` runs (see ``as_haystack_tool``)."""

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK)  # Haystack hands a tool only the model's arguments
        self._dispatcher = dispatcher
        super().__init__(
            name=name,
            description=guarded.description or name,
            parameters=dict(guarded.parameters),
            function=self._run,
            async_function=self._arun,  # an async tool is awaited, not run on a thread
        )

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def invoke(self, **kwargs: Any) -> Any:
        """One call, answered by toolguard: the tool's value on success, a
        ``ToolInvocationError`` carrying toolguard's answer alone on failure (the
        Agent's own error path tells the model)."""
        return self._handed(self._run(**kwargs))

    async def invoke_async(self, **kwargs: Any) -> Any:
        """Async :meth:`invoke` (a sync tool runs on toolguard's pool)."""
        return self._handed(await self._arun(**kwargs))

    def to_dict(self) -> dict[str, Any]:
        """What the model is told of the tool (its name, description and parameters), for
        Haystack's tracing and an Agent's ``to_dict``; the dispatcher does not travel."""
        data = {"name": self.name, "description": self.description, "parameters": self.parameters}
        return {"type": f"{type(self).__module__}.{type(self).__qualname__}", "data": data}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ToolguardHaystackTool:
        """Refused: a toolguard tool is served from its dispatcher, not from data."""
        name = data.get("data", {}).get("name") if isinstance(data, dict) else None
        raise TypeError(
            f"a toolguard tool ({name!r}) cannot be loaded from data: serve it again "
            "with as_haystack_tool(tool, dispatcher=...) or as_haystack_tools(dispatcher)"
        )

    def _run(self, **kwargs: Any) -> ToolResult:
        return self._dispatcher.scope().dispatch(ToolCall(name=self.name, arguments=kwargs))

    async def _arun(self, **kwargs: Any) -> ToolResult:
        call = ToolCall(name=self.name, arguments=kwargs)
        return await self._dispatcher.scope().adispatch(call, offload=True)

    def _handed(self, result: ToolResult) -> Any:
        if result.is_error:
            raise ToolInvocationError(result.text, tool_name=self.name) from None
        if result.truncated or result.value is None:
            return result.text
        return result.value
