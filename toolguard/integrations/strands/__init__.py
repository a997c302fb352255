"""toolguard for Strands Agents (``pip install "toolguard-agents[strands]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.strands import ToolguardHooks, as_strands_tools

    guard = Dispatcher([lookup_order], external_tools=["search"], overrides={...})
    agent = Agent(
        model=model,
        tools=[*as_strands_tools(guard), search],
        hooks=[ToolguardHooks(guard)],
    )

* :class:`ToolguardHooks` guards every tool of an existing agent in place, through
  Strands' own hooks: ``AfterToolCallEvent`` replaces a failed call's result
  (Strands sends ``Error: {Type} - {message}``) with the dispatcher's answer,
  ``BeforeToolCallEvent`` checks the conversation's breakers, and
  ``AfterToolsEvent`` ends the turn when toolguard's ``return_direct`` asks.
* :func:`as_strands_tool` turns a toolguard tool into a Strands ``AgentTool``:
  toolguard's schema, validation, retries and timeouts; Strands' ``ToolContext``
  (and the ``Agent``) injected.

``return_direct``. Strands' ``AfterToolsEvent.end_turn`` halts the agent loop after
a batch of tool calls without calling the model again; a list of content blocks
becomes the final assistant message. :class:`ToolguardHooks` sets it to the
stopping tool's content when the batch asks to stop (the dispatcher's
``return_direct_mode``), by default only on success: a failed tool's error text
never becomes the agent's answer.

Control flow. Importing this module registers Strands' ``InterruptException``
(``tool_context.interrupt(...)``, human in the loop) with
:func:`toolguard.register_control_flow`: an interrupt raised in a toolguard tool
halts the agent as Strands means it to. Cancellation (``agent.cancel()``, a hook's
``cancel_tool``) is Strands' own answer and is left untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from strands.interrupt import InterruptException
    from strands.types.tools import AgentTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.strands needs Strands Agents: "
        'pip install "toolguard-agents[strands]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.errors import register_control_flow
from toolguard.integrations._common import guarded, the_dispatcher
from toolguard.integrations.strands._calls import session_id
from toolguard.integrations.strands._hooks import ToolguardHooks
from toolguard.integrations.strands._tool import ToolguardTool

__all__ = ["ToolguardHooks", "ToolguardTool", "as_strands_tool", "as_strands_tools", "session_id"]

register_control_flow(InterruptException)


def as_strands_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardTool:
    """A Strands ``AgentTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. A parameter of another framework's injection type
    fails here with ``ToolDefinitionError`` naming it.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_strands_tool")
    return ToolguardTool(dispatcher=dispatcher, name=name)


def as_strands_tools(dispatcher: Dispatcher) -> list[AgentTool]:
    """Every tool of ``dispatcher`` as a Strands tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_strands_tools(dispatcher)")
    return [ToolguardTool(dispatcher=dispatcher, name=name) for name in dispatcher.tools]
