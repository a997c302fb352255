"""``MODULE:ATTR``: the command line's way to name an agent's tools.

``load_target("myapp.agent:dispatcher")`` imports ``myapp.agent`` (with the
current directory importable, as ``python -m`` does) and returns the
:class:`~toolguard.Dispatcher` it names, or a new one around the list or tuple of
tools (or the one ``@tool``) it names. Every way this can go wrong is a
:class:`TargetError` whose message says what to write instead.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, Final

from toolguard._decorator import BoundTool, Tool
from toolguard._dispatcher import Dispatcher
from toolguard._suggest import did_you_mean
from toolguard.errors import ToolDefinitionError

__all__ = ["TargetError", "load_target"]

_SPEC: Final = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_EXAMPLE: Final = "write MODULE:ATTR, e.g. myapp.agent:dispatcher"


class TargetError(ValueError):
    """A ``MODULE:ATTR`` that does not name a Dispatcher or tools."""


def load_target(spec: str) -> Dispatcher:
    """The Dispatcher ``spec`` (``"package.module:attr.attr"``) names.

    The attribute may be a :class:`~toolguard.Dispatcher`, a list or tuple of tools
    (plain functions are decorated, as ``Dispatcher`` does), or one ``@tool``.
    """
    if not isinstance(spec, str) or not _SPEC.fullmatch(spec.strip()):
        raise TargetError(f"{spec!r} is not MODULE:ATTR; {_EXAMPLE}")
    module_name, _, attributes = spec.strip().partition(":")
    value: Any = _import(module_name)
    parts = attributes.split(".")
    for index, attribute in enumerate(parts):
        if not hasattr(value, attribute):
            owner = module_name if index == 0 else f"{module_name}:{'.'.join(parts[:index])}"
            public = [name for name in dir(value) if not name.startswith("_")]
            raise TargetError(
                f"{owner!r} has no attribute {attribute!r}{did_you_mean(attribute, public)}"
            )
        value = getattr(value, attribute)
    return _dispatcher(spec, value)


def _import(module_name: str) -> Any:
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise TargetError(
                f"no module named {missing!r} (looked in the current directory and on "
                "sys.path; run from the directory that contains it, or set PYTHONPATH)"
            ) from None
        raise TargetError(_import_failed(module_name, error)) from error
    except (Exception, SystemExit) as error:  # the module's bug, reported
        raise TargetError(_import_failed(module_name, error)) from error
    finally:
        if added:
            sys.path.remove(cwd)


def _import_failed(module_name: str, error: BaseException) -> str:
    return (
        f"importing {module_name!r} raised {type(error).__name__}: {error} "
        f"(python -c 'import {module_name}' shows the traceback)"
    )


def _dispatcher(spec: str, value: Any) -> Dispatcher:
    if isinstance(value, Dispatcher):
        return value
    if isinstance(value, Tool | BoundTool):
        value = [value]
    if isinstance(value, list | tuple):
        if not value:
            raise TargetError(f"{spec!r} is an empty {type(value).__name__}: no tools to load")
        try:
            return Dispatcher(value)
        except ToolDefinitionError as error:
            raise TargetError(f"{spec!r}: {error}") from error
    raise TargetError(
        f"{spec!r} is a {type(value).__name__}, not a Dispatcher, a list or tuple of "
        "tools, or a @tool function"
    )
