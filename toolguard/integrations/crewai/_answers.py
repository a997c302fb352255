"""How toolguard answers in CrewAI's terms: its conversation, its failed result, its cache.

A failure is answered with CrewAI's own :class:`~crewai.tools.tool_failure.ToolFailure`
(its way for a tool to say "I ran and did not succeed"), carrying toolguard's text:
CrewAI records the failure, shows the agent ``ToolFailure.message``, does not retry the
call, does not cache it, and never makes it the task's answer (``result_as_answer``
applies to successes only).
"""

from __future__ import annotations

from typing import Any, Final

from crewai.context import get_current_task_id
from crewai.tools import BaseTool
from crewai.tools.tool_failure import ToolFailure, ToolFailureReason

from toolguard import Dispatcher, Scope, ToolResult

__all__ = ["DEFAULT_CACHE", "cache_function", "failure_of", "never_cache_failures", "scope_of"]

DEFAULT_CACHE: Final = BaseTool.model_fields["cache_function"].default


def scope_of(dispatcher: Dispatcher) -> Scope:
    """The conversation a tool call belongs to: the CrewAI task being executed
    (``dispatcher.session(id="crewai-task:<task id>")``), or none outside a task.
    CrewAI hands a tool no call id and no model message: each call is a step."""
    task_id = get_current_task_id()
    if not task_id:
        return dispatcher.scope()
    return dispatcher.session(id=f"crewai-task:{task_id}").scope()


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


def cache_function(inner: Any) -> Any:
    """``inner``, unless it is CrewAI's default (cache everything): then ours."""
    return never_cache_failures if inner is DEFAULT_CACHE else inner
