"""toolguard for Google ADK (``pip install "toolguard-agents[google-adk]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.google_adk import ToolguardPlugin, as_adk_tools

    guard = Dispatcher([lookup_order], external_tools=["search"], overrides={...})
    agent = LlmAgent(name="support", model=model, tools=[*as_adk_tools(guard), search])
    runner = InMemoryRunner(agent=agent, plugins=[ToolguardPlugin(guard)])

* :class:`ToolguardPlugin` guards every tool of every agent the runner runs, in
  place, through ADK's own plugin callbacks: a tool that raises is answered by the
  dispatcher's policy (``on_tool_error_callback``) instead of failing the whole run,
  the conversation is the ADK session, and ``return_direct`` becomes ADK's
  ``skip_summarization`` on success.
* :func:`as_adk_tool` turns a toolguard tool into an ADK ``BaseTool``: toolguard's
  schema, validation, retries and timeouts; ADK's ``ToolContext`` injected.

``return_direct``. ADK ends the agent's turn after a function response whose
``EventActions.skip_summarization`` is set: the function response event is then
the final response and the model is not called again. toolguard sets it only when
its decision says so, by default only on success, and applies the dispatcher's
``return_direct_mode`` across the calls of one model message (ADK merges their
actions; the plugin decides once every call of the message has its answer).

Control flow. ADK's transfers, escalation, confirmations and credential requests
travel in ``tool_context.actions``, which toolguard never touches. Importing this
module registers ``LlmCallsLimitExceededError`` (a nested agent went over the run's
``max_llm_calls``) with :func:`toolguard.register_control_flow`: the run must stop,
not hear about it as a tool failure.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from google.adk.agents.invocation_context import LlmCallsLimitExceededError
    from google.adk.tools.base_tool import BaseTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.google_adk needs Google ADK: "
        'pip install "toolguard-agents[google-adk]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.errors import register_control_flow
from toolguard.integrations._common import guarded, the_dispatcher
from toolguard.integrations.google_adk._calls import session_id
from toolguard.integrations.google_adk._plugin import ToolguardPlugin
from toolguard.integrations.google_adk._tool import ToolguardTool

__all__ = ["ToolguardPlugin", "ToolguardTool", "as_adk_tool", "as_adk_tools", "session_id"]

register_control_flow(LlmCallsLimitExceededError)


def as_adk_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    is_long_running: bool = False,
    custom_metadata: dict[str, Any] | None = None,
) -> ToolguardTool:
    """An ADK ``BaseTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    ``is_long_running`` and ``custom_metadata`` are ADK's own ``BaseTool`` options.
    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. A parameter of another framework's injection type
    fails here with ``ToolDefinitionError`` naming it.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_adk_tool")
    return ToolguardTool(
        dispatcher=dispatcher,
        name=name,
        is_long_running=is_long_running,
        custom_metadata=custom_metadata,
    )


def as_adk_tools(dispatcher: Dispatcher) -> list[BaseTool]:
    """Every tool of ``dispatcher`` as an ADK tool, in declaration order.

    Typed as ``list[BaseTool]``, what ``LlmAgent(tools=...)`` takes.
    """
    dispatcher = the_dispatcher(dispatcher, entry="as_adk_tools(dispatcher)")
    return [ToolguardTool(dispatcher=dispatcher, name=name) for name in dispatcher.tools]
