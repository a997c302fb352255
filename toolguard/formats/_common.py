"""What every provider format shares: reading tools, results and provider objects.

Provider objects are read by duck typing: a ``Mapping`` by key, anything else (an
SDK's pydantic model) by attribute. No provider SDK is imported.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeAlias

from toolguard._dispatcher import Dispatcher
from toolguard._tool import BoundTool, Tool, tool
from toolguard._values import ContentBlock, Image, Round, Text, ToolResult
from toolguard.errors import ToolDefinitionError

__all__ = [
    "AnyTool",
    "Results",
    "ToolSource",
    "blocks",
    "data_url",
    "declared",
    "get",
    "has",
    "json_object",
    "need_call_id",
    "parameters",
    "results",
    "sequence",
    "with_prefix",
]

AnyTool: TypeAlias = Tool[..., Any] | BoundTool[..., Any]
ToolSource: TypeAlias = (
    Dispatcher | AnyTool | Mapping[str, Callable[..., Any]] | Iterable[Callable[..., Any]]
)
"""What a ``tools()`` export takes: a Dispatcher, one tool, or tools (a list or a mapping)."""

Results: TypeAlias = Round | ToolResult | Iterable[ToolResult]
"""What a reply export takes: a Round, one ToolResult, or ToolResults in call order."""


# --- tools in -------------------------------------------------------------------------


def declared(source: ToolSource) -> list[AnyTool]:
    """The tools of ``source``, in declaration order; plain functions are decorated."""
    if isinstance(source, Dispatcher):
        return list(source.tools.values())
    if isinstance(source, Tool | BoundTool):
        return [source]
    candidates: Iterable[Any] = source.values() if isinstance(source, Mapping) else source
    found: list[AnyTool] = []
    names: set[str] = set()
    for candidate in candidates:
        if not isinstance(candidate, Tool | BoundTool):
            if not callable(candidate):
                raise TypeError(f"expected tools or functions, got {candidate!r}")
            candidate = tool(candidate)
        if candidate.name in names:
            raise ToolDefinitionError(
                f"two tools are named {candidate.name!r}; tool names must be unique"
            )
        names.add(candidate.name)
        found.append(candidate)
    return found


def parameters(t: AnyTool) -> dict[str, Any]:
    """A copy of the tool's JSON Schema (callers may change what they are given)."""
    return copy.deepcopy(t.parameters)


# --- provider objects ---------------------------------------------------------------


def has(obj: Any, name: str) -> bool:
    """Whether ``obj`` (a mapping or an object) has a field ``name``."""
    if isinstance(obj, Mapping):
        return name in obj
    return hasattr(obj, name)


def get(obj: Any, *names: str) -> Any:
    """The first of ``names`` that ``obj`` has and is not ``None``; else ``None``."""
    for name in names:
        value = obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)
        if value is not None:
            return value
    return None


def sequence(value: Any) -> bool:
    """A list or tuple of items (not a string, not a mapping)."""
    return isinstance(value, list | tuple)


# --- results out --------------------------------------------------------------------


def results(source: Results) -> tuple[ToolResult, ...]:
    """The results to send back, in call order."""
    if isinstance(source, Round):
        return source.results
    if isinstance(source, ToolResult):
        return (source,)
    found = tuple(source)
    for item in found:
        if not isinstance(item, ToolResult):
            raise TypeError(f"expected a Round or ToolResults, got {item!r}")
    return found


def need_call_id(result: ToolResult, provider: str) -> str:
    """The result's call id; the providers that pair results by id cannot do without."""
    if result.call_id is None:
        raise ValueError(
            f"the result of tool {result.name!r} has no call id, and {provider} pairs each "
            "result with its call by id; build calls with parse_calls() so they keep theirs"
        )
    return result.call_id


def blocks(content: str | tuple[ContentBlock, ...]) -> tuple[ContentBlock, ...]:
    """Content as blocks: a string is one text block."""
    return (Text(text=content),) if isinstance(content, str) else content


def with_prefix(
    content: str | tuple[ContentBlock, ...], prefix: str
) -> str | tuple[ContentBlock, ...]:
    """``content`` with ``prefix`` in front of its text (a new text block if it has none)."""
    if not prefix:
        return content
    if isinstance(content, str):
        return prefix + content
    if content and isinstance(content[0], Text):
        return (Text(text=prefix + content[0].text), *content[1:])
    return (Text(text=prefix.rstrip()), *content)


def data_url(image: Image) -> str:
    """The image as a ``data:`` URL."""
    return f"data:{image.media_type};base64,{image.data}"


def json_object(content: str | tuple[ContentBlock, ...]) -> dict[str, Any] | None:
    """The JSON object ``content`` holds, when it is one (a tool that returned a dict)."""
    if not isinstance(content, str) or not content.startswith("{"):
        return None
    try:
        value = json.loads(content)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
