"""FastMCP's ``ToolguardMiddleware``: every ``tools/call`` through the in-place pipeline.

``call_next`` is FastMCP's own invocation (its schema, validation, ``Context``,
structured output); :func:`toolguard.integrations.inplace.aguard_call` answers around
it. What FastMCP raises is read back to what the tool did:

* a crash: FastMCP logs it from inside its ``except`` block (the tool's exception, read
  from that record by :mod:`toolguard.integrations.mcp.observe`, the record taken over)
  and raises its masking ``ToolError``: answered by the dispatcher's policy;
* the tool's own FastMCP error (``ToolError``...): the tool's words, model-visible
  (unless ``framework_errors_visible=False``);
* FastMCP's ``ValidationError`` of the arguments: toolguard's bounded message; a
  ``pydantic.ValidationError`` raised in the tool's body is a crash like any other;
* no such tool (``NotFoundError``, ``DisabledError``): toolguard's unknown-tool answer,
  over the app's own tool list;
* anything FastMCP did not log as a tool's failure (an ``MCPError``, another
  middleware's rate limit or authorisation error): passes untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import mcp.types as types
import pydantic
from fastmcp.exceptions import DisabledError, FastMCPError, NotFoundError, ValidationError
from fastmcp.exceptions import ToolError as FastMCPToolError
from fastmcp.server.context import Context
from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
from fastmcp.telemetry import suppress_fastmcp_telemetry
from fastmcp.tools.base import ToolResult as FastMCPToolResult
from mcp.shared.exceptions import MCPError

from toolguard import (
    ControlFlow,
    Dispatcher,
    Scope,
    ToolCall,
    ToolCallFailed,
    ToolResult,
)
from toolguard.integrations._common import the_dispatcher
from toolguard.integrations.inplace import Adapter, aguard_call
from toolguard.integrations.mcp import observe
from toolguard.integrations.mcp.wire import (
    META_RETURN_DIRECT,
    FrameworkVisible,
    aborted,
    call_tool_result,
    failed_error,
    is_cancellation,
)

__all__ = ["FASTMCP_LOGGER", "ToolguardMiddleware"]

FASTMCP_LOGGER: Final = "fastmcp.server.server"
"""FastMCP's logger whose failure records of a guarded call toolguard takes over.

Framework-private: FastMCP raises its masking ``ToolError`` to its middleware, the
tool's exception only as ``__cause__`` of it (and of its own ``ToolError``s too), and
logs what the tool raised from inside its ``except`` block. The logger's name, that
record, and the masking wording (:data:`MASKING`) are pinned by
tests/integrations/test_mcp_private.py."""

MASKING: Final = "Error calling tool "
"""How FastMCP's masking ``ToolError`` starts (its own actionable messages, a rate limit
or timeout upstream, do not): framework-private, pinned as above."""

Call = CallNext[types.CallToolRequestParams, FastMCPToolResult]


class _Unknown(ControlFlow):
    """FastMCP has no tool by this name: answered by ``Scope.aunknown_tool``."""

    def __init__(self, available: tuple[str, ...]) -> None:
        super().__init__("unknown tool")
        self.available = available


class ToolguardMiddleware(Middleware):
    """A FastMCP middleware guarding every tool of the app.

    ``ToolguardMiddleware(dispatcher, *, session_id=None, framework_errors_visible=True)``

    ``dispatcher`` holds the policy (defaults, overrides by name or glob, policy
    files) and the toolguard tools it has keep their own policy when registered
    with ``@app.tool``. ``session_id(ctx)`` (FastMCP's ``Context``) names the
    conversation; by default FastMCP's ``ctx.session_id``.

    ``timeout`` and ``retries`` apply: each attempt calls ``call_next`` again (the
    rest of the middleware chain and the tool). Over the protocol a failure is an
    ``isError`` result (toolguard's text, ``_meta`` with the error id); called in
    process (``await app.call_tool(...)``, no MCP request), it is raised as FastMCP
    raises it (``ToolError``, ``ValidationError``, ``NotFoundError``), with
    toolguard's text.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        session_id: Callable[[Context], str | None] | None = None,
        framework_errors_visible: bool = True,
    ) -> None:
        self.dispatcher = the_dispatcher(
            dispatcher,
            entry="ToolguardMiddleware(dispatcher)",
            instead="build one with Dispatcher([], external_tools=[...]) naming the server's "
            "tools; then mcp.add_middleware(ToolguardMiddleware(dispatcher))",
        )
        self._session_id = session_id
        self._visible = framework_errors_visible
        observe.observe(FASTMCP_LOGGER)

    async def on_call_tool(
        self, context: MiddlewareContext[types.CallToolRequestParams], call_next: Call
    ) -> FastMCPToolResult:
        params = context.message
        fastmcp_context = context.fastmcp_context
        call = ToolCall(
            name=params.name, arguments=params.arguments, id=_request_id(fastmcp_context)
        )
        scope = self._scope(fastmcp_context, call)
        run = _Run(context, call_next, self._visible)
        try:
            return await aguard_call(scope, call, lambda: run.attempt(scope, call), run)
        except _Unknown as unknown:
            return run.answer(call, await scope.aunknown_tool(call, unknown.available))
        except ToolCallFailed as failed:
            raise failed_error(failed) from None
        except BaseException as error:
            if is_cancellation(error) or error is run.passing:
                raise  # a cancellation, FastMCP's own errors, an in-process answer
            raise aborted(scope, call, error) from None

    def _scope(self, fastmcp_context: Context | None, call: ToolCall) -> Scope:
        named: str | None = None
        if fastmcp_context is not None:
            if self._session_id is not None:
                named = self._session_id(fastmcp_context)
            else:
                try:
                    named = fastmcp_context.session_id
                except RuntimeError:  # no MCP session (called in process)
                    named = None
        if named:
            return self.dispatcher.session(id=f"fastmcp:{named}").scope(step=call.id)
        return self.dispatcher.scope()


class _Run(Adapter[FastMCPToolResult]):
    """One guarded call: FastMCP's invocation and its outcome, for the pipeline."""

    def __init__(
        self,
        context: MiddlewareContext[types.CallToolRequestParams],
        call_next: Call,
        visible: bool,
    ) -> None:
        self.context = context
        self.call_next = call_next
        self.visible = visible
        self.passing: BaseException | None = None
        self.kind: type[FastMCPError] | type[NotFoundError] = FastMCPToolError
        self.capture: observe.Capture | None = None

    async def attempt(self, scope: Scope, call: ToolCall) -> FastMCPToolResult:
        """One run of the rest of the chain; a failure raised as what it means."""
        capture = self.capture = observe.Capture()
        token = observe.capturing(capture)
        try:
            return await self.call_next(self.context)
        except Exception as error:
            meaning = await self._meaning(scope, call, error, capture.error)
            if meaning is None:
                self.passing = error
                raise
        finally:
            observe.reset(token)
        raise meaning  # outside the except block: the tool's exception keeps its context

    async def _meaning(
        self, scope: Scope, call: ToolCall, raised: Exception, logged: Exception | None
    ) -> BaseException | None:
        """What toolguard answers for what FastMCP raised; ``None``: it passes."""
        self.kind = FastMCPToolError
        if isinstance(raised, MCPError):
            return None  # a protocol error (another middleware's rate limit...): FastMCP's
        if isinstance(raised, NotFoundError | DisabledError):
            self.kind = NotFoundError
            # the tools this client may see (other middleware filters them), looked up
            # with no span of FastMCP's: over the protocol a tools/list span would take
            # the call's place in the trace
            with suppress_fastmcp_telemetry():
                listed = await self._app().list_tools()
            return _Unknown(tuple(tool.name for tool in listed))
        cause = raised.__cause__
        if isinstance(raised, ValidationError) and isinstance(cause, pydantic.ValidationError):
            self.kind = ValidationError
            with suppress_fastmcp_telemetry():
                found = await self._app().get_tool(call.name)
            schema = found.parameters if found is not None else {}
            return scope.invalid_arguments(call, cause, schema)
        if logged is None:
            return None  # not a tool's failure FastMCP saw: as FastMCP answers it
        if isinstance(logged, FastMCPError):  # the tool's own FastMCP error: its words
            return FrameworkVisible.of(logged) if self.visible else logged
        if isinstance(raised, FastMCPToolError) and not str(raised).startswith(MASKING):
            # FastMCP's own actionable words for the failure (upstream rate limit, timeout)
            return FrameworkVisible.of(raised) if self.visible else logged
        return logged  # a crash: the tool's exception

    def _app(self) -> Any:
        fastmcp_context = self.context.fastmcp_context
        if fastmcp_context is None:  # pragma: no cover - FastMCP always sets it
            raise RuntimeError("no FastMCP context for this call")
        return fastmcp_context.fastmcp

    # --- the pipeline's questions ------------------------------------------------------

    def passes(self, error: Exception) -> bool:
        return error is self.passing

    def answer(self, call: ToolCall, result: ToolResult) -> FastMCPToolResult:
        if result.error_id is None and self.capture is not None:
            self.capture.replay()  # toolguard logged nothing: FastMCP's own line stays
        if _in_process(self.context):
            raised = self.kind(result.text)
            self.passing = raised
            raise raised
        converted = call_tool_result(result, structured=False)
        return FastMCPToolResult(
            content=list(converted.content), meta=converted.meta, is_error=result.is_error
        )

    def own_error(self, outcome: FastMCPToolResult) -> str | None:
        return _text(outcome) if outcome.is_error else None

    def seen(self, outcome: FastMCPToolResult) -> object:
        return _text(outcome)

    def succeeded(
        self, call: ToolCall, outcome: FastMCPToolResult, result: ToolResult
    ) -> FastMCPToolResult:
        return _decided(outcome, result)

    def kept(
        self, call: ToolCall, outcome: FastMCPToolResult, result: ToolResult
    ) -> FastMCPToolResult:
        return _decided(outcome, result)


def _decided(outcome: FastMCPToolResult, result: ToolResult) -> FastMCPToolResult:
    if result.truncated:
        outcome.content = [types.TextContent(type="text", text=result.text)]
    if result.return_direct:
        outcome.meta = {**(outcome.meta or {}), META_RETURN_DIRECT: True}
    return outcome


def _text(outcome: FastMCPToolResult) -> str:
    return "\n".join(
        block.text for block in outcome.content if isinstance(block, types.TextContent)
    )


def _in_process(context: MiddlewareContext[Any]) -> bool:
    """Called as ``await app.call_tool(...)``, outside any MCP request."""
    fastmcp_context = context.fastmcp_context
    return fastmcp_context is None or fastmcp_context.request_context is None


def _request_id(fastmcp_context: Context | None) -> str | None:
    if fastmcp_context is None or fastmcp_context.request_context is None:
        return None
    return str(fastmcp_context.request_context.request_id)
