"""Parameters an agent framework supplies when it runs a tool (its injection types).

LangChain's ``InjectedState`` or ``ToolRuntime``, the Agents SDK's
``RunContextWrapper``, Pydantic AI's ``RunContext``, the MCP SDK's ``Context``: a
parameter whose type, or whose ``Annotated`` metadata, is (or derives from) one of
these is the framework's to fill. toolguard leaves it out of the schema the model
sees, refuses it from the model, and binds the value the framework's integration
hands over (``framework_values=``). The types are known by their qualified names:
the core imports no framework.
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, Final

import attrs

__all__ = ["FRAMEWORK_MARKERS", "FrameworkParameter", "framework_of"]

FRAMEWORK_MARKERS: Final[dict[str, str]] = {
    # LangChain / LangGraph: InjectedToolCallId, InjectedState, InjectedStore derive
    # from InjectedToolArg; ToolRuntime from _DirectlyInjectedToolArg
    "langchain_core.tools.base.InjectedToolArg": "langchain",
    "langchain_core.tools.base._DirectlyInjectedToolArg": "langchain",
    "langchain_core.runnables.config.RunnableConfig": "langchain",
    # OpenAI Agents SDK: ToolContext derives from RunContextWrapper
    "agents.run_context.RunContextWrapper": "openai-agents",
    # Pydantic AI
    "pydantic_ai._run_context.RunContext": "pydantic-ai",
    # the MCP SDK's MCPServer, and the standalone FastMCP
    "mcp.server.mcpserver.context.Context": "mcp",
    "fastmcp.server.context.Context": "fastmcp",
    # Google ADK: ToolContext is a class of its own in 1.x, an alias of the
    # unified agents Context (as CallbackContext is) in 2.x
    "google.adk.tools.tool_context.ToolContext": "google-adk",
    "google.adk.agents.context.Context": "google-adk",
    # Strands: ToolContext, and the Agent a decorated tool may ask for
    "strands.types.tools.ToolContext": "strands",
    "strands.agent.agent.Agent": "strands",
    # LlamaIndex's workflow Context (from the llama-index-workflows package; older
    # llama-index-core defined it itself)
    "workflows.context.context.Context": "llama-index",
    "llama_index.core.workflow.context.Context": "llama-index",
}
"""Qualified class name -> the framework whose injection type it is."""


@attrs.frozen
class FrameworkParameter:
    """A parameter the framework supplies: never in the schema, never the model's.

    ``marker`` is the qualified name of the injection type that matched (a key of
    :data:`FRAMEWORK_MARKERS`), ``kind`` the name of the class written
    (``InjectedState`` for the marker ``InjectedToolArg``); ``annotation`` the
    parameter's annotation as written, for an integration that declares the
    parameter back to its framework;
    ``index`` its position among the function's parameters.
    """

    name: str
    framework: str
    marker: str
    kind: str
    annotation: Any = attrs.field(eq=False)
    index: int
    has_default: bool


def framework_of(annotation: Any) -> tuple[str, str, str] | None:
    """``(framework, marker, kind)`` when ``annotation`` is a framework's injection
    type; ``kind`` is the name of the class written (``InjectedState``)."""
    candidates = [annotation]
    while candidates:
        current = candidates.pop()
        if typing.get_origin(current) is Annotated:
            candidates.append(typing.get_args(current)[0])
            for meta in current.__metadata__:
                found = _marked(meta if isinstance(meta, type) else type(meta))
                if found:
                    return found
            continue
        origin = typing.get_origin(current)
        if origin is types.UnionType or origin is typing.Union:
            candidates.extend(typing.get_args(current))
            continue
        found = _marked(origin if isinstance(origin, type) else current)
        if found:
            return found
    return None


def _marked(cls: Any) -> tuple[str, str, str] | None:
    if not isinstance(cls, type):
        return None
    # a TypedDict (RunnableConfig) has no class of its own in its MRO: itself first
    for base in (cls, *getattr(cls, "__mro__", ())):
        name = f"{base.__module__}.{base.__qualname__}"
        framework = FRAMEWORK_MARKERS.get(name)
        if framework is not None:
            return framework, name, cls.__qualname__
    return None
