"""The handler vocabulary (the implementation; ``toolguard.handlers`` is its public face).

A handler is asked about one failure and answers with

* content (a ``str`` or content blocks): the failure is handled, the model sees it;
* ``None``: "not mine", the next level of the precedence chain is asked;
* by raising: the failure propagates (:data:`fail` raises ``ToolCallFailed``).

Handlers compose like a sentence::

    on(TimeoutError, "Search timed out; try again later.") | fail_unless_visible

A plain callable ``(error, context) -> content | None`` (sync or async) and a plain
string are handlers too, on either side of ``|``. A string means the same as in a
policy file (:func:`as_handler` is the one rule):

* a handler's name (``"fail"``, ``"fail_unless_visible"``, ``"send_exception_message"``)
  is that handler; ``"generic_unless_visible"`` and ``"always"`` need their message
  (``generic_unless_visible("...")``), so the bare name is refused;
* a word that looks like a misspelt name (``"fial"``) is refused with a suggestion;
* anything else is a fixed message, ``generic_unless_visible(message)``: a
  model-visible error keeps its own message. :func:`always` replaces those too, and
  so does a text given to :func:`on`, for the types it names.

In fixed messages ``{error_id}`` and ``{tool}`` are replaced literally; no other
braces are interpreted.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeAlias

import attrs

from toolguard._suggest import did_you_mean
from toolguard._values import Content, ToolCall
from toolguard.errors import InvalidOption, ToolCallFailed

__all__ = [
    "HANDLER_NAMES",
    "MESSAGE_HANDLERS",
    "NAMED_HANDLERS",
    "Answer",
    "Handler",
    "HandlerContext",
    "HandlerLike",
    "always",
    "answer",
    "as_handler",
    "fail",
    "fill_message",
    "fixed_message",
    "fail_unless_visible",
    "generic_unless_visible",
    "named_handler",
    "on",
    "send_exception_message",
]

Answer: TypeAlias = Content | None


def fill_message(template: str, *, tool: str, error_id: str) -> str:
    """A fixed message with ``{error_id}`` and ``{tool}`` replaced literally; nothing else."""
    return template.replace("{error_id}", error_id).replace("{tool}", tool)


@attrs.frozen(kw_only=True, slots=False)  # unslotted: built fast on the failure path
class HandlerContext:
    """What a handler knows about the failure it is asked about.

    ``model_message`` is the error's model-visible message (``ToolError``, or
    ``message_for_model()``), or ``None`` when the error is unmarked (hidden).
    ``level`` is the precedence level whose handler is being asked.
    """

    call: ToolCall
    tool: str
    error_id: str
    level: str
    model_message: str | None = None

    def fill(self, template: str) -> str:
        """Replace ``{error_id}`` and ``{tool}`` literally; nothing else."""
        return fill_message(template, tool=self.tool, error_id=self.error_id)


class Handler:
    """Base class of every handler; subclasses implement :meth:`__call__`.

    ``acall`` is the async entry point: it awaits what ``__call__`` returns when
    that is awaitable. Handlers whose ``is_async`` is true can only be used on the
    async paths (``adispatch``, ``arun``).
    """

    name: str = "handler"
    is_async: bool = False

    def __call__(self, error: Exception, context: HandlerContext) -> Any:
        raise NotImplementedError

    async def acall(self, error: Exception, context: HandlerContext) -> Answer:
        answer = self(error, context)
        if inspect.isawaitable(answer):
            answer = await answer
        return answer  # type: ignore[no-any-return]  # a handler's answer is Any

    def members(self) -> tuple[Handler, ...]:
        """The handlers this one asks in order (itself, unless it is a composition)."""
        return (self,)

    def __or__(self, other: HandlerLike) -> Handler:
        return Chain((*self.members(), *as_handler(other).members()))

    def __ror__(self, other: HandlerLike) -> Handler:
        return Chain((*as_handler(other).members(), *self.members()))

    def __repr__(self) -> str:
        return self.name


HandlerLike: TypeAlias = (
    Handler | str | Callable[[Exception, HandlerContext], Answer | Awaitable[Answer]]
)


class Chain(Handler):
    """``a | b | c``: the first non-``None`` answer wins."""

    def __init__(self, handlers: tuple[Handler, ...]) -> None:
        self._handlers = handlers
        self.name = " | ".join(h.name for h in handlers)
        self.is_async = any(h.is_async for h in handlers)

    def members(self) -> tuple[Handler, ...]:
        return self._handlers

    def __call__(self, error: Exception, context: HandlerContext) -> Answer:
        for handler in self._handlers:
            answer = handler(error, context)
            if answer is not None:
                return answer  # type: ignore[no-any-return]  # a handler's answer is Any  # a handler's answer is Any
        return None

    async def acall(self, error: Exception, context: HandlerContext) -> Answer:
        for handler in self._handlers:
            answer = await handler.acall(error, context)
            if answer is not None:
                return answer
        return None


_PLACEHOLDERS: Final = ("{error_id}", "{tool}")


def _short(text: str, limit: int = 40) -> str:
    """``repr`` of a message, shortened for handler names in logs and ``explain``; never
    cut inside a placeholder (``'...(ref {err...'`` reads like a broken template)."""
    if len(text) <= limit:
        return repr(text)
    head = text[: limit - 3]
    brace = head.rfind("{")
    if brace != -1 and "}" not in head[brace:] and text.startswith(_PLACEHOLDERS, brace):
        head = head[:brace]
    return repr(head + "...")


class FunctionHandler(Handler):
    """A plain callable ``(error, context) -> content | None``, sync or async."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        module = getattr(function, "__module__", None)
        qualname = getattr(function, "__qualname__", None) or type(function).__qualname__
        self.name = f"{module}.{qualname}" if module and module != "builtins" else qualname
        self.is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 - async __call__ on objects
        )

    def __call__(self, error: Exception, context: HandlerContext) -> Any:
        return self.function(error, context)


# --- the ready-made handlers --------------------------------------------------------


class _SendExceptionMessage(Handler):
    name = "send_exception_message"

    def __call__(self, error: Exception, context: HandlerContext) -> str:
        if context.model_message is not None:
            return context.model_message
        try:
            text = str(error)
        except Exception:  # noqa: BLE001 - a __str__ that raises must not break handling
            text = ""
        return text if text.strip() else type(error).__name__


class _Fail(Handler):
    name = "fail"

    def __call__(self, error: Exception, context: HandlerContext) -> Answer:
        raise ToolCallFailed(
            f"tool {context.tool!r} failed (error id {context.error_id})",
            tool=context.tool,
            call_id=context.call.id,
            error_id=context.error_id,
        ) from error


class _FailUnlessVisible(_Fail):
    name = "fail_unless_visible"

    def __call__(self, error: Exception, context: HandlerContext) -> Answer:
        if context.model_message is not None:
            return context.model_message
        return super().__call__(error, context)


def _checked_message(factory: str, message: object) -> str:
    if not isinstance(message, str) or not message.strip():
        raise InvalidOption(f"{factory}() takes a non-blank message, got {message!r}")
    return message


class _GenericUnlessVisible(Handler):
    def __init__(self, message: str, *, name: str | None = None) -> None:
        self.message = _checked_message("generic_unless_visible", message)
        self.name = name or f"generic_unless_visible({_short(message)})"

    def __call__(self, error: Exception, context: HandlerContext) -> str:
        if context.model_message is not None:
            return context.model_message
        return context.fill(self.message)


class _Always(Handler):
    """A fixed message for every failure, a model-visible one's included; never declines."""

    def __init__(self, message: str, *, name: str | None = None) -> None:
        self.message = _checked_message("always", message)
        self.name = name or f"always({_short(message)})"

    def __call__(self, error: Exception, context: HandlerContext) -> str:
        return context.fill(self.message)


class _On(Handler):
    def __init__(self, types: tuple[type[BaseException], ...], handler: Handler) -> None:
        self.types = types
        self.handler = handler
        self.is_async = handler.is_async
        names = ", ".join(t.__name__ for t in types)
        self.name = f"on({names}, {handler.name})"

    def __call__(self, error: Exception, context: HandlerContext) -> Any:
        return self.handler(error, context) if isinstance(error, self.types) else None

    async def acall(self, error: Exception, context: HandlerContext) -> Answer:
        return await self.handler.acall(error, context) if isinstance(error, self.types) else None


send_exception_message: Handler = _SendExceptionMessage()
"""Send the exception's message (the model-visible message when there is one)."""

fail: Handler = _Fail()
"""Fail the invocation: raise ``ToolCallFailed`` from the error, whatever it is."""

fail_unless_visible: Handler = _FailUnlessVisible()
"""Send a model-visible error's message; fail the invocation on anything else."""


def generic_unless_visible(message: str) -> Handler:
    """Send a model-visible error's message; anything else gets ``message``.

    ``message`` may quote ``{error_id}`` and ``{tool}``.
    """
    return _GenericUnlessVisible(message)


def always(message: str) -> Handler:
    """Send ``message`` for every failure, replacing even a model-visible error's own
    message (a ``ToolError``'s). The explicit choice to hide those too; a plain string
    (``generic_unless_visible(message)``) keeps them.

    ``message`` may quote ``{error_id}`` and ``{tool}``.
    """
    return _Always(message)


def on(
    types: type[BaseException] | tuple[type[BaseException], ...], handler: HandlerLike
) -> Handler:
    """Answer with ``handler`` for errors of these types; decline (``None``) otherwise.

    A text is the answer for the types named, a model-visible error's own message
    replaced too (``on(ToolError, "...")`` is LangChain's ``handle_tool_error="..."``):
    naming the types is the explicit choice. ``{error_id}`` and ``{tool}`` are filled in,
    and the error is logged under that id. A handler's name (``"fail"``) is that handler.
    """
    as_tuple = types if isinstance(types, tuple) else (types,)
    if not as_tuple or not all(
        isinstance(t, type) and issubclass(t, BaseException) for t in as_tuple
    ):
        raise TypeError(f"on() takes an exception class or a tuple of them, got {types!r}")
    if isinstance(handler, str) and named_handler(handler) is None:
        return _On(as_tuple, answer(handler))
    return _On(as_tuple, as_handler(handler))


def answer(text: str) -> Handler:
    """``text`` as the answer to every error it is asked about, visible ones included:
    what ``on(types, text)`` and a policy file's rule answer for the types they name."""
    return _Always(text, name=_short(text))


# --- names: a string means the same in code as in a policy file --------------------------

NAMED_HANDLERS: Final[dict[str, Handler]] = {
    "send_exception_message": send_exception_message,
    "fail": fail,
    "fail_unless_visible": fail_unless_visible,
}
"""The ready handlers a string may name, in code and in policy files."""

MESSAGE_HANDLERS: Final[dict[str, Callable[[str], Handler]]] = {
    "generic_unless_visible": generic_unless_visible,
    "always": always,
}
"""The handlers made from a message: named bare they need one (a file's ``message``)."""

HANDLER_NAMES: Final[tuple[str, ...]] = (*NAMED_HANDLERS, *MESSAGE_HANDLERS)
"""Every handler name; a string close to one of them is a misspelling, not a message."""

_NAME_LIKE: Final = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*")
_ALLOWED: Final = (
    "a handler from toolguard.handlers (send_exception_message, fail, fail_unless_visible, "
    "generic_unless_visible(message), always(message), on(...)), a handler's name as a "
    "string, a callable (error, context) -> str | None, or a fixed message string"
)


def named_handler(text: str) -> Handler | None:
    """The handler a string names, ``None`` for a fixed message; a misspelt name, or the
    bare name of a handler that needs a message, is an :class:`InvalidOption`."""
    named = NAMED_HANDLERS.get(text)
    if named is not None:
        return named
    if text in MESSAGE_HANDLERS:
        raise InvalidOption(
            f"{text!r} names the handler {text}(message), which needs its message: "
            f"write {text}('...') from toolguard.handlers, or the message itself as a "
            "string (a fixed message is generic_unless_visible(message))"
        )
    if _NAME_LIKE.fullmatch(text):
        hint = did_you_mean(text, HANDLER_NAMES)
        if hint:
            raise InvalidOption(
                f"unknown handler {text!r}{hint}; handler names: {', '.join(HANDLER_NAMES)}. "
                "A fixed message for the model is a sentence, not a name"
            )
    return None


def fixed_message(text: str) -> Handler:
    """A plain message, in code or a file: ``generic_unless_visible(text)``, named as
    written (``explain`` shows the string the author gave)."""
    return _GenericUnlessVisible(text, name=_short(text))


def as_handler(value: HandlerLike) -> Handler:
    """Coerce a handler-like value (handler, string, callable) into a :class:`Handler`.

    A string is a handler's name (that handler) or a fixed message
    (``generic_unless_visible(message)``); see :func:`named_handler`.
    """
    if isinstance(value, Handler):
        return value
    if isinstance(value, str):
        named = named_handler(value)
        return named if named is not None else fixed_message(value)
    if callable(value):
        return FunctionHandler(value)
    raise InvalidOption(f"{value!r} is not a handler; expected {_ALLOWED}")
