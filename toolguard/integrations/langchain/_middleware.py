"""``ToolguardMiddleware``: a dispatcher's policy over every tool of a ``create_agent`` agent.

Part of :mod:`toolguard.integrations.langchain` (which re-exports it). Each plain tool
call goes through toolguard's one in-place pipeline
(:func:`toolguard.integrations.inplace.guard_call`) with :class:`~._adapter.Call` as
its LangChain adapter; a :class:`~._tool.ToolguardTool` answers for itself.

``create_agent`` builds an agent differently when a middleware *has* a hook (it looks
at the class): with a ``wrap_tool_call`` it adds a tools node even to an agent without
tools and skips its check of tools a middleware adds to a model request; with a
``before_model`` it adds a node to the loop. So a middleware given its tools
(``tools=``) has only the hooks it needs: none for no tools, ``wrap_tool_call`` for
tools, and ``before_model`` (which ends the loop on ``return_direct``) only when one of
them may ask to stop. The three shapes are subclasses; ``ToolguardMiddleware(...)``
picks one, and each calls itself ``ToolguardMiddleware``.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ToolCallRequest,
    hook_config,
)
from langchain_core.tools import BaseTool
from langgraph.runtime import Runtime

from toolguard import Dispatcher, ReturnDirect, ToolCall, ToolPolicy
from toolguard.integrations._common import the_dispatcher
from toolguard.integrations.inplace import aguard_call, guard_call
from toolguard.integrations.langchain._adapter import Call, Outcome, Unregistered
from toolguard.integrations.langchain._conversation import scope_of
from toolguard.integrations.langchain._failures import install
from toolguard.integrations.langchain._messages import stop_update, tool_message
from toolguard.integrations.langchain._tool import GUARDED, ToolguardTool, ToolguardWarning

__all__ = ["ToolguardMiddleware"]


class ToolguardMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Apply a toolguard policy to the tools of a ``create_agent`` agent.

    ``ToolguardMiddleware(dispatcher, tools=tools)``. ``tools`` are the tools (or tool
    names) it guards, as for LangChain's ``ToolRetryMiddleware``: give it the agent's
    tools, and it adds nothing to an agent that has none. Without ``tools`` it guards
    every tool of the agent, including tools another middleware supplies. Without a
    dispatcher, ``Dispatcher([], external_tools=<the names of tools>)`` under the
    global defaults. Put it first in ``middleware=[...]`` (outermost): the middleware
    inside it (``ToolRetryMiddleware``, ``ToolErrorMiddleware``...) then work as they do
    without it, and toolguard answers what comes out.

    For a plain LangChain tool (an ``@tool`` of LangChain's, any ``BaseTool``):

    * an exception out of its body is answered by the dispatcher's policy (overrides
      matching its name, the tool's own policy when the name is one of the
      dispatcher's tools, agent defaults, global, built-in): a hidden cause logged once
      with the error id the model sees, a ``ToolMessage(status="error")`` with
      toolguard's content. A pydantic ``ValidationError`` its body raises is such a
      failure (``ToolNode`` would have sent its text to the model as bad arguments);
    * bad arguments from the model get toolguard's bounded message naming each
      problem, and the tool does not run; a call of a tool the agent does not have gets
      toolguard's answer listing the tools;
    * LangChain's ``ToolException`` is model-visible (LangChain's "tell the model
      this"), its cause hidden and logged; ``tool_exceptions="hidden"`` treats it as
      any other exception;
    * the tool's own error result (its ``handle_tool_error``, a ``ToolMessage`` with
      ``status="error"`` it or an inner middleware wrote) is kept as written, at the
      tool level of the chain: an override may still answer it;
    * a success comes back as LangChain made it: toolguard cuts text at
      ``max_result_chars`` and marks a message that asks to stop
      (``response_metadata["toolguard"]``), nothing else;
    * ``retries``, ``timeout`` and ``breaker`` apply (LangGraph's tool handler is
      called again; on a worker thread with a deadline on the sync path, a task on the
      async one); in a run with a thread id (``config["configurable"]["thread_id"]``)
      calls are answered in ``dispatcher.session(id=thread_id)``, one model step per
      ``AIMessage``.

    What is not the tool's passes untouched, as LangChain raises it: LangGraph's control
    flow (interrupts, parent commands, a resume value that fails an interrupt's
    schema), ``ToolCallFailed``, and the framework's own errors (a missing store or
    state field, a ``Command`` with the wrong update type, a middleware on the wrong
    path, a call without an id). After a round that asks to stop (the dispatcher's
    ``return_direct_mode``) the loop ends, with the stopping tool's message last.
    """

    def __init__(
        self,
        dispatcher: Dispatcher | None = None,
        *,
        tools: Sequence[BaseTool | Callable[..., Any] | str | dict[str, Any]] | None = None,
        tool_exceptions: Literal["visible", "hidden"] = "visible",
    ) -> None:
        super().__init__()
        if tool_exceptions not in ("visible", "hidden"):
            raise ValueError(
                f"ToolguardMiddleware(tool_exceptions={tool_exceptions!r}): "
                "use 'visible' (LangChain's ToolException is for the model) or 'hidden'"
            )
        only = None if tools is None else frozenset(_names(tools))
        if dispatcher is None:
            dispatcher = Dispatcher([], external_tools=sorted(only or ()))
        self.dispatcher = the_dispatcher(
            dispatcher,
            entry="ToolguardMiddleware(dispatcher, tools=...)",
            instead="to guard an agent's tools in place, pass the tools by keyword "
            "(ToolguardMiddleware(tools=tools)) and the middleware to the agent "
            "(create_agent(model, tools=tools, middleware=[...]))",
        )
        self.tool_exceptions = tool_exceptions
        self.tools = []  # LangChain's: the tools a middleware adds (none)
        self._only = only
        self._outside = dispatcher.scope()
        self._said: set[str] = set()
        self._said_lock = threading.Lock()
        install()
        self.__class__ = _shape(self)

    @property
    def name(self) -> str:
        """LangChain's node and trace name: ``ToolguardMiddleware``, whatever its hooks."""
        return "ToolguardMiddleware"

    def _stops(self) -> bool:
        """Whether a call of one of its tools may ask the loop to stop (read now)."""
        if self._only is None:
            return True  # any tool: any level may set return_direct
        return any(_may_stop(self._outside.policy(name)) for name in self._only)

    def _guards(self, request: ToolCallRequest) -> bool:
        only = self._only
        return only is None or request.tool is None or request.tool_call["name"] in only

    def unshaped(self, tool: str) -> None:
        """Warn once that ``max_result_chars`` could not cut ``tool``'s content."""
        with self._said_lock:
            if tool in self._said:
                return
            self._said.add(tool)
        warnings.warn(
            f"max_result_chars cannot apply to the content of tool {tool!r}: it has content "
            "blocks toolguard has no form for (only text and base64 images); the content "
            "is sent as the tool wrote it.",
            ToolguardWarning,
            stacklevel=2,
        )


class _Guarding(ToolguardMiddleware):
    """The shape with ``wrap_tool_call``: it has tools to guard."""

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Outcome]
    ) -> Outcome:
        """Run the call through the pipeline (see :class:`ToolguardMiddleware`)."""
        call_id = request.tool_call.get("id")
        if call_id is None or not self._guards(request):
            return handler(request)  # no id: nothing to answer; LangGraph raises its own
        if isinstance(request.tool, ToolguardTool):  # it answers for itself
            token = GUARDED.set(True)
            try:
                return handler(request)
            finally:
                GUARDED.reset(token)
        adapter = self._call(request, call_id)
        try:
            return guard_call(adapter.scope, adapter.call, adapter.invoke(handler), adapter)
        except Unregistered:
            return tool_message(adapter.scope.unknown_tool(adapter.call, adapter.available()))

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[Outcome]],
    ) -> Outcome:
        """Async :meth:`wrap_tool_call` (async handlers allowed)."""
        call_id = request.tool_call.get("id")
        if call_id is None or not self._guards(request):
            return await handler(request)
        if isinstance(request.tool, ToolguardTool):
            token = GUARDED.set(True)
            try:
                return await handler(request)
            finally:
                GUARDED.reset(token)
        adapter = self._call(request, call_id)
        try:
            return await aguard_call(adapter.scope, adapter.call, adapter.ainvoke(handler), adapter)
        except Unregistered:
            result = await adapter.scope.aunknown_tool(adapter.call, adapter.available())
            return tool_message(result)

    def _call(self, request: ToolCallRequest, call_id: str) -> Call:
        raw = request.tool_call
        call = ToolCall(name=raw["name"], arguments=raw["args"], id=call_id)
        config = getattr(request.runtime, "config", None)
        scope = scope_of(self.dispatcher, config, request.state, call_id, outside=self._outside)
        return Call(self, request, call, scope)


class _Stopping(_Guarding):
    """The shape that also ends the loop after a round that asks to stop."""

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the agent when the last round of tool calls asked to stop, with the
        message of the tool that stopped it last."""
        return stop_update(state["messages"], self.dispatcher.round_stops)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return self.before_model(state, runtime)


def _shape(middleware: ToolguardMiddleware) -> type[ToolguardMiddleware]:
    if middleware._only is not None and not middleware._only:
        return ToolguardMiddleware  # no tools: no hook, the agent is built as without it
    return _Stopping if middleware._stops() else _Guarding


def _may_stop(policy: ToolPolicy) -> bool:
    return_direct = policy.return_direct  # resolved: a ReturnDirect
    return isinstance(return_direct, ReturnDirect) and return_direct.mode != "never"


def _names(tools: Sequence[BaseTool | Callable[..., Any] | str | dict[str, Any]]) -> list[str]:
    """The names of ``create_agent``'s tools as LangChain names them (a function by its
    ``__name__``); a provider's built-in tool (a dict) runs nowhere here."""
    if isinstance(tools, str):
        raise TypeError("ToolguardMiddleware(tools=...) takes a list of tools or tool names")
    names = []
    for tool in tools:
        if isinstance(tool, str):
            names.append(tool)
        elif isinstance(tool, BaseTool):
            names.append(tool.name)
        elif callable(tool):
            names.append(getattr(tool, "__name__", repr(tool)))
        elif not isinstance(tool, dict):  # a dict: a provider's built-in tool
            raise TypeError(
                "ToolguardMiddleware(tools=...) takes the agent's tools (LangChain tools, "
                f"functions or tool names), not {type(tool).__name__}"
            )
    return names
