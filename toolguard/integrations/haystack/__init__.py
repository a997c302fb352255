"""toolguard for Haystack (``pip install "toolguard-agents[haystack]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.haystack import as_haystack_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = Agent(
        chat_generator=generator,
        tools=[*as_haystack_tools(dispatcher), *guard([lookup_order], dispatcher)],
    )

* :func:`guard` puts an existing app's tools (``@tool`` functions, ``Tool``,
  ``ComponentTool``, the tools of a ``Toolset``) under a dispatcher's policy, in
  place. For a tool that raises, Haystack tells the model ``Failed to invoke Tool
  `{name}` with parameters {kwargs}. Error: {e}``: the exception's text, and every
  argument the tool was called with. A guarded tool's failure is answered by the
  dispatcher's handler chain instead, raised as a ``ToolInvocationError`` carrying
  only that answer, so the Agent's own error path stays as it is (the error result,
  ``raise_on_tool_invocation_failure``, an errored exit condition that does not
  exit): a ``ToolError``'s message as it is, a hidden cause as toolguard's generic
  message with its error id (the cause logged once, never chained).
* :func:`as_haystack_tool` turns a toolguard ``@tool`` into a Haystack ``Tool``:
  toolguard's schema as its ``parameters``, toolguard's validation, every call
  answered by toolguard; a success returns the tool's own value.

What Haystack answers itself stays Haystack's: a tool name the model invented is
answered by the Agent (``Tool '...' not found``) before any tool is reached.
Haystack hands a tool no conversation, call id or step: every call is answered
under ``dispatcher.scope()`` (breakers and budgets are the dispatcher's, not per
conversation). ``return_direct`` has no place on a Haystack tool (the Agent's own
stop is its ``exit_conditions``, named on the Agent) and is refused
(``ToolDefinitionError``), never ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    from haystack.tools import Toolset
    from haystack.tools.tool import Tool as HaystackTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.haystack needs haystack-ai: "
        'pip install "toolguard-agents[haystack]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.integrations._common import (
    guarded,
    refuse_return_direct,
    the_dispatcher,
    the_tools,
)
from toolguard.integrations.haystack._guarded import (
    GuardedComponentTool,
    GuardedTool,
    guarded_tool,
)
from toolguard.integrations.haystack._tools import ToolguardHaystackTool

__all__ = [
    "GuardedComponentTool",
    "GuardedTool",
    "ToolguardHaystackTool",
    "as_haystack_tool",
    "as_haystack_tools",
    "guard",
]


def _refuse_return_direct(dispatcher: Dispatcher, name: str) -> None:
    refuse_return_direct(
        dispatcher,
        name,
        why="cannot apply: a Haystack Agent stops after a tool only by its own "
        f"exit_conditions; name the tool there (Agent(..., exit_conditions=[{name!r}]))",
    )


def guard(
    tools: Iterable[HaystackTool | Toolset], dispatcher: Dispatcher | None = None
) -> list[HaystackTool]:
    """``tools`` under ``dispatcher``'s policy, in place, for Haystack's ``Agent``.

    ``agent = Agent(chat_generator=..., tools=guard(tools, dispatcher))``: the one line
    to add to an existing app (a ``Toolset`` among ``tools`` gives the tools it holds
    now: warm a dynamic one up first). Each tool keeps its name, description,
    parameters, ``inputs_from_state``, ``outputs_to_state``, ``outputs_to_string`` and
    behaviour (its warm-up, its function, its state, a ``ComponentTool``'s component);
    what changes is the answer to a failure: the dispatcher's handler chain for the
    tool's name (overrides by name or glob, agent defaults and policy files; name the
    tools in ``external_tools=`` so overrides may name them exactly), hidden causes
    logged once with the error id the model sees; and a function tool's arguments,
    checked against its signature first. A tool's ``retries`` and ``timeout`` apply
    to its call. Tools already guarded, and toolguard's own
    (:func:`as_haystack_tool`), are returned as they are. Without a dispatcher, an
    empty one under the global defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(tools, dispatcher)", optional=True)
    listed = the_tools(
        tools,
        _a_tool_or_toolset,
        entry="guard(tools, dispatcher)",
        what="Haystack tools (Tool, ComponentTool) or Toolsets",
    )
    found: list[HaystackTool] = []
    for given in listed:
        for tool in given if isinstance(given, Toolset) else (given,):
            if not isinstance(tool, GuardedTool | ToolguardHaystackTool):
                _refuse_return_direct(dispatcher, tool.name)
                tool = guarded_tool(tool, dispatcher)
            found.append(tool)
    return found


def _a_tool_or_toolset(value: object) -> bool:
    return isinstance(value, HaystackTool | Toolset)


def as_haystack_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardHaystackTool:
    """A Haystack ``Tool`` that runs ``tool`` under toolguard.

    Guarantees, for every call a Haystack ``Agent`` makes:

    * the model sees toolguard's JSON Schema as the tool's ``parameters``; toolguard
      validates the arguments, so a bad call gets toolguard's message naming the
      argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain and raised as a
      ``ToolInvocationError`` carrying toolguard's answer alone (the Agent's own error
      path tells the model); only control flow and ``ToolCallFailed`` escape otherwise;
    * a success returns what the tool returned (its text, where the content was cut);
    * ``return_direct`` is refused (see the module docstring).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_haystack_tool")
    _refuse_return_direct(dispatcher, name)
    return ToolguardHaystackTool(dispatcher, name)


def as_haystack_tools(dispatcher: Dispatcher) -> list[ToolguardHaystackTool]:
    """Every tool of ``dispatcher`` as a Haystack tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_haystack_tools(dispatcher)")
    return [as_haystack_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
