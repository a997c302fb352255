"""A plain LangChain tool under ``ToolguardMiddleware``: what it raised, and where.

Part of :mod:`toolguard.integrations.langchain`.

LangGraph's ``ToolNode`` turns every pydantic ``ValidationError`` that comes out of
``tool.invoke`` into a finished message ("Error invoking tool ... Please fix the
error and try again."), the model's bad arguments and the tool's own failures alike,
before any middleware sees an exception. So the middleware runs a *probe*: a shallow
copy of the tool whose argument parsing and body are wrapped, which tells them apart:

* a ``ValidationError`` of the model's arguments becomes toolguard's
  ``InvalidArguments`` (the model's mistake: visible, bounded, one line per problem),
  or, when it concerns an argument LangGraph injects, a hidden failure;
* a ``ValidationError`` the body raised (parsing an upstream reply) travels past
  ``ToolNode`` inside :class:`Raised` and is answered like any hidden failure.

The probe also remembers what the body raised, so that an exception something
inside the middleware answered (LangChain's ``handle_tool_error``,
``ToolRetryMiddleware``'s default ``on_failure="continue"``) is noticed and warned
about once.
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Iterable
from typing import Any, Final

import pydantic
import pydantic_core
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException

from toolguard._marks import is_control_flow
from toolguard._text import shown
from toolguard._values import ToolCall
from toolguard.errors import UnknownTool
from toolguard.guard._guard import Guard
from toolguard.integrations.langchain._tool import ToolguardWarning
from toolguard.policy._values import ToolPolicy
from toolguard.schema._arguments import Arguments

__all__ = ["Once", "PlainTool", "Probe", "Raised", "unknown_tool", "unwrapped", "visible"]

_ANY: Final = pydantic_core.SchemaValidator(pydantic_core.core_schema.any_schema())


class Raised(Exception):
    """A plain tool's failure that ``ToolNode`` would answer as the model's mistake (a
    ``ValidationError``), carried past it to the middleware. Its text says nothing of
    the failure: whatever prints it (a ``ToolNode`` or middleware inside ours) leaks nothing.
    """

    def __init__(self, tool: str, error: Exception) -> None:
        super().__init__(
            f"the tool {shown(tool)!r} failed ({type(error).__name__}); toolguard answers it"
        )
        self.error = error
        self.__cause__ = error


def unwrapped(error: Exception) -> Exception:
    """The tool's own exception, out of a :class:`Raised`."""
    return error.error if isinstance(error, Raised) else error


class PlainTool:
    """What the middleware learnt about one plain LangChain tool (built on first sight)."""

    __slots__ = ("_arguments", "_lock", "name", "tool")

    def __init__(self, tool: BaseTool) -> None:
        self.tool = tool
        self.name = tool.name
        self._arguments: tuple[Arguments, frozenset[str]] | None = None
        self._lock = threading.Lock()

    def _schemas(self) -> tuple[Arguments, frozenset[str]]:
        """The model's schema and the injected names, read on the first bad call."""
        with self._lock:
            if self._arguments is None:
                self._arguments = _arguments_of(self.tool)
            return self._arguments

    def rejected(self, error: pydantic.ValidationError) -> Exception:
        """What a ``ValidationError`` of the tool's arguments means.

        The model's mistake (``InvalidArguments``, visible) unless a problem concerns
        an argument LangGraph injects: that is the application's, a hidden failure.
        """
        arguments, injected = self._schemas()
        if any(detail["loc"][:1] and detail["loc"][0] in injected for detail in error.errors()):
            return Raised(self.name, error)
        return arguments.invalid(error)

    def probe(self) -> Probe:
        return Probe(self)


def _arguments_of(tool: BaseTool) -> tuple[Arguments, frozenset[str]]:
    model_schema = tool.tool_call_schema
    full = tool.args_schema
    parameters: dict[str, Any] = {}
    injected: frozenset[str] = frozenset()
    try:
        if isinstance(model_schema, dict):
            parameters = model_schema
        elif isinstance(model_schema, type) and issubclass(model_schema, pydantic.BaseModel):
            parameters = model_schema.model_json_schema()
            if isinstance(full, type) and issubclass(full, pydantic.BaseModel):
                injected = frozenset(full.model_fields) - frozenset(model_schema.model_fields)
    except Exception:  # noqa: BLE001 - a schema LangChain cannot render: no argument list
        parameters = {}
    arguments = Arguments(
        tool=tool.name,
        parameters=parameters,
        validator=_ANY,
        positional=(),
        call_id_params=(),
        context_params=tuple(sorted(injected)),
    )
    return arguments, injected


class Probe:
    """One call's copy of a plain tool: parsing and body wrapped (see the module)."""

    __slots__ = ("in_body", "raised", "tool")

    def __init__(self, plain: PlainTool) -> None:
        self.raised: BaseException | None = None
        self.in_body = False  # whether ``raised`` came from the body (not the parsing)
        tool = plain.tool.model_copy()
        parse, run, arun = tool._to_args_and_kwargs, tool._run, tool._arun
        name = plain.name
        probe = self

        @functools.wraps(parse)
        def to_args_and_kwargs(*args: Any, **kwargs: Any) -> Any:
            try:
                return parse(*args, **kwargs)
            except pydantic.ValidationError as error:
                probe.raised = error
                raise plain.rejected(error)  # noqa: B904 - its cause is set where it is kept

        def failed(error: Exception) -> Exception:
            if isinstance(error, Raised) or is_control_flow(error):
                return error
            probe.raised, probe.in_body = error, True
            if isinstance(error, pydantic.ValidationError):
                return Raised(name, error)
            return error

        @functools.wraps(run)
        def run_(*args: Any, **kwargs: Any) -> Any:
            try:
                return run(*args, **kwargs)
            except Exception as error:
                answer = failed(error)
                if answer is error:
                    raise
                raise answer from error

        @functools.wraps(arun)
        async def arun_(*args: Any, **kwargs: Any) -> Any:
            try:
                return await arun(*args, **kwargs)
            except Exception as error:
                answer = failed(error)
                if answer is error:
                    raise
                raise answer from error

        # a copy's own methods: instance attributes win over the class's functions
        object.__setattr__(tool, "_to_args_and_kwargs", to_args_and_kwargs)
        object.__setattr__(tool, "_run", run_)
        object.__setattr__(tool, "_arun", arun_)
        self.tool = tool

    def tripped(self, error: Exception) -> Exception | None:
        """The body's own exception, when ``error`` is what LangChain's or LangGraph's
        code raised while looking at it (``is_invalid_resume`` reading an attribute of
        an exception whose ``__getattr__`` raises): the body's failure is what toolguard
        answers and logs. ``None`` when ``error`` is anything else."""
        raised = self.raised
        if (
            not self.in_body
            or not isinstance(raised, Exception)
            or error is raised
            or error.__context__ is not raised
            or is_control_flow(error)
        ):
            return None
        return raised

    def answered_inside(self, outcome: object) -> bool:
        """Whether the body raised and yet an error message came back: something
        inside the middleware answered the exception before toolguard saw it."""
        return (
            self.raised is not None
            and isinstance(outcome, ToolMessage)
            and outcome.status == "error"
        )


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


# --- unknown tools ----------------------------------------------------------------------

_INVALID_TOOL: Final = "Error: {name} is not a valid tool, try one of ["


def unknown_tool(
    call: ToolCall, outcome: object, available: Iterable[str] | None
) -> UnknownTool | None:
    """toolguard's answer to a call of a tool the agent does not have, when ``outcome``
    is ``ToolNode``'s own answer to it ("Error: x is not a valid tool..."), which echoes
    the model's name raw and whole. ``available``: the agent's tool names
    (``ToolRuntime.tools``); without them, the ones ``ToolNode`` listed."""
    if not isinstance(outcome, ToolMessage) or outcome.status != "error":
        return None
    content = outcome.content
    prefix = _INVALID_TOOL.format(name=call.name)
    if not isinstance(content, str) or not content.startswith(prefix):
        return None
    names = tuple(available) if available is not None else ()
    if not names and content.endswith("]."):
        names = tuple(n for n in content[len(prefix) : -2].split(", ") if n)
    return _guard_of(names).unknown_tool(call, shown(call.name))


@functools.lru_cache(maxsize=16)
def _guard_of(names: tuple[str, ...]) -> Guard:
    """A guard that knows these tool names (its unknown-tool message lists them)."""
    return Guard((), dict.fromkeys(names, ToolPolicy()))


# --- said once --------------------------------------------------------------------------


class Once:
    """Warnings said once per key (a tool name) by one middleware."""

    def __init__(self) -> None:
        self._said: set[str] = set()
        self._lock = threading.Lock()

    def warn(self, key: str, message: str) -> None:
        with self._lock:
            if key in self._said:
                return
            self._said.add(key)
        warnings.warn(message, ToolguardWarning, stacklevel=4)

    def said(self, key: str) -> bool:
        return key in self._said
