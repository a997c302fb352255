"""toolguard for LangChain and LangGraph (``pip install "toolguard-agents[langchain]"``).

Guard an existing ``create_agent`` app by adding one line, the middleware, first::

    from toolguard.integrations.langchain import ToolguardMiddleware

    agent = create_agent(
        model,
        tools=tools,  # LangChain tools, unchanged
        middleware=[ToolguardMiddleware(dispatcher, tools=tools), *other_middleware],
    )

or write tools with toolguard's ``@tool`` and convert them::

    agent = create_agent(
        model, tools=as_langchain_tools(guard), middleware=[ToolguardMiddleware(guard)]
    )

* :class:`ToolguardMiddleware` applies a dispatcher's policy to the tools of a
  ``create_agent`` agent, toolguard's or not (see its docstring), through toolguard's
  in-place pipeline (:mod:`toolguard.integrations.inplace`).
* :func:`as_langchain_tool` turns a toolguard tool into a LangChain ``BaseTool``
  (:class:`ToolguardTool`): LangChain runs it, toolguard validates, runs and answers.

``return_direct``. LangChain's ``BaseTool.return_direct`` is a static flag: the
agent stops after the tool whether it succeeded or failed. toolguard stops, by
default, only on success, so the static flag is never set. Instead a ``ToolMessage``
that asks to stop carries toolguard's decision in ``response_metadata["toolguard"]``
(never sent to a model), and :class:`ToolguardMiddleware` reads it in a
``before_model`` hook, the first node after the tools, and jumps to the end of the
agent when the round asks to stop (the dispatcher's ``return_direct_mode``), with the
stopping tool's message last. In a graph of your own, route with :func:`stop_requested`.

Control flow. Importing this module registers LangGraph's ``GraphBubbleUp``
(``GraphInterrupt`` from ``interrupt()``, ``ParentCommand`` from
``Command(graph=Command.PARENT)``) and, per instance, the ``ValidationError`` of a
resume value that fails an interrupt's ``response_schema``
(``langgraph.errors.is_invalid_resume``) with :func:`toolguard.register_control_flow`,
so they pass through toolguard untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from langgraph.errors import GraphBubbleUp, is_invalid_resume
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.langchain needs langchain, langchain-core and langgraph 1.x: "
        'pip install "toolguard-agents[langchain]"'
    ) from error

from typing_extensions import Unpack

from toolguard import BoundTool, Dispatcher, Tool, register_control_flow
from toolguard.integrations._common import guarded
from toolguard.integrations.langchain._messages import METADATA_KEY, stop_requested, tool_message
from toolguard.integrations.langchain._middleware import ToolguardMiddleware
from toolguard.integrations.langchain._tool import (
    LangChainToolOptions,
    ToolguardTool,
    ToolguardWarning,
    checked_options,
)

__all__ = [
    "METADATA_KEY",
    "LangChainToolOptions",
    "ToolguardMiddleware",
    "ToolguardTool",
    "ToolguardWarning",
    "as_langchain_tool",
    "as_langchain_tools",
    "stop_requested",
    "tool_message",
]

register_control_flow(GraphBubbleUp, check=is_invalid_resume)


def as_langchain_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    **options: Unpack[LangChainToolOptions],
) -> ToolguardTool:
    """A LangChain ``BaseTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults (``configure()``) and its own policy. With one, ``tool`` (or its name)
    must be one of that dispatcher's tools, and the dispatcher's agent defaults and
    overrides apply too. ``options`` are LangChain's own tool options
    (:class:`LangChainToolOptions`: ``description``, ``tags``, ``metadata``,
    ``extras``, ``verbose``, ``callbacks``, ``response_format``).
    """
    checked = checked_options(options, "as_langchain_tool")
    dispatcher, name = guarded(tool, dispatcher, adapter="as_langchain_tool")
    return ToolguardTool(dispatcher=dispatcher, name=name, **checked)


def as_langchain_tools(
    dispatcher: Dispatcher, **options: Unpack[LangChainToolOptions]
) -> list[ToolguardTool]:
    """Every tool of ``dispatcher`` as a LangChain tool, in declaration order
    (``options`` as for :func:`as_langchain_tool`, for each)."""
    checked = checked_options(options, "as_langchain_tools")
    if "description" in checked:
        raise TypeError("as_langchain_tools() takes no description=...: each tool has its own")
    return [ToolguardTool(dispatcher=dispatcher, name=name, **checked) for name in dispatcher.tools]
