"""What ``@tool`` learns about a function, once, at decoration: a :class:`ToolSpec`.

The name (what every provider accepts), the description and parameter docs (the
docstring), the arguments (JSON Schema and validator), the author's policy, and
whether the function is async or a method. ``toolguard._tool`` wraps the function
with it; nothing here runs the function.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Final

import attrs

from toolguard._text import TOOL_NAME, TOOL_NAME_RULE
from toolguard.errors import ToolDefinitionError
from toolguard.policy._values import ToolPolicy, policy_from_options
from toolguard.schema._arguments import Arguments, build_arguments, describe
from toolguard.schema._strict import strict_schema

__all__ = ["TOOL_OPTIONS", "ToolSpec", "as_method", "build_spec"]

TOOL_OPTIONS: Final = ("name", "description", "check_docstring", "strict")
"""``tool()``'s own options, beside the policy fields (named in a bad option's error)."""


@attrs.frozen(kw_only=True)
class ToolSpec:
    """Everything ``@tool`` learnt about a function, computed once."""

    name: str
    description: str
    policy: ToolPolicy
    arguments: Arguments
    is_async: bool
    is_method: bool = False
    docs: dict[str, str] = attrs.field(factory=dict, repr=False)
    strict: bool = False
    strict_parameters: dict[str, Any] | None = attrs.field(default=None, repr=False)


def _defined_in_class(function: Any) -> bool:
    """A plain function written in a class body (its qualified name says so)."""
    if not inspect.isfunction(function):
        return False
    parts = function.__qualname__.split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _strict_parameters(arguments: Arguments, tool: str) -> dict[str, Any]:
    return strict_schema(arguments.parameters, tool=tool)


def build_spec(
    function: Any,
    *,
    name: str | None,
    description: str | None,
    check_docstring: bool,
    strict: bool,
    options: Mapping[str, Any],
) -> ToolSpec:
    """The spec of ``function`` (a function, or a static or class method object);
    anything it cannot be is a :class:`~toolguard.ToolDefinitionError` naming it."""
    target = function
    skip_first = False
    if isinstance(function, classmethod):
        target, skip_first = function.__func__, True
    elif isinstance(function, staticmethod):
        target = function.__func__
    elif _defined_in_class(function):
        skip_first = True  # an instance method: `self` is not the model's to send
    if not callable(target):
        raise ToolDefinitionError(f"@tool decorates a function or method, got {function!r}")
    tool_name = name if name is not None else getattr(target, "__name__", "")
    if not isinstance(tool_name, str) or not TOOL_NAME.fullmatch(tool_name):
        raise ToolDefinitionError(
            f"tool name {tool_name!r} is not allowed; providers accept {TOOL_NAME_RULE}"
        )
    if inspect.isasyncgenfunction(target) or inspect.isgeneratorfunction(target):
        raise ToolDefinitionError(
            f"tool {tool_name!r}: generators are not supported; return the whole result"
        )
    policy = policy_from_options(options, where=f"tool {tool_name!r}", also=TOOL_OPTIONS)
    summary, docs = describe(target)
    if description is not None and not isinstance(description, str):
        raise ToolDefinitionError(f"tool {tool_name!r}: description must be a str")
    if not isinstance(strict, bool):
        raise ToolDefinitionError(f"tool {tool_name!r}: strict must be True or False")
    arguments = build_arguments(
        target,
        tool=tool_name,
        skip_first=skip_first,
        docs=docs,
        check_docstring=check_docstring,
    )
    spec = ToolSpec(
        name=tool_name,
        description=description if description is not None else summary,
        policy=policy,
        arguments=arguments,
        is_async=inspect.iscoroutinefunction(target),
        is_method=skip_first,
        docs=docs,
        strict=strict,
        strict_parameters=_strict_parameters(arguments, tool_name) if strict else None,
    )
    return spec


def as_method(spec: ToolSpec, function: Any) -> ToolSpec:
    """``spec`` for ``function`` found to be an instance method when set on a class:
    ``self`` leaves the schema (the docstring was checked at decoration)."""
    arguments = build_arguments(
        function, tool=spec.name, skip_first=True, docs=spec.docs, check_docstring=False
    )
    return attrs.evolve(
        spec,
        arguments=arguments,
        is_method=True,
        strict_parameters=_strict_parameters(arguments, spec.name) if spec.strict else None,
    )
