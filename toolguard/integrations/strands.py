"""toolguard for Strands Agents (``pip install "toolguard-agents[strands]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.strands import ToolguardHooks, as_strands_tools

    guard = Dispatcher([lookup_order], external_tools=["search"], overrides={...})
    agent = Agent(
        model=model,
        tools=[*as_strands_tools(guard), search],
        hooks=[ToolguardHooks(guard)],
    )

* :class:`ToolguardHooks` guards every tool of an existing agent in place, through
  Strands' own hooks: ``AfterToolCallEvent`` replaces a failed call's result
  (Strands sends ``Error: {Type} - {message}``) with the dispatcher's answer,
  ``BeforeToolCallEvent`` checks the conversation's breakers, and
  ``AfterToolsEvent`` ends the turn when toolguard's ``return_direct`` asks.
* :func:`as_strands_tool` turns a toolguard tool into a Strands ``AgentTool``:
  toolguard's schema, validation, retries and timeouts; Strands' ``ToolContext``
  (and the ``Agent``) injected.

``return_direct``. Strands' ``AfterToolsEvent.end_turn`` halts the agent loop after
a batch of tool calls without calling the model again; a list of content blocks
becomes the final assistant message. :class:`ToolguardHooks` sets it to the
stopping tool's content when the batch asks to stop (the dispatcher's
``return_direct_mode``), by default only on success: a failed tool's error text
never becomes the agent's answer.

Control flow. Importing this module registers Strands' ``InterruptException``
(``tool_context.interrupt(...)``, human in the loop) with
:func:`toolguard.register_control_flow`: an interrupt raised in a toolguard tool
halts the agent as Strands means it to. Cancellation (``agent.cancel()``, a hook's
``cancel_tool``) is Strands' own answer and is left untouched.
"""

from __future__ import annotations

import base64
import contextvars
import json
import logging
import warnings
import weakref
from collections.abc import AsyncGenerator, Callable, Sequence
from typing import Any, Final, Literal

try:
    from pydantic import ValidationError
    from strands.hooks import (
        AfterToolCallEvent,
        AfterToolsEvent,
        BeforeToolCallEvent,
        HookProvider,
        HookRegistry,
    )
    from strands.interrupt import InterruptException
    from strands.types._events import ToolInterruptEvent, ToolResultEvent
    from strands.types.content import ContentBlock
    from strands.types.tools import AgentTool, ToolContext, ToolResult, ToolSpec, ToolUse
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.strands needs Strands Agents: "
        'pip install "toolguard-agents[strands]"'
    ) from error

from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._session import Session
from toolguard._suggest import Names
from toolguard._text import shown
from toolguard._tool import BoundTool, Tool
from toolguard._values import Image, ToolCall
from toolguard._values import ToolResult as GuardResult
from toolguard.errors import (
    ToolCallFailed,
    ToolDefinitionError,
    UnknownTool,
    register_control_flow,
)
from toolguard.integrations._common import guarded
from toolguard.policy._precedence import Setting
from toolguard.policy._values import ReturnDirect
from toolguard.runner._rounds import round_stops

__all__ = ["ToolguardHooks", "ToolguardTool", "as_strands_tool", "as_strands_tools", "session_id"]

register_control_flow(InterruptException)

FRAMEWORK: Final = "strands"
_DECISIONS_KEPT: Final = 4096  # calls whose decision waits for the end of their batch
_GUARDED_MARK: Final = "toolguard.hooks"  # invocation_state key: ToolguardHooks is on
# Strands' own loggers that log a failed tool with its traceback (the hidden cause):
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


# --- conversations ----------------------------------------------------------------------


def session_id(agent: Any) -> str | None:
    """The toolguard session id of a Strands agent with a session manager.

    ``"{session_id}/{agent_id}"``; ``None`` without a session manager, where the
    agent object itself is the conversation (its toolguard session lives as long
    as the agent).
    """
    manager = getattr(agent, "_session_manager", None)
    found = getattr(manager, "session_id", None) if manager is not None else None
    if not isinstance(found, str) or not found:
        return None
    return f"{found}/{getattr(agent, 'agent_id', 'default')}"


_by_agent: weakref.WeakKeyDictionary[Any, weakref.WeakKeyDictionary[Dispatcher, Session]] = (
    weakref.WeakKeyDictionary()
)


def _session(dispatcher: Dispatcher, agent: Any) -> Session:
    named = session_id(agent)
    if named is not None:
        return dispatcher.session(id=named)
    sessions = _by_agent.setdefault(agent, weakref.WeakKeyDictionary())
    found = sessions.get(dispatcher)
    if found is None:
        found = sessions[dispatcher] = dispatcher.session()
    return found


def _step(agent: Any, call_id: str) -> str:
    """The model message a call came in: the first tool use id of that message."""
    messages = getattr(agent, "messages", None) or ()
    for message in reversed(messages[-4:]):
        ids = [b["toolUse"]["toolUseId"] for b in message.get("content", ()) if "toolUse" in b]
        if call_id in ids:
            return f"message:{ids[0]}"
    return f"call:{call_id}"


def _blocks(result: GuardResult) -> list[Any]:
    """toolguard's content as Strands content blocks (text and images)."""
    if isinstance(result.content, str):
        return [{"text": result.content}]
    blocks: list[Any] = []
    for block in result.content:
        if isinstance(block, Image):
            fmt = block.media_type.removeprefix("image/")
            blocks.append(
                {"image": {"format": fmt, "source": {"bytes": base64.b64decode(block.data)}}}
            )
        else:
            blocks.append({"text": block.text})
    return blocks


def _tool_result(call_id: str, result: GuardResult) -> ToolResult:
    return {
        "toolUseId": call_id,
        "status": "error" if result.is_error else "success",
        "content": _blocks(result),
    }


# --- toolguard tools as Strands tools ---------------------------------------------------


class ToolguardTool(AgentTool):
    """A toolguard tool that Strands runs, with toolguard deciding every answer.

    Guarantees, for every call Strands makes:

    * the model sees toolguard's JSON Schema (``inputSchema``) and toolguard
      validates the input: a bad call gets toolguard's message naming the argument,
      and the tool does not run;
    * failures are answered by the dispatcher's handler chain as an error result: a
      ``ToolError``'s message as it is, a hidden cause as toolguard's generic
      message with its error id (the cause logged once); only control flow
      (``tool_context.interrupt()`` halts the agent for human input) and
      ``ToolCallFailed`` (a handler chose to fail the invocation) escape;
    * parameters annotated with Strands' ``ToolContext`` get the call's context, and
      ``Agent`` the running agent, never model arguments; ``InjectedCallId`` gets the
      tool use id; ``Injected`` gets the invocation state (``agent(..., **state)``);
    * the call runs in the agent's toolguard session (:func:`session_id`), as one
      step with the other calls of its model message;
    * ``return_direct`` ends the turn with :class:`ToolguardHooks` on the agent (a
      warning says so, once, when it asks to stop without them).
    """

    def __init__(self, *, dispatcher: Dispatcher, name: str) -> None:
        super().__init__()
        guarded_tool = dispatcher.tools[name]
        foreign = [p for p in guarded_tool.spec.arguments.framework if p.framework != FRAMEWORK]
        if foreign:
            parameter = foreign[0]
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {parameter.name!r} is {parameter.framework}'s "
                f"{parameter.kind}, which Strands cannot supply; annotate it with Strands' "
                "ToolContext or give the tool to that framework"
            )
        self._dispatcher = dispatcher
        self._name = name
        self._parameters = tuple((p.name, p.kind) for p in guarded_tool.spec.arguments.framework)
        self._spec: ToolSpec = {
            "name": name,
            "description": guarded_tool.description or name,
            "inputSchema": {"json": guarded_tool.parameters},
        }

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        return self._spec

    @property
    def tool_type(self) -> str:
        return "toolguard"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        call_id = str(tool_use.get("toolUseId", ""))
        agent = invocation_state.get("agent")
        context = kwargs.get("_tool_context")
        if context is None:
            context = ToolContext(tool_use=tool_use, agent=agent, invocation_state=invocation_state)
        values = {name: (agent if kind == "Agent" else context) for name, kind in self._parameters}
        call = ToolCall(name=self._name, arguments=tool_use.get("input"), id=call_id)
        try:
            result = await _session(self._dispatcher, agent).adispatch(
                call,
                context=invocation_state,
                offload=not self._dispatcher.tools[self._name].spec.is_async,
                framework_values=values,
                step=_step(agent, call_id),
            )
        except InterruptException as interrupt:
            yield ToolInterruptEvent(tool_use, [interrupt.interrupt])
            return
        if result.return_direct:
            _remember(call_id, result)
            if not invocation_state.get(_GUARDED_MARK):
                _warn_without_hooks(self._name)
        yield ToolResultEvent(_tool_result(call_id, result))


_decisions: dict[str, tuple[bool, GuardResult | None]] = {}
_warned: set[str] = set()


def _remember(call_id: str, answer: GuardResult | None) -> None:
    """A call that asks to stop, until its batch ends (the oldest forgotten first)."""
    _decisions[call_id] = (True, answer)
    while len(_decisions) > _DECISIONS_KEPT:
        del _decisions[next(iter(_decisions))]


def _warn_without_hooks(name: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"toolguard tool {name!r} asked to end the turn (return_direct), but the agent has "
        "no ToolguardHooks: add hooks=[ToolguardHooks(dispatcher)] to the Agent",
        UserWarning,
        stacklevel=2,
    )


def as_strands_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardTool:
    """A Strands ``AgentTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. A parameter of another framework's injection type
    fails here with ``ToolDefinitionError`` naming it.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_strands_tool")
    return ToolguardTool(dispatcher=dispatcher, name=name)


def as_strands_tools(dispatcher: Dispatcher) -> list[AgentTool]:
    """Every tool of ``dispatcher`` as a Strands tool, in declaration order."""
    return [ToolguardTool(dispatcher=dispatcher, name=name) for name in dispatcher.tools]


# --- any tool of an agent ---------------------------------------------------------------


class ToolguardHooks(HookProvider):
    """Apply a toolguard policy to every tool of a Strands agent.

    ``Agent(..., hooks=[ToolguardHooks(dispatcher)])``; without a dispatcher, an
    empty one under the global defaults. Name the agent's own tools in the
    dispatcher's ``external_tools`` so that its ``overrides`` may name them exactly
    (globs match any name). Guarantees:

    * a tool that raises, toolguard's or not (a ``@strands.tool`` function, a module
      tool, an MCP tool), is answered through the session's ``handle_error``: the
      precedence chain, hidden causes logged once with the error id the model sees
      (Strands' own traceback log of that failure is dropped), and an error result
      with toolguard's text instead of ``Error: {Type} - {message}``;
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

    Only exceptions are answered: what a tool or Strands already turned into a
    result (a decorated tool's argument validation, a tool's own error result) is
    left as it is, and so is every success's content (``max_result_chars`` does not
    apply to plain tools).
    """

    def __init__(
        self, dispatcher: Dispatcher | None = None, *, mode: Literal["any", "all"] | None = None
    ) -> None:
        self.dispatcher = dispatcher if dispatcher is not None else Dispatcher([])
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

    def before_tool_call(self, event: BeforeToolCallEvent) -> None:
        """Mark the call as toolguard's; cancel it with the breaker's answer if open."""
        event.invocation_state[_GUARDED_MARK] = True
        _answering.set(True)
        self._seen.add(str(event.tool_use.get("toolUseId", "")))
        tool = event.selected_tool
        if tool is None or isinstance(tool, ToolguardTool):
            return
        call = _call(event.tool_use)
        blocked = _session(self.dispatcher, event.agent).admit(
            call, step=_step(event.agent, call.id or "")
        )
        if blocked is not None:
            self._blocked[call.id or ""] = blocked
            event.cancel_tool = blocked.text

    async def after_tool_call(self, event: AfterToolCallEvent) -> None:
        """Answer a failure with the dispatcher's policy; record the stop decision."""
        _answering.set(False)
        call = _call(event.tool_use)
        call_id = call.id or ""
        blocked = self._blocked.pop(call_id, None)
        if isinstance(event.selected_tool, ToolguardTool):
            return  # it answered itself, and recorded its decision
        if blocked is not None or event.cancel_message is not None:
            return  # cancelled: by the breaker, by a hook, by agent.cancel()
        session = _session(self.dispatcher, event.agent)
        step = _step(event.agent, call_id)
        error = event.exception
        if error is not None and _validation(error):
            return  # a decorated tool's own argument validation: the model's mistake
        if error is not None:
            if isinstance(error, ToolCallFailed) or is_control_flow(error):
                raise error
            if event.selected_tool is None:
                error = _unknown_tool(call.name, event.agent)
            answer = await session.ahandle_error(call, error, step=step)
            event.result = _tool_result(call_id, answer)
            self._record(call_id, answer.return_direct, answer)
            return
        result = event.result
        if result.get("status") == "error":
            failed = GuardResult(call_id=call.id, name=call.name, content="", is_error=True)
            self._record(call_id, self._return_direct(call.name).applies(failed), None)
            return
        decided = await session.ahandle_result(call, _decidable(result), step=step)
        self._record(call_id, decided.return_direct and not decided.is_error, None)

    async def after_tools(self, event: AfterToolsEvent) -> None:
        """Answer the calls Strands refused before any hook ran; end a turn that asks to."""
        results = [b["toolResult"] for b in event.message.get("content", ()) if "toolResult" in b]
        for result in results:
            call_id = result["toolUseId"]
            if call_id in self._seen:
                self._seen.discard(call_id)
            elif result.get("status") == "error":
                await self._refused(event, result)
        decisions = [_decisions.pop(r["toolUseId"], (False, None)) for r in results]
        stops = [stop for stop, _ in decisions]
        if not round_stops(stops, self.mode) or event.end_turn:
            return
        final = next(r for r, stop in zip(results, stops, strict=True) if stop)
        blocks = _final_message(final)
        if all("text" in block for block in blocks):  # a str: what every release takes
            event.end_turn = "".join(block["text"] for block in blocks) or True
        else:  # images or documents: content blocks (strands-agents 1.56 and later)
            event.end_turn = blocks

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
        call = _call(used)
        answer = await _session(self.dispatcher, event.agent).ahandle_error(
            call, _unknown_tool(call.name, event.agent), step=_step(event.agent, call_id)
        )
        result["content"] = _blocks(answer)

    def _record(self, call_id: str, stop: bool, answer: GuardResult | None) -> None:
        if stop:
            _remember(call_id, answer)

    def _return_direct(self, name: str) -> ReturnDirect:
        setting = self.dispatcher.explain(name, foreign=True)["return_direct"]
        assert isinstance(setting, Setting)
        value: ReturnDirect = setting.value
        return value


def _final_message(result: ToolResult) -> list[ContentBlock]:
    """A tool result's content as the final assistant message (``json`` blocks as text)."""
    blocks: list[ContentBlock] = []
    for block in result.get("content", ()):
        if "text" in block:
            blocks.append({"text": block["text"]})
        elif "json" in block:
            blocks.append({"text": json.dumps(block["json"], ensure_ascii=False, default=str)})
        elif "image" in block:
            blocks.append({"image": block["image"]})
        elif "document" in block:
            blocks.append({"document": block["document"]})
    return blocks


def _call(tool_use: ToolUse) -> ToolCall:
    return ToolCall(
        name=tool_use.get("name", ""),
        arguments=tool_use.get("input"),
        id=str(tool_use.get("toolUseId", "")),
    )


def _validation(error: Exception) -> bool:
    """A decorated tool's ``ValueError`` for input that failed its pydantic model."""
    return (
        isinstance(error, ValueError)
        and isinstance(error.__cause__, ValidationError)
        and str(error).startswith("Validation failed for input parameters")
    )


def _unknown_tool(name: str, agent: Any) -> UnknownTool:
    """toolguard's model-visible error for a name the agent has no tool for."""
    registry = getattr(agent, "tool_registry", None)
    names: Sequence[str] = list(getattr(registry, "registry", {}) or ())
    known = Names(names)
    echoed = shown(name)
    message = (
        f"There is no tool named '{echoed}'{known.did_you_mean(name[:64])}. "
        f"Available tools: {known.listing}."
    )
    return UnknownTool(message, tool=echoed, available=tuple(names))


def _decidable(result: ToolResult) -> str:
    """What ``handle_result`` decides on: the result's text (its content is kept)."""
    return "\n".join(block["text"] for block in result.get("content", ()) if "text" in block)
