"""An existing smolagents tool under a dispatcher's policy, on the in-place pipeline.

smolagents' agents answer a tool that raises with an ``AgentToolExecutionError``
whose text is ``Error executing tool '{name}' with arguments {...}: {Type}: {e}``
(``ToolCallingAgent``), or ``Code execution failed at line ... due to: {Type}: {e}``
(``CodeAgent``): the exception's text reaches the model. Guarded, the tool still
raises (so the agent's own error path, its memory's ``error`` and its retry prompt,
are smolagents' as before), but what it raises is a ``ToolError`` carrying the
dispatcher's answer: a ``ToolError``'s message as it is, a hidden cause as
toolguard's generic message with its error id (the cause logged once, never
chained). Everything else (the tool's outputs, its ``setup``, its state, smolagents'
own checks of the model's arguments) is smolagents', untouched.
"""

from __future__ import annotations

from typing import Any

from smolagents import Tool

from toolguard import Dispatcher, ToolCall, ToolError, ToolResult
from toolguard.integrations.inplace import Adapter, guard_call

__all__ = ["GuardedTool"]


class _Answered:
    """toolguard's answer to one call, raised as a ``ToolError`` by the tool."""

    __slots__ = ("result",)

    def __init__(self, result: ToolResult) -> None:
        self.result = result


class _Outputs(Adapter[Any]):
    """What the pipeline needs of smolagents' outputs: any value a tool returns."""

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        return _Answered(result)

    def seen(self, outcome: Any) -> object:
        # what a ToolCallingAgent's observation is (str(output).strip()); an image or
        # an audio clip reads as its path, never as a value toolguard cannot serialise
        return str(outcome)

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        if result.truncated and isinstance(outcome, str):
            return result.text
        return outcome


_OUTPUTS = _Outputs()


class GuardedTool(Tool):  # type: ignore[misc]  # smolagents is untyped
    """An existing smolagents ``Tool`` under a dispatcher's policy (see ``guard``).

    It declares the tool's own name, description, inputs and output type, and calls
    the tool itself (its ``__call__``, so its ``setup``, its argument handling and its
    ``forward`` run as before, on the tool object: its state stays its own).
    """

    skip_forward_signature_validation = True

    def __init__(self, tool: Tool, dispatcher: Dispatcher) -> None:
        self.name = tool.name
        self.description = tool.description
        self.inputs = tool.inputs
        self.output_type = tool.output_type
        self.output_schema = getattr(tool, "output_schema", None)
        self._inner = tool
        self._dispatcher = dispatcher
        super().__init__()
        self.is_initialized = True  # the tool sets itself up, on its first call

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._dispatcher

    @property
    def guarded_tool(self) -> Tool:
        """The smolagents tool this one runs."""
        return self._inner

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The tool's own ``forward``, guarded (what ``__call__`` runs)."""
        return self._guarded(lambda: self._inner.forward(*args, **kwargs), args, kwargs)

    def __call__(self, *args: Any, sanitize_inputs_outputs: bool = False, **kwargs: Any) -> Any:
        def invoke() -> Any:
            return self._inner(*args, sanitize_inputs_outputs=sanitize_inputs_outputs, **kwargs)

        return self._guarded(invoke, args, kwargs)

    def _guarded(self, invoke: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        call = ToolCall(name=self.name, arguments=_arguments(self.inputs, args, kwargs))
        outcome = guard_call(self._dispatcher.scope(), call, invoke, _OUTPUTS)
        if isinstance(outcome, _Answered):
            raise ToolError(outcome.result.text) from None  # the cause: logged, not chained
        return outcome


def _arguments(
    inputs: dict[str, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> dict[str, Any]:
    """The call's arguments by name, as smolagents' ``Tool.__call__`` reads them (one
    dict of the tool's inputs, or positional values in the inputs' order)."""
    if len(args) == 1 and not kwargs and isinstance(args[0], dict) and set(args[0]) <= set(inputs):
        return dict(args[0])
    return {**dict(zip(inputs, args, strict=False)), **kwargs}
