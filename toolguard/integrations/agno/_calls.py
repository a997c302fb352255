"""What Agno tells toolguard about a call: its conversation, its model step, its schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agno.run.base import RunContext
from agno.tools.function import Function
from agno.tools.toolkit import Toolkit

from toolguard import Dispatcher, Scope, ToolCall

__all__ = ["call_of", "schema_of"]


def call_of(
    dispatcher: Dispatcher, name: str, arguments: Mapping[str, Any], run_context: Any
) -> tuple[Scope, ToolCall]:
    """The scope and the toolguard call of one Agno tool call.

    The conversation is the run's Agno session (``run_context.session_id``: one
    toolguard session per Agno session, so breakers and budgets count per
    conversation); the step is the assistant message the call came in (its first tool
    call id), and the call id is that message's id for this call. Without a run
    context (a ``FunctionCall`` run outside an agent), the dispatcher's own scope.
    """
    if not isinstance(run_context, RunContext) or not run_context.session_id:
        return dispatcher.scope(), ToolCall(name=name, arguments=dict(arguments))
    call_id, step = _find(run_context.messages or (), name, arguments)
    session = dispatcher.session(id=str(run_context.session_id))
    scope = session.scope(step=step or f"run:{run_context.run_id}")
    return scope, ToolCall(name=name, arguments=dict(arguments), id=call_id)


def _find(messages: Any, name: str, arguments: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """This call's id and its step in the last assistant message with tool calls."""
    for message in reversed(messages if isinstance(messages, list) else list(messages)):
        calls = getattr(message, "tool_calls", None)
        if getattr(message, "role", None) != "assistant" or not calls:
            continue
        ids = [str(c.get("id")) for c in calls if isinstance(c, dict) and c.get("id")]
        step = f"message:{ids[0]}" if ids else None
        named = [c for c in calls if isinstance(c, dict) and _name(c) == name and c.get("id")]
        if len(named) == 1:
            return str(named[0]["id"]), step
        for candidate in named:
            if _arguments(candidate) == dict(arguments):
                return str(candidate["id"]), step
        return None, step
    return None, None


def _name(call: dict[str, Any]) -> object:
    function = call.get("function")
    return function.get("name") if isinstance(function, dict) else None


def _arguments(call: dict[str, Any]) -> object:
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    if isinstance(raw, str):
        try:
            return json.loads(raw or "{}")
        except ValueError:
            return None
    return raw


def schema_of(owner: Any, name: str) -> dict[str, Any]:
    """The JSON schema Agno declares for the tool ``name`` of an agent (or team), for
    toolguard's answer to arguments Agno's own validation refused; ``{}`` if not found."""
    for tool in list(getattr(owner, "tools", None) or ()):
        function: Any = None
        if isinstance(tool, Toolkit):
            function = tool.functions.get(name)
        elif _named(tool, name):
            function = tool
        if function is None:
            continue
        try:
            if isinstance(function, Function):
                if function.parameters.get("properties") or function.entrypoint is None:
                    return dict(function.parameters)
                function = function.entrypoint
            return dict(Function.from_callable(function).parameters)
        except Exception:  # noqa: BLE001  # the schema only words the answer: never fail for it
            return {}
    return {}


def _named(tool: Any, name: str) -> bool:
    """An Agno ``Function`` or a plain function named ``name``."""
    if isinstance(tool, Function):
        return tool.name == name
    return callable(tool) and getattr(tool, "__name__", None) == name
