"""An existing DSPy tool's function under a dispatcher's policy, on the in-place pipeline.

``dspy.ReAct`` answers a tool that raises with the observation
``Execution error in {name}: `` followed by a five-frame traceback of the exception:
its text, its type and the tool's own source lines reach the model. Guarded, the
tool's function still raises (so ReAct's own error path, its observation, and DSPy's
callbacks' ``on_tool_end`` with the exception stay DSPy's), but what it raises is a
``ToolError`` carrying the dispatcher's answer: a ``ToolError``'s message as it is, a
hidden cause as toolguard's generic message with its error id (the cause logged once,
never chained, so neither its text nor its frames are in DSPy's traceback).

The guard sits on the ``dspy.Tool``'s ``func``, the function DSPy calls once it has
checked the model's arguments: DSPy's own checks (an argument the tool does not take,
a value its schema refuses, an async tool on the sync path) stay DSPy's, before any
guard.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from toolguard import Dispatcher, ToolCall, ToolError, ToolResult
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call

__all__ = ["AsyncGuardedFunction", "GuardedFunction"]


class _Answered:
    """toolguard's answer to one call, raised as a ``ToolError`` by the function."""

    __slots__ = ("result",)

    def __init__(self, result: ToolResult) -> None:
        self.result = result


class _Values(Adapter[Any]):
    """What the pipeline needs of a DSPy tool's outcome: any value its function returns."""

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        return _Answered(result)

    def seen(self, outcome: Any) -> object:
        # ReAct puts the value in its trajectory, which only the model reads: what
        # max_result_chars measures and cuts is the value's text
        return outcome if isinstance(outcome, str) else str(outcome)

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        return result.text if result.truncated else outcome


_VALUES = _Values()


class GuardedFunction:
    """A sync tool function under a dispatcher's policy (what ``guard`` puts in a
    ``dspy.Tool``'s ``func``): it calls the function itself, with the keyword arguments
    DSPy parsed, so a callable object's state stays its own."""

    def __init__(self, function: Callable[..., Any], name: str, dispatcher: Dispatcher) -> None:
        self.function = function
        self.name = name
        self.dispatcher = dispatcher

    def __deepcopy__(self, memo: dict[int, Any]) -> GuardedFunction:
        """A copy of the program (DSPy's optimizers copy it) copies the tool's function
        as unguarded, under the same dispatcher: the agent's policy, not the copy's."""
        return type(self)(copy.deepcopy(self.function, memo), self.name, self.dispatcher)

    def __call__(self, **kwargs: Any) -> Any:
        call = ToolCall(name=self.name, arguments=kwargs)

        def invoke() -> Any:
            return self.function(**kwargs)

        outcome = guard_call(self.dispatcher.scope(), call, invoke, _VALUES)
        if isinstance(outcome, _Answered):  # raised here: one frame of toolguard's shown
            raise ToolError(outcome.result.text) from None  # the cause: logged, not chained
        return outcome


class AsyncGuardedFunction(GuardedFunction):
    """An async tool function under a dispatcher's policy: awaited by ``Tool.acall``
    (and by ``Tool.__call__`` only where DSPy's async-to-sync conversion is on, as
    unguarded)."""

    async def __call__(self, **kwargs: Any) -> Any:
        call = ToolCall(name=self.name, arguments=kwargs)

        async def invoke() -> Any:
            return await self.function(**kwargs)

        outcome = await aguard_call(self.dispatcher.scope(), call, invoke, _VALUES)
        if isinstance(outcome, _Answered):
            raise ToolError(outcome.result.text) from None  # the cause: logged, not chained
        return outcome
