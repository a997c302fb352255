"""toolguard for Pydantic AI (``pip install "toolguard-agents[pydantic-ai]"``).

Guard an existing agent's tools in place, one line added::

    from toolguard.integrations.pydantic_ai import ToolguardCapability

    guard = Dispatcher([], external_tools=["lookup_order", "search"])
    agent = Agent(model, tools=[lookup_order, search], capabilities=[ToolguardCapability(guard)])

or write the tools with ``@tool`` and serve them with toolguard's schema and validation::

    from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tools

    guard = Dispatcher([search, lookup_order, final_answer])
    agent = Agent(
        model, tools=as_pydantic_ai_tools(guard), capabilities=[ToolguardCapability(guard)]
    )

* :class:`ToolguardCapability` guards every tool the agent runs (Pydantic AI's
  ``wrap_tool_execute`` hook): failures go through the dispatcher's handler chain
  and become Pydantic AI's own outcomes; arguments that do not fit a tool's schema
  get toolguard's answer (``on_tool_validate_error``); it ends the run where
  toolguard's ``return_direct`` says (``before_model_request``); it runs the calls in
  the conversation's :class:`~toolguard.Session`.
* :func:`as_pydantic_ai_tool` turns a toolguard tool into a ``pydantic_ai.Tool``
  whose schema is toolguard's and whose arguments toolguard validates; a
  ``RunContext`` parameter gets Pydantic AI's context; Pydantic AI's own ``Tool``
  options are forwarded (:class:`PydanticAIToolOptions`). A toolguard tool is also
  accepted by Pydantic AI's own ``Tool(t)``, ``agent.tool(t)``, ``agent.tool_plain(t)``.

  ======================================================  ==================================
  toolguard                                               Pydantic AI
  ======================================================  ==================================
  success                                                 the value (``ToolReturn``,
                                                          ``BinaryContent``... untouched)
  ``RetryWithFeedback``, invalid arguments                ``ModelRetry``: its retry loop runs
  other model-visible failures (``ToolError``, timeout)   ``ToolFailed``: a failed result
  hidden failures                                         ``ToolFailed`` with toolguard's
                                                          generic message and error id
  a handler fails the invocation (``fail``)               ``ToolCallFailed`` ends the run
  ======================================================  ==================================

  ``retry_on="visible"`` sends every model-visible failure as ``ModelRetry``.

Control flow. Importing this module registers Pydantic AI's signals with
:func:`toolguard.register_control_flow`: ``CallDeferred`` and ``ApprovalRequired``
(deferred tools, human approval), ``ModelRetry`` and ``ToolFailed`` raised by a
tool itself (Pydantic AI answers them as their author meant), Pydantic AI's
internal ``ToolRetryError``, ``ToolFailedError`` and ``SkipToolExecution``, and
``UsageLimitExceeded`` (a nested run sharing ``ctx.usage`` went over the run's
limits: the run must stop, not hear about it as a tool failure).
"""

from __future__ import annotations

try:
    import pydantic_ai  # noqa: F401 - the clear error below, before the private modules'
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.pydantic_ai needs Pydantic AI: "
        'pip install "toolguard-agents[pydantic-ai]"'
    ) from error

from toolguard.integrations.pydantic_ai._capability import (
    ToolguardCapability,
    conversation_session,
    stop_requested,
)
from toolguard.integrations.pydantic_ai._tools import (
    METADATA_KEY,
    PydanticAIToolOptions,
    as_pydantic_ai_tool,
    as_pydantic_ai_tools,
)

__all__ = [
    "METADATA_KEY",
    "PydanticAIToolOptions",
    "ToolguardCapability",
    "as_pydantic_ai_tool",
    "as_pydantic_ai_tools",
    "conversation_session",
    "stop_requested",
]
