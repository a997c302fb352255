"""A toolguard tool as a CrewAI tool: toolguard's schema, validation and answers."""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from pydantic import BaseModel, PrivateAttr

from toolguard import Dispatcher, ToolCall, ToolResult
from toolguard.integrations.crewai._answers import (
    DEFAULT_CACHE,
    cache_function,
    failure_of,
    scope_of,
)

__all__ = ["ToolguardCrewTool"]


class ToolguardCrewTool(BaseTool):
    """A toolguard tool that CrewAI's agents run (see ``as_crewai_tool``)."""

    _guarding: Dispatcher = PrivateAttr()

    @classmethod
    def of(
        cls,
        dispatcher: Dispatcher,
        name: str,
        stop: bool,
        options: dict[str, Any],
        args_schema: type[BaseModel],
    ) -> ToolguardCrewTool:
        guarded = dispatcher.tools[name]
        guarded.injected_by("crewai")  # CrewAI hands a tool only the model's arguments
        made = cls(
            name=name,
            description=guarded.description or name,
            args_schema=args_schema,
            result_as_answer=stop,
            cache_function=cache_function(options.pop("cache_function", DEFAULT_CACHE)),
            **options,
        )
        made._guarding = dispatcher
        return made

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._guarding

    def run(self, /, *args: Any, **kwargs: Any) -> Any:
        # BaseTool.run, but the model's arguments go to toolguard as sent (one named
        # ``self`` included) and toolguard validates them. _claim_usage is CrewAI's
        # private check-and-count of max_usage_count (no public method does both
        # atomically); tests/integrations/test_crewai.py fails loudly if it moves.
        limit = self._claim_usage()
        return limit if limit is not None else self._run(*args, **kwargs)

    async def arun(self, /, *args: Any, **kwargs: Any) -> Any:
        limit = self._claim_usage()
        return limit if limit is not None else await self._arun(*args, **kwargs)

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        arguments: Any = args[0] if args and not kwargs else kwargs
        call = ToolCall(name=self.name, arguments=arguments)
        return _answer(scope_of(self._guarding).dispatch(call))

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        arguments: Any = args[0] if args and not kwargs else kwargs
        call = ToolCall(name=self.name, arguments=arguments)
        offload = not self._guarding.tools[self.name].spec.is_async
        return _answer(await scope_of(self._guarding).adispatch(call, offload=offload))


def _answer(result: ToolResult) -> Any:
    return failure_of(result) if result.is_error else result.text
