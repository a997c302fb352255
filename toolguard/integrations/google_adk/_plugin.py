"""``ToolguardPlugin``: every tool of a runner's agents under a dispatcher's policy.

ADK offers no hook around a tool's invocation, only callbacks before it, on its
exception and after it, so the in-place pipeline's steps sit in those callbacks, on
the scope's ``a``-methods: ``before_tool_callback`` admits the call (an open breaker's
answer instead of running the tool); ``on_tool_error_callback`` answers an exception
through the handler chain (``Scope.afailed``) and a name the agent has no tool for
(``Scope.aunknown_tool``); ``after_tool_callback`` gives the response to the
pipeline's step 4 (``aguard_result``): a success is reported (for the breaker and
``return_direct``) and left as it is, a tool's own ``{"error": ...}`` is its author's
answer, kept unless an override answers. (``guard_call`` cannot be used as one piece
here: admitting again after the tool ran would take a half-open breaker's trial
twice.)
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Any, Final, Literal

from google.adk.plugins.base_plugin import BasePlugin
from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext

from toolguard import Dispatcher, ToolCall, ToolCallFailed, ToolResult
from toolguard.errors import is_control_flow
from toolguard.integrations._common import HookAdapter, the_dispatcher
from toolguard.integrations.google_adk._calls import (
    agent_tools,
    call_of,
    decidable,
    response,
    round_of,
    scope_of,
    session_id,
)
from toolguard.integrations.google_adk._tool import ToolguardTool
from toolguard.integrations.inplace import aguard_result

__all__ = ["ToolguardPlugin"]

_ROUNDS_KEPT: Final = 1024  # unfinished rounds remembered per plugin (a run that failed)


class _Round:
    """The calls of one model message, and toolguard's decision for each so far."""

    __slots__ = ("decided", "ids")

    def __init__(self, ids: tuple[str, ...]) -> None:
        self.ids = ids
        self.decided: dict[str, tuple[Any, bool]] = {}  # call id -> (its actions, asks to stop)


class ToolguardPlugin(BasePlugin):
    """Apply a toolguard policy to every tool a Google ADK runner's agents run.

    ``Runner(..., plugins=[ToolguardPlugin(dispatcher)])`` (or ``App(plugins=...)``);
    without a dispatcher, an empty one under the global defaults. Name the agents'
    own tools in the dispatcher's ``external_tools`` so that its ``overrides`` may
    name them exactly (globs match any name). Guarantees:

    * a tool that raises, toolguard's or not (a plain function, a ``FunctionTool``,
      an MCP or OpenAPI tool), is answered through the handler chain from
      ``on_tool_error_callback``: hidden causes logged once with the error id the
      model sees, and ``{"error": text}`` as the function response, instead of ADK
      failing the whole run;
    * a tool name the model invented is answered with toolguard's bounded message
      listing the agent's tools (ADK's own echoes the name unbounded);
    * the conversation is the ADK session (:func:`session_id`): breakers are
      checked before each call (``before_tool_callback``), successes close them,
      and the calls of one model message are one step;
    * ``return_direct`` on success sets ``skip_summarization``, decided across the
      calls of one model message by ``mode`` (else the dispatcher's
      ``return_direct_mode``): the function response event is the final response;
    * control flow (``tool_context.actions``: transfers, escalation, confirmations),
      cancellation, ``ToolCallFailed`` and registered control-flow signals pass
      through untouched.

    What a tool or ADK already turned into a response (a ``FunctionTool``'s argument
    validation, a missing-argument message, a dict with an ``"error"`` key) is the
    tool's answer, kept unless an override answers it; every success's value is left
    as it is (``max_result_chars`` does not apply to plain tools). Register this plugin
    before ADK's ``ReflectAndRetryToolPlugin`` (which sends ``str(error)`` to the
    model): the first plugin that answers wins.
    """

    def __init__(
        self,
        dispatcher: Dispatcher | None = None,
        *,
        name: str = "toolguard",
        mode: Literal["any", "all"] | None = None,
    ) -> None:
        super().__init__(name=name)
        self.dispatcher = the_dispatcher(dispatcher, entry="ToolguardPlugin", optional=True)
        self.mode: Literal["any", "all"] = mode or self.dispatcher.return_direct_mode
        self._rounds: OrderedDict[tuple[str, str], _Round] = OrderedDict()
        self._answered: dict[str, ToolResult] = {}  # call id -> toolguard's answer to a failure

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Send the breaker's answer instead of running a tool whose breaker is open."""
        if isinstance(tool, ToolguardTool) or _unknown(tool):
            return None
        call = call_of(tool.name, tool_args, tool_context)
        blocked = await scope_of(self.dispatcher, tool_context).aadmit(call)
        if blocked is None:
            return None
        self._answered[call.id or ""] = blocked
        answer: dict[str, Any] = response(blocked)
        return answer

    async def on_tool_error_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        error: Exception,
    ) -> dict[str, Any] | None:
        """Answer a tool's exception with the dispatcher's policy."""
        if (
            isinstance(error, asyncio.CancelledError | ToolCallFailed)
            or not isinstance(error, Exception)
            or is_control_flow(error)
            or isinstance(tool, ToolguardTool)
        ):
            return None  # ADK re-raises it (or, cancelled, stays cancelled)
        call = call_of(tool.name, tool_args, tool_context)
        scope = scope_of(self.dispatcher, tool_context)
        if _unknown(tool):  # ADK runs no after_tool_callback for a tool that does not exist
            result = await scope.aunknown_tool(call, await agent_tools(tool_context))
            self._decide(tool_context, result.return_direct)
        else:
            result = await scope.afailed(call, error)
            self._answered[call.id or ""] = result
        answer: dict[str, Any] = response(result)
        return answer

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Decide the response as the pipeline does (``aguard_result``) and record
        toolguard's ``return_direct`` decision; a response nothing replaced is left as
        it is (``None``)."""
        call = call_of(tool.name, tool_args, tool_context)
        answered = self._answered.pop(call.id or "", None)
        if isinstance(tool, ToolguardTool):
            self._decide(tool_context, tool_context.actions.skip_summarization is True)
            return None
        if answered is not None:
            self._decide(tool_context, answered.return_direct)
            return None
        adapter = _Responses()
        scope = scope_of(self.dispatcher, tool_context)
        decided = await aguard_result(scope, call, result, adapter)
        self._decide(tool_context, adapter.stop)
        return None if decided is result else decided

    def _decide(self, tool_context: ToolContext, stop: bool) -> None:
        """One call's decision; once every call of its message has one, the round's."""
        actions = tool_context.actions
        if stop:
            actions.skip_summarization = True
        step, ids = round_of(tool_context)
        if len(ids) == 1:
            return
        key = (session_id(tool_context), step)
        pending = self._rounds.pop(key, None) or _Round(ids)
        pending.decided[tool_context.function_call_id or ""] = (actions, stop)
        if len(pending.decided) < len(pending.ids):
            self._rounds[key] = pending
            while len(self._rounds) > _ROUNDS_KEPT:
                self._rounds.popitem(last=False)
            return
        decisions = [pending.decided.get(i, (None, False)) for i in pending.ids]
        stops = self.dispatcher.round_stops([asked for _, asked in decisions], mode=self.mode)
        for call_actions, asked in decisions:
            if asked and call_actions is not None:
                call_actions.skip_summarization = True if stops else None


class _Responses(HookAdapter[Any]):
    """ADK's function responses for the pipeline's step 4."""

    def respond(self, call: ToolCall, result: ToolResult) -> Any:
        return response(result)

    def own_error(self, outcome: Any) -> str | None:
        """ADK's convention for a failed call, the tool's or ADK's own: a dict with an
        ``"error"`` key."""
        if isinstance(outcome, dict) and "error" in outcome:
            return decidable(outcome["error"])
        return None

    def seen(self, outcome: Any) -> object:
        return decidable(outcome)


def _unknown(tool: BaseTool) -> bool:
    """ADK stands a bare ``BaseTool`` in for a name no tool has."""
    return type(tool) is BaseTool
