"""What a plain LangChain tool raised, and where: the tool's body, LangChain's parsing of
the model's arguments, or LangChain itself.

Part of :mod:`toolguard.integrations.langchain`. ``ToolguardMiddleware`` neither copies
nor changes the tool. It learns what the tool raised from LangChain's own callback
system: while it runs a call, a :class:`Witness` (a callback handler, added to every
callback manager LangChain configures in that context through
``langchain_core.tracers.context.register_configure_hook``) keeps the exception
``BaseTool.run`` reports with ``on_tool_error`` for that call's id. Only an exception
the tool run reported is the tool's; anything else that reaches the middleware is
LangChain's or LangGraph's (a missing store or state field, a ``Command`` with the
wrong update type, a middleware on the wrong path): the developer's, raised as the
framework raises it.

Where a reported exception was raised is read from its traceback, against the frames
of ``BaseTool.run``/``BaseTool.arun`` (:func:`place`):

* below the tool's ``_run``/``_arun``: the tool's **body** (its failure, answered by
  the policy), unless it was raised by LangChain's own ``_run`` (a ``StructuredTool``
  with no sync function on the sync path);
* in LangChain's parsing (``_to_args_and_kwargs``/``_parse_input``): a pydantic
  ``ValidationError`` there is the model's **arguments** (toolguard's bounded answer);
* anywhere else in ``run`` (``response_format="content_and_artifact"`` without a pair,
  a missing call id for an ``InjectedToolCallId``): **LangChain**'s own error.

``BaseTool._run``/``_arun`` are LangChain's documented extension points; the parsing
methods' names are private to LangChain: ``tests/integrations/test_langchain_private.py``
fails loudly when a release moves any of them.
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any, Final, Literal
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.tools import BaseTool, ToolException
from langchain_core.tracers.context import register_configure_hook

__all__ = ["WITNESS", "Place", "Witness", "install", "place", "visible"]

Place = Literal["body", "arguments", "langchain"]


class Witness(BaseCallbackHandler):
    """Keeps what the tool run of one call reported as its exception (``on_tool_error``)."""

    run_inline = True  # on the async path too: no executor hop for an event we only note

    def __init__(self, call_id: str) -> None:
        self.call_id = call_id
        self.error: BaseException | None = None

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kw: Any
    ) -> None:
        if kw.get("tool_call_id") == self.call_id:
            self.error = error

    def saw(self, error: BaseException) -> bool:
        """Whether ``error`` is the tool's own exception (as the tool run reported it)."""
        return error is self.error and error is not None


WITNESS: ContextVar[Witness | None] = ContextVar("toolguard_langchain_witness", default=None)
"""The witness of the call running in this context (set by the middleware per call)."""

_installed = False
_install_lock = threading.Lock()


def install() -> None:
    """Register :data:`WITNESS` with LangChain's callback configuration, once per process
    (when the first middleware is made, not at import: no import-time side effect).
    Outside a guarded call the variable is ``None`` and LangChain adds nothing."""
    global _installed
    with _install_lock:
        if not _installed:
            # inheritable=False: the tool's child runs do not carry it, and each
            # configure() in the call's context adds it at most once
            register_configure_hook(WITNESS, inheritable=False)
            _installed = True


# --- where it was raised ------------------------------------------------------------------

# on_tool_error reports the exception, not where it was raised; these frames say it
# (see the module; pinned by tests/integrations/test_langchain_private.py)
_RUN: Final = frozenset({BaseTool.run.__code__, BaseTool.arun.__code__})
_BODY: Final = frozenset({"_run", "_arun"})  # LangChain's documented extension points
_PARSING: Final = frozenset({"_to_args_and_kwargs", "_parse_input"})  # LangChain's private


def place(error: BaseException) -> Place:
    """Where the exception a tool run reported was raised (see the module)."""
    frames = []
    traceback = error.__traceback__
    while traceback is not None:
        frames.append(traceback.tb_frame)
        traceback = traceback.tb_next
    start = next((i for i, frame in enumerate(frames) if frame.f_code in _RUN), None)
    if start is None:  # not through BaseTool.run (a tool that overrides it): its own
        return "body"
    below = {frame.f_code.co_name for frame in frames[start + 1 :]}
    if below & _BODY:
        last = frames[-1]
        if last.f_code.co_name in _BODY and str(last.f_globals.get("__name__")).startswith(
            "langchain_core."
        ):
            return "langchain"  # LangChain's own _run refused the call
        return "body"
    if below & _PARSING:
        return "arguments"
    return "langchain"


# --- LangChain's ToolException: "tell the model this" ----------------------------------


def _tool_exception_message(self: ToolException) -> str:
    # what LangChain's handle_tool_error=True would send: the first argument
    text = self.args[0] if self.args else ""
    return text if isinstance(text, str) else str(text)


_VISIBLE_CLASSES: dict[type[ToolException], type[ToolException]] = {}


def _visible_class(cls: type[ToolException]) -> type[ToolException]:
    """``cls`` with ``message_for_model()``, named as it is (made once per class)."""
    found = _VISIBLE_CLASSES.get(cls)
    if found is None:
        found = _VISIBLE_CLASSES[cls] = type(
            cls.__name__,
            (cls,),
            {
                "message_for_model": _tool_exception_message,
                "__module__": cls.__module__,
                "__qualname__": cls.__qualname__,
                "__doc__": cls.__doc__,
            },
        )
    return found


class _VisibleToolException(ToolException):
    """A ToolException whose class cannot be extended: its message, its cause kept."""

    message_for_model = _tool_exception_message


def visible(error: ToolException) -> ToolException:
    """A model-visible copy of ``error``: same class for handlers (``on(MyError, ...)``
    still matches), same args, attributes, notes, cause and traceback; the original is
    not changed. Its message is what LangChain's ``handle_tool_error=True`` sends."""
    if getattr(type(error), "message_for_model", None) is not None:
        return error  # marked already
    copy: ToolException
    try:
        cls = _visible_class(type(error))
        copy = cls.__new__(cls, *error.args)
        copy.__dict__.update(getattr(error, "__dict__", {}))
    except Exception:  # noqa: BLE001 - a class that cannot be extended: the fallback
        copy = _VisibleToolException(*error.args)
    copy.args = error.args
    copy.__cause__ = error.__cause__
    copy.__context__ = error.__context__
    copy.__suppress_context__ = error.__suppress_context__
    return copy.with_traceback(error.__traceback__)
