"""toolguard for Microsoft Agent Framework (``pip install "toolguard-agents[agent-framework]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.agent_framework import (
        ToolguardMiddleware,
        as_agent_framework_tools,
    )

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = Agent(
        client,
        tools=[lookup_order, *as_agent_framework_tools(dispatcher)],
        middleware=[ToolguardMiddleware(dispatcher)],
    )

* :class:`ToolguardMiddleware` puts an existing app's tools (``@tool`` functions,
  ``FunctionTool`` objects, an agent's tools made by ``as_tool()``) under a dispatcher's
  policy, in place, as one of Agent Framework's own function middleware. For a tool
  that raises, Agent Framework tells the model ``Error: Function failed.`` (the
  exception's text too, ``Exception: {e}``, with ``include_detailed_errors``), whatever
  the exception says, and keeps the exception's text in the result's ``exception``
  field; a guarded tool's failure is answered by the dispatcher's handler chain: a
  ``ToolError``'s message as written, a hidden cause as toolguard's generic message
  with its error id (the cause logged once, never kept on the result).
* :func:`as_agent_framework_tool` turns a toolguard ``@tool`` into a ``FunctionTool``:
  toolguard's schema, toolguard's validation, every call answered by toolguard.

A guarded failure's answer is the call's result, set by the middleware as Agent
Framework lets a middleware set one: a function result without Agent Framework's
``exception`` field (which only its own error path sets), so its count of consecutive
errors (``max_consecutive_errors_per_request``) does not see it; toolguard's breaker
(``Breaker(...)``, per conversation) is the limit then. Agent Framework's
``max_invocation_exceptions`` counts a tool's exceptions on the tool object, across
every conversation, guarded or not. What Agent Framework answers before any function
middleware runs stays its own: a tool name the model invented, a call that waits for
approval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from agent_framework import FunctionTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.agent_framework needs Microsoft Agent Framework: "
        'pip install "toolguard-agents[agent-framework]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.integrations._common import guarded, refuse_return_direct, the_dispatcher
from toolguard.integrations.agent_framework._middleware import ToolguardMiddleware
from toolguard.integrations.agent_framework._tools import ToolguardFunctionTool

__all__ = [
    "ToolguardFunctionTool",
    "ToolguardMiddleware",
    "as_agent_framework_tool",
    "as_agent_framework_tools",
]


def as_agent_framework_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardFunctionTool:
    """An Agent Framework ``FunctionTool`` that runs ``tool`` under toolguard.

    Guarantees, for every call an agent's function loop makes:

    * the model sees toolguard's JSON Schema; toolguard validates the arguments, so a
      bad call gets toolguard's message naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, the answer being the
      call's result: a ``ToolError``'s message as written, a hidden cause as
      toolguard's generic message with its error id (the cause logged once); a
      handler that fails the invocation (``ToolCallFailed``) aborts the run with Agent
      Framework's ``MiddlewareFailure``, the ``ToolCallFailed`` its cause;
    * a success returns what the tool returned (Agent Framework makes its content of
      it), its text where toolguard cut it; a sync tool runs on the dispatcher's pool;
    * in a run with an ``AgentSession`` the call is answered in
      ``dispatcher.session(id=session_id)``;
    * ``return_direct`` is refused (``ToolDefinitionError``): a tool cannot end Agent
      Framework's loop; guard a plain tool with :class:`ToolguardMiddleware` for that.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    if isinstance(tool, FunctionTool):
        raise TypeError(
            f"as_agent_framework_tool() takes a toolguard @tool; {tool.name!r} is already an "
            "Agent Framework FunctionTool: guard it in place, "
            "Agent(..., middleware=[ToolguardMiddleware(dispatcher)])"
        )
    dispatcher, name = guarded(tool, dispatcher, adapter="as_agent_framework_tool")
    refuse_return_direct(
        dispatcher,
        name,
        why="cannot apply: a tool cannot end Agent Framework's function loop; give the "
        "agent the plain function and ToolguardMiddleware "
        "(middleware=[ToolguardMiddleware(dispatcher)]), which ends it with "
        "MiddlewareTermination",
    )
    return ToolguardFunctionTool(dispatcher, name)


def as_agent_framework_tools(dispatcher: Dispatcher) -> list[ToolguardFunctionTool]:
    """Every tool of ``dispatcher`` as an Agent Framework tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_agent_framework_tools(dispatcher)")
    return [as_agent_framework_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
