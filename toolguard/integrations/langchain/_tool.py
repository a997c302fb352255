"""toolguard tools as LangChain tools: :class:`ToolguardTool` and ``as_langchain_tool(s)``.

Part of :mod:`toolguard.integrations.langchain` (which re-exports the public names).

LangChain's injection. A toolguard tool's parameters of LangChain's injection types
(``Annotated[..., InjectedState]``, ``InjectedStore``, ``InjectedToolCallId``,
``ToolRuntime``, ``RunnableConfig``) are out of the schema the model sees (the core
leaves them out). The LangChain tool declares them, with their annotations as
written, in its *input* schema (``get_input_schema``), which is where LangGraph's
``ToolNode`` looks for what to inject, so ``ToolNode`` supplies them exactly as for
one of LangChain's own tools, and strips whatever the model sent under those names.
The call id comes with the call, the ``RunnableConfig`` with the run. The tool also
asks ``ToolNode`` for the ``ToolRuntime`` (under :data:`RUNTIME` unless it takes one
itself): its state names the model step of the call, and its config the thread.

LangChain's return values. A ``Command``, a ``ToolMessage``, a list of those, a list
of content blocks, and with ``response_format="content_and_artifact"`` a
``(content, artifact)`` pair reach LangChain as the tool returned them, on success.
"""

from __future__ import annotations

import inspect
import threading
import typing
import warnings
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, Final, Literal

import attrs
import pydantic
from langchain_core.callbacks import Callbacks
from langchain_core.messages import ToolMessage
from langchain_core.messages.tool import ToolOutputMixin
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId
from langchain_core.tools.base import _format_output
from langgraph.prebuilt import ToolRuntime
from langgraph.runtime import get_runtime
from pydantic import PrivateAttr
from typing_extensions import TypedDict, Unpack

from toolguard._dispatcher import Dispatcher
from toolguard._tool import AnyTool, BoundTool, Tool
from toolguard._values import Output, ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError
from toolguard.integrations._common import guarded
from toolguard.integrations.langchain._conversation import Scope
from toolguard.integrations.langchain._messages import (
    decided,
    is_native,
    message_content,
    native_text,
    tool_message,
)

__all__ = [
    "GUARDED",
    "RUNTIME",
    "LangChainToolOptions",
    "ToolguardTool",
    "ToolguardWarning",
    "as_langchain_tool",
    "as_langchain_tools",
    "graph_context",
]

RUNTIME: Final = "toolguard_runtime"
"""The input-schema field under which ``ToolNode`` hands a toolguard tool the
``ToolRuntime``, when the tool does not take one itself."""


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


def _checked_options(options: Mapping[str, Any], adapter: str) -> dict[str, Any]:
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


# --- LangChain's injection ----------------------------------------------------------------


def _annotated_with(annotation: Any, marker: type) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        meta is marker
        or isinstance(meta, marker)
        or (isinstance(meta, type) and issubclass(meta, marker))
        for meta in annotation.__metadata__
    )


@attrs.frozen
class Injection:
    """How LangChain supplies one toolguard tool's framework parameters."""

    from_graph: tuple[str, ...]  # ToolNode fills these: state, store, runtime, ...
    call_id: tuple[str, ...]  # the tool call's id
    config: tuple[str, ...]  # the run's RunnableConfig
    runtime: str  # where ToolNode puts the ToolRuntime
    schema: type[pydantic.BaseModel]

    @property
    def filled(self) -> frozenset[str]:
        """Every key ToolNode adds to the model's arguments."""
        return frozenset((*self.from_graph, *self.call_id, self.runtime))


def injection(tool: AnyTool) -> Injection:
    """Read a toolguard tool's LangChain parameters; refuse another framework's.

    A parameter another framework supplies (Pydantic AI's ``RunContext``...) is
    refused at conversion unless it has a default (LangChain never supplies it).
    """
    from_graph: list[str] = []
    call_id: list[str] = []
    config: list[str] = []
    runtime: str | None = None
    fields: dict[str, Any] = {}
    for parameter in tool.spec.arguments.framework:
        if parameter.framework != "langchain":
            if parameter.has_default:
                continue
            raise ToolDefinitionError(
                f"tool {tool.name!r} takes {parameter.framework}'s {parameter.kind} "
                f"(parameter {parameter.name!r}), which LangChain cannot supply; run it "
                f"through toolguard.integrations for {parameter.framework}, or give the "
                "parameter a default"
            )
        annotation = parameter.annotation
        default = None if parameter.has_default else ...
        if parameter.kind == "RunnableConfig":
            config.append(parameter.name)
            continue
        if _annotated_with(annotation, InjectedToolCallId):
            call_id.append(parameter.name)
        else:
            from_graph.append(parameter.name)
            if runtime is None and parameter.marker.endswith("._DirectlyInjectedToolArg"):
                runtime = parameter.name
        fields[parameter.name] = (annotation, default)
    if runtime is None:
        runtime = RUNTIME
        fields[RUNTIME] = (ToolRuntime, None)
    return Injection(
        tuple(from_graph), tuple(call_id), tuple(config), runtime, _schema(tool.name, fields)
    )


def _schema(name: str, fields: dict[str, tuple[Any, Any]]) -> type[pydantic.BaseModel]:
    """A model of the injected parameters, for ``ToolNode`` to read, never to validate.

    Its validator is never built (a ``ToolRuntime`` or a store need not have a pydantic
    schema); ``ToolNode`` reads the annotations from the signature, given here.
    """
    make_model: Any = pydantic.create_model
    with warnings.catch_warnings():  # a field that shadows a BaseModel attribute is fine here
        warnings.simplefilter("ignore")
        schema: type[pydantic.BaseModel] = make_model(
            f"{name}_injected",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, defer_build=True),
            **fields,
        )
    parameters = [
        inspect.Parameter(
            field,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=annotation,
            default=inspect.Parameter.empty if default is ... else default,
        )
        for field, (annotation, default) in fields.items()
    ]
    schema.__signature__ = inspect.Signature(parameters, return_annotation=None)
    return schema


@attrs.frozen
class Injected:
    """What one call brought for the framework parameters, and the ``ToolRuntime``."""

    values: dict[str, Any]
    runtime: ToolRuntime[Any, Any] | None


# --- the value a tool returned ------------------------------------------------------------

_NOTHING: Final = object()


class _Kept:
    __slots__ = ("response_format", "value")

    def __init__(self, response_format: str) -> None:
        self.response_format = response_format
        self.value: Any = _NOTHING


# The adapter asks the dispatcher to run the tool, which turns the value into
# toolguard's content; a LangChain value must reach LangChain as it was returned.
# Under an adapter call the tool's function keeps such a value here (per task: a
# dispatcher may be shared), and gives toolguard its text instead.
_KEPT: ContextVar[_Kept | None] = ContextVar("toolguard_langchain_kept", default=None)
_KEEPING_LOCK: Final = threading.Lock()


def _keep(value: Any) -> Any:
    kept = _KEPT.get()
    if kept is not None and is_native(value, kept.response_format):
        kept.value = value
        return Output(content=native_text(value))
    return value


def keep_native_values(dispatcher: Dispatcher, name: str) -> None:
    """Make ``name``'s function (as the dispatcher runs it) keep LangChain's values.

    The dispatcher has no public way to hand back the value a tool returned, so this
    wraps the function in its runner entry, once; outside an adapter call the wrapper
    changes nothing.
    """
    with _KEEPING_LOCK:
        entry = dispatcher._runner.entries[name]
        function = entry.function
        if getattr(function, "_toolguard_langchain_keeps", False):
            return
        kept: Callable[..., Any]
        if entry.is_async:

            async def keeping_async(*args: Any, **kwargs: Any) -> Any:
                return _keep(await function(*args, **kwargs))

            kept = keeping_async
        else:

            def keeping(*args: Any, **kwargs: Any) -> Any:
                return _keep(function(*args, **kwargs))

            kept = keeping
        setattr(kept, "_toolguard_langchain_keeps", True)  # noqa: B010 - a function's own mark
        entry.function = kept


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
        checked = _checked_options(options, "ToolguardTool")
        spec = dispatcher.tools[name]
        found = injection(spec)
        checked.setdefault("description", spec.description)
        super().__init__(name=name, args_schema=spec.parameters, **checked)
        self._dispatcher = dispatcher
        self._injection = found
        keep_native_values(dispatcher, name)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    @property
    def _injected_args_keys(self) -> frozenset[str]:
        # what LangChain leaves out of the inputs its callbacks and tracers see
        return self._injection.filled

    def get_input_schema(self, config: RunnableConfig | None = None) -> type[pydantic.BaseModel]:
        """The parameters LangGraph injects (what ``ToolNode`` reads to inject them).

        The model's schema is ``args_schema`` (``tool_call_schema``).
        """
        return self._injection.schema

    def _to_args_and_kwargs(
        self, tool_input: str | dict[str, Any], tool_call_id: str | None
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        # LangChain's hook between the raw input and ``_run``: skip its parsing and
        # hand toolguard the model's arguments exactly as sent, with the call id.
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
        kept = _Kept(self.response_format)
        token = _KEPT.set(kept)
        try:
            result = scope.dispatch(call, graph_context(injected.runtime), values)
        finally:
            _KEPT.reset(token)
        return self._answer(result, kept.value, injected.runtime)

    async def _arun(self, call: ToolCall, injected: Injected, config: RunnableConfig) -> Any:
        values, scope = self._prepare(injected, config, call)
        kept = _Kept(self.response_format)
        token = _KEPT.set(kept)
        try:
            result = await scope.adispatch(call, graph_context(injected.runtime), values)
        finally:
            _KEPT.reset(token)
        return self._answer(result, kept.value, injected.runtime)

    def _prepare(
        self, injected: Injected, config: RunnableConfig | None, call: ToolCall
    ) -> tuple[dict[str, Any], Scope]:
        values = injected.values
        if self._injection.config:
            values = {**values, **dict.fromkeys(self._injection.config, config)}
        runtime = injected.runtime
        state = runtime.state if runtime is not None else None
        return values, Scope.of(self._dispatcher, config, state, call.id)

    def _answer(self, result: ToolResult, value: Any, runtime: ToolRuntime[Any, Any] | None) -> Any:
        if result.return_direct and runtime is not None and not GUARDED.get():
            self._warn_not_stopping()
        pair = self.response_format == "content_and_artifact"
        if value is _NOTHING or result.is_error:
            answer: Any = (
                message_content(result.content) if result.call_id is None else tool_message(result)
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
        else:
            content, artifact = value if isinstance(value, tuple) else (value, None)
            answer = _format_output(content, artifact, result.call_id, self.name, "success")
            if isinstance(answer, ToolMessage):
                answer = decided(answer, result.return_direct)
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


def as_langchain_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    **options: Unpack[LangChainToolOptions],
) -> ToolguardTool:
    """A LangChain ``BaseTool`` that runs ``tool`` under toolguard (see :class:`ToolguardTool`).

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults (``configure()``) and its own policy. With one, ``tool`` (or its name)
    must be one of that dispatcher's tools, and the dispatcher's agent defaults and
    overrides apply too. ``options`` are LangChain's own tool options
    (:class:`LangChainToolOptions`: ``description``, ``tags``, ``metadata``,
    ``extras``, ``verbose``, ``callbacks``, ``response_format``).
    """
    checked = _checked_options(options, "as_langchain_tool")
    dispatcher, name = guarded(tool, dispatcher, adapter="as_langchain_tool")
    return ToolguardTool(dispatcher=dispatcher, name=name, **checked)


def as_langchain_tools(
    dispatcher: Dispatcher, **options: Unpack[LangChainToolOptions]
) -> list[ToolguardTool]:
    """Every tool of ``dispatcher`` as a LangChain tool, in declaration order
    (``options`` as for :func:`as_langchain_tool`, for each)."""
    checked = _checked_options(options, "as_langchain_tools")
    if "description" in checked:
        raise TypeError("as_langchain_tools() takes no description=...: each tool has its own")
    return [ToolguardTool(dispatcher=dispatcher, name=name, **checked) for name in dispatcher.tools]
