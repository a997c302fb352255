"""Provider formats: tool declarations, tool calls in, results out, as plain dicts.

One module per provider family, each with the same three jobs:

* ``openai``: declare ``tools`` / ``responses_tools``; parse ``parse_calls`` /
  ``parse_response_calls``; reply ``messages`` / ``response_items``.
* ``anthropic``: declare ``tools``; parse ``parse_calls``; reply ``message``
  (or its blocks, ``tool_results``).
* ``gemini``: declare ``tools`` (or ``function_declarations``); parse
  ``parse_calls``; reply ``content`` (or its ``parts``).
* ``mcp``: declare ``tools``; parse ``parse_call``; reply ``call_result``.

``tools`` always gives the value of the request's ``tools`` field; ``parse_*``
takes the provider's reply (SDK object or its dict form) and gives
:class:`~toolguard.ToolCall` s; the reply functions take a :class:`~toolguard.Round`
(or results) and give one answer per call, in call order. Nothing here imports a
provider SDK, and :attr:`~toolguard.ToolResult.artifact` is never read.
"""

from toolguard.formats import anthropic, gemini, mcp, openai
from toolguard.schema._strict import strict_schema

__all__ = ["anthropic", "gemini", "mcp", "openai", "strict_schema"]
