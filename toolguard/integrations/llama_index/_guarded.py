"""An existing LlamaIndex tool under a dispatcher's policy, on the in-place pipeline.

LlamaIndex's agents answer a tool that raises with ``ToolOutput(content=str(e),
is_error=True, exception=e)``; guarded, the dispatcher's handler chain answers it in
the same shape. A ``FunctionTool`` validates nothing: guarded, the model's arguments
are checked against the tool's own ``fn_schema`` first, and a bad call is answered
with toolguard's message naming the argument (the tool does not run). Everything
else (the tool's own outputs, error outputs included, its ``callback``, its
``Context``) is LlamaIndex's, untouched.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pydantic
from llama_index.core.tools import FunctionTool, ToolOutput
from llama_index.core.tools.types import (
    AsyncBaseTool,
    BaseTool,
    DefaultToolFnSchema,
    adapt_to_async_tool,
)

from toolguard import Dispatcher, Scope, ToolCall, ToolDefinitionError, ToolResult
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call
from toolguard.integrations.llama_index._answering import CTX, Answering, blocks
from toolguard.integrations.llama_index._conversation import scope_of

__all__ = ["GuardedTool"]


class _Outputs(Adapter[ToolOutput]):
    """One call's LlamaIndex objects (the model's input, the exception answered)."""

    lazy_seen = True  # seen is the output's text, read only where toolguard decides
    __slots__ = ("error", "tool", "tool_input")

    def __init__(self, tool: GuardedTool, tool_input: Mapping[str, Any]) -> None:
        self.tool = tool
        self.tool_input = tool_input  # the call's own arguments: copied where answered
        self.error: Exception | None = None

    def answer(self, call: ToolCall, result: ToolResult) -> ToolOutput:
        self.tool.decide(False)  # LlamaIndex never stops on an error output
        return ToolOutput(
            blocks=blocks(result.content),
            tool_name=self.tool.tool_name,
            raw_input=dict(self.tool_input),  # as LlamaIndex's own error output has it
            raw_output=result.text,
            is_error=True,
            exception=self.error,
        )

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        self.error = error
        return error

    def own_error(self, outcome: ToolOutput) -> str | None:
        return outcome.content if outcome.is_error else None

    def seen(self, outcome: ToolOutput) -> object:
        return outcome.content

    def succeeded(self, call: ToolCall, outcome: ToolOutput, result: ToolResult) -> ToolOutput:
        self.tool.decide(result.return_direct or self.tool.declared_stop)
        if result.truncated:
            return outcome.model_copy(update={"blocks": blocks(result.content)})
        return outcome

    def kept(self, call: ToolCall, outcome: ToolOutput, result: ToolResult) -> ToolOutput:
        self.tool.decide(False)
        return outcome

    def stood(self, call: ToolCall, outcome: ToolOutput) -> ToolOutput:
        self.tool.decide(self.tool.declared_stop)
        return outcome


class GuardedTool(Answering):
    """An existing LlamaIndex tool under a dispatcher's policy (see ``guard``)."""

    def __init__(self, tool: BaseTool, dispatcher: Dispatcher) -> None:
        inner = tool.metadata
        if inner.name is None:
            raise ToolDefinitionError(f"{tool!r} has no name; give its ToolMetadata a name")
        self._inner = tool
        self.async_inner: AsyncBaseTool = adapt_to_async_tool(tool)
        takes_ctx = isinstance(tool, FunctionTool) and bool(tool.requires_context)
        self.inner_ctx: str | None = tool.ctx_param_name if takes_ctx else None  # type: ignore[attr-defined]  # a FunctionTool's
        self._schema = _validator(tool)
        self._dispatcher = dispatcher
        self.declared_stop = bool(inner.return_direct)
        super().__init__(inner, self.inner_ctx or CTX)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._dispatcher

    @property
    def guarded_tool(self) -> BaseTool:
        """The LlamaIndex tool this one runs."""
        return self._inner

    def check(self, scope: Scope, call: ToolCall) -> None:
        """The model's arguments against the tool's own ``fn_schema``: a bad call is
        the model's mistake, answered by toolguard (``on_invalid_call``)."""
        if self._schema is None:
            return
        given = {**self._inner.partial_params, **call.arguments}  # type: ignore[attr-defined, dict-item]  # a FunctionTool's
        try:
            self._schema.model_validate(given)
        except pydantic.ValidationError as error:
            raise scope.invalid_arguments(
                call, error, self.metadata.get_parameters_dict()
            ) from None


def _validator(tool: BaseTool) -> type[pydantic.BaseModel] | None:
    """The model a ``FunctionTool``'s arguments are checked against: its ``fn_schema``
    when that is the function's own (LlamaIndex's stand-in for a tool without one,
    ``DefaultToolFnSchema``, says nothing of it; a schema pydantic cannot complete
    checks nothing); another ``BaseTool`` takes what it takes."""
    schema = tool.metadata.fn_schema
    if (
        not isinstance(tool, FunctionTool)
        or not isinstance(schema, type)
        or not issubclass(schema, pydantic.BaseModel)
        or schema is DefaultToolFnSchema
    ):
        return None
    if not schema.__pydantic_complete__:
        schema.model_rebuild(raise_errors=False)
    return schema if schema.__pydantic_complete__ else None


async def _acall(self: GuardedTool, /, *args: Any, **kwargs: Any) -> ToolOutput:
    ctx = kwargs.pop(self.ctx_param_name or CTX, None)
    scope = await scope_of(self.dispatcher, ctx)
    arguments = dict(kwargs)  # the input as the model sent it
    call = ToolCall(name=self.tool_name, arguments=arguments)
    adapter = _Outputs(self, arguments)
    if self.inner_ctx is not None:
        kwargs[self.inner_ctx] = ctx

    async def invoke() -> ToolOutput:
        self.check(scope, call)
        return await self.async_inner.acall(*args, **kwargs)

    return await aguard_call(scope, call, invoke, adapter, run=False)


def _call(self: GuardedTool, /, *args: Any, **kwargs: Any) -> ToolOutput:
    """Sync call (outside an agent, no ``Context``): the tool's own ``call``."""
    scope = self.dispatcher.scope()
    arguments = dict(kwargs)
    call = ToolCall(name=self.tool_name, arguments=arguments)
    inner = self.guarded_tool

    def invoke() -> ToolOutput:
        self.check(scope, call)
        if isinstance(inner, AsyncBaseTool):  # FunctionTool and its kind
            return inner.call(*args, **kwargs)
        output: ToolOutput = inner(*args, **kwargs)  # a plain BaseTool
        return output

    return guard_call(scope, call, invoke, _Outputs(self, arguments), run=False)


# Set after the class statement: LlamaIndex's instrumentation (DispatcherSpanMixin)
# opens a span around a BaseTool subclass's own acall/call; the stand-in opens none,
# so a guarded call shows one span, the tool's own, as unguarded (and costs one less).
GuardedTool.acall = _acall  # type: ignore[method-assign, assignment]  # see above
GuardedTool.call = _call  # type: ignore[method-assign, assignment]  # see above
