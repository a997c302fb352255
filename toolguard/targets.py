"""``MODULE:ATTR``: the command line's way to name an agent's tools (public: the
``toolguard`` command and ``python -m toolguard.integrations.mcp`` read their targets
with it, and an application's own entry points may too).

``load_target("myapp.agent:dispatcher")`` imports ``myapp.agent`` (with the
current directory importable, as ``python -m`` does) and returns the
:class:`~toolguard.Dispatcher` it names, or a new one around the list or tuple of
tools (or the one ``@tool``) it names. Every way this can go wrong is a
:class:`TargetError` whose message says what to write instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from typing import Any, Final

from toolguard._dispatcher import Dispatcher
from toolguard._suggest import did_you_mean
from toolguard._tool import BoundTool, Tool
from toolguard.errors import ToolDefinitionError
from toolguard.files._imports import ImportPathError, resolve

__all__ = ["TargetError", "importable_cwd", "load_target"]

_EXAMPLE: Final = "write MODULE:ATTR, e.g. myapp.agent:dispatcher"


class TargetError(ValueError):
    """A ``MODULE:ATTR`` that does not name a Dispatcher or tools."""


def load_target(spec: str, *, foreign: bool = False) -> Dispatcher:
    """The Dispatcher ``spec`` (``"package.module:attr.attr"``) names.

    The attribute may be a :class:`~toolguard.Dispatcher`, a list or tuple of tools
    (plain functions are decorated, as ``Dispatcher`` does), or one ``@tool``.

    With ``foreign=True`` (for a command that only reads policies, such as
    ``explain``), it may also be what an application guarding its framework's tools in
    place has: an object holding its dispatcher as ``.dispatcher`` (an integration's
    middleware, capability or plugin), or a framework's tools (anything with a string
    ``name``), which become the dispatcher's ``external_tools``.
    """
    if not isinstance(spec, str):
        raise TargetError(f"{spec!r} is not MODULE:ATTR; {_EXAMPLE}")
    path = spec.strip()
    try:
        with importable_cwd():
            value = resolve(path)
    except ImportPathError as problem:
        raise TargetError(_problem(spec, problem)) from problem.error
    return _dispatcher(spec, value, foreign=foreign)


@contextlib.contextmanager
def importable_cwd() -> Iterator[None]:
    """The current directory importable for the block, as ``python -m`` makes it: the
    command's own ``sys.path`` starts with its script's directory instead. Every
    command that imports the application's code (a target, a policy file's exception
    classes and handlers) imports it from where it is run."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added:
            sys.path.remove(cwd)


def _problem(spec: str, problem: ImportPathError) -> str:
    if problem.kind == "syntax":
        return f"{spec!r} is not MODULE:ATTR; {_EXAMPLE}"
    if problem.kind == "missing":
        return (
            f"no module named {problem.missing!r} (looked in the current directory and on "
            "sys.path; run from the directory that contains it, or set PYTHONPATH)"
        )
    if problem.kind == "failed":
        return (
            f"importing {problem.module!r} raised {type(problem.error).__name__}: "
            f"{problem.error} (python -c 'import {problem.module}' shows the traceback)"
        )
    index = problem.index
    owner = (
        problem.module if index == 0 else f"{problem.module}:{'.'.join(problem.attributes[:index])}"
    )
    return (
        f"{owner!r} has no attribute {problem.attribute!r}"
        f"{did_you_mean(problem.attribute, problem.public)}"
    )


def _dispatcher(spec: str, value: Any, *, foreign: bool) -> Dispatcher:
    if isinstance(value, Dispatcher):
        return value
    if foreign and isinstance(getattr(value, "dispatcher", None), Dispatcher):
        held: Dispatcher = value.dispatcher
        return held
    if isinstance(value, Tool | BoundTool) or (foreign and _framework_tool(value)):
        value = [value]
    if isinstance(value, list | tuple):
        if not value:
            raise TargetError(f"{spec!r} is an empty {type(value).__name__}: no tools to load")
        external = [tool.name for tool in value if foreign and _framework_tool(tool)]
        own = [tool for tool in value if not (foreign and _framework_tool(tool))]
        try:
            return Dispatcher(own, external_tools=external)
        except ToolDefinitionError as error:
            raise TargetError(f"{spec!r}: {error}") from error
    raise TargetError(
        f"{spec!r} is a {type(value).__name__}, not a Dispatcher, a list or tuple of "
        "tools, or a @tool function"
    )


def _framework_tool(value: Any) -> bool:
    """A framework's own tool (a LangChain ``BaseTool``, an Agents SDK ``FunctionTool``,
    ...): not toolguard's, and named by a string ``name``, as every framework names them."""
    return not isinstance(value, Tool | BoundTool) and isinstance(getattr(value, "name", None), str)
