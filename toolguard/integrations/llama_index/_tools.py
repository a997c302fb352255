"""A toolguard tool as a LlamaIndex tool: toolguard's schema, validation and answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from llama_index.core.tools import ToolMetadata, ToolOutput
from pydantic import BaseModel

from toolguard import Dispatcher, ToolResult
from toolguard import ToolCall as GuardCall
from toolguard.integrations.llama_index._answering import CTX, Answering, blocks
from toolguard.integrations.llama_index._conversation import scope_of

__all__ = ["ToolguardFunctionTool"]

FRAMEWORK = "llama-index"


class ToolguardFunctionTool(Answering):
    """A toolguard tool that LlamaIndex's agents run (see ``as_llama_index_tool``)."""

    def __init__(
        self,
        dispatcher: Dispatcher,
        name: str,
        return_direct: bool,
        fn_schema: type[BaseModel],
    ) -> None:
        guarded = dispatcher.tools[name]
        self._dispatcher = dispatcher
        self._context_params = tuple(guarded.injected_by(FRAMEWORK))
        self._offload = not guarded.spec.is_async
        metadata = ToolMetadata(
            name=name,
            description=guarded.description,
            fn_schema=fn_schema,
            return_direct=return_direct,
        )
        ctx_name = self._context_params[0] if self._context_params else CTX
        super().__init__(metadata, ctx_name)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    async def acall(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        ctx = kwargs.pop(self.ctx_param_name or CTX, None)
        for name in self._context_params:
            kwargs.pop(name, None)
        arguments: Any = kwargs if not args else args[0]
        call = GuardCall(name=self.tool_name, arguments=arguments)
        scope = await scope_of(self._dispatcher, ctx)
        values = dict.fromkeys(self._context_params, ctx) if ctx is not None else {}
        result = await scope.adispatch(call, offload=self._offload, framework_values=values)
        return self._output(result, kwargs)

    def call(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        """Sync call (outside an agent, no ``Context``): run on the caller's thread."""
        for name in (self.ctx_param_name or CTX, *self._context_params):
            kwargs.pop(name, None)
        arguments: Any = kwargs if not args else args[0]
        call = GuardCall(name=self.tool_name, arguments=arguments)
        return self._output(self._dispatcher.scope().dispatch(call), kwargs)

    def _output(self, result: ToolResult, kwargs: Mapping[str, Any]) -> ToolOutput:
        self.decide(result.return_direct and not result.is_error)
        return ToolOutput(
            tool_name=self.tool_name,
            blocks=blocks(result.content),
            raw_input={"args": (), "kwargs": dict(kwargs)},
            raw_output=result.artifact if result.artifact is not None else result.text,
            is_error=result.is_error,
        )
