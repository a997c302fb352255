"""``ToolguardHooks``: every tool of a Strands agent under a dispatcher's policy.

Strands' hooks come before a tool call, after it (with its exception or result, which
a hook may replace) and after a batch of calls, so the in-place pipeline's steps sit
in those hooks, on the scope's ``a``-methods: ``BeforeToolCallEvent`` admits the call
(an open breaker cancels it with toolguard's answer); ``AfterToolCallEvent`` answers
an exception through the handler chain (``Scope.afailed``) and a name the agent has
no tool for (``Scope.aunknown_tool``), or gives the result to the pipeline's step 4
(``aguard_result``: a success reported and left as it is, a tool's own error result
its author's answer, kept unless an override answers); ``AfterToolsEvent`` ends the
turn when the batch asks to stop. (``guard_call`` cannot be used as one piece here:
admitting again after the tool ran would take a half-open breaker's trial twice.)
"""

from __future__ import annotations

import contextvars
import logging
from typing import Any, Final, Literal

from strands.hooks import (
    AfterToolCallEvent,
    AfterToolsEvent,
    BeforeToolCallEvent,
    HookProvider,
    HookRegistry,
)
from strands.interrupt import InterruptException
from strands.types.tools import ToolResult

from toolguard import Dispatcher, ToolCall, ToolCallFailed
from toolguard import ToolResult as GuardResult
from toolguard.errors import is_control_flow
from toolguard.integrations._common import HookAdapter, the_dispatcher
from toolguard.integrations.inplace import aguard_result
from toolguard.integrations.strands._calls import (
    blocks,
    call_of,
    decidable,
    final_message,
    forget,
    remember,
    scope_of,
    tool_result,
    validation,
)
from toolguard.integrations.strands._tool import GUARDED_MARK, ToolguardTool

__all__ = ["ToolguardHooks"]

# Strands' own logger that logs a failed tool with its traceback (the hidden cause):
# a private module's name, the only handle on that log. The hooks drop its records of
# the failures toolguard answers (and logs once itself); tests/integrations/
# test_strands.py fails loudly if a release moves it.
_TOOL_LOGGERS: Final = ("strands.tools.executors._executor",)

# True while a call ToolguardHooks answers is running: Strands' own traceback log of
# its failure is dropped, toolguard logs it once (with the error id the model sees).
_answering: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "toolguard_strands_answering", default=False
)


class _DropAnsweredFailures(logging.Filter):
    """Drop Strands' log of a failure toolguard answers (and logs) itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if not _answering.get() or exc is None or not isinstance(exc, Exception):
            return True
        return isinstance(exc, InterruptException) or is_control_flow(exc)


_FILTER: Final = _DropAnsweredFailures()


class ToolguardHooks(HookProvider):
    """Apply a toolguard policy to every tool of a Strands agent.

    ``Agent(..., hooks=[ToolguardHooks(dispatcher)])``; without a dispatcher, an
    empty one under the global defaults. Name the agent's own tools in the
    dispatcher's ``external_tools`` so that its ``overrides`` may name them exactly
    (globs match any name). Guarantees:

    * a tool that raises, toolguard's or not (a ``@strands.tool`` function, a module
      tool, an MCP tool), is answered through the handler chain: hidden causes logged
      once with the error id the model sees (Strands' own traceback log of that
      failure is dropped), and an error result with toolguard's text instead of
      ``Error: {Type} - {message}``;
    * a tool name the model invented is answered with toolguard's bounded message
      listing the agent's tools;
    * the conversation is the agent (or its session manager's session,
      :func:`session_id`): breakers are checked before each call, successes close
      them, and the calls of one model message are one step;
    * after a batch of calls that asks to stop (``return_direct`` on success, the
      round decided by ``mode``, else the dispatcher's ``return_direct_mode``), the
      turn ends with the stopping tool's content as the final message;
    * interrupts, cancellation (``cancel_tool``, ``agent.cancel()``), registered
      control flow and ``ToolCallFailed`` pass through untouched.

    A decorated tool's argument validation is Strands' answer, left as it is; a tool's
    own error result is its author's answer, kept unless an override answers it;
    every success's content is left as it is (``max_result_chars`` does not apply to
    plain tools).
    """

    def __init__(
        self, dispatcher: Dispatcher | None = None, *, mode: Literal["any", "all"] | None = None
    ) -> None:
        self.dispatcher = the_dispatcher(dispatcher, entry="ToolguardHooks", optional=True)
        self.mode: Literal["any", "all"] = mode or self.dispatcher.return_direct_mode
        self._blocked: dict[str, GuardResult] = {}
        self._seen: set[str] = set()  # calls of the current batches that reached the hooks
        for name in _TOOL_LOGGERS:
            logger = logging.getLogger(name)
            if _FILTER not in logger.filters:
                logger.addFilter(_FILTER)

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, self.before_tool_call)
        registry.add_callback(AfterToolCallEvent, self.after_tool_call)
        registry.add_callback(AfterToolsEvent, self.after_tools)

    async def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Mark the call as toolguard's; cancel it with the breaker's answer if open."""
        event.invocation_state[GUARDED_MARK] = True
        _answering.set(True)
        self._seen.add(str(event.tool_use.get("toolUseId", "")))
        tool = event.selected_tool
        if tool is None or isinstance(tool, ToolguardTool):
            return
        call = call_of(event.tool_use)
        blocked = await scope_of(self.dispatcher, event.agent, call.id or "").aadmit(call)
        if blocked is not None:
            self._blocked[call.id or ""] = blocked
            event.cancel_tool = blocked.text

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Answer a failure with the dispatcher's policy; record the stop decision."""
        _answering.set(False)
        call = call_of(event.tool_use)
        call_id = call.id or ""
        blocked = self._blocked.pop(call_id, None)
        if isinstance(event.selected_tool, ToolguardTool):
            return  # it answered itself, and recorded its decision
        if blocked is not None or event.cancel_message is not None:
            return  # cancelled: by the breaker, by a hook, by agent.cancel()
        error = event.exception
        if error is not None and validation(error):
            return  # a decorated tool's own argument validation: the model's mistake
        scope = scope_of(self.dispatcher, event.agent, call_id)
        if error is not None:
            if isinstance(error, ToolCallFailed) or is_control_flow(error):
                raise error
            if event.selected_tool is None:
                answer = await scope.aunknown_tool(call, event.agent.tool_names)
            else:
                answer = await scope.afailed(call, error)
            event.result = tool_result(call_id, answer)
            if answer.return_direct:
                remember(event.invocation_state, call_id)
            return
        adapter = _Results()
        decided = await aguard_result(scope, call, event.result, adapter)
        if decided is not event.result:  # an override answered the tool's own error
            event.result = decided
        if adapter.stop:
            remember(event.invocation_state, call_id)

    async def after_tools(self, event: AfterToolsEvent) -> None:
        """Answer the calls Strands refused before any hook ran; end a turn that asks to."""
        results = [b["toolResult"] for b in event.message.get("content", ()) if "toolResult" in b]
        for result in results:
            call_id = result["toolUseId"]
            if call_id in self._seen:
                self._seen.discard(call_id)
            elif result.get("status") == "error":
                await self._refused(event, result)
        stops = [forget(event.invocation_state, r["toolUseId"]) for r in results]
        if not self.dispatcher.round_stops(stops, mode=self.mode) or event.end_turn:
            return
        final = next(r for r, stop in zip(results, stops, strict=True) if stop)
        message = final_message(final)
        if all("text" in block for block in message):  # a str: what every release takes
            event.end_turn = "".join(block["text"] for block in message) or True
        else:  # images or documents: content blocks (strands-agents 1.56 and later)
            event.end_turn = message

    async def _refused(self, event: AfterToolsEvent, result: ToolResult) -> None:
        """A call Strands answered itself, before the hooks: a name it refused (too long,
        invalid characters), answered with toolguard's bounded unknown-tool message."""
        call_id = result["toolUseId"]
        used = next(
            (
                b["toolUse"]
                for message in reversed(event.agent.messages[-2:])
                for b in message.get("content", ())
                if "toolUse" in b and b["toolUse"].get("toolUseId") == call_id
            ),
            None,
        )
        if used is None:
            return
        call = call_of(used)
        scope = scope_of(self.dispatcher, event.agent, call_id)
        answer = await scope.aunknown_tool(call, event.agent.tool_names)
        result["content"] = blocks(answer)


class _Results(HookAdapter[ToolResult]):
    """Strands' tool results for the pipeline's step 4."""

    def respond(self, call: ToolCall, result: GuardResult) -> ToolResult:
        return tool_result(call.id or "", result)

    def own_error(self, outcome: ToolResult) -> str | None:
        return decidable(outcome) if outcome.get("status") == "error" else None

    def seen(self, outcome: ToolResult) -> object:
        return decidable(outcome)
