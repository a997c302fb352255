"""toolguard for LangChain and LangGraph (``pip install "toolguard-agents[langchain]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.langchain import ToolguardMiddleware, as_langchain_tools

    guard = Dispatcher(
        [search, lookup_order],
        external_tools=[plain_tool.name],  # a LangChain tool, named in overrides below
        overrides={"search*": ToolPolicy(...), plain_tool.name: ToolPolicy(...)},
    )
    agent = create_agent(
        model,
        tools=[*as_langchain_tools(guard), plain_tool],
        middleware=[ToolguardMiddleware(guard)],
    )

* :func:`as_langchain_tool` turns a toolguard tool into a LangChain ``BaseTool``.
  The framework runs it; toolguard validates the arguments (the tool's JSON Schema
  is its ``args_schema``, so LangChain does not validate them itself), runs it,
  and answers every call with a ``ToolMessage`` carrying toolguard's content
  (``status="error"`` on failure, the ``artifact`` on ``artifact``).
* :class:`ToolguardMiddleware` applies a dispatcher's policy (agent defaults and
  overrides) to *any* tool of a ``create_agent`` agent, toolguard's or not: a tool
  that raises gets toolguard's answer through ``Dispatcher.handle_error``. It also
  ends the agent loop when toolguard's ``return_direct`` asks for it. The
  middleware builds no policy of its own: name the agent's other tools in the
  dispatcher's ``external_tools`` and its ``overrides`` may name them exactly.

``return_direct``. LangChain's ``BaseTool.return_direct`` is a static flag: the
agent stops after the tool whether it succeeded or failed. toolguard stops, by
default, only on success, so the static flag is never set. Instead every
``ToolMessage`` toolguard answers carries its decision in
``response_metadata["toolguard"]`` (never sent to a model), and
:class:`ToolguardMiddleware` reads it in a ``before_model`` hook, the first node
after the tools, and jumps to the end of the agent when the round asks to stop
(the dispatcher's ``return_direct_mode``, ``"any"`` or ``"all"``). In a graph of
your own, route with :func:`stop_requested`.

Control flow. Importing this module registers LangGraph's ``GraphBubbleUp``
(``GraphInterrupt`` from ``interrupt()``, ``ParentCommand`` from
``Command(graph=Command.PARENT)``) and, per instance, the ``ValidationError`` of a
resume value that fails an interrupt's ``response_schema``
(``langgraph.errors.is_invalid_resume``) with :func:`toolguard.register_control_flow`,
so they pass through toolguard untouched.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, Literal

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ToolCallRequest,
        hook_config,
    )
    from langchain_core.messages import AIMessage, AnyMessage, ToolMessage
    from langchain_core.tools import BaseTool
    from langgraph.errors import GraphBubbleUp
    from langgraph.runtime import Runtime, get_runtime
    from langgraph.types import Command
    from pydantic import PrivateAttr
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.langchain needs langchain, langchain-core and langgraph 1.x: "
        'pip install "toolguard-agents[langchain]"'
    ) from error

try:
    from langgraph.errors import is_invalid_resume
except ImportError:  # pragma: no cover - older langgraph never marks resume errors

    def is_invalid_resume(error: BaseException) -> bool:
        return False


from toolguard._decorator import BoundTool, Tool
from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._policy import ReturnDirect
from toolguard._precedence import Setting
from toolguard._rounds import round_stops
from toolguard._values import Content, Image, ToolCall, ToolResult
from toolguard.errors import ToolCallFailed, register_control_flow
from toolguard.integrations._common import guarded

__all__ = [
    "METADATA_KEY",
    "ToolguardMiddleware",
    "ToolguardTool",
    "as_langchain_tool",
    "as_langchain_tools",
    "stop_requested",
    "tool_message",
]

register_control_flow(GraphBubbleUp, check=is_invalid_resume)

METADATA_KEY: Final = "toolguard"
"""Key in ``ToolMessage.response_metadata`` of toolguard's decision about a call:
``{"return_direct": bool, "error_id": str | None}``. Chat model integrations send a
tool result's content and call id, not its ``response_metadata`` (langchain-openai
keeps only ``content``, ``role`` and ``tool_call_id``)."""


# --- results -> messages ---------------------------------------------------------------


def _content(content: Content) -> str | list[str | dict[str, Any]]:
    """toolguard's content as LangChain message content (standard content blocks)."""
    if isinstance(content, str):
        return content
    return [
        {"type": "image", "base64": block.data, "mime_type": block.media_type}
        if isinstance(block, Image)
        else {"type": "text", "text": block.text}
        for block in content
    ]


def tool_message(result: ToolResult) -> ToolMessage:
    """The ``ToolMessage`` that answers ``result``'s call.

    ``content`` is toolguard's content; ``status`` is ``"error"`` for failures;
    ``artifact`` is the result's artifact; ``response_metadata["toolguard"]`` holds
    ``return_direct`` and ``error_id``. The result must carry the call id.
    """
    if result.call_id is None:
        raise ValueError("a ToolMessage answers a tool call; this result has no call id")
    return ToolMessage(
        content=_content(result.content),
        tool_call_id=result.call_id,
        name=result.name,
        status="error" if result.is_error else "success",
        artifact=result.artifact,
        response_metadata={
            METADATA_KEY: {"return_direct": result.return_direct, "error_id": result.error_id}
        },
    )


def stop_requested(messages: Sequence[AnyMessage], *, mode: Literal["any", "all"] = "any") -> bool:
    """Whether the last round of tool calls asked the agent loop to stop.

    The round is the ``ToolMessage``s after the last ``AIMessage``; it asks to stop
    when any (``mode="any"``) or every (``mode="all"``) one of them carries
    toolguard's ``return_direct``. False when the conversation does not end with
    that round (say, a new human message came after it).
    """
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], AIMessage):
            answers = messages[index + 1 :]
            break
    else:
        return False
    if not answers or not all(isinstance(message, ToolMessage) for message in answers):
        return False
    return round_stops([_asked_to_stop(message) for message in answers], mode)


def _asked_to_stop(message: AnyMessage) -> bool:
    decision = message.response_metadata.get(METADATA_KEY)
    return isinstance(decision, dict) and decision.get("return_direct") is True


def _graph_context() -> Any:
    """The LangGraph runtime ``context`` of the run calling the tool, if any."""
    try:
        runtime = get_runtime()
    except (RuntimeError, KeyError):  # not inside a graph run
        return None
    return getattr(runtime, "context", None)


# --- toolguard tools as LangChain tools ------------------------------------------------


class ToolguardTool(BaseTool):
    """A toolguard tool that LangChain runs, with toolguard deciding every answer.

    Guarantees, whether LangChain calls ``invoke`` or ``ainvoke``:

    * the model's arguments are validated by toolguard (``args_schema`` is
      toolguard's JSON Schema, which LangChain does not validate), so a bad call
      gets toolguard's message naming the argument, and the tool does not run;
    * a call that comes with a tool call id (as from ``ToolNode``/``create_agent``)
      is answered with :func:`tool_message`, failures included: nothing but
      control flow (LangGraph's interrupts) and ``ToolCallFailed`` (a handler chose
      to fail the invocation) escapes;
    * ``InjectedCallId`` parameters get that id; ``Injected`` parameters get the
      LangGraph runtime ``context`` (``agent.invoke(..., context=...)``);
    * a call without an id (``tool.invoke({"x": 1})``) returns toolguard's content;
    * on the async path (``ainvoke``) a sync tool runs on the dispatcher's thread
      pool (``adispatch(..., offload=True)``), never blocking the event loop, and
      async handlers in its chain are awaited.

    The static ``return_direct`` flag stays ``False``; see the module docstring.
    """

    _dispatcher: Dispatcher = PrivateAttr()

    def __init__(self, *, dispatcher: Dispatcher, name: str) -> None:
        guarded = dispatcher.tools[name]
        super().__init__(
            name=name,
            description=guarded.description,
            args_schema=guarded.parameters,
        )
        self._dispatcher = dispatcher

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # LangChain's hook between the raw input and ``_run``: skip its parsing and
        # hand toolguard the model's arguments exactly as sent, with the call id.
        return (), {"call": ToolCall(name=self.name, arguments=tool_input, id=tool_call_id)}

    def _run(self, call: ToolCall) -> ToolMessage | str | list[str | dict[str, Any]]:
        return self._answer(self._dispatcher.dispatch(call, context=_graph_context()))

    async def _arun(self, call: ToolCall) -> ToolMessage | str | list[str | dict[str, Any]]:
        result = await self._dispatcher.adispatch(call, context=_graph_context(), offload=True)
        return self._answer(result)

    @staticmethod
    def _answer(result: ToolResult) -> ToolMessage | str | list[str | dict[str, Any]]:
        return _content(result.content) if result.call_id is None else tool_message(result)


def as_langchain_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardTool:
    """A LangChain ``BaseTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults (``configure()``) and its own policy. With one, ``tool`` (or its name)
    must be one of that dispatcher's tools, and the dispatcher's agent defaults and
    overrides apply too.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_langchain_tool")
    return ToolguardTool(dispatcher=dispatcher, name=name)


def as_langchain_tools(dispatcher: Dispatcher) -> list[ToolguardTool]:
    """Every tool of ``dispatcher`` as a LangChain tool, in declaration order."""
    return [ToolguardTool(dispatcher=dispatcher, name=name) for name in dispatcher.tools]


# --- any tool of a create_agent agent ---------------------------------------------------

_ToolOutcome = ToolMessage | Command[Any]


class ToolguardMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Apply a toolguard policy to every tool of a ``create_agent`` agent.

    ``ToolguardMiddleware(dispatcher)``; without one, an empty dispatcher under the
    global defaults. For an override on one plain tool by its exact name, list
    that name in the dispatcher's ``external_tools``
    (``Dispatcher([], external_tools=["search"], overrides={"search": ...})``).
    Guarantees:

    * a tool that raises, toolguard's or not (a plain LangChain ``@tool``), is
      answered through ``dispatcher.handle_error``: the precedence chain (overrides
      matching the tool's name, the tool's own policy if it is one of the
      dispatcher's, agent defaults, global, built-in), hidden causes logged once,
      and a ``ToolMessage(status="error")`` with toolguard's content;
    * LangGraph's control flow (interrupts, parent commands, a resume value that
      fails an interrupt's schema) and ``ToolCallFailed`` propagate untouched;
    * a ``ToolMessage`` that answers a call gets toolguard's ``return_direct``
      decision (a :class:`ToolguardTool`'s own decision is kept), and the agent
      loop ends after a round that asks to stop (:func:`stop_requested` with the
      dispatcher's ``return_direct_mode``), with that round's messages last.

    Only exceptions reach the middleware: what the tool or LangChain already turned
    into a message (argument validation of plain tools by ``ToolNode``, a tool's
    own ``handle_tool_error``) is left as it is, and so is every message's content
    (``max_result_chars`` does not apply to plain tools). ``Command`` results are
    untouched.
    """

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        super().__init__()
        self.dispatcher = dispatcher if dispatcher is not None else Dispatcher([])
        self.tools = []

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _ToolOutcome]
    ) -> _ToolOutcome:
        """Run the tool; answer its failure, or mark its message, with toolguard's policy."""
        call = _tool_call(request)
        try:
            outcome = handler(request)
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):  # interrupts, parent commands, a bad resume value
                raise
            return tool_message(self.dispatcher.handle_error(call, error))
        return self._decided(call, outcome)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_ToolOutcome]],
    ) -> _ToolOutcome:
        """Async :meth:`wrap_tool_call` (async handlers allowed)."""
        call = _tool_call(request)
        try:
            outcome = await handler(request)
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):
                raise
            return tool_message(await self.dispatcher.ahandle_error(call, error))
        return self._decided(call, outcome)

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the agent when the last round of tool calls asked to stop."""
        if stop_requested(state["messages"], mode=self.dispatcher.return_direct_mode):
            return {"jump_to": "end"}
        return None

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return self.before_model(state, runtime)

    def _decided(self, call: ToolCall, outcome: _ToolOutcome) -> _ToolOutcome:
        """``outcome`` with toolguard's ``return_direct`` decision, unless it has one.

        The decision is the chain's ``return_direct`` for that name, applied as the
        dispatcher applies it to its own results. Not ``Dispatcher.handle_result``:
        that takes a *successful* value and makes the content, while this message is
        already written (its content is kept as is) and may be an error
        (``status="error"``), where ``"always"`` and predicates still decide.
        """
        if not isinstance(outcome, ToolMessage) or METADATA_KEY in outcome.response_metadata:
            return outcome
        result = ToolResult(
            call_id=call.id,
            name=call.name,
            content=outcome.text,
            is_error=outcome.status == "error",
            artifact=outcome.artifact,
        )
        stop = self._return_direct(call.name).applies(result)
        metadata = {
            **outcome.response_metadata,
            METADATA_KEY: {"return_direct": stop, "error_id": None},
        }
        return outcome.model_copy(update={"response_metadata": metadata})

    def _return_direct(self, name: str) -> ReturnDirect:
        setting = self.dispatcher.explain(name, foreign=True)["return_direct"]
        assert isinstance(setting, Setting)
        value: ReturnDirect = setting.value
        return value


def _tool_call(request: ToolCallRequest) -> ToolCall:
    call = request.tool_call
    return ToolCall(name=call["name"], arguments=call["args"], id=call["id"])
