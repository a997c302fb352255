"""toolguard tools as LangChain tools: :class:`ToolguardTool`.

Part of :mod:`toolguard.integrations.langchain` (which re-exports the public names,
and ``as_langchain_tool(s)``, which make these).

LangChain runs the tool; toolguard's dispatcher validates the model's arguments, runs
it and answers (``scope.dispatch``, in the call's conversation). LangChain's injection
types are declared for ``ToolNode`` to fill (:mod:`._injection`). LangChain's return
values (a ``Command``, a ``ToolMessage``, a list of those, a list of content blocks,
and with ``response_format="content_and_artifact"`` a ``(content, artifact)`` pair)
reach LangChain as the tool returned them, on success (``ToolResult.value``).

Two of ``BaseTool``'s private names are LangChain's only way in, and
``tests/integrations/test_langchain_private.py`` fails loudly if a release moves them:
``_to_args_and_kwargs`` (the hook between the raw input and ``_run``, which LangChain's
own ``Tool`` and ``StructuredTool`` override: toolguard gets the model's arguments
exactly as sent, with the call id, and validates them itself) and
``_injected_args_keys`` (what LangChain leaves out of the inputs its callbacks see).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Final, Literal

import pydantic
from langchain_core.callbacks import Callbacks
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import get_runtime
from pydantic import PrivateAttr
from typing_extensions import TypedDict, Unpack

from toolguard import Dispatcher, Scope, ToolCall, ToolResult
from toolguard.integrations.langchain._conversation import scope_of
from toolguard.integrations.langchain._injection import Injected, Injection, injection
from toolguard.integrations.langchain._messages import (
    decided,
    is_native,
    message_content,
    tool_message,
)

__all__ = [
    "GUARDED",
    "LangChainToolOptions",
    "ToolguardTool",
    "ToolguardWarning",
    "checked_options",
    "graph_context",
]


class ToolguardWarning(UserWarning):
    """A setup in which toolguard cannot do what it was asked (said once per tool)."""


GUARDED: ContextVar[bool] = ContextVar("toolguard_langchain_guarded", default=False)
"""True while ``ToolguardMiddleware`` runs a call (it ends the loop on return_direct)."""


def graph_context(runtime: ToolRuntime[Any, Any] | None = None) -> Any:
    """The LangGraph runtime ``context`` of the run calling the tool, if any."""
    if runtime is not None:
        return runtime.context
    try:
        found = get_runtime()
    except (RuntimeError, KeyError):  # not inside a graph run
        return None
    return getattr(found, "context", None)


# --- LangChain's tool options -------------------------------------------------------------


class LangChainToolOptions(TypedDict, total=False):
    """LangChain's own ``BaseTool`` options that a toolguard tool takes as they are."""

    description: str
    tags: list[str]
    metadata: dict[str, Any]
    extras: dict[str, Any]
    verbose: bool
    callbacks: Callbacks
    response_format: Literal["content", "content_and_artifact"]


_OPTIONS: Final = frozenset(LangChainToolOptions.__annotations__)
_NOT_OPTIONS: Final = {
    "name": "a toolguard tool's name is its own: @tool(name=...)",
    "args_schema": "toolguard builds the schema from the signature",
    "return_direct": (
        "toolguard decides return_direct, on success only by default: "
        "@tool(return_direct=True) or ToolPolicy(return_direct=...), with ToolguardMiddleware"
    ),
    "handle_tool_error": (
        "toolguard answers every failure of its tools itself (on_error=...); LangChain "
        "never sees an exception to handle"
    ),
    "handle_validation_error": (
        "toolguard validates the model's arguments and answers bad ones itself"
    ),
}


def checked_options(options: Mapping[str, Any], adapter: str) -> dict[str, Any]:
    for key in options:
        if key in _NOT_OPTIONS:
            raise TypeError(f"{adapter}() does not take {key}=...: {_NOT_OPTIONS[key]}")
        if key not in _OPTIONS:
            raise TypeError(
                f"{adapter}() got an unexpected option {key!r}; LangChain options it takes: "
                + ", ".join(sorted(_OPTIONS))
            )
    if options.get("response_format", "content") not in ("content", "content_and_artifact"):
        raise ValueError(
            f"{adapter}(response_format={options['response_format']!r}): "
            "use 'content' or 'content_and_artifact'"
        )
    return dict(options)


# --- the LangChain tool -------------------------------------------------------------------


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
    * LangChain's injection types are supplied by LangGraph and cannot be set by the
      model; ``InjectedCallId`` parameters get the call id and ``Injected`` ones the
      LangGraph runtime ``context`` (``agent.invoke(..., context=...)``);
    * in a run with a thread id, calls run in ``dispatcher.session(id=thread_id)``,
      one model step per ``AIMessage``;
    * LangChain's own return values pass through untouched on success;
    * a call without an id (``tool.invoke({"x": 1})``) returns toolguard's content;
    * on the async path (``ainvoke``) a sync tool runs on the dispatcher's thread
      pool, never blocking the event loop, and async handlers in its chain are awaited.

    The static ``return_direct`` flag stays ``False``; ``ToolguardMiddleware`` ends
    the loop on toolguard's decision (without it, the first stop asked for warns).
    """

    _dispatcher: Dispatcher = PrivateAttr()
    _injection: Injection = PrivateAttr()
    _warned: bool = PrivateAttr(default=False)

    def __init__(
        self, *, dispatcher: Dispatcher, name: str, **options: Unpack[LangChainToolOptions]
    ) -> None:
        checked = checked_options(options, "ToolguardTool")
        spec = dispatcher.tools[name]
        found = injection(spec)
        checked.setdefault("description", spec.description)
        super().__init__(name=name, args_schema=spec.parameters, **checked)
        self._dispatcher = dispatcher
        self._injection = found

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    @property
    def _injected_args_keys(self) -> frozenset[str]:
        # LangChain's private name (see the module): what it leaves out of the inputs
        # its callbacks and tracers see
        return self._injection.filled

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[pydantic.BaseModel]:
        """The parameters LangGraph injects (what ``ToolNode`` reads to inject them).

        The model's schema is ``args_schema`` (``tool_call_schema``).
        """
        return self._injection.schema

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # LangChain's private hook between the raw input and ``_run`` (see the module):
        # skip its parsing and hand toolguard the model's arguments exactly as sent.
        injection = self._injection
        values: dict[str, Any] = {}
        runtime: ToolRuntime[Any, Any] | None = None
        arguments: Any = tool_input
        if isinstance(tool_input, dict):
            found = tool_input.get(injection.runtime)
            if isinstance(found, ToolRuntime):  # ToolNode filled the injected keys
                runtime = found
                filled = injection.filled
                arguments = {k: v for k, v in tool_input.items() if k not in filled}
                values = {k: tool_input[k] for k in injection.from_graph if k in tool_input}
        if tool_call_id is not None:
            values.update(dict.fromkeys(injection.call_id, tool_call_id))
        call = ToolCall(name=self.name, arguments=arguments, id=tool_call_id)
        return (), {"call": call, "injected": Injected(values, runtime)}

    def _run(self, call: ToolCall, injected: Injected, config: RunnableConfig) -> Any:
        values, scope = self._prepare(injected, config, call)
        result = scope.dispatch(
            call, context=graph_context(injected.runtime), framework_values=values
        )
        return self._answer(result, injected.runtime)

    async def _arun(self, call: ToolCall, injected: Injected, config: RunnableConfig) -> Any:
        values, scope = self._prepare(injected, config, call)
        result = await scope.adispatch(
            call, context=graph_context(injected.runtime), offload=True, framework_values=values
        )
        return self._answer(result, injected.runtime)

    def _prepare(
        self, injected: Injected, config: RunnableConfig | None, call: ToolCall
    ) -> tuple[dict[str, Any], Scope]:
        values = injected.values
        if self._injection.config:
            values = {**values, **dict.fromkeys(self._injection.config, config)}
        runtime = injected.runtime
        state = runtime.state if runtime is not None else None
        return values, scope_of(self._dispatcher, config, state, call.id)

    def _answer(self, result: ToolResult, runtime: ToolRuntime[Any, Any] | None) -> Any:
        if result.return_direct and runtime is not None and not GUARDED.get():
            self._warn_not_stopping()
        pair = self.response_format == "content_and_artifact"
        value = result.value
        if result.is_error or not is_native(value, self.response_format):
            answer: Any
            if result.call_id is None:
                answer = message_content(result.content)
            elif result.is_error:
                answer = tool_message(result)  # toolguard's answer, with its decision
            else:
                answer = decided(
                    _message(result, result.content, result.artifact), result.return_direct
                )
            return (answer, None) if pair else answer
        if result.call_id is None:  # no call to answer: the value, as LangChain returns it
            return value if not pair or isinstance(value, tuple) else (value, None)
        if isinstance(value, ToolMessage):
            answer = decided(value, result.return_direct)
        elif isinstance(value, ToolOutputMixin) or (
            isinstance(value, list) and all(isinstance(item, ToolOutputMixin) for item in value)
        ):
            answer = value  # a Command: LangGraph applies it; toolguard adds nothing
        elif not result.return_direct:
            return value  # content (and artifact): LangChain makes the message, as its own
        else:
            content, artifact = value if isinstance(value, tuple) else (value, None)
            answer = decided(_message(result, content, artifact), True)
        return (answer, None) if pair else answer

    def _warn_not_stopping(self) -> None:
        if self._warned:
            return
        self._warned = True
        warnings.warn(
            f"toolguard tool {self.name!r} asked to end the agent loop (return_direct), but "
            "it runs without ToolguardMiddleware, so create_agent calls the model again. "
            "Add middleware=[ToolguardMiddleware(dispatcher)] to create_agent; in a graph "
            "of your own, give its ToolNode wrap_tool_call=middleware.wrap_tool_call and "
            "route on stop_requested(messages).",
            ToolguardWarning,
            stacklevel=2,
        )


def _message(result: ToolResult, content: Any, artifact: Any) -> ToolMessage:
    """A success's ``ToolMessage``, as LangChain makes one (no toolguard metadata)."""
    assert result.call_id is not None
    if not isinstance(content, str | list):
        content = message_content(content)
    return ToolMessage(
        content, artifact=artifact, tool_call_id=result.call_id, name=result.name, status="success"
    )
