"""The Agents SDK's names toolguard reaches that are not its public API, in one place.

The SDK has no middleware around a function tool's call: what a tool answers on
failure is decided inside the tool's own ``on_invoke_tool``, by the SDK's
failure-handling invoker, before anything outside sees the exception. Guarding a tool
in place (same object, its own failure settings kept for the SDK's own paths) needs
the few names below. Each says why no public hook serves; ``missing()`` lists any a
release moved, and ``tests/integrations/conformance/test_openai_agents.py``
(``test_no_private_name_of_the_sdk_moved``) fails loudly on it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

import agents.tool as sdk_tool
from agents import FunctionTool
from agents.tool_context import ToolContext

__all__ = [
    "BAD_INPUT",
    "BIND",
    "SYNC_MARKER",
    "SdkInvoker",
    "failure_function",
    "handled_report",
    "inner_call",
    "mark_answered_by_default",
    "missing",
    "report_handled",
    "uses_default_failure",
]

Impl = Callable[[ToolContext[Any], str], Awaitable[Any]]

# The SDK's failure-handling invoker (what ``@function_tool``, MCP tools and
# ``agent.as_tool()`` put in ``on_invoke_tool``). Subclassed, not wrapped: the SDK's
# approvals evaluate a callable ``needs_approval`` on arguments prepared by an invoker
# of exactly this type (``isinstance``), so an invoker of another type would change
# which calls need approval. Its ``_invoke_tool_impl`` is the tool's raw call (the
# only place an exception is seen before the SDK formats it: no public hook reaches
# it); ``_on_handled_error`` its report of a handled failure (log, trace span), kept;
# ``_function_tool`` the tool it is bound to.
SdkInvoker: Final[type[Any]] = sdk_tool._FailureHandlingFunctionToolInvoker

# How a copied FunctionTool rebinds its invoker (``FunctionTool.__copy__``); a
# toolguard invoker follows the copy instead of guarding the original's failures.
BIND: Final = "__agents_bind_function_tool__"
# The SDK refuses ``timeout_seconds`` on a sync tool by this mark on its invoker.
SYNC_MARKER: Final = "__agents_sync_function_tool__"
# How the SDK's argument parsing words "the model's arguments do not fit" (a
# ModelBehaviorError, no type of its own): answered as toolguard's bad arguments.
BAD_INPUT: Final = "Invalid JSON input for tool"

# The tool's failure setting as the SDK resolves it (``agents.tool``, not exported
# from ``agents``): ``default_tool_error_function`` for the default, ``None`` for
# ``failure_error_function=None``, else the app's function. FunctionTool keeps it in a
# private field with no public reader.
_resolve: Callable[[FunctionTool, Any], Any] = sdk_tool.resolve_function_tool_failure_error_function


def failure_function(tool: FunctionTool, context: Any) -> Any:
    """The tool's own failure setting (see ``_resolve``)."""
    return _resolve(tool, context)


# Whether the tool was left on the SDK's default failure setting (a private field of
# FunctionTool): the SDK asks the run's ``tool_error_formatter`` only then (not for a
# tool given ``default_tool_error_function`` explicitly, as MCP tools and
# ``agent.as_tool()`` are by default); the resolved function cannot tell them apart.
_DEFAULT: Final = "_use_default_failure_error_function"
# Set on the ToolContext when the default setting answered a failure: the SDK then
# sends the answer as an error, not through the tool's output schema (programmatic
# callers). No public way to say "this output is an error".
_ANSWERED: Final = "_function_tool_default_failure_handled"


def uses_default_failure(tool: FunctionTool) -> bool:
    """The tool is on the SDK's default failure setting (not set at all)."""
    return bool(getattr(tool, _DEFAULT))


def mark_answered_by_default(context: Any) -> None:
    """Tell the SDK a failure of a default-setting tool was answered (see _ANSWERED)."""
    if isinstance(context, ToolContext):
        setattr(context, _ANSWERED, True)


def inner_call(invoker: Any) -> Impl:
    """The raw call beneath the SDK's failure handling."""
    impl: Impl = invoker._invoke_tool_impl
    return impl


def handled_report(invoker: Any) -> Callable[..., None]:
    """The SDK invoker's report of a handled failure (see SdkInvoker)."""
    report: Callable[..., None] = invoker._on_handled_error
    return report


def report_handled(invoker: Any, error: Exception, arguments: str, context: Any) -> None:
    """The SDK's own report of a failure its tool answered (an error log and the tool
    span's error), as without the guard."""
    invoker._on_handled_error(invoker._function_tool, error, arguments, context)


def missing() -> list[str]:
    """The names above that this release of the SDK no longer has."""
    gone = [
        name
        for name in (
            "_FailureHandlingFunctionToolInvoker",
            "resolve_function_tool_failure_error_function",
        )
        if not hasattr(sdk_tool, name)
    ]
    probe = SdkInvoker(_never, _never_reported)
    gone += [
        f"_FailureHandlingFunctionToolInvoker.{name}"
        for name in ("_invoke_tool_impl", "_on_handled_error", "_function_tool", BIND)
        if not hasattr(probe, name)
    ]
    tool = sdk_tool.function_tool(_probe_tool)
    if not isinstance(getattr(tool, _DEFAULT, None), bool):
        gone.append(f"FunctionTool.{_DEFAULT}")
    if _ANSWERED not in vars(sdk_tool).get("_DEFAULT_FAILURE_HANDLED_ATTR", _ANSWERED + "?"):
        gone.append(f"ToolContext.{_ANSWERED}")
    if not isinstance(tool.on_invoke_tool, SdkInvoker):
        gone.append("function_tool's on_invoke_tool is no _FailureHandlingFunctionToolInvoker")
    if not getattr(tool.on_invoke_tool, SYNC_MARKER, False):
        gone.append(SYNC_MARKER)
    return gone


async def _never(context: ToolContext[Any], arguments: str) -> Any:  # pragma: no cover
    raise AssertionError("a probe is never called")


def _never_reported(*args: Any) -> None:  # pragma: no cover
    raise AssertionError("a probe is never called")


def _probe_tool(x: int) -> int:  # pragma: no cover - a probe is never called
    """A probe."""
    return x
