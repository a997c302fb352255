"""toolguard and the official MCP SDK, version 2 (``toolguard-agents[mcp]``).

Two ways:

* **guard an existing** ``MCPServer`` in place, one line::

      server = MCPServer("shop", middleware=[ToolguardMiddleware(dispatcher)])

  The SDK still runs every tool; toolguard answers what the model is told when one
  fails (:class:`ToolguardMiddleware`).
* **serve a** :class:`~toolguard.Dispatcher`'s tools, toolguard running them::

      server = mcp_server(Dispatcher([search, add]))   # the SDK's low-level Server
      run_stdio(Dispatcher([search, add]))               # or: toolguard serve-mcp app:tools

:mod:`toolguard.integrations.mcp.wire` holds what every MCP integration shares
(FastMCP's uses it too); :mod:`toolguard.integrations.mcp.observe` the capture of a
framework's failure log. See docs/integrations/mcp.md.
"""

from __future__ import annotations

try:
    import mcp.types  # noqa: F401 - the SDK must be there: say so before anything else
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.mcp needs the official MCP SDK, version 2: "
        'pip install "toolguard-agents[mcp]"'
    ) from error

from toolguard.integrations.mcp._middleware import ToolguardMiddleware
from toolguard.integrations.mcp._server import mcp_server, tool_declaration
from toolguard.integrations.mcp._stdio import (
    TargetError,
    load_target,
    main,
    run_stdio,
    serve_stdio,
)
from toolguard.integrations.mcp.wire import (
    EVENT_CALL_ABORTED,
    META_ERROR_ID,
    META_RETURN_DIRECT,
    call_tool_result,
)

__all__ = [
    "EVENT_CALL_ABORTED",
    "META_ERROR_ID",
    "META_RETURN_DIRECT",
    "TargetError",
    "ToolguardMiddleware",
    "call_tool_result",
    "load_target",
    "main",
    "mcp_server",
    "run_stdio",
    "serve_stdio",
    "tool_declaration",
]
