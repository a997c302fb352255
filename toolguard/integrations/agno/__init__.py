"""toolguard for Agno (``pip install "toolguard-agents[agno]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.agno import as_agno_tools, toolguard_hook

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = Agent(
        model=model,
        tools=[*as_agno_tools(dispatcher), lookup_order],
        tool_hooks=[toolguard_hook(dispatcher)],
    )

* :func:`toolguard_hook` guards every tool of an existing agent in place, through
  Agno's own ``tool_hooks`` (a middleware around each tool call; ``Agent`` and
  ``Team`` both take them). For a tool that raises, Agno tells the model the exception's text,
  ``str(e)``, flagged ``tool_call_error``: secrets and all. Guarded, the failure is
  answered by the dispatcher's handler chain instead and raised again as a
  ``ToolError`` carrying that answer, so Agno's own failure path stays as it is (the
  tool message flagged ``tool_call_error``, its events and log line): a
  ``ToolError``'s message as it is, a hidden cause as toolguard's generic message with
  its error id (the cause logged once, never chained to what Agno holds). Arguments
  Agno's own validation refuses (its ``validate_call`` of the tool) get toolguard's
  message naming the argument, its value never echoed. A tool's ``retries`` and
  ``timeout`` apply to its call.
* :func:`as_agno_tool` turns a toolguard ``@tool`` into an Agno ``Function``:
  toolguard's JSON Schema as the tool's parameters, toolguard's validation, every
  call answered by toolguard (a failure through Agno's own failure path, as above).

Conversations. The conversation is the run's Agno session (``run_context.session_id``):
one toolguard session per Agno session, so breakers and model-retry budgets count per
conversation, and the calls of one assistant message are one step.

What stays Agno's. A tool name the model invented is answered by Agno before any hook
runs; a tool's success (its value, an Agno ``ToolResult``, a generator: cut only where
the dispatcher's ``max_result_chars`` says), its own state, its ``pre_hook``/``post_hook``,
caching, confirmation and approvals are untouched.
``return_direct`` has no per-call counterpart in Agno (a tool ends the run only by its
own ``stop_after_tool_call``) and is refused (``ToolDefinitionError``), never ignored:
for the names the dispatcher knows, when the hook is made; for a name only a glob
override reaches, at its call (which Agno then reports as failed with the refusal).

Control flow. Importing this module registers Agno's ``AgentRunException``
(``StopAgentRun``, ``RetryAgentRun``) and ``RunCancelledException`` with
:func:`toolguard.register_control_flow`: raised in a guarded tool or a toolguard tool,
they reach Agno untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from agno.exceptions import AgentRunException, RunCancelledException
    from agno.tools.function import Function
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.agno needs Agno: pip install "toolguard-agents[agno]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.errors import register_control_flow
from toolguard.integrations._common import guarded, the_dispatcher
from toolguard.integrations.agno._hook import ToolguardHook, refuse_return_direct
from toolguard.integrations.agno._tools import agno_function

__all__ = ["ToolguardHook", "as_agno_tool", "as_agno_tools", "toolguard_hook"]

register_control_flow(AgentRunException)
register_control_flow(RunCancelledException)


def toolguard_hook(dispatcher: Dispatcher) -> ToolguardHook:
    """The tool hook that guards every tool of an Agno agent in place:
    ``Agent(..., tool_hooks=[toolguard_hook(dispatcher)])``, the one line to add.

    Each tool keeps its name, schema, behaviour and state; what changes is the answer
    to a failure: the dispatcher's handler chain for the tool's name (overrides by name
    or glob, agent defaults and policy files; name the agent's tools in
    ``external_tools=`` so overrides may name them exactly), hidden causes logged once
    with the error id the model sees. ``return_direct`` set for a tool the dispatcher
    names is refused here (``ToolDefinitionError``; see the module docstring).

    The dispatcher is required (``ToolguardHook()`` is the hook under the global
    defaults alone): listed uncalled, ``tool_hooks=[toolguard_hook]``, Agno would call
    it as the hook with no dispatcher, and each call fails loudly, its tool not run,
    rather than answering with a hook object.

    Agno puts an agent's ``tool_hooks`` in place of each tool's own: to keep a tool's
    own hooks, list them with this one (``tool_hooks=[toolguard_hook(d), audit]``: the
    first is the outermost).
    """
    dispatcher = the_dispatcher(dispatcher, entry="toolguard_hook(dispatcher)")
    return ToolguardHook(dispatcher)


def as_agno_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> Function:
    """An Agno ``Function`` that runs ``tool`` under toolguard.

    Guarantees, for every call an Agno agent makes:

    * the model sees toolguard's JSON Schema as the tool's parameters; toolguard
      validates the arguments, so a bad call gets toolguard's message naming the
      argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, raised as a
      ``ToolError`` with toolguard's answer (Agno's own failure path tells the model,
      flagged ``tool_call_error``); only control flow and ``ToolCallFailed`` escape
      otherwise;
    * a success is toolguard's content (a ``str`` as the tool returned it, any other
      value as JSON); an Agno ``ToolResult`` the tool returned comes back as it is;
    * the conversation is the run's Agno session, as for :func:`toolguard_hook`;
    * an async tool is an async Agno function (Agno runs those in ``arun`` only);
    * ``return_direct`` is refused (see the module docstring).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_agno_tool")
    refuse_return_direct(dispatcher, name)
    return agno_function(dispatcher, name)


def as_agno_tools(dispatcher: Dispatcher) -> list[Function]:
    """Every tool of ``dispatcher`` as an Agno ``Function``, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_agno_tools(dispatcher)")
    return [as_agno_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
