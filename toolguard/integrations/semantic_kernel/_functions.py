"""A toolguard tool as a Semantic Kernel function: toolguard's schema, validation, answers."""

from __future__ import annotations

from typing import Any, Final

from pydantic import PrivateAttr
from semantic_kernel.filters import FunctionInvocationContext
from semantic_kernel.functions import (
    FunctionResult,
    KernelFunction,
    KernelFunctionMetadata,
    KernelParameterMetadata,
)

from toolguard import Dispatcher, ToolCall
from toolguard.integrations.semantic_kernel._calls import current

__all__ = ["FRAMEWORK", "ToolguardKernelFunction"]

FRAMEWORK: Final = "semantic_kernel"


class ToolguardKernelFunction(KernelFunction):
    """A toolguard tool that a Semantic Kernel kernel runs (see ``as_kernel_function``)."""

    _dispatcher: Dispatcher = PrivateAttr()
    _tool: str = PrivateAttr()

    def __init__(
        self, dispatcher: Dispatcher, name: str, *, plugin_name: str | None = None
    ) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK, call_id=True)  # the model's call id, nothing else
        parameters = guarded.parameters
        required = set(parameters.get("required", ()))
        metadata = KernelFunctionMetadata(
            name=name,
            plugin_name=plugin_name,
            description=guarded.description or name,
            parameters=[
                KernelParameterMetadata(
                    name=key,
                    description=schema.get("description"),
                    is_required=key in required,
                    type=_type_name(schema),
                    schema_data=dict(schema),
                )
                for key, schema in dict(parameters.get("properties", {})).items()
            ],
            return_parameter=KernelParameterMetadata(name="return", type="str", schema_data={}),
            is_prompt=False,
            is_asynchronous=True,
        )
        super().__init__(metadata=metadata)
        self._dispatcher = dispatcher
        self._tool = name

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this function's calls."""
        return self._dispatcher

    async def _invoke_internal(self, context: FunctionInvocationContext) -> None:
        """One call, answered by toolguard: the tool's value on success, toolguard's
        answer (its text) on failure, as the ``FunctionResult``'s value."""
        model_call = current.get()
        if model_call is not None and not model_call.taken:
            model_call.taken = True
            scope, call_id = model_call.scope, model_call.id
        else:  # the application's own kernel.invoke: no model call, no conversation
            model_call, scope, call_id = None, self._dispatcher.scope(), None
        names = {parameter.name for parameter in self.parameters}
        given = model_call.arguments if model_call is not None else context.arguments
        arguments = {key: value for key, value in given.items() if key in names}
        try:
            result = await scope.adispatch(
                ToolCall(name=self._tool, arguments=arguments, id=call_id), offload=True
            )
        except Exception as error:  # a handler's ToolCallFailed, control flow
            if model_call is not None:
                model_call.escaping = error  # raised again above Semantic Kernel's handler
            raise
        if model_call is not None:
            model_call.stop = result.return_direct
        if result.is_error or result.truncated or result.value is None:
            value: Any = result.text
        else:
            value = result.value
        context.result = FunctionResult(
            function=self.metadata, value=value, metadata={"arguments": context.arguments}
        )

    async def _invoke_internal_stream(self, context: FunctionInvocationContext) -> None:
        # as a KernelFunctionFromMethod of a plain (non-generator) function answers
        raise NotImplementedError("Stream method not implemented")


def _type_name(schema: dict[str, Any]) -> str:
    kind = schema.get("type")
    return kind if isinstance(kind, str) else "object"
