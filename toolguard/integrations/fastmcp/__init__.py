"""Guard every tool of a FastMCP app in place (``toolguard-agents[fastmcp]``).

::

    from toolguard.integrations.fastmcp import ToolguardMiddleware

    app = FastMCP("shop")
    app.add_middleware(ToolguardMiddleware(dispatcher))   # the one added line

FastMCP (the standalone ``fastmcp`` package) runs the tool as always: its schema, its
validation, its ``Context`` (logging, progress, sampling, elicitation, state), its
resources, prompts, output schemas and structured results. toolguard answers the
failures, which FastMCP would otherwise send as ``Error calling tool 'x': {e}`` (the
exception's text, secrets included) unless ``mask_error_details=True``. See
docs/integrations/fastmcp.md.
"""

from __future__ import annotations

try:
    import fastmcp  # noqa: F401 - FastMCP must be there: say so before anything else
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.fastmcp needs FastMCP: pip install "toolguard-agents[fastmcp]"'
    ) from error

from toolguard.integrations.fastmcp._middleware import FASTMCP_LOGGER, ToolguardMiddleware

__all__ = ["FASTMCP_LOGGER", "ToolguardMiddleware"]
