"""toolguard for LangChain and LangGraph (``pip install "toolguard-agents[langchain]"``).

Guard an existing ``create_agent`` app by adding one line, the middleware::

    from toolguard.integrations.langchain import ToolguardMiddleware

    agent = create_agent(
        model,
        tools=tools,  # LangChain tools, unchanged
        middleware=[ToolguardMiddleware(Dispatcher([], external_tools=[t.name for t in tools]))],
    )

or write tools with toolguard's ``@tool`` and convert them::

    agent = create_agent(
        model, tools=as_langchain_tools(guard), middleware=[ToolguardMiddleware(guard)]
    )

* :class:`ToolguardMiddleware` applies a dispatcher's policy to *every* tool of a
  ``create_agent`` agent, toolguard's or not (see its docstring).
* :func:`as_langchain_tool` turns a toolguard tool into a LangChain ``BaseTool``
  (:class:`ToolguardTool`): LangChain runs it, toolguard validates, runs and answers.

``return_direct``. LangChain's ``BaseTool.return_direct`` is a static flag: the
agent stops after the tool whether it succeeded or failed. toolguard stops, by
default, only on success, so the static flag is never set. Instead every
``ToolMessage`` toolguard answers carries its decision in
``response_metadata["toolguard"]`` (never sent to a model), and
:class:`ToolguardMiddleware` reads it in a ``before_model`` hook, the first node
after the tools, and jumps to the end of the agent when the round asks to stop
(the dispatcher's ``return_direct_mode``, ``"any"`` or ``"all"``), with the stopping
tool's message last. In a graph of your own, route with :func:`stop_requested`.

Control flow. Importing this module registers LangGraph's ``GraphBubbleUp``
(``GraphInterrupt`` from ``interrupt()``, ``ParentCommand`` from
``Command(graph=Command.PARENT)``) and, per instance, the ``ValidationError`` of a
resume value that fails an interrupt's ``response_schema``
(``langgraph.errors.is_invalid_resume``) with :func:`toolguard.register_control_flow`,
so they pass through toolguard untouched.
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

try:
    from langchain.agents.middleware import (
        AgentMiddleware,
        AgentState,
        ToolCallRequest,
        hook_config,
    )
    from langchain_core.messages import ToolMessage
    from langchain_core.tools import BaseTool, ToolException
    from langgraph.errors import GraphBubbleUp
    from langgraph.runtime import Runtime
    from langgraph.types import Command
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


from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._text import shown
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed, register_control_flow
from toolguard.integrations.langchain._conversation import Scope
from toolguard.integrations.langchain._messages import (
    METADATA_KEY,
    as_toolguard_content,
    decided,
    message_content,
    stop_requested,
    stop_update,
    tool_message,
)
from toolguard.integrations.langchain._plain import (
    Once,
    PlainTool,
    Probe,
    Raised,
    unknown_tool,
    visible,
)
from toolguard.integrations.langchain._tool import (
    GUARDED,
    LangChainToolOptions,
    ToolguardTool,
    ToolguardWarning,
    as_langchain_tool,
    as_langchain_tools,
)
from toolguard.policy._precedence import Setting
from toolguard.policy._resilience import Retry
from toolguard.policy._values import ReturnDirect
from toolguard.runner._attempts import (
    Attempts,
    acall_with_timeout,
    call_with_timeout,
    retry_async,
    retry_sync,
)

__all__ = [
    "METADATA_KEY",
    "LangChainToolOptions",
    "ToolguardMiddleware",
    "ToolguardTool",
    "ToolguardWarning",
    "as_langchain_tool",
    "as_langchain_tools",
    "stop_requested",
    "tool_message",
]

register_control_flow(GraphBubbleUp, check=is_invalid_resume)

_Outcome = ToolMessage | Command[Any]
_PLAIN_CACHE: Final = 1024  # plain tools remembered per middleware (dynamic tools come and go)


class ToolguardMiddleware(AgentMiddleware[AgentState[Any], Any, Any]):
    """Apply a toolguard policy to every tool of a ``create_agent`` agent.

    ``ToolguardMiddleware(dispatcher)``; without one, an empty dispatcher under the
    global defaults. Name the agent's plain tools in the dispatcher's
    ``external_tools`` (``Dispatcher([], external_tools=["search"], overrides=...)``):
    overrides may then name them exactly and ``dispatcher.explain("search")`` shows
    what applies. Guarantees, for a plain LangChain tool (an ``@tool`` of
    LangChain's, any ``BaseTool``):

    * its failures are answered by the dispatcher's policy: overrides matching its
      name, the tool's own policy when the name is one of the dispatcher's tools,
      agent defaults, global, built-in; hidden causes logged once with the error id
      the model sees; a ``ToolMessage(status="error")`` with toolguard's content.
      A pydantic ``ValidationError`` its body raises is such a failure (``ToolNode``
      would have sent its text to the model as a bad-arguments message);
    * bad arguments from the model are the model's mistake: toolguard's bounded
      message naming each problem, and the tool does not run;
    * LangChain's ``ToolException`` is model-visible (LangChain's "tell the model
      this"), its cause hidden and logged; ``tool_exceptions="hidden"`` treats it as
      any other exception;
    * ``retries``, ``timeout`` and ``breaker`` apply (the tool call is run again, on
      a worker thread with a deadline on the sync path, a task on the async one), and
      ``max_result_chars`` bounds text content;
    * a call of a tool the agent does not have gets toolguard's bounded answer
      listing the tools (a tool an inner middleware supplies is run as usual);
    * in a run with a thread id (``config["configurable"]["thread_id"]``), calls run
      in ``dispatcher.session(id=thread_id)``: breakers and model-retry budgets count
      per thread, the calls of one ``AIMessage`` as one model step.

    For every tool, toolguard's included: LangGraph's control flow (interrupts, parent
    commands, a resume value that fails an interrupt's schema) and ``ToolCallFailed``
    propagate untouched; a ``ToolMessage`` answering a call gets toolguard's
    ``return_direct`` decision (a :class:`ToolguardTool`'s own decision is kept), and
    the loop ends after a round that asks to stop (:func:`stop_requested` with the
    dispatcher's ``return_direct_mode``), with the stopping tool's message last.
    ``Command`` results are left as they are.

    Warned once per tool (:class:`ToolguardWarning`): a plain tool with LangChain's
    ``handle_tool_error`` set, and any exception that something inside this
    middleware answered before toolguard could (``ToolRetryMiddleware``'s default
    ``on_failure="continue"``): those messages reach the model unguarded.
    """

    def __init__(
        self,
        dispatcher: Dispatcher | None = None,
        *,
        tool_exceptions: Literal["visible", "hidden"] = "visible",
    ) -> None:
        super().__init__()
        if tool_exceptions not in ("visible", "hidden"):
            raise ValueError(
                f"ToolguardMiddleware(tool_exceptions={tool_exceptions!r}): "
                "use 'visible' (LangChain's ToolException is for the model) or 'hidden'"
            )
        self.dispatcher = dispatcher if dispatcher is not None else Dispatcher([])
        self.tool_exceptions = tool_exceptions
        self.tools = []
        self._plain: dict[int, PlainTool] = {}
        self._plain_lock = threading.Lock()
        self._once = Once()

    # --- the tools node ------------------------------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], _Outcome]
    ) -> _Outcome:
        """Run the tool under the dispatcher's policy (see the class docstring)."""
        call = _tool_call(request)
        if isinstance(request.tool, ToolguardTool):  # it answers for itself
            token = GUARDED.set(True)
            try:
                return self._decided(call, handler(request))
            finally:
                GUARDED.reset(token)
        scope, probe, settings = self._prepare(request, call)
        blocked = scope.admit(call)
        if blocked is not None:
            return tool_message(blocked)
        attempt = self._attempt(request, probe, handler, call, settings.timeout)
        try:
            try:
                outcome = attempt()
            except Exception as first:
                retry = settings.retries
                if retry is None or not retry.retryable(first):
                    raise
                outcome = retry_sync(
                    retry, first, attempt, tool=call.name, call_id=call.id, counter=Attempts()
                )
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):  # interrupts, parent commands, a bad resume value
                raise
            return tool_message(scope.handle_error(call, self._cause(error)))
        unknown = self._unknown(request, call, outcome)
        if unknown is not None:
            return tool_message(scope.handle_error(call, unknown))
        if isinstance(outcome, ToolMessage) and outcome.status != "error":
            if METADATA_KEY not in outcome.response_metadata:
                content = as_toolguard_content(outcome.content)
                value = outcome.text if content is None else content
                return self._succeeded(outcome, scope.handle_result(call, value), content, settings)
        elif scope.session is not None and not isinstance(outcome, ToolMessage):
            scope.handle_result(call, "")  # a Command: a success, for the breaker
        return self._answered(call, outcome, probe)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[_Outcome]],
    ) -> _Outcome:
        """Async :meth:`wrap_tool_call` (async handlers allowed)."""
        call = _tool_call(request)
        if isinstance(request.tool, ToolguardTool):
            token = GUARDED.set(True)
            try:
                return self._decided(call, await handler(request))
            finally:
                GUARDED.reset(token)
        scope, probe, settings = self._prepare(request, call)
        blocked = scope.admit(call)
        if blocked is not None:
            return tool_message(blocked)
        attempt = self._aattempt(request, probe, handler, call, settings.timeout)
        try:
            try:
                outcome = await attempt()
            except Exception as first:
                retry = settings.retries
                if retry is None or not retry.retryable(first):
                    raise
                outcome = await retry_async(
                    retry, first, attempt, tool=call.name, call_id=call.id, counter=Attempts()
                )
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):
                raise
            return tool_message(await scope.ahandle_error(call, self._cause(error)))
        unknown = self._unknown(request, call, outcome)
        if unknown is not None:
            return tool_message(await scope.ahandle_error(call, unknown))
        if isinstance(outcome, ToolMessage) and outcome.status != "error":
            if METADATA_KEY not in outcome.response_metadata:
                content = as_toolguard_content(outcome.content)
                value = outcome.text if content is None else content
                result = await scope.ahandle_result(call, value)
                return self._succeeded(outcome, result, content, settings)
        elif scope.session is not None and not isinstance(outcome, ToolMessage):
            await scope.ahandle_result(call, "")
        return self._answered(call, outcome, probe)

    # --- the agent loop ------------------------------------------------------------------

    @hook_config(can_jump_to=["end"])
    def before_model(self, state: AgentState[Any], runtime: Runtime[Any]) -> dict[str, Any] | None:
        """End the agent when the last round of tool calls asked to stop, with the
        message of the tool that stopped it last."""
        return stop_update(state["messages"], self.dispatcher.return_direct_mode)

    @hook_config(can_jump_to=["end"])
    async def abefore_model(
        self, state: AgentState[Any], runtime: Runtime[Any]
    ) -> dict[str, Any] | None:
        """Async :meth:`before_model`."""
        return self.before_model(state, runtime)

    # --- one call's pieces ----------------------------------------------------------------

    def _prepare(
        self, request: ToolCallRequest, call: ToolCall
    ) -> tuple[Scope, Probe | None, _Settings]:
        runtime = request.runtime
        config = getattr(runtime, "config", None)
        scope = Scope.of(self.dispatcher, config, request.state, call.id)
        probe = None if request.tool is None else self._plain_tool(request.tool).probe()
        return scope, probe, _Settings.of(self.dispatcher, call.name)

    def _plain_tool(self, tool: BaseTool) -> PlainTool:
        plain = self._plain.get(id(tool))
        if plain is None or plain.tool is not tool:
            plain = PlainTool(tool)
            with self._plain_lock:
                if len(self._plain) >= _PLAIN_CACHE:
                    self._plain.clear()
                self._plain[id(tool)] = plain
            if tool.handle_tool_error:
                self._once.warn(
                    tool.name,
                    f"LangChain answers the ToolException of tool {tool.name!r} itself "
                    f"(handle_tool_error={tool.handle_tool_error!r}), before toolguard sees "
                    "it: that message reaches the model as LangChain writes it, unlogged, "
                    "and the dispatcher's policy does not apply. Leave handle_tool_error "
                    "unset: ToolguardMiddleware sends a ToolException's message to the model "
                    "(tool_exceptions='visible') and answers everything else by its policy.",
                )
        return plain

    def _attempt(
        self,
        request: ToolCallRequest,
        probe: Probe | None,
        handler: Callable[[ToolCallRequest], _Outcome],
        call: ToolCall,
        timeout: float | None,
    ) -> Callable[[], _Outcome]:
        """One attempt: the handler with the probe, on a thread with a deadline if
        the tool has a timeout; the tool's own exception raised, not the probe's."""
        probed = request if probe is None else request.override(tool=probe.tool)
        pools = self.dispatcher._runner.pools

        def attempt() -> _Outcome:
            try:
                if timeout is None:
                    return handler(probed)
                run = functools.partial(contextvars.copy_context().run, handler, probed)
                return call_with_timeout(pools, run, tool=call.name, seconds=timeout)
            except Raised as raised:
                error = raised.error
            except Exception as other:
                own = None if probe is None else probe.tripped(other)
                if own is None:
                    raise
                error = own
            raise error  # outside the except: the tool's exception keeps its own context

        return attempt

    def _aattempt(
        self,
        request: ToolCallRequest,
        probe: Probe | None,
        handler: Callable[[ToolCallRequest], Awaitable[_Outcome]],
        call: ToolCall,
        timeout: float | None,
    ) -> Callable[[], Awaitable[_Outcome]]:
        """Async :meth:`_attempt`: a task with a deadline if the tool has a timeout."""
        probed = request if probe is None else request.override(tool=probe.tool)
        pools = self.dispatcher._runner.pools

        async def attempt() -> _Outcome:
            try:
                if timeout is None:
                    return await handler(probed)
                return await acall_with_timeout(
                    pools, handler(probed), tool=call.name, seconds=timeout
                )
            except Raised as raised:
                error = raised.error
            except Exception as other:
                own = None if probe is None else probe.tripped(other)
                if own is None:
                    raise
                error = own
            raise error

        return attempt

    def _cause(self, error: Exception) -> Exception:
        """The exception toolguard's chain is asked about."""
        if self.tool_exceptions == "visible" and isinstance(error, ToolException):
            return visible(error)
        return error

    def _unknown(self, request: ToolCallRequest, call: ToolCall, outcome: object) -> Any:
        if request.tool is not None:
            return None
        tools = getattr(request.runtime, "tools", None)
        names = [t.name for t in tools] if isinstance(tools, list) and tools else None
        return unknown_tool(call, outcome, names)

    def _succeeded(
        self, message: ToolMessage, result: ToolResult, content: Any, settings: _Settings
    ) -> ToolMessage:
        """A plain tool's success: toolguard's content when it changed it (cut to
        ``max_result_chars``, made valid UTF-8), and its ``return_direct`` decision."""
        if result.is_error:
            return tool_message(result)
        if content is None:
            if settings.max_result_chars is not None:
                self._once.warn(
                    f"{message.name}:blocks",
                    f"max_result_chars cannot apply to the content of tool {message.name!r}: "
                    "it has content blocks toolguard has no form for (only text and base64 "
                    "images); the content is sent as the tool wrote it.",
                )
            return decided(message, result.return_direct)
        if result.content != content:
            message = message.model_copy(update={"content": message_content(result.content)})
        return decided(message, result.return_direct)

    def _answered(self, call: ToolCall, outcome: _Outcome, probe: Probe | None) -> _Outcome:
        if probe is not None and probe.answered_inside(outcome):
            raised = type(probe.raised).__name__
            self._once.warn(
                call.name,
                f"tool {call.name!r} raised {raised}, and something inside ToolguardMiddleware "
                "answered it before toolguard could: LangChain's handle_tool_error, "
                "ToolRetryMiddleware with on_failure='continue' (its default, which sends "
                "str(exception) to the model), ToolErrorMiddleware, or a ToolNode's "
                "handle_tool_errors. That message reaches the model as written, unlogged. "
                "Use ToolRetryMiddleware(on_failure='error') inside ToolguardMiddleware, or "
                "let toolguard answer.",
            )
        return self._decided(call, outcome)

    def _decided(self, call: ToolCall, outcome: _Outcome) -> _Outcome:
        """``outcome`` with toolguard's ``return_direct`` decision, unless it has one.

        For a message toolguard did not write, an error included (``status="error"``):
        the chain's ``return_direct`` for that name, applied as the dispatcher applies
        it to its own results (``"always"`` and predicates decide for errors too).
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
        return decided(
            outcome, _Settings.of(self.dispatcher, call.name).return_direct.applies(result)
        )


class _Settings:
    """The settings the middleware applies to one plain tool call, by its name."""

    __slots__ = ("max_result_chars", "retries", "return_direct", "timeout")

    def __init__(self, explained: dict[str, Setting | tuple[Setting, ...]]) -> None:
        def value(name: str) -> Any:
            setting = explained[name]
            assert isinstance(setting, Setting)
            return setting.value

        self.timeout: float | None = value("timeout")
        self.retries: Retry | None = value("retries")
        self.max_result_chars: int | None = value("max_result_chars")
        self.return_direct: ReturnDirect = value("return_direct")

    @classmethod
    def of(cls, dispatcher: Dispatcher, name: str) -> _Settings:
        return cls(dispatcher.explain(shown(name), foreign=True))


def _tool_call(request: ToolCallRequest) -> ToolCall:
    call = request.tool_call
    return ToolCall(name=call["name"], arguments=call["args"], id=call["id"])
