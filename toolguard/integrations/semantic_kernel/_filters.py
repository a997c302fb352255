"""Semantic Kernel's own functions under a dispatcher's policy, on the in-place pipeline.

Semantic Kernel answers a function the model called that raised with
``An error occurred while invoking the function {plugin-function}: {exc}``: the
exception's text reaches the model. :class:`ToolguardFilters` is a pair of the kernel's
own filters: the ``AUTO_FUNCTION_INVOCATION`` one notes the model's call (its id, its
conversation, its model message) and maps ``return_direct`` to the filter context's
``terminate``; the ``FUNCTION_INVOCATION`` one runs the rest of the function's
invocation (``await next(context)``) through :func:`~toolguard.integrations.inplace.aguard_call`
and sets ``context.result``: the function's own ``FunctionResult`` where toolguard decided
nothing, a ``FunctionResult`` holding toolguard's answer where it did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import pydantic
from semantic_kernel.contents import FunctionCallContent
from semantic_kernel.exceptions import (
    FilterException,
    FunctionCallInvalidArgumentsException,
    FunctionExecutionException,
    FunctionInitializationError,
    KernelFunctionNotFoundError,
    KernelPluginNotFoundError,
    KernelServiceNotFoundError,
)
from semantic_kernel.filters import AutoFunctionInvocationContext, FunctionInvocationContext
from semantic_kernel.functions import FunctionResult, KernelFunction, KernelFunctionFromMethod

from toolguard import Dispatcher, Scope, ToolCall, ToolDefinitionError, ToolResult
from toolguard.integrations.inplace import Adapter, aguard_call
from toolguard.integrations.semantic_kernel._calls import ModelCall, current, round_of, scope_of
from toolguard.integrations.semantic_kernel._functions import ToolguardKernelFunction

__all__ = ["ToolguardFilters", "refuse_sync_timeout"]

# Semantic Kernel's errors about how it was set up (the developer's): they pass, and
# Semantic Kernel answers them as it always does.
_WIRING: Final = (
    FilterException,
    FunctionInitializationError,
    KernelFunctionNotFoundError,
    KernelPluginNotFoundError,
    KernelServiceNotFoundError,
)

# Names Semantic Kernel fills in itself (gather_function_parameters), never the model.
_INJECTED: Final = frozenset({"kernel", "service", "execution_settings", "arguments"})


class _Results(Adapter["FunctionResult | None"]):
    """One call's Semantic Kernel objects: the function, the model call it answers."""

    __slots__ = ("context", "model_call")

    def __init__(self, context: FunctionInvocationContext, model_call: ModelCall) -> None:
        self.context = context
        self.model_call = model_call

    def answer(self, call: ToolCall, result: ToolResult) -> FunctionResult | None:
        self.model_call.stop = result.return_direct
        # the shape of Semantic Kernel's own answer to a failure: the text as the value
        return FunctionResult(function=self.context.function.metadata, value=result.text)

    def passes(self, error: Exception) -> bool:
        return isinstance(error, _WIRING)

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        return _bad_arguments(self.context, self.model_call.scope, call, error) or error

    def seen(self, outcome: FunctionResult | None) -> object:
        return "" if outcome is None else str(outcome)

    def succeeded(
        self, call: ToolCall, outcome: FunctionResult | None, result: ToolResult
    ) -> FunctionResult | None:
        self.model_call.stop = result.return_direct
        if result.truncated and outcome is not None:
            return outcome.model_copy(update={"value": result.text})
        return outcome

    def stood(self, call: ToolCall, outcome: FunctionResult | None) -> FunctionResult | None:
        self.model_call.stop = False
        return outcome


def _bad_arguments(
    context: FunctionInvocationContext, scope: Scope, call: ToolCall, error: Exception
) -> Exception | None:
    """Semantic Kernel's refusal of the model's argument (``Parameter {name} is expected
    to be parsed to {type} but is not``, raised before the method runs) as toolguard's
    ``InvalidArguments`` naming it: the model's mistake, not a failure of the tool."""
    function = context.function
    if not isinstance(error, FunctionExecutionException) or not isinstance(
        function, KernelFunctionFromMethod
    ):
        return None
    for parameter in function.parameters:
        name = parameter.name
        if (
            name is None
            or name in _INJECTED
            or name not in context.arguments
            or not str(error).startswith(f"Parameter {name} is expected to be parsed")
        ):
            continue
        fields: Any = {name: (parameter.type_object, ...)}
        try:
            model = pydantic.create_model(f"{function.name}_arguments", **fields)
            model.model_validate({name: context.arguments[name]})
        except pydantic.ValidationError as invalid:
            schema = {"type": "object", "properties": {name: parameter.schema_data or {}}}
            answer: Exception = scope.invalid_arguments(call, invalid, schema)
            return answer
        except (pydantic.PydanticUserError, TypeError):  # a type pydantic cannot validate
            return None
    return None


Next = Callable[[Any], Awaitable[None]]


class ToolguardFilters:
    """The two filters ``guard(kernel, dispatcher)`` adds to a kernel (see ``guard``)."""

    def __init__(self, dispatcher: Dispatcher) -> None:
        self.dispatcher = dispatcher

    async def auto_function_invocation(
        self, context: AutoFunctionInvocationContext, next: Next
    ) -> None:
        """Notes the model's call for the function filter below; afterwards, sets
        ``context.terminate`` where the round asks to stop (``return_direct``)."""
        history = context.chat_history
        content = context.function_call_content
        model_round = round_of(history, content)
        model_call = ModelCall(
            content.id if content is not None else None,
            _arguments_of(content, context),
            scope_of(self.dispatcher, history, model_round),
        )
        token = current.set(model_call)
        try:
            await next(context)
        finally:
            current.reset(token)
        if model_call.escaping is not None:
            raise model_call.escaping
        if model_round is None:
            stops = [model_call.stop]
        else:
            model_round.stops.append(model_call.stop)
            # the calls still running have not asked to stop (yet): "all" waits for them
            missing = max(context.function_count - len(model_round.stops), 0)
            stops = [*model_round.stops, *[False] * missing]
        if self.dispatcher.round_stops(stops):
            context.terminate = True

    async def function_invocation(self, context: FunctionInvocationContext, next: Next) -> None:
        """The function the model called, guarded: ``context.result`` is its own result
        or toolguard's answer. Any other invocation (the application's own
        ``kernel.invoke``, a function a function calls) passes as it is."""
        model_call = current.get()
        if model_call is None or model_call.taken or _served(context.function):
            await next(context)
            return
        model_call.taken = True
        refuse_sync_timeout(self.dispatcher, context.function)
        call = ToolCall(
            name=context.function.fully_qualified_name,
            arguments=model_call.arguments,
            id=model_call.id,
        )

        async def invoke() -> FunctionResult | None:
            await next(context)
            return context.result

        try:
            context.result = await aguard_call(
                model_call.scope, call, invoke, _Results(context, model_call)
            )
        except Exception as error:
            if not isinstance(error, _WIRING):  # a ToolCallFailed, control flow
                model_call.escaping = error
            raise


def refuse_sync_timeout(dispatcher: Dispatcher, function: KernelFunction) -> None:
    """A ``timeout`` for a sync function is refused, never ignored: Semantic Kernel runs
    a plain ``def`` on the event loop, where no deadline can answer it before it returns."""
    if function.metadata.is_asynchronous or isinstance(function, ToolguardKernelFunction):
        return
    name = function.fully_qualified_name
    if dispatcher.scope().policy(name).timeout is not None:
        raise ToolDefinitionError(
            f"timeout for {name!r} cannot apply: Semantic Kernel runs this sync function on "
            "the event loop, where no deadline can answer it; make it an async def"
        )


def _arguments_of(
    content: FunctionCallContent | None, context: AutoFunctionInvocationContext
) -> dict[str, Any]:
    """The model's arguments of the call (Semantic Kernel parsed them already), else
    those of the invocation."""
    try:
        parsed = content.to_kernel_arguments() if content is not None else None
    except (FunctionCallInvalidArgumentsException, TypeError):
        parsed = None
    return dict(parsed if parsed is not None else context.arguments)


def _served(function: KernelFunction) -> bool:
    """A toolguard function answers its calls itself (``as_kernel_function``)."""
    return isinstance(function, ToolguardKernelFunction)
