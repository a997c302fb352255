"""toolguard: declarative error handling for LLM agent tools.

For every tool an agent calls, toolguard decides what the model is told, what is
hidden and logged (once, with an error id), and whether the agent loop stops.
"""

from toolguard._config import configure, get_config, reset_defaults
from toolguard._decorator import BoundTool, Tool, tool
from toolguard.dispatch import Dispatcher
from toolguard.errors import (
    ControlFlow,
    InvalidArguments,
    ToolCallFailed,
    ToolDefinitionError,
    ToolError,
    UnknownTool,
    VisibleToModel,
    register_control_flow,
)
from toolguard.handlers import HandlerContext
from toolguard.policy import UNSET, AgentPolicy, ReturnDirect, Setting, ToolPolicy
from toolguard.results import Image, Output, Round, Text, ToolCall, ToolResult
from toolguard.schema import Injected, InjectedCallId

__all__ = [
    "UNSET",
    "AgentPolicy",
    "BoundTool",
    "ControlFlow",
    "Dispatcher",
    "HandlerContext",
    "Image",
    "Injected",
    "InjectedCallId",
    "InvalidArguments",
    "Output",
    "ReturnDirect",
    "Round",
    "Setting",
    "Text",
    "Tool",
    "ToolCall",
    "ToolCallFailed",
    "ToolDefinitionError",
    "ToolError",
    "ToolPolicy",
    "ToolResult",
    "UnknownTool",
    "VisibleToModel",
    "configure",
    "get_config",
    "register_control_flow",
    "reset_defaults",
    "tool",
]
