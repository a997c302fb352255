"""toolguard for CrewAI (``pip install "toolguard-agents[crewai]"``).

CrewAI's newest releases pin ``openai<3`` and ``mcp<2``, so the ``crewai`` extra does
not install together with toolguard's ``mcp`` or ``test`` extras, and it is not part
of ``all``: give a CrewAI app an environment of its own. Two pieces, usable together
or apart::

    from toolguard.integrations.crewai import as_crewai_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = Agent(
        role="support", goal="...", backstory="...", llm=llm,
        tools=[*as_crewai_tools(dispatcher), *guard([lookup_order], dispatcher)],
    )

* :func:`guard` puts an existing app's tools (``@tool`` functions, ``BaseTool``
  subclasses) under a dispatcher's policy, in place. For a tool that raises, CrewAI
  sends the model ``Error executing tool: {e}`` (native function calling) or, after
  retrying it silently, "I encountered an error ... This was the error: {e}" (text
  tool calling). A guarded tool's failure is answered by the dispatcher's handler
  chain instead: a ``ToolError``'s message as it is, a hidden cause as toolguard's
  generic message with its error id (the cause logged once), returned as CrewAI's own
  ``ToolFailure``: CrewAI records it (``TaskOutput.tool_failures``, its
  ``tool_failure_policy`` applies), does not retry or cache it, and never makes it
  the task's answer.
* :func:`as_crewai_tool` turns a toolguard ``@tool`` into a CrewAI ``BaseTool``:
  toolguard's schema, toolguard's validation, every call answered by toolguard.

Sessions. The task being executed is the conversation: calls made while a task runs
share ``dispatcher.session(id="crewai-task:<task id>")`` (breakers, model-retry
budgets). CrewAI hands a tool no call id and no model message, so each call is one
model step.

``return_direct``. CrewAI's ``result_as_answer`` is declared per tool, up front, and
CrewAI applies it to successful calls only. A tool whose toolguard ``return_direct``
can stop (``True``, ``"always"``) is declared ``result_as_answer=True``: its success
ends the task with its result; its failure never does (``"always"`` cannot stop on a
failure here). A predicate cannot be declared up front and is refused
(``ToolDefinitionError``). ``guard`` keeps a tool's own ``result_as_answer`` and adds
the dispatcher's ``return_direct`` for its name.

Control flow. CrewAI's ``ToolExecutionFailedError`` (a ``tool_failure_policy`` of
``"raise"``) and ``HookAborted`` are registered with
:func:`toolguard.register_control_flow`, so a nested crew's abort reaches CrewAI.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    from crewai.hooks.dispatch import HookAborted
    from crewai.tools import BaseTool
    from crewai.tools.tool_failure import ToolExecutionFailedError
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.crewai needs CrewAI: pip install "toolguard-agents[crewai]"'
    ) from error

from toolguard import BoundTool, Dispatcher, ReturnDirect, Tool
from toolguard.errors import ToolDefinitionError, register_control_flow
from toolguard.integrations._common import (
    declared_schema,
    guarded,
    refuse_not_run,
    the_dispatcher,
    the_tools,
)
from toolguard.integrations.crewai._guarded import GuardedTool
from toolguard.integrations.crewai._tools import ToolguardCrewTool

__all__ = ["GuardedTool", "ToolguardCrewTool", "as_crewai_tool", "as_crewai_tools", "guard"]

register_control_flow(ToolExecutionFailedError, HookAborted)


def _stops(dispatcher: Dispatcher, name: str) -> bool:
    """Whether ``name``'s return_direct is declared as ``result_as_answer``."""
    setting = dispatcher.scope().policy(name).return_direct
    mode = setting.mode if isinstance(setting, ReturnDirect) else "never"
    if mode == "predicate":
        raise ToolDefinitionError(
            f"return_direct for {name!r} is a predicate, which CrewAI cannot apply: its "
            "result_as_answer is declared per tool, before any call; use True (stop on "
            "success)"
        )
    return mode != "never"


def _guarded(tool: BaseTool, dispatcher: Dispatcher) -> GuardedTool:
    refuse_not_run(
        dispatcher,
        tool.name,
        framework="CrewAI",
        instead="give it CrewAI's own settings, or write it with @tool and as_crewai_tool",
    )
    accepting = declared_schema(tool.name, tool.args_schema.model_json_schema())
    return GuardedTool.of(tool, dispatcher, _stops(dispatcher, tool.name), accepting)


def guard(tools: Iterable[BaseTool], dispatcher: Dispatcher | None = None) -> list[BaseTool]:
    """``tools`` under ``dispatcher``'s policy, in place, for CrewAI's agents.

    ``Agent(..., tools=guard(tools, dispatcher))``: the one line to add to an existing
    app. Each tool keeps its name, description, schema, usage limit, cache function
    and failure policy, and runs as CrewAI would run it; what changes is the answer
    to a failure: the dispatcher's handler chain for the tool's name (overrides by
    name or glob, agent defaults and policy files; name the tools in
    ``external_tools=`` so overrides may name them exactly), hidden causes logged once
    with the error id the model sees; and arguments that fail the tool's schema get
    toolguard's message naming the argument, under native and text tool calling alike.
    ``retries`` and ``timeout`` for a tool CrewAI runs are refused
    (``ToolDefinitionError``), never ignored. Tools already guarded, and toolguard's
    own, are returned as they are. Without a dispatcher, an empty one under the
    global defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(tools, dispatcher)", optional=True)
    listed = the_tools(
        tools, _a_crewai_tool, entry="guard(tools, dispatcher)", what="CrewAI tools (BaseTool)"
    )
    return [
        tool if isinstance(tool, GuardedTool | ToolguardCrewTool) else _guarded(tool, dispatcher)
        for tool in listed
    ]


def _a_crewai_tool(value: object) -> bool:
    return isinstance(value, BaseTool)


def _crew_tool(dispatcher: Dispatcher, name: str, options: dict[str, Any]) -> ToolguardCrewTool:
    schema = declared_schema(name, dispatcher.tools[name].parameters)
    return ToolguardCrewTool.of(dispatcher, name, _stops(dispatcher, name), options, schema)


def as_crewai_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    max_usage_count: int | None = None,
    cache_function: Callable[..., bool] | None = None,
) -> ToolguardCrewTool:
    """A CrewAI ``BaseTool`` that runs ``tool`` under toolguard.

    Guarantees, for every call a CrewAI agent makes:

    * the model sees toolguard's JSON Schema; toolguard validates the arguments, so a
      bad call gets toolguard's message naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, as CrewAI's
      ``ToolFailure`` with toolguard's text (no retry, no cache, never the answer);
      only control flow and ``ToolCallFailed`` (a handler chose to fail the
      invocation) escape, and CrewAI fails the task with them;
    * ``return_direct`` is CrewAI's ``result_as_answer`` (see the module docstring);
    * CrewAI injects nothing into tools: a parameter of any framework's injection type
      is refused here (``ToolDefinitionError`` naming it).

    ``max_usage_count`` and ``cache_function`` are CrewAI's own options (a failure is
    never cached). Without ``dispatcher``, the tool runs in a one-tool dispatcher under
    the global defaults and its own policy; with one, ``tool`` (or its name) must be
    one of that dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_crewai_tool")
    options: dict[str, Any] = {"max_usage_count": max_usage_count}
    if cache_function is not None:
        options["cache_function"] = cache_function
    return _crew_tool(dispatcher, name, options)


def as_crewai_tools(dispatcher: Dispatcher) -> list[BaseTool]:
    """Every tool of ``dispatcher`` as a CrewAI tool, in declaration order.

    Typed as ``list[BaseTool]``, what ``Agent(tools=...)`` takes.
    """
    dispatcher = the_dispatcher(dispatcher, entry="as_crewai_tools(dispatcher)")
    return [_crew_tool(dispatcher, name, {}) for name in dispatcher.tools]
