"""What the two in-place MCP middlewares (the SDK's ``MCPServer``, FastMCP) share.

Both let their framework run the tool; toolguard answers the failure. Each
framework's exception is read back to what the tool raised (:func:`original`) and
answered by the session's guard; the framework's own "tell the model this" error
(``mcp.server.mcpserver.exceptions.ToolError``, ``fastmcp.exceptions.ToolError``)
is model-visible by default, like toolguard's ``ToolError``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pydantic

from toolguard._text import bounded, shown, utf8
from toolguard.errors import ToolError
from toolguard.integrations._mcp_wire import invalid_arguments

__all__ = ["FrameworkVisible", "Unobserved", "original", "unknown_tool"]

_VISIBLE_LIMIT = 4_000


class FrameworkVisible(Exception):
    """A framework's own model-visible error (its ``ToolError``), for toolguard's
    guard: its message is what the model is told; its cause, if any, is logged."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self._message = bounded(utf8(message), _VISIBLE_LIMIT)

    def message_for_model(self) -> str:
        return self._message


class Unobserved(Exception):
    """A tool failed and its framework did not say why (its failure log was not
    observed): answered as a hidden failure, the framework's text withheld."""


def unknown_tool(name: str) -> ToolError:
    """The framework found no tool by that name (the model's mistake): visible."""
    return ToolError(
        f"There is no tool named '{shown(name)}' on this server. Call one of the tools it lists."
    )


def original(
    error: Exception,
    tool: str,
    *,
    crash: type[Exception] | tuple[type[Exception], ...],
    framework_error: type[Exception] | tuple[type[Exception], ...],
    is_unknown: Callable[[Exception], bool],
    visible: bool,
) -> Exception:
    """What toolguard answers for the exception the framework caught.

    * a crash wrapper (``crash``: the SDK's ``UnexpectedToolError``): its cause,
      the tool's own exception;
    * the framework's error caused by a pydantic ``ValidationError``: the model's
      arguments were invalid (toolguard's bounded message);
    * the framework's error for an unknown tool: toolguard's unknown-tool message;
    * the framework's own ``ToolError`` (what the tool raised, or the SDK's
      wrapper of it): model-visible when ``visible``, else hidden;
    * anything else: itself.
    """
    if isinstance(error, crash):
        cause = error.__cause__
        return cause if isinstance(cause, Exception) else error
    cause = error.__cause__
    if isinstance(cause, pydantic.ValidationError):
        return invalid_arguments(tool, cause)
    if isinstance(error, pydantic.ValidationError):
        return invalid_arguments(tool, error)
    if is_unknown(error):
        return unknown_tool(tool)
    if isinstance(error, framework_error):
        # the SDK wraps the tool's own ToolError: its words are the tool's
        own = cause if isinstance(cause, framework_error) else error
        if not visible:
            return own
        marked = FrameworkVisible(str(own))
        marked.__cause__ = own.__cause__
        return marked
    return error


def visible_text(message: Any) -> str:
    return bounded(utf8(str(message)), _VISIBLE_LIMIT)
