"""The tools an app already has, guarded in place: :func:`guard`.

A ``FunctionTool`` (``@function_tool``, an MCP server's tools converted by the SDK,
``agent.as_tool()``, a hand-built one) stays the same object with everything it is:
its schema, its own argument validation, its ``ToolContext``, approvals, guardrails,
``is_enabled``, its own failure settings, its output. Its ``on_invoke_tool`` becomes
toolguard's invoker, which runs the SDK's own call beneath the SDK's failure handling
through :func:`toolguard.integrations.inplace.aguard_call` (``_adapter`` says what is
the SDK's); what toolguard lets pass goes to the SDK's own failure handling, as
without the guard. Its ``custom_data_extractor`` adds toolguard's decision to the
output item only where toolguard decided something (``tool_use_behavior`` reads it).
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterable
from typing import Any, Final

from agents import FunctionTool
from agents import Tool as AgentsTool
from agents.tool_context import ToolContext

from toolguard import Dispatcher, ToolCall, ToolCallFailed
from toolguard.integrations._common import the_dispatcher, the_tools
from toolguard.integrations.inplace import aguard_call
from toolguard.integrations.openai_agents._adapter import CallAdapter, LetFail, ToolGuard
from toolguard.integrations.openai_agents._outputs import decision_extractor
from toolguard.integrations.openai_agents._runs import SessionSource
from toolguard.integrations.openai_agents._sdk import (
    SYNC_MARKER,
    SdkInvoker,
    handled_report,
    inner_call,
)
from toolguard.integrations.openai_agents._tools import GUARDED

__all__ = ["GuardedInvoker", "guard"]

_EXTRACTOR: Final = "_toolguard_extractor"  # marks toolguard's custom_data_extractor


class GuardedInvoker(SdkInvoker):  # type: ignore[misc]  # the SDK's private class, typed Any
    """A guarded tool's ``on_invoke_tool`` (see the module).

    ``sdk_handles``: the tool's own invoker was the SDK's failure-handling one, which
    answers what toolguard lets pass with the tool's ``failure_error_function`` (as
    without the guard); a hand-built tool's invoker had none, and it propagates.
    """

    def __init__(
        self,
        impl: Any,
        report: Any,
        *,
        function_tool: FunctionTool | None,
        guard: ToolGuard,
        sdk_handles: bool,
    ) -> None:
        super().__init__(impl, report, function_tool=function_tool)
        self.toolguard = guard
        self.sdk_handles = sdk_handles

    def __agents_bind_function_tool__(self, function_tool: FunctionTool) -> GuardedInvoker:
        """A copy of a guarded tool (``copy.copy``) is guarded, bound to itself."""
        if self._function_tool is function_tool:
            return self
        bound = GuardedInvoker(
            self._invoke_tool_impl,
            self._on_handled_error,
            function_tool=function_tool,
            guard=self.toolguard,
            sdk_handles=self.sdk_handles,
        )
        _mirror(self, bound)
        return bound

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:
        guard = self.toolguard
        tool: FunctionTool = self._function_tool
        call = ToolCall(name=tool.name, arguments=input, id=getattr(ctx, "tool_call_id", None))
        scope = guard.scope(ctx)
        impl = self._invoke_tool_impl
        adapter = CallAdapter(guard, tool, ctx, scope, input, self)
        passed: Exception
        try:
            return await aguard_call(scope, call, lambda: impl(ctx, input), adapter)
        except ToolCallFailed:
            raise  # a handler failed the invocation: the run fails with it
        except LetFail:
            # failure_error_function=None, and no override answered: the SDK's own exception
            passed = adapter.error if adapter.error is not None else _unreachable()
        except Exception as error:  # noqa: BLE001 - what toolguard let pass
            passed = error
        if not self.sdk_handles:
            raise passed
        # the SDK's own failure handling, as without the guard
        return await SdkInvoker(_raising(passed), self._on_handled_error, function_tool=tool)(
            ctx, input
        )


def _unreachable() -> Exception:  # pragma: no cover - the chain is asked only after cause()
    return AssertionError("failure_error_function=None answered no failure")


def _raising(error: Exception) -> Any:
    async def invoke(ctx: ToolContext[Any], arguments: str) -> Any:
        raise error

    return invoke


def _mirror(original: Any, invoker: GuardedInvoker) -> None:
    """What the SDK reads of an invoker's shape: the sync mark (``timeout_seconds`` is
    refused on sync tools) and, for a hand-built tool, its signature (the SDK passes a
    ``RunContextWrapper`` or a ``ToolContext`` by the first parameter's annotation)."""
    if getattr(original, SYNC_MARKER, False):
        setattr(invoker, SYNC_MARKER, True)
    if not invoker.sdk_handles:
        with contextlib.suppress(TypeError, ValueError):  # no signature: the SDK's default
            invoker.__signature__ = inspect.signature(original)


def guard(
    tools: Iterable[AgentsTool],
    dispatcher: Dispatcher,
    *,
    session: SessionSource | None = None,
) -> list[AgentsTool]:
    """The agent's tools, each ``FunctionTool`` guarded in place by ``dispatcher``.

    ``agent = Agent(..., tools=guard([lookup_order, refund], dispatcher))``

    A list given is returned itself (other iterables as a new list), holding the same
    tool objects: each ``FunctionTool`` is guarded itself
    (its ``on_invoke_tool`` and ``custom_data_extractor`` are toolguard's from now
    on, wherever the tool is used; ``copy.copy(tool)`` is guarded too). A guarded tool
    answers the model as before on success (its output, untouched) and with
    toolguard's answer on failure: the handler chain for its name, where the tool's
    own ``failure_error_function`` (or the run's ``tool_error_formatter``, for a tool
    left on the SDK's default) is the tool level: kept unless an override answers; a
    tool set ``failure_error_function=None`` fails the run, as without the guard. A
    hidden cause is logged once with the error id the model is told. Arguments that
    do not fit the tool's schema get toolguard's message naming the argument. What
    toolguard lets pass (``asyncio.CancelledError``, control flow) reaches the SDK's own
    handling as without the guard. The policy's ``timeout`` and ``retries`` apply
    around the SDK's own call, a ``Session``'s breaker and model-retry budget through
    ``session=`` (as for :func:`as_function_tool`), on the async session API.

    Name the tools in ``Dispatcher(external_tools=[...])`` so that overrides may name
    them exactly (globs match any name). Tools toolguard already answers
    (:func:`as_function_tool`'s) and tools that are not function tools (hosted,
    computer and shell tools) are left as they are. A tool guarded again is guarded by
    the last ``guard()`` (to guard one tool by two dispatchers, guard a
    ``copy.copy(tool)``).
    """
    dispatcher = the_dispatcher(
        dispatcher,
        entry="guard(tools, dispatcher)",
        instead="guard the agent's tools before building it, "
        "Agent(..., tools=guard(tools, Dispatcher([], external_tools=[...])))",
    )
    listed: list[AgentsTool] = the_tools(
        tools,
        _an_sdk_tool,
        entry="guard(tools, dispatcher)",
        what="the Agents SDK's tools (a plain function: decorate it with @function_tool)",
    )
    for tool in listed:
        if isinstance(tool, FunctionTool):
            _guard_one(tool, dispatcher, session)
    # the tools are guarded in place: a list given is handed back itself, so that
    # `agent.tools = guard(agent.tools, ...)` keeps the list the app (and the SDK's
    # `clone()`, which shares it) holds
    return tools if isinstance(tools, list) else listed


def _an_sdk_tool(item: object) -> bool:
    """One of the SDK's tools (a function, hosted, computer or shell tool: each has a
    ``name``), not a plain function, a class or a name."""
    return (
        not isinstance(item, str | type) and hasattr(item, "name") and not inspect.isfunction(item)
    )


def _guard_one(tool: FunctionTool, dispatcher: Dispatcher, source: SessionSource | None) -> None:
    current = tool.on_invoke_tool
    if isinstance(current, GuardedInvoker):
        old = current.toolguard
        if old.dispatcher is not dispatcher or old.source is not source:
            current.toolguard = ToolGuard(dispatcher, source, tool)  # guarded again: the last wins
        return
    if getattr(tool, GUARDED, False):
        return  # as_function_tool's: toolguard runs it
    sdk_handles = isinstance(current, SdkInvoker)
    impl = inner_call(current) if sdk_handles else current
    report = handled_report(current) if sdk_handles else _never_reported
    invoker = GuardedInvoker(
        impl,
        report,
        function_tool=tool,
        guard=ToolGuard(dispatcher, source, tool),
        sdk_handles=sdk_handles,
    )
    _mirror(current, invoker)
    tool.on_invoke_tool = invoker
    own = tool.custom_data_extractor
    if not getattr(own, _EXTRACTOR, False):
        extractor = decision_extractor(own)
        setattr(extractor, _EXTRACTOR, True)
        tool.custom_data_extractor = extractor


def _never_reported(tool: FunctionTool, error: Exception, arguments: str, context: Any) -> None:
    """A hand-built tool's invoker has no failure handling to report from."""
