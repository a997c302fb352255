"""An existing Haystack tool under a dispatcher's policy, on the in-place pipeline.

Haystack's ``Tool.invoke`` wraps whatever a tool's function raises in a
``ToolInvocationError`` reading ``Failed to invoke Tool `{name}` with parameters
{kwargs}. Error: {e}``, and the ``Agent`` sends that text to the model as the tool's
error result: the exception's text, and every argument the tool was called with (the
values it read from the agent's ``State`` included). A guarded tool still calls the
tool itself (its ``invoke``: its warm-up, its function, a ``ComponentTool``'s
component, on the tool object), and answers a failure with the dispatcher's handler
chain, raised as a ``ToolInvocationError`` carrying only that answer, so that the
Agent's own error path (``raise_on_tool_invocation_failure``, the error result, an
errored exit condition) is Haystack's as before. A function tool validates nothing:
guarded, the model's arguments are checked against the function's own signature
first, and a bad call is answered with toolguard's message naming the argument (the
tool does not run).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Final

import pydantic
from haystack.core.errors import BreakpointException  # a breakpoint inside a PipelineTool
from haystack.tools import ComponentTool
from haystack.tools.errors import ToolInvocationError
from haystack.tools.tool import Tool

from toolguard import Dispatcher, Scope, ToolCall, ToolResult
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call

__all__ = ["GuardedComponentTool", "GuardedTool", "guarded_tool"]

_STREAMING: Final = "streaming_callback"  # what the Agent passes a tool that asks for it


class _Answered:
    """toolguard's answer to one call, raised as a ``ToolInvocationError`` by the tool."""

    __slots__ = ("result",)

    def __init__(self, result: ToolResult) -> None:
        self.result = result


class _Passing(Exception):
    """Haystack's own ``ToolInvocationError`` that is no tool failure (a tool without a
    sync function called sync: the developer's wiring; a breakpoint inside a
    ``PipelineTool``): carried through the pipeline and raised as Haystack raised it."""

    def __init__(self, error: ToolInvocationError) -> None:
        super().__init__(str(error))
        self.error = error


class _Outcomes(Adapter[Any]):
    """What the pipeline needs of a Haystack tool's outcome: any value it returns."""

    lazy_seen = True  # seen is text, only ever read where toolguard decides something

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        return _Answered(result)

    def passes(self, error: Exception) -> bool:
        return isinstance(error, _Passing)

    def seen(self, outcome: Any) -> object:
        # what the Agent's default conversion sends (a str as it is, else JSON)
        if isinstance(outcome, str):
            return outcome
        try:
            return json.dumps(outcome, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            return str(outcome)

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        if result.truncated and isinstance(outcome, str):
            return result.text
        return outcome


_OUTCOMES: Final = _Outcomes()


def _fields(tool: Tool) -> dict[str, Any]:
    """The tool's own ``Tool`` settings (name, description, parameters, its functions,
    ``outputs_to_string``, ``inputs_from_state``, ``outputs_to_state``), as this
    Haystack's ``Tool`` declares them."""
    return {field.name: getattr(tool, field.name) for field in dataclasses.fields(Tool)}


class GuardedTool(Tool):
    """An existing Haystack ``Tool`` under a dispatcher's policy (see ``guard``).

    It declares the tool's own settings (so the Agent schedules, injects ``State`` and
    converts its outputs as before) and calls the tool itself: its ``invoke`` /
    ``invoke_async``, on the tool object, whose state stays its own.
    """

    def __init__(self, tool: Tool, dispatcher: Dispatcher) -> None:
        self._inner = tool  # first: a ComponentTool's checks read its component
        self._dispatcher = dispatcher
        Tool.__init__(self, **_fields(tool))  # the dataclass fields, past a subclass's own
        self._validator = _validator(tool)
        signature = _signature(tool)
        declared = set(tool.parameters.get("properties", {}))
        mapped = set((tool.inputs_from_state or {}).values())
        # what the Agent adds to the model's arguments: State, inputs_from_state, streaming
        self._injected = frozenset({*signature, *mapped, _STREAMING} - declared)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._dispatcher

    @property
    def guarded_tool(self) -> Tool:
        """The Haystack tool this one runs."""
        return self._inner

    # --- the tool's own life cycle, on the tool object -----------------------------------

    def warm_up(self) -> None:
        """The tool's own ``warm_up``, if it has one."""
        own = getattr(self._inner, "warm_up", None)
        if own is not None:
            own()

    async def warm_up_async(self) -> None:
        """The tool's own ``warm_up_async`` (or ``warm_up``), if it has one."""
        own = getattr(self._inner, "warm_up_async", None)
        if own is not None:
            await own()
        else:
            self.warm_up()

    def close(self) -> None:
        """The tool's own ``close``, if it has one."""
        own = getattr(self._inner, "close", None)
        if own is not None:
            own()

    async def close_async(self) -> None:
        """The tool's own ``close_async`` (or ``close``), if it has one."""
        own = getattr(self._inner, "close_async", None)
        if own is not None:
            await own()
        else:
            self.close()

    def to_dict(self) -> dict[str, Any]:
        """The tool it guards, serialised (a guard does not travel: guard it again
        after loading)."""
        data: dict[str, Any] = self._inner.to_dict()
        return data

    # --- a call -------------------------------------------------------------------------

    def invoke(self, **kwargs: Any) -> Any:
        """The tool's own ``invoke``, guarded (what the Agent calls)."""
        scope = self._dispatcher.scope()
        call = self._call(kwargs)

        def invoke() -> Any:
            self._check(scope, call)
            try:
                return self._inner.invoke(**kwargs)
            except ToolInvocationError as error:
                failed = error
            raise _meaning(failed)  # outside the handler: the cause's own context kept

        return self._handed(lambda: guard_call(scope, call, invoke, _OUTCOMES))

    async def invoke_async(self, **kwargs: Any) -> Any:
        """The tool's own ``invoke_async``, guarded (what the Agent's ``run_async`` calls)."""
        scope = self._dispatcher.scope()
        call = self._call(kwargs)

        async def invoke() -> Any:
            self._check(scope, call)
            try:
                return await self._inner.invoke_async(**kwargs)
            except ToolInvocationError as error:
                failed = error
            raise _meaning(failed)

        try:
            outcome = await aguard_call(scope, call, invoke, _OUTCOMES)
        except _Passing as passing:
            error = passing.error
        else:
            return self._answered(outcome)
        raise error

    def _handed(self, guarded: Callable[[], Any]) -> Any:
        try:
            outcome = guarded()
        except _Passing as passing:
            error = passing.error
        else:
            return self._answered(outcome)
        raise error  # as Haystack raised it

    def _answered(self, outcome: Any) -> Any:
        if isinstance(outcome, _Answered):
            # the Agent sends str(error) as the error result: toolguard's answer alone
            raise ToolInvocationError(outcome.result.text, tool_name=self.name) from None
        return outcome

    def _call(self, kwargs: dict[str, Any]) -> ToolCall:
        """The call as the model made it: what the Agent injected left out."""
        sent = {key: value for key, value in kwargs.items() if key not in self._injected}
        return ToolCall(name=self.name, arguments=sent)

    def _check(self, scope: Scope, call: ToolCall) -> None:
        """The model's arguments against the function's own signature: a bad call is
        the model's mistake, answered by toolguard (``on_invalid_call``)."""
        if self._validator is None:
            return
        try:
            self._validator.validate_python(call.arguments)
        except pydantic.ValidationError as error:
            raise scope.invalid_arguments(call, error, self.parameters) from None


class GuardedComponentTool(GuardedTool, ComponentTool):
    """A guarded ``ComponentTool`` (a ``PipelineTool``, an ``AgentTool``): the Agent
    reads its component's inputs, as it reads them of the tool it guards."""

    @property
    def _component(self) -> Any:  # type: ignore[override]  # the guarded tool's, read-only
        return self._inner._component  # type: ignore[attr-defined]  # a ComponentTool's


def guarded_tool(tool: Tool, dispatcher: Dispatcher) -> GuardedTool:
    """``tool`` under ``dispatcher``'s policy (a ``ComponentTool`` stays one)."""
    if isinstance(tool, ComponentTool):
        return GuardedComponentTool(tool, dispatcher)
    return GuardedTool(tool, dispatcher)


def _meaning(failed: ToolInvocationError) -> Exception:
    """What Haystack's ``ToolInvocationError`` means: the tool's own exception (the
    cause it wraps), or Haystack's own error, which passes as Haystack raised it."""
    cause = failed.__cause__
    if isinstance(cause, Exception) and not isinstance(cause, BreakpointException):
        return cause
    return _Passing(failed)


def _function(tool: Tool) -> Callable[..., Any] | Callable[..., Awaitable[Any]] | None:
    if isinstance(tool, ComponentTool):
        return None  # the component's inputs: Haystack converts them itself
    function = tool.function
    return function if function is not None else getattr(tool, "async_function", None)


def _signature(tool: Tool) -> dict[str, inspect.Parameter]:
    function = _function(tool)
    if function is None:
        return {}
    try:
        return dict(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return {}


def _validator(tool: Tool) -> pydantic.TypeAdapter[Any] | None:
    """A check of the model's arguments built from the function's signature, for the
    parameters its schema declares (what the model may send; no other name): ``None``
    where the signature cannot say (a component, ``**kwargs``, a type pydantic cannot
    check, a schema naming what the signature does not)."""
    function = _function(tool)
    parameters = _signature(tool)
    declared = set(tool.parameters.get("properties", {}))
    if function is None or not declared <= set(parameters):
        return None
    kinds = {parameter.kind for parameter in parameters.values()}
    if inspect.Parameter.VAR_KEYWORD in kinds or inspect.Parameter.POSITIONAL_ONLY in kinds:
        return None
    try:
        hints = typing.get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - a hint that does not resolve: no check
        return None
    empty = inspect.Parameter.empty
    fields: dict[str, Any] = {
        name: (hints.get(name, Any), ... if parameter.default is empty else parameter.default)
        for name, parameter in parameters.items()
        if name in declared
    }
    try:
        model = pydantic.create_model(
            f"{tool.name}_arguments",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, extra="forbid"),
            **fields,
        )
        return pydantic.TypeAdapter(model)
    except Exception:  # noqa: BLE001 - a signature pydantic cannot check: no check
        return None
