"""LlamaIndex tools that answer through toolguard: the shared machinery.

Both kinds of tool here are ``FunctionTool`` s as far as LlamaIndex's agents can
tell, so that the agent hands them its workflow ``Context`` (``_call_tool`` injects
it only into a ``FunctionTool`` that ``requires_context``): toolguard needs it for
the conversation's session and the model step, and a tool that takes ``Context``
itself gets it as before.

``return_direct``. LlamaIndex reads ``tool.metadata.return_direct`` once per call,
right after awaiting ``tool.acall`` in the same task, and stops the run when that
flag is set and the output is not an error. The flag is static in LlamaIndex; here
``metadata`` answers with toolguard's decision about the call that just ran in the
current task (a context variable set by ``acall``), so a stop is decided per call:
on success only, and as a predicate says.
"""

from __future__ import annotations

import base64
import inspect
import uuid
from collections.abc import Awaitable, Mapping
from contextvars import ContextVar
from typing import Any, Final

from llama_index.core.base.llms.types import ContentBlock, ImageBlock, TextBlock
from llama_index.core.instrumentation import dispatcher as instrumentation
from llama_index.core.tools import FunctionTool, ToolMetadata, ToolOutput
from llama_index.core.tools.types import AsyncBaseTool, BaseTool, adapt_to_async_tool
from llama_index.core.workflow import Context

from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._session import Session
from toolguard._values import Content, Image, ToolCall, ToolResult
from toolguard.errors import ToolCallFailed, ToolDefinitionError
from toolguard.integrations._common import declared_schema, refuse_not_run

__all__ = [
    "SESSION_KEY",
    "GuardedTool",
    "ToolguardFunctionTool",
]

SESSION_KEY: Final = "toolguard_session_id"
"""Key in the workflow ``Context``'s store of the toolguard session id of that
conversation: the same ``Context`` across runs is the same session (the id is a
plain string, so it survives ``ctx.to_dict()``/``Context.from_dict``)."""

_CTX: Final = "_toolguard_ctx"  # the parameter the agent fills with its Context

# (tool, stop?) for the call the current task just ran; see the module docstring.
_DECISION: ContextVar[tuple[object, bool] | None] = ContextVar(
    "toolguard_llama_index_decision", default=None
)


def blocks(content: Content) -> list[ContentBlock]:
    """toolguard's content as LlamaIndex content blocks."""
    if isinstance(content, str):
        return [TextBlock(text=content)]
    return [
        ImageBlock(image=base64.b64decode(block.data), image_mimetype=block.media_type)
        if isinstance(block, Image)
        else TextBlock(text=block.text)
        for block in content
    ]


class _Answering(FunctionTool):
    """A ``FunctionTool`` whose ``acall``/``call`` are toolguard's (not LlamaIndex's
    ``fn`` machinery), taking the agent's ``Context`` as ``ctx_name``."""

    def __init__(self, metadata: ToolMetadata, ctx_name: str) -> None:
        async def enter(**kwargs: Any) -> Any:  # what FunctionTool.fn stands for
            return await self.acall(**kwargs)

        enter.__signature__ = inspect.Signature(  # type: ignore[attr-defined]  # read by inspect
            [inspect.Parameter(ctx_name, inspect.Parameter.KEYWORD_ONLY, annotation=Context)]
        )
        super().__init__(async_fn=enter, metadata=metadata)
        self._decided = {
            stop: ToolMetadata(
                description=metadata.description,
                name=metadata.name,
                fn_schema=metadata.fn_schema,
                return_direct=stop,
            )
            for stop in (False, True)
        }

    @property
    def metadata(self) -> ToolMetadata:
        """The tool's metadata; inside the task that just called it, with toolguard's
        ``return_direct`` decision about that call."""
        decided = _DECISION.get()
        if decided is not None and decided[0] is self:
            return self._decided[decided[1]]
        return self._metadata

    def _decide(self, stop: bool) -> None:
        _DECISION.set((self, stop))

    def _output(self, result: ToolResult, kwargs: Mapping[str, Any], raw: Any = None) -> ToolOutput:
        self._decide(result.return_direct and not result.is_error)
        return ToolOutput(
            tool_name=self._metadata.get_name(),
            blocks=blocks(result.content),
            raw_input={"args": (), "kwargs": dict(kwargs)},
            raw_output=raw if raw is not None else result.text,
            is_error=result.is_error,
        )


# --- the conversation: a session per workflow Context ------------------------------------


class Scope:
    """Where a call is answered: the conversation's session (and the model step), or
    the dispatcher itself when the agent gave no ``Context``."""

    __slots__ = ("dispatcher", "session", "step")

    def __init__(self, dispatcher: Dispatcher, session: Session | None, step: str | None):
        self.dispatcher = dispatcher
        self.session = session
        self.step = step

    @classmethod
    async def of(cls, dispatcher: Dispatcher, ctx: Any) -> Scope:
        if not isinstance(ctx, Context):
            return cls(dispatcher, None, None)
        try:
            store = ctx.store
            session_id = await store.get(SESSION_KEY, default=None)
            if not isinstance(session_id, str) or not session_id:
                session_id = uuid.uuid4().hex
                await store.set(SESSION_KEY, session_id)
            iteration = await store.get("num_iterations", default=None)
        except (AttributeError, KeyError, TypeError, ValueError):
            return cls(dispatcher, None, None)  # a typed state that refuses the key
        # The model step: the run (LlamaIndex tags every run with an id) and the
        # agent's iteration within it (one per model message).
        tags = getattr(instrumentation, "active_instrument_tags", None)
        run_id = tags.get().get("llamaindex.run_id") if tags is not None else None
        step = f"{run_id}:{iteration}" if run_id is not None and iteration is not None else None
        return cls(dispatcher, dispatcher.session(id=session_id), step)

    def admit(self, call: ToolCall) -> ToolResult | None:
        return None if self.session is None else self.session.admit(call, step=self.step)

    async def ahandle_error(self, call: ToolCall, error: BaseException) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.ahandle_error(call, error)
        return await self.session.ahandle_error(call, error, step=self.step)

    async def ahandle_result(self, call: ToolCall, value: Any) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.ahandle_result(call, value)
        return await self.session.ahandle_result(call, value, step=self.step)

    async def adispatch(
        self, call: ToolCall, offload: bool, framework_values: Mapping[str, Any]
    ) -> ToolResult:
        if self.session is None:
            return await self.dispatcher.adispatch(
                call, offload=offload, framework_values=framework_values
            )
        return await self.session.adispatch(
            call, offload=offload, framework_values=framework_values, step=self.step
        )


# --- an existing LlamaIndex tool, guarded in place ----------------------------------------


class GuardedTool(_Answering):
    """An existing LlamaIndex tool under a dispatcher's policy (see ``guard``)."""

    def __init__(self, tool: BaseTool, dispatcher: Dispatcher) -> None:
        inner = tool.metadata
        if inner.name is None:
            raise ToolDefinitionError(f"{tool!r} has no name; give its ToolMetadata a name")
        refuse_not_run(
            dispatcher,
            inner.name,
            framework="LlamaIndex",
            instead="write it with @tool and as_llama_index_tool instead",
        )
        self._inner = tool
        self._async_inner: AsyncBaseTool = adapt_to_async_tool(tool)
        self._inner_ctx = getattr(tool, "ctx_param_name", None) if _takes_ctx(tool) else None
        self._dispatcher = dispatcher
        super().__init__(inner, self._inner_ctx or _CTX)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's failures."""
        return self._dispatcher

    @property
    def guarded_tool(self) -> BaseTool:
        """The LlamaIndex tool this one runs."""
        return self._inner

    async def acall(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        ctx = kwargs.pop(self.ctx_param_name or _CTX, None)
        scope = await Scope.of(self._dispatcher, ctx)
        call = ToolCall(name=self._metadata.get_name(), arguments=dict(kwargs))
        refused = scope.admit(call)
        if refused is not None:
            return self._output(refused, kwargs)
        if self._inner_ctx is not None:
            kwargs[self._inner_ctx] = ctx
        return await self._answer(call, self._async_inner.acall(*args, **kwargs), scope)

    def call(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        """Sync call (outside an agent): the tool's own ``call``, answered the same way."""
        from llama_index.core.async_utils import asyncio_run

        return asyncio_run(self.acall(*args, **kwargs))  # type: ignore[no-any-return]  # asyncio_run is untyped

    async def _answer(
        self, call: ToolCall, running: Awaitable[ToolOutput], scope: Scope
    ) -> ToolOutput:
        kwargs = call.arguments if isinstance(call.arguments, dict) else {}
        try:
            output = await running
        except ToolCallFailed:
            raise
        except Exception as error:
            if is_control_flow(error):  # the workflow's own signals: untouched
                raise
            return self._output(await scope.ahandle_error(call, error), kwargs)
        if output.is_error:  # the tool answered a failure itself: its output, no stop
            self._decide(False)
            return output
        result = await scope.ahandle_result(call, output.content)
        self._decide(result.return_direct or self._metadata.return_direct)
        return output


def _takes_ctx(tool: BaseTool) -> bool:
    return isinstance(tool, FunctionTool) and bool(tool.requires_context)


# --- a toolguard tool as a LlamaIndex tool ---------------------------------------------


class ToolguardFunctionTool(_Answering):
    """A toolguard tool that LlamaIndex's agents run (see ``as_llama_index_tool``)."""

    def __init__(self, dispatcher: Dispatcher, name: str, return_direct: bool) -> None:
        guarded = dispatcher.tools[name]
        framework = guarded.spec.arguments.framework
        foreign = [p for p in framework if p.framework != "llama-index"]
        if foreign:
            first = foreign[0]
            raise ToolDefinitionError(
                f"tool {name!r} takes {first.framework}'s {first.kind} (parameter "
                f"{first.name!r}), which LlamaIndex cannot supply; run it through "
                f"toolguard.integrations for {first.framework}, or drop the parameter"
            )
        arguments = guarded.spec.arguments
        for kind, params in (
            ("the call id", arguments.call_id_params),
            ("application context", arguments.context_params),
        ):
            if params:
                raise ToolDefinitionError(
                    f"tool {name!r} takes {kind} (parameter {params[0]!r}), which "
                    "LlamaIndex does not hand a tool; take the workflow Context instead"
                )
        self._dispatcher = dispatcher
        self._context_params = tuple(p.name for p in framework)
        self._offload = not guarded.spec.is_async
        metadata = ToolMetadata(
            name=name,
            description=guarded.description,
            fn_schema=declared_schema(name, guarded.parameters),
            return_direct=return_direct,
        )
        ctx_name = self._context_params[0] if self._context_params else _CTX
        super().__init__(metadata, ctx_name)

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    async def acall(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        ctx = kwargs.pop(self.ctx_param_name or _CTX, None)
        for name in self._context_params:
            kwargs.pop(name, None)
        arguments: Any = kwargs if not args else args[0]
        call = ToolCall(name=self._metadata.get_name(), arguments=arguments)
        scope = await Scope.of(self._dispatcher, ctx)
        values = dict.fromkeys(self._context_params, ctx) if ctx is not None else {}
        result = await scope.adispatch(call, self._offload, values)
        return self._output(result, kwargs, raw=result.artifact)

    def call(self, /, *args: Any, **kwargs: Any) -> ToolOutput:
        """Sync call (outside an agent)."""
        from llama_index.core.async_utils import asyncio_run

        return asyncio_run(self.acall(*args, **kwargs))  # type: ignore[no-any-return]  # asyncio_run is untyped
