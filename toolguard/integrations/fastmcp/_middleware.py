"""Guard every tool of a FastMCP app in place (``toolguard-agents[fastmcp]``).

::

    from toolguard.integrations.fastmcp import ToolguardMiddleware

    app = FastMCP("shop")
    app.add_middleware(ToolguardMiddleware(dispatcher))   # the one added line

FastMCP (the standalone ``fastmcp`` package) runs the tool as always: its schema,
its validation, its ``Context`` (logging, progress, sampling, elicitation, state),
its resources, prompts, output schemas and structured results. toolguard answers
the failures, which FastMCP would otherwise send as ``Error calling tool 'x': {e}``
(the exception's text, secrets included) unless ``mask_error_details=True``:

* a crash: the dispatcher's policy for the tool's name; a hidden cause logged
  once (``tool_error_hidden``, the error id the client sees), and FastMCP's own
  traceback log of it (``logger.error("Error calling tool ...", exc_info=True)``
  on the ``fastmcp.server.server`` logger) taken over, not repeated;
* toolguard's ``ToolError`` (or ``message_for_model()``): its message, intact,
  also under ``mask_error_details=True``;
* FastMCP's own ``ToolError``: model-visible, as in FastMCP, unless
  ``framework_errors_visible=False``;
* invalid arguments: toolguard's bounded message; an unknown tool: toolguard's;
* successes untouched, with ``_meta["toolguard/return_direct"]`` when the policy
  asks the loop to stop.

The conversation is FastMCP's session (``ctx.session_id``): breakers and
model-retry budgets span its calls; ``session_id=`` may name it otherwise.
"""

from __future__ import annotations

from collections.abc import Callable

try:
    import mcp.types as types
    from fastmcp.exceptions import NotFoundError, ValidationError
    from fastmcp.exceptions import ToolError as FastMCPToolError
    from fastmcp.server.context import Context
    from fastmcp.server.middleware import CallNext, Middleware, MiddlewareContext
    from fastmcp.tools.base import ToolResult as FastMCPToolResult
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.fastmcp needs FastMCP: pip install "toolguard-agents[fastmcp]"'
    ) from error

from toolguard._dispatcher import Dispatcher
from toolguard._session import Session
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import ToolCallFailed
from toolguard.integrations import _mcp_logs
from toolguard.integrations._mcp_inplace import original
from toolguard.integrations._mcp_wire import (
    META_RETURN_DIRECT,
    aborted,
    block_texts,
    call_tool_result,
    failed_error,
    really_cancelled,
)

__all__ = ["FASTMCP_LOGGER", "ToolguardMiddleware"]

FASTMCP_LOGGER = "fastmcp.server.server"
"""FastMCP's logger whose failure records of a guarded call toolguard takes over."""


class ToolguardMiddleware(Middleware):
    """A FastMCP middleware guarding every tool of the app.

    ``ToolguardMiddleware(dispatcher, *, session_id=None, framework_errors_visible=True)``

    ``dispatcher`` holds the policy (defaults, overrides by name or glob, policy
    files) and the toolguard tools it has keep their own policy when registered
    with ``@app.tool``. ``session_id(ctx)`` (FastMCP's ``Context``) names the
    conversation; by default FastMCP's ``ctx.session_id``.

    FastMCP runs the tool, so toolguard's ``retries`` and ``timeout`` do not
    apply here; the answer to a failure, ``return_direct``, breakers and budgets do.
    """

    def __init__(
        self,
        dispatcher: Dispatcher,
        *,
        session_id: Callable[[Context], str | None] | None = None,
        framework_errors_visible: bool = True,
    ) -> None:
        if not isinstance(dispatcher, Dispatcher):
            raise TypeError(f"ToolguardMiddleware takes a Dispatcher, got {dispatcher!r}")
        self.dispatcher = dispatcher
        self._session_id = session_id
        self._visible = framework_errors_visible
        _mcp_logs.observe(FASTMCP_LOGGER)

    async def on_call_tool(
        self,
        context: MiddlewareContext[types.CallToolRequestParams],
        call_next: CallNext[types.CallToolRequestParams, FastMCPToolResult],
    ) -> FastMCPToolResult:
        params = context.message
        fastmcp_context = context.fastmcp_context
        call = ToolCall(
            name=params.name, arguments=params.arguments, id=_request_id(fastmcp_context)
        )
        session = self._session(fastmcp_context)
        refused = session.admit(call, step=call.id)
        if refused is not None:
            return _tool_result(refused)
        capture = _mcp_logs.Capture()
        token = _mcp_logs.capturing(capture)
        try:
            sent = await call_next(context)
        except Exception as error:  # noqa: BLE001 - every failure FastMCP raises: answered
            raised: Exception | None = error
            sent = None
        except BaseException as error:
            if really_cancelled():
                raise
            raise aborted(call.name, call.id, error) from None
        finally:
            _mcp_logs.reset(token)
        if sent is not None:
            if sent.is_error:  # a tool (or middleware) that answered isError itself
                return sent
            return await self._succeeded(session, call, sent)
        assert raised is not None
        cause = original(
            capture.error or _unwrapped(raised),
            call.name,
            crash=(),
            framework_error=FastMCPToolError,
            is_unknown=lambda error: isinstance(error, NotFoundError),
            visible=self._visible,
        )
        try:
            result = await session.ahandle_error(call, cause, step=call.id)
        except ToolCallFailed as failed:
            raise failed_error(failed.tool, failed.error_id) from None
        except Exception as other:  # noqa: BLE001 - control flow or a handler that raised
            raise aborted(call.name, call.id, other) from None
        return _tool_result(result)

    def _session(self, fastmcp_context: Context | None) -> Session:
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
            return self.dispatcher.session(id=f"fastmcp:{named}")
        return self.dispatcher.session()

    async def _succeeded(
        self, session: Session, call: ToolCall, sent: FastMCPToolResult
    ) -> FastMCPToolResult:
        result = await session.ahandle_result(call, block_texts(sent.content), step=call.id)
        if result.return_direct:
            sent.meta = {**(sent.meta or {}), META_RETURN_DIRECT: True}
        return sent


def _unwrapped(raised: Exception) -> Exception:
    """What the tool raised, from what FastMCP raised (its masking ``ToolError``
    carries it as ``__cause__``) when FastMCP's failure log was not observed."""
    if isinstance(raised, ValidationError | NotFoundError):
        return raised
    cause = raised.__cause__
    if (
        isinstance(raised, FastMCPToolError)
        and isinstance(cause, Exception)
        and str(raised).startswith("Error calling tool ")
    ):
        return cause
    return raised


def _request_id(fastmcp_context: Context | None) -> str | None:
    if fastmcp_context is None or fastmcp_context.request_context is None:
        return None
    return str(fastmcp_context.request_context.request_id)


def _tool_result(result: ToolResult) -> FastMCPToolResult:
    converted = call_tool_result(result, structured=False)
    return FastMCPToolResult(
        content=list(converted.content),
        meta=converted.meta,
        is_error=result.is_error,
    )
