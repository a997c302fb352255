"""toolguard for the OpenAI Agents SDK (``pip install "toolguard-agents[openai-agents]"``).

Guard the tools an app already has, in place (one line)::

    from toolguard.integrations.openai_agents import guard

    dispatcher = Dispatcher([], external_tools=["lookup_order", "refund"])
    agent = Agent(name="support", tools=guard([lookup_order, refund], dispatcher))

or write toolguard tools and hand them to the SDK::

    from toolguard.integrations.openai_agents import as_function_tools, tool_use_behavior

    dispatcher = Dispatcher([search, lookup_order, final_answer])
    agent = Agent(
        name="support",
        tools=as_function_tools(dispatcher),
        tool_use_behavior=tool_use_behavior(dispatcher),
    )

* :func:`guard` puts existing ``FunctionTool``\\ s (``@function_tool``, MCP tools the
  SDK converted, ``agent.as_tool()``) under a dispatcher's policy through the SDK's own
  hooks: their ``failure_error_function`` is turned off and their ``on_invoke_tool``
  wrapped, so a failure gets toolguard's answer; a success is the tool's own output.
* :func:`as_function_tool` turns a toolguard tool into an ``agents.FunctionTool`` that
  declares what the SDK's own ``function_tool`` would, takes the SDK's injection
  (``RunContextWrapper``/``ToolContext`` parameters), and hands the SDK's output types
  back untouched; toolguard validates, runs and answers every call.
* :func:`tool_use_behavior` is the ``Agent(tool_use_behavior=...)`` that ends the run
  when toolguard's ``return_direct`` asks for it (on success only, by default), for
  both kinds of tool.

``return_direct``. The SDK's own ``StopAtTools`` (and ``"stop_on_first_tool"``)
stop on a tool's *name*: a failed call's error text becomes ``final_output``.
toolguard stops, by default, only on success. So each answer's decision travels
in ``ToolCallOutputItem.custom_data["toolguard"]`` (``return_direct``,
``is_error``, ``error_id``; SDK-only data, never sent to the model) and
:func:`tool_use_behavior` reads it.

Sessions. ``session=`` (on :func:`guard`, :func:`as_function_tool`,
:func:`as_function_tools`) is a :class:`~toolguard.Session`, or a function of the run
context naming the conversation (``lambda ctx: ctx.context.thread_id``: an id for
``dispatcher.session(id=...)``); its breakers and model-retry budgets then apply.

Control flow. Importing this module registers the SDK's guardrail tripwires
(``InputGuardrailTripwireTriggered``, ``OutputGuardrailTripwireTriggered``,
``ToolInputGuardrailTripwireTriggered``, ``ToolOutputGuardrailTripwireTriggered``)
with :func:`toolguard.register_control_flow`: a tool that runs a nested agent whose
guardrail trips stops the outer run too, as a tripwire means to, instead of being
answered as a tool failure.
"""

from __future__ import annotations

try:
    from agents import (
        InputGuardrailTripwireTriggered,
        OutputGuardrailTripwireTriggered,
        ToolInputGuardrailTripwireTriggered,
        ToolOutputGuardrailTripwireTriggered,
    )
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "toolguard-agents[openai-agents]"'
    ) from error

from toolguard.errors import register_control_flow
from toolguard.integrations.openai_agents._guard import guard
from toolguard.integrations.openai_agents._outputs import (
    METADATA_KEY,
    stop_requested,
    tool_use_behavior,
)
from toolguard.integrations.openai_agents._runs import SessionFinder, SessionSource
from toolguard.integrations.openai_agents._tools import as_function_tool, as_function_tools

__all__ = [
    "METADATA_KEY",
    "SessionFinder",
    "SessionSource",
    "as_function_tool",
    "as_function_tools",
    "guard",
    "stop_requested",
    "tool_use_behavior",
]

register_control_flow(
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)
