"""toolguard for smolagents (``pip install "toolguard-agents[smolagents]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.smolagents import as_smolagents_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = ToolCallingAgent(
        tools=[*as_smolagents_tools(dispatcher), *guard([lookup_order], dispatcher)],
        model=model,
    )

* :func:`guard` puts an existing app's tools (``@tool`` functions, ``Tool``
  subclasses) under a dispatcher's policy, in place, for ``ToolCallingAgent`` and
  ``CodeAgent`` alike. For a tool that raises, smolagents tells the model
  ``Error executing tool '{name}' with arguments {...}: {Type}: {e}`` (a
  ``ToolCallingAgent``) or ``Code execution failed at line ... due to: {Type}: {e}``
  (a ``CodeAgent``): the exception's text, secrets and all. A guarded tool's failure
  is answered by the dispatcher's handler chain instead, and raised as a
  ``ToolError`` with that answer, so the agent's own error path stays as it is (the
  step's ``error``, its retry prompt): a ``ToolError``'s message as it is, a hidden
  cause as toolguard's generic message with its error id (the cause logged once,
  never chained to what smolagents holds).
* :func:`as_smolagents_tool` turns a toolguard ``@tool`` into a smolagents ``Tool``:
  toolguard's schema (as smolagents' ``inputs``), toolguard's validation, every call
  answered by toolguard; a success returns the tool's own value (a ``CodeAgent``'s
  code reads it as the function returned it).

What smolagents answers itself stays smolagents': a tool name the model invented and
arguments of the wrong type (its ``validate_tool_arguments``) are answered before any
tool is reached. smolagents hands a tool no conversation, call id or step: every call
is answered under ``dispatcher.scope()`` (breakers and budgets are the dispatcher's,
not per conversation). ``return_direct`` has no counterpart in smolagents (only its
``final_answer`` tool ends a run) and is refused (``ToolDefinitionError``), never
ignored. The tools run in the agent's process: a ``CodeAgent`` with a remote executor
(``executor_type="e2b"``, ``"docker"``, ...) ships tools as source code, which a
guard cannot travel with.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    from smolagents import Tool as SmolTool
    from smolagents import tool as smol_tool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.smolagents needs smolagents: "
        'pip install "toolguard-agents[smolagents]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.integrations._common import (
    guarded,
    refuse_return_direct,
    the_dispatcher,
    the_tools,
)
from toolguard.integrations.smolagents._guarded import GuardedTool
from toolguard.integrations.smolagents._tools import ToolguardSmolTool

__all__ = ["GuardedTool", "ToolguardSmolTool", "as_smolagents_tool", "as_smolagents_tools", "guard"]


def _refuse_return_direct(dispatcher: Dispatcher, name: str) -> None:
    refuse_return_direct(
        dispatcher,
        name,
        why="cannot apply: smolagents ends a run only with its final_answer tool; have "
        "the agent call final_answer instead",
    )


def guard(
    tools: Iterable[SmolTool | Callable[..., Any]], dispatcher: Dispatcher | None = None
) -> list[SmolTool]:
    """``tools`` under ``dispatcher``'s policy, in place, for ``ToolCallingAgent`` and
    ``CodeAgent``.

    ``agent = ToolCallingAgent(tools=guard(tools, dispatcher), model=model)``: the one
    line to add to an existing app; plain functions among ``tools`` are made tools by
    smolagents' own ``@tool`` first (type hints and a docstring with ``Args:``, as it
    requires). Each tool keeps its name, description, inputs, output type and behaviour
    (its ``setup``, its state, its outputs, smolagents' checks of the model's
    arguments); what changes is the answer to a failure: the dispatcher's handler chain
    for the tool's name (overrides by name or glob, agent defaults and policy files;
    name the tools in ``external_tools=`` so overrides may name them exactly), raised
    as a ``ToolError``, hidden causes logged once with the error id the model sees. A
    tool's ``retries`` and ``timeout`` apply to its call. Tools already guarded, and
    toolguard's own (:func:`as_smolagents_tool`), are returned as they are. Without a
    dispatcher, an empty one under the global defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(tools, dispatcher)", optional=True)
    listed = the_tools(
        tools,
        _a_tool_or_function,
        entry="guard(tools, dispatcher)",
        what="smolagents tools (Tool) or plain functions",
    )
    found: list[SmolTool] = []
    for given in listed:
        tool = given if isinstance(given, SmolTool) else smol_tool(given)
        if not isinstance(tool, GuardedTool | ToolguardSmolTool):
            _refuse_return_direct(dispatcher, tool.name)
            tool = GuardedTool(tool, dispatcher)
        found.append(tool)
    return found


def _a_tool_or_function(value: object) -> bool:
    """What ``guard`` takes: a smolagents tool, or a function its ``@tool`` makes one."""
    return isinstance(value, SmolTool) or (
        callable(value) and not isinstance(value, type) and hasattr(value, "__name__")
    )


def as_smolagents_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardSmolTool:
    """A smolagents ``Tool`` that runs ``tool`` under toolguard.

    Guarantees, for every call a smolagents agent makes:

    * the model sees toolguard's JSON Schema as smolagents' ``inputs`` (a property of
      a type smolagents cannot declare is declared ``"any"``: toolguard validates it);
      toolguard validates the arguments, so a bad call gets toolguard's message naming
      the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, raised as a
      ``ToolError`` with toolguard's answer (smolagents' own error path tells the
      model); only control flow and ``ToolCallFailed`` escape otherwise;
    * a success returns what the tool returned (its text, where the content was cut);
    * ``return_direct`` is refused (see the module docstring).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_smolagents_tool")
    _refuse_return_direct(dispatcher, name)
    return ToolguardSmolTool(dispatcher, name)


def as_smolagents_tools(dispatcher: Dispatcher) -> list[ToolguardSmolTool]:
    """Every tool of ``dispatcher`` as a smolagents tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_smolagents_tools(dispatcher)")
    return [as_smolagents_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
