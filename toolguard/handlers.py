"""The handler vocabulary: small objects that decide what the model is told.

A handler is asked about one failure and answers with

* content (a ``str`` or content blocks): the failure is handled, the model sees it;
* ``None``: "not mine", the next level of the precedence chain is asked;
* by raising: the failure propagates (:data:`fail` raises ``ToolCallFailed``).

Handlers compose like a sentence::

    on(TimeoutError, "Search timed out; try again later.") | fail_unless_visible

A plain callable ``(error, context) -> content | None`` (sync or async) and a plain
string are handlers too, on either side of ``|``, meaning what they mean in a policy
file: a handler's name (``"fail"``) is that handler, a misspelt name (``"fial"``) is
refused with a suggestion, any other string is a fixed message that keeps
model-visible messages (``generic_unless_visible(message)``). :func:`always` replaces
those too, and so does a text given to :func:`on`: the answer for the types it names.
In fixed messages ``{error_id}`` and ``{tool}`` are replaced literally; no other braces
are interpreted. Subclass :class:`Handler` for a handler of your own.
"""

from toolguard.policy._handlers import (
    Handler,
    HandlerContext,
    HandlerLike,
    always,
    fail,
    fail_unless_visible,
    generic_unless_visible,
    on,
    send_exception_message,
)

__all__ = [
    "Handler",
    "HandlerContext",
    "HandlerLike",
    "always",
    "fail",
    "fail_unless_visible",
    "generic_unless_visible",
    "on",
    "send_exception_message",
]
