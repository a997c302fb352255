"""Guard every tool of an existing ``MCPServer`` in place: one line, no rewrite.

::

    server = MCPServer("shop", middleware=[ToolguardMiddleware(dispatcher)])

A context-tier server middleware (``mcp.server.context.ServerMiddleware``: the
SDK's ``(ctx, call_next)``) that sees every ``tools/call``. The SDK still runs the
tool (its schema, its argument validation, its ``Context``, its ``outputSchema``
and structured output); toolguard answers what the SDK would have sent on failure:

* a crash (the SDK sends ``Error executing tool x`` and logs the traceback): the
  dispatcher's policy for that name (overrides, the tool's own policy when the
  dispatcher has the tool, agent defaults, policy files), a model-visible message
  intact (toolguard's ``ToolError``, ``message_for_model()``), a hidden cause
  logged once with the error id the client sees (the SDK's own traceback log of
  it is taken over, not repeated; see ``_mcp_logs``);
* the SDK's ``ToolError`` (the SDK's "tell the model this"): model-visible, as in
  the SDK, unless ``framework_errors_visible=False``;
* invalid arguments: toolguard's bounded message (field names and what was
  wrong, never the values);
* successes pass through untouched (content blocks, ``structuredContent``),
  with ``_meta["toolguard/return_direct"]`` when the policy asks the loop to stop.

Each connection (or MCP session id) is one toolguard session: breakers and
model-retry budgets span its calls, and an open breaker is answered without
running the tool. Resources, prompts and every other request pass untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.exceptions import ResourceError, UnexpectedToolError
from mcp.server.mcpserver.exceptions import ToolError as SdkToolError

from toolguard._dispatcher import Dispatcher
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed
from toolguard.integrations import _mcp_logs
from toolguard.integrations._mcp_inplace import Unobserved, original
from toolguard.integrations._mcp_wire import (
    META_RETURN_DIRECT,
    aborted,
    block_texts,
    call_tool_result,
    connection_of,
    failed_error,
    really_cancelled,
    session_for,
)

__all__ = ["SDK_LOGGER", "ToolguardMiddleware"]

SDK_LOGGER = "mcp.server.mcpserver.server"
"""The SDK logger whose failure records of a guarded call toolguard takes over."""


class ToolguardMiddleware:
    """An ``MCPServer`` middleware guarding every tool of the server.

    ``ToolguardMiddleware(dispatcher, *, session_id=None, framework_errors_visible=True)``

    ``dispatcher`` holds the policy: its defaults, overrides by name or glob,
    policy files, and the tools it has (a toolguard ``@tool`` registered with
    ``@server.tool()`` keeps its own policy). A tool it does not have is guarded
    by name (``Dispatcher([], external_tools=["lookup"])`` lets an override name
    it exactly). ``session_id(ctx)`` names the conversation of a request (the
    SDK's ``ServerRequestContext``); by default the transport's MCP session id,
    else the connection.

    The SDK runs the tool, so toolguard's ``retries`` and ``timeout`` do not apply
    here (they apply where toolguard runs it: ``mcp_server``); the answer to a
    failure, ``return_direct``, breakers and budgets do.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        session_id: Callable[[ServerRequestContext[Any, Any]], str | None] | None = None,
        framework_errors_visible: bool = True,
    ) -> None:
        if not isinstance(dispatcher, Dispatcher):
            raise TypeError(f"ToolguardMiddleware takes a Dispatcher, got {dispatcher!r}")
        self.dispatcher = dispatcher
        self._session_id = session_id
        self._visible = framework_errors_visible
        _mcp_logs.observe(SDK_LOGGER)

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
        connection = connection_of(ctx.session)
        named = self._session_id(ctx) if self._session_id is not None else None
        session = session_for(
            self.dispatcher, connection, named or getattr(connection, "session_id", None)
        )
        refused = session.admit(call, step=call.id)
        if refused is not None:
            return _wire(call_tool_result(refused))
        capture = _mcp_logs.Capture()
        token = _mcp_logs.capturing(capture)
        try:
            sent = await call_next(ctx)
        except Exception:
            raise  # the SDK's protocol errors (MCPError, malformed params): its own answer
        except BaseException as error:
            if really_cancelled():
                raise  # the client cancelled the request
            raise aborted(call.name, call.id, error) from None
        finally:
            _mcp_logs.reset(token)
        if not isinstance(sent, Mapping) or sent.get("isError") is not True:
            if isinstance(sent, Mapping) and sent.get("resultType", "complete") == "complete":
                return await self._succeeded(session, call, dict(sent))
            return sent  # input_required and the like: the SDK's multi-round flow
        return await self._failed(session, call, dict(sent), capture.error)

    async def _succeeded(self, session: Any, call: ToolCall, sent: dict[str, Any]) -> HandlerResult:
        result: ToolResult = await session.ahandle_result(
            call, block_texts(_blocks(sent)), step=call.id
        )
        if result.return_direct:
            sent["_meta"] = {**(sent.get("_meta") or {}), META_RETURN_DIRECT: True}
        return sent

    async def _failed(
        self, session: Any, call: ToolCall, sent: dict[str, Any], error: Exception | None
    ) -> HandlerResult:
        if error is None:
            error = Unobserved(f"the MCP SDK reported a failure of tool {call.name!r}")
        cause = original(
            error,
            call.name,
            crash=UnexpectedToolError,
            framework_error=(SdkToolError, ResourceError),
            is_unknown=_is_unknown,
            visible=self._visible,
        )
        try:
            result: ToolResult = await session.ahandle_error(call, cause, step=call.id)
        except ToolCallFailed as failed:
            raise failed_error(failed.tool, failed.error_id) from None
        except Exception as raised:  # noqa: BLE001 - control flow or a handler that raised
            raise aborted(call.name, call.id, raised) from None
        except BaseException as raised:
            if really_cancelled():
                raise
            raise aborted(call.name, call.id, raised) from None
        answer = _wire(call_tool_result(result))
        # keep the SDK's envelope (resultType, serverInfo stamp), replace the answer
        envelope = {k: v for k, v in sent.items() if k not in ("content", "structuredContent")}
        meta = {**(envelope.get("_meta") or {}), **(answer.get("_meta") or {})}
        return {**envelope, **answer, "_meta": meta} if meta else {**envelope, **answer}


def _is_unknown(error: Exception) -> bool:
    return (
        type(error) is SdkToolError
        and error.__cause__ is None
        and str(error).startswith("Unknown tool: ")
    )


def _blocks(sent: Mapping[str, Any]) -> list[Any]:
    content = sent.get("content")
    if not isinstance(content, list):
        return []
    return [_Block(block.get("text", "")) for block in content if isinstance(block, Mapping)]


class _Block:
    __slots__ = ("text",)

    def __init__(self, text: object) -> None:
        self.text = text if isinstance(text, str) else ""


def _wire(result: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return dumped
