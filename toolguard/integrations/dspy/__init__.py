"""toolguard for DSPy (``pip install "toolguard-agents[dspy]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.dspy import as_dspy_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    react = dspy.ReAct(
        "question -> answer",
        tools=[*as_dspy_tools(dispatcher), *guard([lookup_order], dispatcher)],
    )

* :func:`guard` puts an existing app's tools (``dspy.Tool`` objects, or the plain
  functions and callable objects ``dspy.ReAct`` takes) under a dispatcher's policy,
  in place. For a tool that raises, ``dspy.ReAct`` tells the model
  ``Execution error in {name}: `` and a five-frame traceback: the exception's type,
  its text and the tool's own source lines, secrets and all. A guarded tool's failure
  is answered by the dispatcher's handler chain instead, and raised as a ``ToolError``
  with that answer, so ReAct's own error path stays as it is (the observation, DSPy's
  callbacks): a ``ToolError``'s message as it is, a hidden cause as toolguard's
  generic message with its error id (the cause logged once, never chained: neither
  its text nor its frames are in the traceback DSPy shows).
* :func:`as_dspy_tool` turns a toolguard ``@tool`` into a ``dspy.Tool``: toolguard's
  schema (as DSPy's ``args``), toolguard's validation, every call answered by
  toolguard; a success returns the tool's own value.

What DSPy answers itself stays DSPy's: a tool name the model invented fails to parse
(the tool name is a ``Literal`` of ReAct's tools) before any tool is reached, and
``dspy.Tool`` checks the model's arguments against the tool's ``args`` before it calls
the guarded function. DSPy hands a tool no conversation, call id or step: every call is
answered under ``dispatcher.scope()`` (breakers and budgets are the dispatcher's, not
per conversation). ``return_direct`` has no counterpart in ReAct (only its ``finish``
tool ends a trajectory, chosen by the model) and is refused (``ToolDefinitionError``),
never ignored.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

try:
    import dspy  # type: ignore[import-untyped]  # dspy ships no type information
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.dspy needs dspy: pip install "toolguard-agents[dspy]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.integrations._common import (
    guarded,
    refuse_return_direct,
    the_dispatcher,
    the_tools,
)
from toolguard.integrations.dspy._guarded import AsyncGuardedFunction, GuardedFunction
from toolguard.integrations.dspy._tools import ToolguardDspyTool

__all__ = [
    "AsyncGuardedFunction",
    "GuardedFunction",
    "ToolguardDspyTool",
    "as_dspy_tool",
    "as_dspy_tools",
    "guard",
]


def _refuse_return_direct(dispatcher: Dispatcher, name: str) -> None:
    refuse_return_direct(
        dispatcher,
        name,
        why="cannot apply: dspy.ReAct ends a trajectory only when the model calls its "
        "finish tool; leave return_direct unset for DSPy",
    )


def guard(tools: Iterable[Any], dispatcher: Dispatcher | None = None) -> list[Any]:
    """``tools`` under ``dispatcher``'s policy, in place, as ``dspy.Tool`` objects.

    ``react = dspy.ReAct(signature, tools=guard(tools, dispatcher))``: the one line
    to add to an existing app. Plain functions and callable objects among ``tools``
    are made ``dspy.Tool``s first, as ReAct itself would. Each tool comes back as a
    copy of the ``dspy.Tool`` with the same name, description, ``args`` and argument
    types, whose ``func`` calls the tool's own function (a callable object's state
    stays its own; the ``dspy.Tool`` given is not changed); what changes is the answer
    to a failure: the dispatcher's handler chain for the tool's name (overrides by
    name or glob, agent defaults and policy files; name the tools in
    ``external_tools=`` so overrides may name them exactly), raised as a
    ``ToolError``, hidden causes logged once with the error id the model sees. A
    tool's ``retries`` and ``timeout`` apply to its call; an async function is
    guarded on the async path. Tools already guarded, and toolguard's own
    (:func:`as_dspy_tool`), are returned as they are. Without a dispatcher, an empty
    one under the global defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(tools, dispatcher)", optional=True)
    listed = the_tools(
        tools,
        _a_tool_or_callable,
        entry="guard(tools, dispatcher)",
        what="dspy.Tool objects or the functions dspy.ReAct takes",
    )
    found: list[Any] = []
    for given in listed:
        tool = given if isinstance(given, dspy.Tool) else dspy.Tool(given)
        if not isinstance(tool, ToolguardDspyTool) and not isinstance(tool.func, GuardedFunction):
            _refuse_return_direct(dispatcher, tool.name)
            kind = AsyncGuardedFunction if _is_async(tool.func) else GuardedFunction
            tool = tool.model_copy(update={"func": kind(tool.func, tool.name, dispatcher)})
        found.append(tool)
    return found


def _a_tool_or_callable(value: object) -> bool:
    """What ``guard`` takes: a ``dspy.Tool``, or what ``dspy.Tool(...)`` takes (a
    function or a callable object; a class is a mistake, not a tool)."""
    return isinstance(value, dspy.Tool) or (
        callable(value) and not isinstance(value, type | Dispatcher)
    )


def _is_async(function: Callable[..., Any]) -> bool:
    """An async function, or an object whose ``__call__`` is one."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        getattr(function, "__call__", None)  # noqa: B004  # a callable object's own method
    )


def as_dspy_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardDspyTool:
    """A ``dspy.Tool`` that runs ``tool`` under toolguard.

    Guarantees, for every call ``dspy.ReAct`` makes:

    * the model sees toolguard's JSON Schema as DSPy's ``args`` (each argument's
      schema, ``$ref``s written out); toolguard validates the arguments, so a bad call
      gets toolguard's message naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, raised as a
      ``ToolError`` with toolguard's answer (ReAct's own error path tells the model);
      only control flow and ``ToolCallFailed`` escape otherwise;
    * a success returns what the tool returned (its text, where the content was cut);
    * ``return_direct`` is refused (see the module docstring).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_dspy_tool")
    _refuse_return_direct(dispatcher, name)
    return ToolguardDspyTool(dispatcher, name)


def as_dspy_tools(dispatcher: Dispatcher) -> list[ToolguardDspyTool]:
    """Every tool of ``dispatcher`` as a ``dspy.Tool``, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_dspy_tools(dispatcher)")
    return [as_dspy_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
