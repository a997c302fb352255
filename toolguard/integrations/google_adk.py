"""toolguard for Google ADK (``pip install "toolguard-agents[google-adk]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.google_adk import ToolguardPlugin, as_adk_tools

    guard = Dispatcher([lookup_order], external_tools=["search"], overrides={...})
    agent = LlmAgent(name="support", model=model, tools=[*as_adk_tools(guard), search])
    runner = InMemoryRunner(agent=agent, plugins=[ToolguardPlugin(guard)])

* :class:`ToolguardPlugin` guards every tool of every agent the runner runs, in
  place, through ADK's own plugin callbacks: a tool that raises is answered by the
  dispatcher's policy (``on_tool_error_callback``) instead of failing the whole run,
  the conversation is the ADK session, and ``return_direct`` becomes ADK's
  ``skip_summarization`` on success.
* :func:`as_adk_tool` turns a toolguard tool into an ADK ``BaseTool``: toolguard's
  schema, validation, retries and timeouts; ADK's ``ToolContext`` injected.

``return_direct``. ADK ends the agent's turn after a function response whose
``EventActions.skip_summarization`` is set: the function response event is then
the final response and the model is not called again. toolguard sets it only when
its decision says so, by default only on success, and applies the dispatcher's
``return_direct_mode`` across the calls of one model message (ADK merges their
actions; the plugin decides once every call of the message has its answer).

Control flow. ADK's transfers, escalation, confirmations and credential requests
travel in ``tool_context.actions``, which toolguard never touches. Importing this
module registers ``LlmCallsLimitExceededError`` (a nested agent went over the run's
``max_llm_calls``) with :func:`toolguard.register_control_flow`: the run must stop,
not hear about it as a tool failure.
"""

from __future__ import annotations

import asyncio
import base64
import copy
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

try:
    from google.adk.agents.invocation_context import LlmCallsLimitExceededError
    from google.adk.agents.readonly_context import ReadonlyContext
    from google.adk.plugins.base_plugin import BasePlugin
    from google.adk.tools.base_tool import BaseTool
    from google.adk.tools.tool_context import ToolContext
    from google.genai import types
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.google_adk needs Google ADK: "
        'pip install "toolguard-agents[google-adk]"'
    ) from error

from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._session import Session
from toolguard._suggest import Names
from toolguard._text import shown
from toolguard._tool import BoundTool, Tool
from toolguard._values import Image, ToolCall, ToolResult
from toolguard.errors import (
    ResultNotSerializable,
    ToolCallFailed,
    ToolDefinitionError,
    UnknownTool,
    register_control_flow,
)
from toolguard.guard._content import to_content
from toolguard.integrations._common import guarded
from toolguard.policy._precedence import Setting
from toolguard.policy._values import ReturnDirect
from toolguard.runner._rounds import round_stops

__all__ = ["ToolguardPlugin", "ToolguardTool", "as_adk_tool", "as_adk_tools", "session_id"]

register_control_flow(LlmCallsLimitExceededError)

FRAMEWORK: Final = "google-adk"
_ROUNDS_KEPT: Final = 1024  # unfinished rounds remembered per plugin (a run that failed)


# --- what ADK tells toolguard about a call ----------------------------------------------


def session_id(tool_context: ToolContext) -> str:
    """The toolguard session id of the ADK session a tool runs in.

    ``"{app_name}/{user_id}/{session id}"``: ADK session ids are unique per app and
    user. :class:`ToolguardPlugin` and :class:`ToolguardTool` both use it, so they
    share a conversation's breakers and budgets.
    """
    session = tool_context._invocation_context.session
    return f"{session.app_name}/{session.user_id}/{session.id}"


def _session(dispatcher: Dispatcher, tool_context: ToolContext) -> Session:
    return dispatcher.session(id=session_id(tool_context))


def _round(tool_context: ToolContext) -> tuple[str, tuple[str, ...]]:
    """``(step, call ids)``: the model message (event) a call came in, and its calls.

    The step is that event's id; without one found (a call made outside a model
    turn), the call is a step of its own.
    """
    call_id = tool_context.function_call_id or ""
    events = tool_context._invocation_context.session.events
    for event in reversed(events[-8:]):
        ids = tuple(call.id or "" for call in event.get_function_calls())
        if call_id in ids:
            return event.id, ids
    return f"call:{call_id}", (call_id,)


def _call(name: str, arguments: Any, tool_context: ToolContext) -> ToolCall:
    return ToolCall(name=name, arguments=arguments, id=tool_context.function_call_id)


def _response(result: ToolResult) -> Any:
    """toolguard's answer as an ADK function result.

    A failure is ``{"error": text}`` (ADK's own convention for a failed call); a
    success is the content: a ``str`` (ADK sends ``{"result": text}``), or for
    content blocks a list of texts and ``types.Part`` images (ADK moves the images
    into the function response's parts).
    """
    if result.is_error:
        return {"error": result.text}
    if isinstance(result.content, str):
        return result.content
    return [
        types.Part.from_bytes(data=base64.b64decode(block.data), mime_type=block.media_type)
        if isinstance(block, Image)
        else block.text
        for block in result.content
    ]


# --- toolguard tools as ADK tools -----------------------------------------------------


class ToolguardTool(BaseTool):
    """A toolguard tool that ADK runs, with toolguard deciding every answer.

    Guarantees, for every call ADK makes:

    * the model sees toolguard's JSON Schema (``parameters_json_schema``) and
      toolguard validates the arguments: a bad call gets toolguard's message naming
      the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain as ``{"error": text}``:
      a ``ToolError``'s message as it is, a hidden cause as toolguard's generic
      message with its error id (the cause logged once); only control flow and
      ``ToolCallFailed`` (a handler chose to fail the invocation) escape;
    * parameters annotated with ADK's ``ToolContext`` get the call's context, never
      a model argument; ``InjectedCallId`` gets the function call id; ``Injected``
      gets the session state (``tool_context.state``);
    * the call runs in the toolguard session of the ADK session (:func:`session_id`),
      as one step with the other calls of its model message; a sync tool runs on the
      dispatcher's thread pool, off the event loop;
    * on a ``return_direct`` answer it sets ``tool_context.actions.skip_summarization``.
    """

    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        name: str,
        is_long_running: bool = False,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        guarded_tool = dispatcher.tools[name]
        foreign = [p for p in guarded_tool.spec.arguments.framework if p.framework != FRAMEWORK]
        if foreign:
            parameter = foreign[0]
            raise ToolDefinitionError(
                f"tool {name!r}: parameter {parameter.name!r} is {parameter.framework}'s "
                f"{parameter.kind}, which Google ADK cannot supply; annotate it with ADK's "
                "ToolContext or give the tool to that framework"
            )
        super().__init__(
            name=name,
            description=guarded_tool.description,
            is_long_running=is_long_running,
            custom_metadata=custom_metadata,
        )
        self._dispatcher = dispatcher
        self._context_parameters = tuple(
            p.name for p in guarded_tool.spec.arguments.framework if p.framework == FRAMEWORK
        )
        self._offload = not guarded_tool.spec.is_async

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=copy.deepcopy(self._dispatcher.tools[self.name].parameters),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        call = _call(self.name, args, tool_context)
        step, _ = _round(tool_context)
        result = await _session(self._dispatcher, tool_context).adispatch(
            call,
            context=tool_context.state,
            offload=self._offload,
            framework_values=dict.fromkeys(self._context_parameters, tool_context),
            step=step,
        )
        if result.return_direct:
            tool_context.actions.skip_summarization = True
        return _response(result)


def as_adk_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    is_long_running: bool = False,
    custom_metadata: dict[str, Any] | None = None,
) -> ToolguardTool:
    """An ADK ``BaseTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    ``is_long_running`` and ``custom_metadata`` are ADK's own ``BaseTool`` options.
    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. A parameter of another framework's injection type
    fails here with ``ToolDefinitionError`` naming it.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_adk_tool")
    return ToolguardTool(
        dispatcher=dispatcher,
        name=name,
        is_long_running=is_long_running,
        custom_metadata=custom_metadata,
    )


def as_adk_tools(dispatcher: Dispatcher) -> list[BaseTool]:
    """Every tool of ``dispatcher`` as an ADK tool, in declaration order.

    Typed as ``list[BaseTool]``, what ``LlmAgent(tools=...)`` takes.
    """
    return [ToolguardTool(dispatcher=dispatcher, name=name) for name in dispatcher.tools]


# --- any tool of a runner's agents ------------------------------------------------------


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
      an MCP or OpenAPI tool), is answered through the session's ``handle_error``
      from ``on_tool_error_callback``: the precedence chain, hidden causes logged
      once with the error id the model sees, and ``{"error": text}`` as the function
      response, instead of ADK failing the whole run;
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

    Only exceptions are answered: what a tool or ADK already turned into a response
    (a ``FunctionTool``'s argument validation, a missing-argument message, a dict
    with an ``"error"`` key) is left as it is, and so is every success's value
    (``max_result_chars`` does not apply to plain tools). Register this plugin
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
        self.dispatcher = dispatcher if dispatcher is not None else Dispatcher([])
        self.mode: Literal["any", "all"] = mode or self.dispatcher.return_direct_mode
        self._rounds: OrderedDict[tuple[str, str], _Round] = OrderedDict()
        self._answered: dict[str, ToolResult] = {}  # call id -> toolguard's answer to a failure

    async def before_tool_callback(
        self, *, tool: BaseTool, tool_args: dict[str, Any], tool_context: ToolContext
    ) -> dict[str, Any] | None:
        """Send the breaker's answer instead of running a tool whose breaker is open."""
        if isinstance(tool, ToolguardTool) or _unknown(tool):
            return None
        step, _ = _round(tool_context)
        call = _call(tool.name, tool_args, tool_context)
        blocked = _session(self.dispatcher, tool_context).admit(call, step=step)
        if blocked is None:
            return None
        self._answered[call.id or ""] = blocked
        response: dict[str, Any] = _response(blocked)
        return response

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
        step, _ = _round(tool_context)
        call = _call(tool.name, tool_args, tool_context)
        unknown = _unknown(tool)
        if unknown:
            error = await _unknown_tool(tool.name, tool_context)
        result = await _session(self.dispatcher, tool_context).ahandle_error(call, error, step=step)
        response: dict[str, Any] = _response(result)
        if unknown:  # ADK runs no after_tool_callback for a tool that does not exist
            self._decide(tool_context, result.return_direct)
        else:
            self._answered[call.id or ""] = result
        return response

    async def after_tool_callback(
        self,
        *,
        tool: BaseTool,
        tool_args: dict[str, Any],
        tool_context: ToolContext,
        result: dict[str, Any],
    ) -> dict[str, Any] | None:
        """Record toolguard's ``return_direct`` decision; the response is left as it is."""
        call = _call(tool.name, tool_args, tool_context)
        answered = self._answered.pop(call.id or "", None)
        if isinstance(tool, ToolguardTool):
            stop = tool_context.actions.skip_summarization is True
        elif answered is not None:
            stop = answered.return_direct
        elif isinstance(result, dict) and "error" in result:  # ADK's or the tool's own error
            failed = ToolResult(call_id=call.id, name=call.name, content="", is_error=True)
            stop = self._return_direct(call.name).applies(failed)
        else:
            step, _ = _round(tool_context)
            decided = await _session(self.dispatcher, tool_context).ahandle_result(
                call, _decidable(result), step=step
            )
            stop = decided.return_direct and not decided.is_error
        self._decide(tool_context, stop)
        return None

    def _decide(self, tool_context: ToolContext, stop: bool) -> None:
        """One call's decision; once every call of its message has one, the round's."""
        actions = tool_context.actions
        if stop:
            actions.skip_summarization = True
        step, ids = _round(tool_context)
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
        stops = round_stops([asked for _, asked in decisions], self.mode)
        for call_actions, asked in decisions:
            if asked and call_actions is not None:
                call_actions.skip_summarization = True if stops else None

    def _return_direct(self, name: str) -> ReturnDirect:
        setting = self.dispatcher.explain(name, foreign=True)["return_direct"]
        assert isinstance(setting, Setting)
        value: ReturnDirect = setting.value
        return value


def _unknown(tool: BaseTool) -> bool:
    """ADK stands a bare ``BaseTool`` in for a name no tool has."""
    return type(tool) is BaseTool


async def _unknown_tool(name: str, tool_context: ToolContext) -> UnknownTool:
    """toolguard's model-visible error for a name the agent has no tool for."""
    names: Sequence[str] = ()
    agent = tool_context._invocation_context.agent
    canonical = getattr(agent, "canonical_tools", None)
    if canonical is not None:
        try:
            tools = await canonical(ReadonlyContext(tool_context._invocation_context))
            names = [t.name for t in tools]
        except Exception:  # noqa: BLE001  the listing is a courtesy; the answer must not fail
            names = ()
    known = Names(names)
    echoed = shown(name)
    message = (
        f"There is no tool named '{echoed}'{known.did_you_mean(name[:64])}. "
        f"Available tools: {known.listing}."
    )
    return UnknownTool(message, tool=echoed, available=tuple(names))


def _decidable(value: Any) -> Any:
    """The value ``handle_result`` decides on: the tool's, or ``""`` when toolguard
    could not serialise it (ADK's own parts); the response sent is ADK's either way."""
    try:
        to_content(value)
    except ResultNotSerializable:
        return ""
    return value
