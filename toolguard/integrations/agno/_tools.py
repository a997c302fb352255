"""A toolguard tool as an Agno ``Function``: toolguard's schema, validation and answers."""

from __future__ import annotations

from typing import Any, Final

from agno.tools.function import Function
from agno.tools.function import ToolResult as AgnoToolResult

from toolguard import Dispatcher, ToolError, ToolResult
from toolguard.integrations.agno._calls import call_of

__all__ = ["FRAMEWORK", "agno_function"]

FRAMEWORK: Final = "agno"


def _delivered(result: ToolResult) -> Any:
    """toolguard's result as Agno reads a tool's: a failure raised (Agno's own failure
    path, ``tool_call_error``), a success as its text (an Agno ``ToolResult`` the tool
    returned, as it is)."""
    if result.is_error:
        raise ToolError(result.text) from None  # the cause: logged, not chained
    if isinstance(result.value, AgnoToolResult) and not result.truncated:
        return result.value
    return result.text


def agno_function(dispatcher: Dispatcher, name: str) -> Function:
    """One tool of ``dispatcher`` as an Agno ``Function`` (see ``as_agno_tool``)."""
    guarded = dispatcher.tools[name]
    guarded.injected_by(FRAMEWORK)  # Agno hands a tool only the model's arguments

    if guarded.spec.is_async:

        async def arun(_agno_run_context: Any = None, **arguments: Any) -> Any:
            scope, call = call_of(dispatcher, name, arguments, _agno_run_context)
            return _delivered(await scope.adispatch(call))

        entrypoint: Any = arun
    else:

        def run(_agno_run_context: Any = None, **arguments: Any) -> Any:
            scope, call = call_of(dispatcher, name, arguments, _agno_run_context)
            return _delivered(scope.dispatch(call))

        entrypoint = run
    entrypoint.__name__ = entrypoint.__qualname__ = name
    return Function(
        name=name,
        description=guarded.description or name,
        parameters=dict(guarded.parameters),
        entrypoint=entrypoint,
        skip_entrypoint_processing=True,  # toolguard's schema as it is; toolguard validates
    )
