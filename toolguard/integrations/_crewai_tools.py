"""CrewAI tools that answer through toolguard: the shared machinery.

A failure is answered with CrewAI's own :class:`~crewai.tools.tool_failure.ToolFailure`
(its way for a tool to say "I ran and did not succeed"), carrying toolguard's text:
CrewAI records the failure, shows the agent ``ToolFailure.message``, does not retry
the call, does not cache it, and never makes it the task's answer
(``result_as_answer`` applies to successes only).
"""

from __future__ import annotations

from typing import Any, Final

from crewai.context import get_current_task_id
from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason
from pydantic import PrivateAttr

from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._session import Session
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed, ToolDefinitionError
from toolguard.integrations._common import declared_schema, refuse_not_run

__all__ = [
    "GuardedTool",
    "ToolguardCrewTool",
    "failure_of",
    "scope",
    "never_cache_failures",
    "session_id",
]

_DEFAULT_CACHE: Final = BaseTool.model_fields["cache_function"].default


def session_id() -> str | None:
    """The conversation a tool call belongs to: the CrewAI task being executed."""
    task_id = get_current_task_id()
    return f"crewai-task:{task_id}" if task_id else None


def scope(dispatcher: Dispatcher) -> Dispatcher | Session:
    """The session of the task being executed, or the dispatcher outside a task."""
    found = session_id()
    return dispatcher if found is None else dispatcher.session(id=found)


def failure_of(result: ToolResult) -> ToolFailure:
    """toolguard's answer to a failure, as CrewAI's own failed tool result.

    No ``code`` (CrewAI appends it to the text the model sees, and it would name the
    exception's type); the error id, when a cause was hidden, is in ``details``.
    """
    reason = (
        ToolFailureReason.INVALID_INPUT
        if result.error_kind == "arguments"
        else ToolFailureReason.EXCEPTION
    )
    details = {"toolguard": {"error_id": result.error_id, "error_kind": result.error_kind}}
    return ToolFailure(message=result.text, reason=reason, details=details)


def never_cache_failures(arguments: Any = None, result: Any = None) -> bool:
    """The ``cache_function`` of toolguard's CrewAI tools: CrewAI caches what a tool
    returned without raising, a ``ToolFailure`` included; a transient failure must
    not be answered again from the cache. (A module-level function: CrewAI
    checkpoints a tool's ``cache_function`` by its import path.)"""
    return not isinstance(result, ToolFailure)


def _cache_function(inner: Any) -> Any:
    """``inner``, unless it is CrewAI's default (cache everything): then ours."""
    return never_cache_failures if inner is _DEFAULT_CACHE else inner


# --- an existing CrewAI tool, guarded in place -----------------------------------------


class GuardedTool(BaseTool):
    """An existing CrewAI tool under a dispatcher's policy (see ``guard``)."""

    _inner: BaseTool = PrivateAttr()
    _dispatcher: Dispatcher = PrivateAttr()

    @classmethod
    def of(cls, tool: BaseTool, dispatcher: Dispatcher, stop: bool) -> GuardedTool:
        refuse_not_run(
            dispatcher,
            tool.name,
            framework="CrewAI",
            instead="give it CrewAI's own settings, or write it with @tool and as_crewai_tool",
        )
        guarded = cls(
            name=tool.name,
            description=tool.description,
            args_schema=tool.args_schema,
            result_as_answer=tool.result_as_answer or stop,
            cache_function=_cache_function(tool.cache_function),
            tool_failure_policy=tool.tool_failure_policy,
        )
        guarded.description = tool.description  # CrewAI rewrites it on construction
        guarded._inner = tool
        guarded._dispatcher = dispatcher
        return guarded

    @property
    def guarded_tool(self) -> BaseTool:
        """The CrewAI tool this one runs."""
        return self._inner

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._dispatcher

    def run(self, /, *args: Any, **kwargs: Any) -> Any:
        # Not BaseTool.run: the wrapped tool validates its arguments (and counts its
        # usage) itself, inside the guard, so a validation error is answered too.
        return self._run(*args, **kwargs)

    async def arun(self, /, *args: Any, **kwargs: Any) -> Any:
        return await self._arun(*args, **kwargs)

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        where = scope(self._dispatcher)
        call = ToolCall(name=self.name, arguments=dict(kwargs))
        refused = where.admit(call) if isinstance(where, Session) else None
        if refused is not None:
            return failure_of(refused)
        try:
            value = self._inner.run(*args, **kwargs)
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):
                raise
            return failure_of(where.handle_error(call, error))
        if isinstance(value, ToolFailure):  # the tool's own report (or its usage limit)
            return value
        where.handle_result(call, str(value))
        return value

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        where = scope(self._dispatcher)
        call = ToolCall(name=self.name, arguments=dict(kwargs))
        refused = where.admit(call) if isinstance(where, Session) else None
        if refused is not None:
            return failure_of(refused)
        try:
            value = await self._inner.arun(*args, **kwargs)
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):
                raise
            return failure_of(await where.ahandle_error(call, error))
        if isinstance(value, ToolFailure):
            return value
        await where.ahandle_result(call, str(value))
        return value


# --- a toolguard tool as a CrewAI tool ---------------------------------------------------


class ToolguardCrewTool(BaseTool):
    """A toolguard tool that CrewAI's agents run (see ``as_crewai_tool``)."""

    _dispatcher: Dispatcher = PrivateAttr()

    @classmethod
    def of(
        cls, dispatcher: Dispatcher, name: str, stop: bool, options: dict[str, Any]
    ) -> ToolguardCrewTool:
        guarded = dispatcher.tools[name]
        framework = guarded.spec.arguments.framework
        if framework:
            first = framework[0]
            raise ToolDefinitionError(
                f"tool {name!r} takes {first.framework}'s {first.kind} (parameter "
                f"{first.name!r}), which CrewAI cannot supply: CrewAI hands a tool only "
                "the model's arguments; drop the parameter, or run the tool through "
                f"toolguard.integrations for {first.framework}"
            )
        arguments = guarded.spec.arguments
        for kind, params in (
            ("the call id", arguments.call_id_params),
            ("application context", arguments.context_params),
        ):
            if params:
                raise ToolDefinitionError(
                    f"tool {name!r} takes {kind} (parameter {params[0]!r}), which CrewAI "
                    "does not hand a tool; drop the parameter"
                )
        made = cls(
            name=name,
            description=guarded.description or name,
            args_schema=declared_schema(name, guarded.parameters),
            result_as_answer=stop,
            cache_function=_cache_function(options.pop("cache_function", _DEFAULT_CACHE)),
            **options,
        )
        made._dispatcher = dispatcher
        return made

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def run(self, /, *args: Any, **kwargs: Any) -> Any:
        # BaseTool.run, but the model's arguments go to toolguard as sent (one named
        # ``self`` included) and toolguard validates them.
        limit = self._claim_usage()
        return limit if limit is not None else self._run(*args, **kwargs)

    async def arun(self, /, *args: Any, **kwargs: Any) -> Any:
        limit = self._claim_usage()
        return limit if limit is not None else await self._arun(*args, **kwargs)

    def _run(self, /, *args: Any, **kwargs: Any) -> Any:
        arguments: Any = args[0] if args and not kwargs else kwargs
        call = ToolCall(name=self.name, arguments=arguments)
        return self._answer(scope(self._dispatcher).dispatch(call))

    async def _arun(self, /, *args: Any, **kwargs: Any) -> Any:
        arguments: Any = args[0] if args and not kwargs else kwargs
        call = ToolCall(name=self.name, arguments=arguments)
        offload = not self._dispatcher.tools[self.name].spec.is_async
        return self._answer(await scope(self._dispatcher).adispatch(call, offload=offload))

    @staticmethod
    def _answer(result: ToolResult) -> Any:
        return failure_of(result) if result.is_error else result.text
