"""toolguard: declarative error handling for LLM agent tools.

For every tool an agent calls, toolguard decides what the model is told, what is
hidden and logged (once, with an error id), and whether the agent loop stops.
"""

from typing import TYPE_CHECKING, Any

from toolguard._dispatcher import Dispatcher
from toolguard._engine import (
    EngineUnit,
    WorkflowRuntime,
    register_engine_unit,
    register_workflow_runtime,
)
from toolguard._scope import Scope
from toolguard._session import Session
from toolguard._tool import BoundTool, Tool, tool
from toolguard._values import Image, Output, Round, Text, ToolCall, ToolResult
from toolguard.errors import (
    ControlFlow,
    EngineRetry,
    InvalidArguments,
    InvalidOption,
    ModelRetriesExhausted,
    RemoteFailure,
    RetryWithFeedback,
    ToolCallFailed,
    ToolDefinitionError,
    ToolError,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
    VisibleToModel,
    register_control_flow,
)
from toolguard.policy._agent import AgentPolicy
from toolguard.policy._config import configure, get_config, reset_defaults
from toolguard.policy._handlers import HandlerContext
from toolguard.policy._precedence import Setting
from toolguard.policy._resilience import Breaker, Retry
from toolguard.policy._values import UNSET, ReturnDirect, ToolPolicy
from toolguard.schema._arguments import Injected, InjectedCallId
from toolguard.sessions._steps import ToolState

__all__ = [
    "AgentPolicy",
    "BoundTool",
    "Breaker",
    "ControlFlow",
    "Dispatcher",
    "EngineRetry",
    "EngineUnit",
    "HandlerContext",
    "Image",
    "Injected",
    "InjectedCallId",
    "InvalidArguments",
    "InvalidOption",
    "ModelRetriesExhausted",
    "Output",
    "PolicyFileError",
    "RemoteFailure",
    "Retry",
    "RetryWithFeedback",
    "ReturnDirect",
    "Round",
    "Scope",
    "Session",
    "Setting",
    "Text",
    "Tool",
    "ToolCall",
    "ToolCallFailed",
    "ToolDefinitionError",
    "ToolError",
    "ToolPolicy",
    "ToolResult",
    "ToolState",
    "ToolTimeout",
    "ToolUnavailable",
    "UNSET",
    "UnknownTool",
    "VisibleToModel",
    "WorkflowRuntime",
    "__version__",
    "configure",
    "get_config",
    "load_policy",
    "register_control_flow",
    "register_engine_unit",
    "register_workflow_runtime",
    "reset_defaults",
    "tool",
]

if TYPE_CHECKING:
    from toolguard.files._load import PolicyFileError, load_policy

    __version__: str


def __getattr__(name: str) -> Any:
    # Policy files are read at start-up, if at all: their module loads on first use.
    if name in ("PolicyFileError", "load_policy"):
        from toolguard.files import _load as _files

        return getattr(_files, name)
    if name == "__version__":  # importlib.metadata costs a third of the import: on first use
        from toolguard.telemetry._switch import distribution_version

        globals()["__version__"] = version = distribution_version()  # read once
        return version
    raise AttributeError(f"module 'toolguard' has no attribute {name!r}")
