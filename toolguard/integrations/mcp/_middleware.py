"""Guard every tool of an existing ``MCPServer`` in place: one line, no rewrite.

::

    server = MCPServer("shop", middleware=[ToolguardMiddleware(dispatcher)])

A context-tier server middleware (``mcp.server.context.ServerMiddleware``: the SDK's
``(ctx, call_next)``) that sees every ``tools/call`` and runs it through toolguard's
in-place pipeline (:func:`toolguard.integrations.inplace.aguard_call`); ``call_next``
is the SDK's own invocation (its schema, its argument validation, its ``Context``,
its ``outputSchema`` and structured output). Every other request passes untouched.

The SDK answers a tool's exception itself (an ``isError`` result with ``Error
executing tool x``) and logs it from inside its ``except`` block; what the tool raised
is read from that log record (:mod:`toolguard.integrations.mcp.observe`), the record
itself taken over (toolguard logs the hidden cause once, under the error id the client
sees). An ``isError`` result with no such record is the tool's own answer
(``CallToolResult(isError=True)``): kept, as the SDK sends it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

import pydantic
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as SdkToolError

from toolguard import ControlFlow, Dispatcher, Scope, ToolCall, ToolCallFailed, ToolResult
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
    scope_for,
)

__all__ = ["SDK_LOGGER", "ToolguardMiddleware"]

SDK_LOGGER: Final = "mcp.server.mcpserver.server"
"""The SDK logger whose failure records of a guarded call toolguard takes over.

Framework-private: the SDK hands its middleware only the result of a failed tool, never
the exception, and offers no hook for it (its extension interceptor wraps the handler
that has already caught it). The logger's name and that it logs from inside its
``except`` block are pinned by tests/integrations/test_mcp_private.py."""

Wire = dict[str, Any]


class _Unknown(ControlFlow):
    """The SDK has no tool by this name: answered by ``Scope.aunknown_tool``."""

    def __init__(self, available: tuple[str, ...]) -> None:
        super().__init__("unknown tool")
        self.available = available


class _Through(ControlFlow):
    """A result toolguard does not answer (multi-round ``input_required``): as it is."""

    def __init__(self, sent: HandlerResult) -> None:
        super().__init__("not a final result")
        self.sent = sent


class ToolguardMiddleware:
    """An ``MCPServer`` middleware guarding every tool of the server.

    ``ToolguardMiddleware(dispatcher, *, session_id=None, framework_errors_visible=True)``

    ``dispatcher`` holds the policy: its defaults, overrides by name or glob, policy
    files, and the tools it has (a toolguard ``@tool`` registered with
    ``@server.tool()`` keeps its own policy). A tool it does not have is guarded by
    name (``Dispatcher([], external_tools=["lookup"])`` lets an override name it
    exactly). ``session_id(ctx)`` names the conversation of a request (the SDK's
    ``ServerRequestContext``); by default the transport's MCP session id, else the
    connection. ``framework_errors_visible=False`` hides the SDK's own ``ToolError``
    text like any other exception.

    ``timeout`` and ``retries`` apply: each attempt calls ``call_next`` again (the rest
    of the middleware chain and the tool), and a timed-out attempt is cancelled.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        session_id: Callable[[ServerRequestContext[Any, Any]], str | None] | None = None,
        framework_errors_visible: bool = True,
    ) -> None:
        self.dispatcher = the_dispatcher(
            dispatcher,
            entry="ToolguardMiddleware(dispatcher)",
            instead="build one with Dispatcher([], external_tools=[...]) naming the server's "
            "tools; then MCPServer(..., middleware=[ToolguardMiddleware(dispatcher)])",
        )
        self._session_id = session_id
        self._visible = framework_errors_visible
        observe.observe(SDK_LOGGER)

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        params = ctx.params
        if ctx.method != "tools/call" or ctx.request_id is None or not isinstance(params, Mapping):
            return await call_next(ctx)
        name = params.get("name")
        if not isinstance(name, str):
            return await call_next(ctx)  # malformed params: the SDK's protocol error
        arguments = params.get("arguments")
        call = ToolCall(
            name=name,
            arguments=arguments if isinstance(arguments, Mapping) else None,
            id=str(ctx.request_id),
        )
        scope = self._scope(ctx, call)
        run = _Run(ctx, call_next, self._visible)
        try:
            return await aguard_call(scope, call, lambda: run.attempt(scope, call), run)
        except _Through as through:
            return through.sent
        except _Unknown as unknown:
            return run.answer(call, await scope.aunknown_tool(call, unknown.available))
        except ToolCallFailed as failed:
            raise failed_error(failed) from None
        except BaseException as error:
            if is_cancellation(error) or error is run.passing:
                raise  # a cancellation; the SDK's own protocol errors
            # control flow nothing here can act on, a handler that raised, a tool's
            # SystemExit: the client gets a JSON-RPC error, the server goes on
            raise aborted(scope, call, error) from None

    def _scope(self, ctx: ServerRequestContext[Any, Any], call: ToolCall) -> Scope:
        # Framework-private: ServerSession keeps its Connection (the per-client state and
        # MCP session id) as ``_connection``; the SDK gives a ServerRequestContext no
        # public way to it (only its own, not yet constructed, request Context has one).
        # Pinned by tests/integrations/test_mcp_private.py.
        connection = getattr(ctx.session, "_connection", None)
        named = self._session_id(ctx) if self._session_id is not None else None
        session_id = named or getattr(connection, "session_id", None)
        return scope_for(self.dispatcher, connection, session_id, call.id)


class _Run(Adapter[HandlerResult]):
    """One guarded ``tools/call``: the SDK's invocation and its outcome, as the pipeline
    asks about them."""

    def __init__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext, visible: bool):
        self.ctx = ctx
        self.call_next = call_next
        self.visible = visible
        self.sent: Wire = {}
        self.passing: BaseException | None = None
        self.capture: observe.Capture | None = None

    async def attempt(self, scope: Scope, call: ToolCall) -> HandlerResult:
        """One run of the rest of the chain; a tool's failure raised as what it means."""
        capture = self.capture = observe.Capture()
        token = observe.capturing(capture)
        try:
            sent = await self.call_next(self.ctx)
        except Exception as error:
            self.passing = error  # the SDK's protocol errors (MCPError): its own answer
            raise
        finally:
            observe.reset(token)
        if not isinstance(sent, Mapping):
            return sent
        self.sent = dict(sent)
        if sent.get("resultType", "complete") != "complete":
            raise _Through(sent)  # input_required: the SDK's multi-round flow
        if sent.get("isError") is True and capture.error is not None:
            raise await self._meaning(scope, call, capture.error)
        return self.sent

    async def _meaning(self, scope: Scope, call: ToolCall, error: Exception) -> Exception:
        """What toolguard answers for the exception the SDK logged."""
        if isinstance(error, UnexpectedToolError):  # a crash: the tool's own exception
            cause = error.__cause__
            return cause if isinstance(cause, Exception) else error
        if not isinstance(error, SdkToolError | ResourceError):
            return error
        cause = error.__cause__
        if isinstance(cause, pydantic.ValidationError):  # the model's arguments
            schema = (await self._listed()).get(call.name, {})
            return scope.invalid_arguments(call, cause, schema)
        if cause is None and type(error) is SdkToolError:
            listed = await self._listed()
            if call.name not in listed:
                return _Unknown(tuple(listed))
        own = cause if isinstance(cause, SdkToolError | ResourceError) else error
        return FrameworkVisible.of(own) if self.visible else own

    async def _listed(self) -> dict[str, Any]:
        """The server's tools (name -> inputSchema), through the chain's ``tools/list``
        (``call_next`` takes a changed context: the SDK's documented way)."""
        try:
            params = self.ctx.params or {}
            keep = {key: params[key] for key in ("_meta",) if key in params}  # the era's own
            listed = await self.call_next(
                dataclasses.replace(self.ctx, method="tools/list", params=keep)
            )
        except Exception:  # noqa: BLE001 - no list: answered without one
            return {}
        if isinstance(listed, pydantic.BaseModel):
            listed = listed.model_dump(by_alias=True)
        tools = listed.get("tools") if isinstance(listed, Mapping) else None
        return {
            t["name"]: t.get("inputSchema") or {}
            for t in tools or ()
            if isinstance(t, Mapping) and isinstance(t.get("name"), str)
        }

    # --- the pipeline's questions ------------------------------------------------------

    def passes(self, error: Exception) -> bool:
        return error is self.passing

    def answer(self, call: ToolCall, result: ToolResult) -> HandlerResult:
        if result.error_id is None and self.capture is not None:
            self.capture.replay()  # toolguard logged nothing: the SDK's own line stays
        answer = _wire(call_tool_result(result))
        # keep the SDK's envelope (resultType, its _meta: the server's stamp), replace
        # the answer (toolguard's _meta added to the SDK's)
        envelope = {k: v for k, v in self.sent.items() if k not in _ANSWER_KEYS}
        merged = {**(self.sent.get("_meta") or {}), **(answer.get("_meta") or {})}
        return {**envelope, **answer, "_meta": merged} if merged else {**envelope, **answer}

    def own_error(self, outcome: HandlerResult) -> str | None:
        if isinstance(outcome, Mapping) and outcome.get("isError") is True:
            return _text(outcome)
        return None

    def seen(self, outcome: HandlerResult) -> object:
        return _text(outcome) if isinstance(outcome, Mapping) else outcome

    def succeeded(
        self, call: ToolCall, outcome: HandlerResult, result: ToolResult
    ) -> HandlerResult:
        return _decided(outcome, result)

    def kept(self, call: ToolCall, outcome: HandlerResult, result: ToolResult) -> HandlerResult:
        return _decided(outcome, result)


_ANSWER_KEYS: Final = frozenset({"content", "structuredContent", "isError", "_meta"})


def _decided(outcome: HandlerResult, result: ToolResult) -> HandlerResult:
    """``outcome`` with what toolguard decided: the content cut, ``return_direct``."""
    if not isinstance(outcome, Mapping) or not (result.truncated or result.return_direct):
        return outcome
    changed = dict(outcome)
    if result.truncated:
        changed["content"] = [{"type": "text", "text": result.text}]
    if result.return_direct:
        changed["_meta"] = {**(changed.get("_meta") or {}), META_RETURN_DIRECT: True}
    return changed


def _text(sent: Mapping[str, Any]) -> str:
    content = sent.get("content")
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(block.get("text", ""))
        for block in content
        if isinstance(block, Mapping) and block.get("type") == "text"
    )


def _wire(result: Any) -> Wire:
    dumped: Wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped
