"""``ToolguardHook``: every tool of an Agno agent under a dispatcher's policy.

Agno runs each tool call through the agent's ``tool_hooks``, each a middleware around
the call (``hook(function_name, function_call, arguments)``, ``function_call(**arguments)``
runs the rest of the chain and the tool), and answers a tool that raises with the
exception's text, ``str(e)``, flagged ``tool_call_error``. The hook runs the in-place
pipeline around that invocation: a failure is answered by the dispatcher's handler
chain and raised again as a ``ToolError`` carrying toolguard's answer (the cause
logged once, never chained), so Agno's own failure path (``tool_call_error``, its
events, its log line) carries toolguard's text instead of the exception's.

Agno calls a sync hook on both of its paths: in a sync run (and for a sync tool in an
async run, on a worker thread) ``function_call`` returns the tool's value; for an async
tool in an async run it is a coroutine function, and the hook returns the coroutine
of the async pipeline, which Agno awaits. (An ``async def`` hook would be skipped by
Agno's sync runs, with a warning.)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Final

import pydantic
from agno.exceptions import AgentRunException, RunCancelledException
from agno.tools.function import ToolResult as AgnoToolResult

from toolguard import Dispatcher, Scope, ToolCall, ToolError, ToolResult
from toolguard.integrations._common import refuse_return_direct as _refuse
from toolguard.integrations._common import the_dispatcher
from toolguard.integrations.agno._calls import call_of, schema_of
from toolguard.integrations.inplace import Adapter, aguard_call, guard_call

__all__ = ["ToolguardHook", "refuse_return_direct"]

_VALIDATION: Final = "pydantic._internal._validate_call"  # Agno's validate_call wrapper
_AGNO_CALL: Final = "agno.tools.function"  # where Agno calls a tool's entrypoint


class _Answered:
    """toolguard's answer to one call, raised by the hook as a ``ToolError``."""

    __slots__ = ("result",)

    def __init__(self, result: ToolResult) -> None:
        self.result = result


class _Outcomes(Adapter[Any]):
    """What the pipeline needs of an Agno tool's outcome: any value a tool returns (a
    ``str``, an Agno ``ToolResult``, a generator Agno iterates, any other value)."""

    lazy_seen = True  # what the model reads is str(...): it decides nothing else here

    def __init__(self, scope: Scope, owner: Any) -> None:
        self.scope = scope
        self.owner = owner

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        return _Answered(result)

    def passes(self, error: Exception) -> bool:
        # Agno's own signals: StopAgentRun, RetryAgentRun (AgentRunException), a cancelled run
        return isinstance(error, AgentRunException | RunCancelledException)

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        if isinstance(error, pydantic.ValidationError) and _refused_arguments(error):
            schema = schema_of(self.owner, str(call.name))
            return self.scope.invalid_arguments(call, _as_arguments_object(error), schema)
        return error

    def seen(self, outcome: Any) -> object:
        if isinstance(outcome, AgnoToolResult):
            return outcome.content
        if inspect.isgenerator(outcome) or inspect.isasyncgen(outcome):
            return ""  # Agno iterates it itself: its items are the tool's
        return outcome if isinstance(outcome, str) else str(outcome)  # what Agno sends

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        if not result.truncated:
            return outcome
        if isinstance(outcome, AgnoToolResult):
            return outcome.model_copy(update={"content": result.text})
        return result.text  # Agno would have sent str(outcome): cut, it is this text


def _refused_arguments(error: pydantic.ValidationError) -> bool:
    """Whether Agno's ``validate_call`` wrapper of the entrypoint refused the model's
    arguments (the tool never ran), not a validation inside the tool's own body."""
    modules = []
    traceback = error.__traceback__
    while traceback is not None:
        modules.append(traceback.tb_frame.f_globals.get("__name__"))
        traceback = traceback.tb_next
    if not modules or modules[-1] != _VALIDATION:
        return False  # raised below the wrapper: the tool's own body ran
    while modules and modules[-1] == _VALIDATION:
        modules.pop()
    return bool(modules) and modules[-1] == _AGNO_CALL


# validate_call's words for a call's shape, as the same mistakes of an arguments object
# (toolguard's answer names them alike: a missing argument with its type, an unexpected
# one with the arguments the tool accepts, never the call's values)
_OBJECT_KINDS: Final = {
    "missing_argument": "missing",
    "missing_keyword_only_argument": "missing",
    "missing_positional_only_argument": "missing",
    "unexpected_keyword_argument": "extra_forbidden",
}


def _as_arguments_object(error: pydantic.ValidationError) -> pydantic.ValidationError:
    """``error`` (of ``validate_call``: the function's call) as the validation of the
    arguments object the model sent; as it is where it has nothing to translate."""
    details = error.errors(include_url=False)
    if not any(detail["type"] in _OBJECT_KINDS for detail in details):
        return error
    line_errors: list[Any] = []
    for detail in details:
        kind = _OBJECT_KINDS.get(detail["type"])
        entry: dict[str, Any] = {
            "type": kind or detail["type"],
            "loc": detail["loc"],
            "input": None if kind else detail["input"],
        }
        if not kind and "ctx" in detail:
            entry["ctx"] = detail["ctx"]
        line_errors.append(entry)
    try:
        return pydantic.ValidationError.from_exception_data(error.title, line_errors)
    except (TypeError, ValueError, KeyError):  # a kind pydantic cannot rebuild: as it is
        return error


def refuse_return_direct(dispatcher: Dispatcher | Scope, name: str) -> None:
    """``return_direct`` set for ``name`` is refused: Agno has no per-call stop a tool
    hook can set (its stop is the tool's own ``stop_after_tool_call``)."""
    _refuse(
        dispatcher,
        name,
        why="cannot apply: Agno ends a run after a tool only by the tool's own "
        "stop_after_tool_call; declare it on the Agno tool "
        "(@tool(stop_after_tool_call=True)) instead",
    )


def _delivered(outcome: Any) -> Any:
    if isinstance(outcome, _Answered):
        raise ToolError(outcome.result.text) from None  # the cause: logged, not chained
    return outcome


class ToolguardHook:
    """Apply a toolguard policy to every tool of an Agno agent (or team), in place.

    ``Agent(..., tool_hooks=[ToolguardHook(dispatcher)])`` (``toolguard_hook``): see
    the package docstring for what it guarantees.
    """

    __name__ = "toolguard_hook"  # Agno names a hook by its __name__ in its warnings

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        self.dispatcher = the_dispatcher(
            dispatcher, entry="toolguard_hook(dispatcher)", optional=True
        )
        for name in (*self.dispatcher.tools, *self.dispatcher.external_tools):
            refuse_return_direct(self.dispatcher, name)

    def __call__(
        self,
        function_name: str,
        function_call: Callable[..., Any],
        arguments: dict[str, Any],
        run_context: Any = None,
        agent: Any = None,
        team: Any = None,
    ) -> Any:
        """One tool call of Agno's, guarded (what Agno's hook chain calls)."""
        if function_name in self.dispatcher.tools:  # as_agno_tool's: it answers itself
            return function_call(**arguments)
        scope, call = call_of(self.dispatcher, function_name, arguments, run_context)
        refuse_return_direct(scope, function_name)
        adapter = _Outcomes(scope, agent if agent is not None else team)
        if inspect.iscoroutinefunction(function_call):  # Agno's async chain
            return self._aguarded(scope, call, function_call, arguments, adapter)

        def invoke() -> Any:
            return function_call(**arguments)

        return _delivered(guard_call(scope, call, invoke, adapter))

    async def _aguarded(
        self,
        scope: Scope,
        call: ToolCall,
        function_call: Callable[..., Any],
        arguments: dict[str, Any],
        adapter: _Outcomes,
    ) -> Any:
        async def invoke() -> Any:
            return await function_call(**arguments)

        return _delivered(await aguard_call(scope, call, invoke, adapter))

    def __repr__(self) -> str:
        return f"ToolguardHook({self.dispatcher!r})"
