"""Failures that crossed back into a durable engine's workflow code.

A tool run as an engine's activity or step is answered there, where its exception is,
under the same policy; what crosses back is that answer (a
:class:`~toolguard.RemoteFailure`), which the guard gives as it is. In workflow code, an
engine's wrapper around such a failure is seen through by the engine's runtime
(``_engine``) before the chain is asked.
"""

from __future__ import annotations

from typing import Final

import attrs

from toolguard import _engine
from toolguard._marks import is_control_flow
from toolguard._values import ToolCall, ToolResult, error_result
from toolguard.errors import RemoteFailure, ToolCallFailed
from toolguard.guard._content import ERROR_LIMIT, sendable
from toolguard.guard._failure import asks_to_stop
from toolguard.policy._precedence import Resolved
from toolguard.policy._values import NEVER

__all__ = ["books_visible", "crossed", "remote"]


def crossed(error: Exception, tool: str) -> Exception:
    """In a durable engine's workflow code, what an engine's wrapper around a failure
    that crossed back carries (the answer given where the tool ran, one of toolguard's
    own errors); control flow and ``ToolCallFailed`` that crossed propagate."""
    runtime = _engine.current()
    if runtime is None:
        return error
    found = runtime.crossed(error, tool)
    if found is not error and (isinstance(found, ToolCallFailed) or is_control_flow(found)):
        raise found from error
    return found


def remote(error: RemoteFailure, call: ToolCall, resolved: Resolved, name: str) -> ToolResult:
    """The answer given where the tool ran, as it crossed: sendable, bounded as any
    answer here, its error id kept, nothing logged (it was, there, once)."""
    limit = ERROR_LIMIT if resolved.max_result_chars is None else resolved.max_result_chars
    result = error_result(
        call.id,
        name,
        sendable(error.content, limit),
        return_direct=False,
        error_id=error.error_id,
        error_kind=error.error_kind,
    )
    return_direct = resolved.return_direct
    if return_direct is not NEVER and asks_to_stop(return_direct, result):
        result = attrs.evolve(result, return_direct=True)
    return result


_COUNTED: Final = {"hidden": False, "timeout": False, "visible": True}


def books_visible(error: RemoteFailure) -> bool | None:
    """How a session's books count a remote failure (``Books.after``'s ``visible``): a
    hidden failure or a timeout counts towards the breaker (``False``), a model-visible
    answer closes it (``True``); the model's own mistakes and an open breaker change
    nothing (``None``: the books are not told)."""
    return _COUNTED.get(error.error_kind)
