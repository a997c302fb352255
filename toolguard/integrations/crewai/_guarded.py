"""An existing CrewAI tool under a dispatcher's policy, on the in-place pipeline.

The guarded tool stands in for the app's tool in the agent's list and runs it with
CrewAI's own ``run``/``arun`` (the tool validates its arguments, counts its usage and
keeps its state itself), inside :func:`~toolguard.integrations.inplace.guard_call`:

* a tool that raises is answered by the dispatcher's handler chain as CrewAI's own
  ``ToolFailure`` (CrewAI sends ``Error executing tool: {e}``, or under text tool
  calling retries it silently and says "I encountered an error");
* the model's arguments that fail the tool's ``args_schema`` are answered with
  toolguard's message naming the argument (CrewAI's own quotes the values), on both
  CrewAI paths: native function calling runs ``tool.run``, text (ReAct) tool calling
  runs ``tool.to_structured_tool().invoke(args)``, whose schema here accepts what
  the model sent so that the tool's own validation happens inside the guard;
* the tool's own ``ToolFailure`` (or its usage limit) is kept as it is.
"""

from __future__ import annotations

from typing import Any

from crewai.tools import BaseTool
from crewai.tools.structured_tool import CrewStructuredTool
from crewai.tools.tool_failure import ToolFailure
from pydantic import BaseModel, PrivateAttr, ValidationError

from toolguard import Dispatcher, Scope, ToolCall, ToolResult
from toolguard.integrations.crewai._answers import cache_function, failure_of, scope_of
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call

__all__ = ["GuardedTool"]


class _Outcomes(Adapter[Any]):
    """What CrewAI's tools return: a value, or a ``ToolFailure``."""

    __slots__ = ("scope", "tool")

    def __init__(self, tool: BaseTool, scope: Scope) -> None:
        self.tool = tool
        self.scope = scope

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        return failure_of(result)

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        # BaseTool._validate_kwargs: ValueError("Tool '...' arguments validation
        # failed: ...") from the args_schema's ValidationError: the model's mistake.
        invalid = error.__cause__
        if isinstance(error, ValueError) and isinstance(invalid, ValidationError):
            declared = self.tool.args_schema.model_json_schema()
            return self.scope.invalid_arguments(call, invalid, declared)
        return error

    def own_error(self, outcome: Any) -> str | None:
        return outcome.message if isinstance(outcome, ToolFailure) else None

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        return result.text if result.truncated else outcome


class GuardedTool(BaseTool):
    """An existing CrewAI tool under a dispatcher's policy (see ``guard``)."""

    _wrapped_tool: BaseTool = PrivateAttr()
    _guarding: Dispatcher = PrivateAttr()
    _accepting: type[BaseModel] = PrivateAttr()

    @classmethod
    def of(
        cls, tool: BaseTool, dispatcher: Dispatcher, stop: bool, accepting: type[BaseModel]
    ) -> GuardedTool:
        guarded = cls(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema,
            result_as_answer=tool.result_as_answer or stop,
            cache_function=cache_function(tool.cache_function),
            tool_failure_policy=tool.tool_failure_policy,
        )
        guarded.description = tool.description  # CrewAI rewrites it on construction
        guarded._wrapped_tool = tool
        guarded._guarding = dispatcher
        guarded._accepting = accepting
        return guarded

    @property
    def guarded_tool(self) -> BaseTool:
        """The CrewAI tool this one runs."""
        return self._wrapped_tool

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._guarding

    def to_structured_tool(self) -> CrewStructuredTool:
        """CrewAI's text tool calling validates with the structured tool's schema
        before it calls the tool: here a schema that declares the tool's own and
        accepts what the model sent, so that the tool validates inside the guard."""
        structured = super().to_structured_tool()
        structured.args_schema = self._accepting
        return structured

    def _parts(self) -> tuple[BaseTool, Dispatcher]:
        # pydantic's documented store of private attributes, read directly: reading
        # self._wrapped_tool fails the normal lookup first (an AttributeError raised and
        # caught inside pydantic), about 15k instructions each, on every call
        private = self.__pydantic_private__
        assert private is not None  # set by of(): this model has private attributes
        return private["_wrapped_tool"], private["_guarding"]

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        tool, dispatcher = self._parts()
        scope = scope_of(dispatcher)
        call = ToolCall(name=self.name, arguments=dict(kwargs))
        return guard_call(
            scope, call, lambda: tool.run(*args, **kwargs), _Outcomes(tool, scope), run=False
        )

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        tool, dispatcher = self._parts()
        scope = scope_of(dispatcher)
        call = ToolCall(name=self.name, arguments=dict(kwargs))
        return await aguard_call(
            scope, call, lambda: tool.arun(*args, **kwargs), _Outcomes(tool, scope), run=False
        )

    # Not BaseTool.run/arun: the wrapped tool validates its arguments (and counts its
    # usage) itself, inside the guard, so a validation error is answered too; the
    # same functions as _run/_arun, with no frame of their own.
    run = _run
    arun = _arun
