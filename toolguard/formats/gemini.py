"""Google Gemini (``google-genai``), as plain dicts.

The three calls of a raw loop::

    from toolguard.formats import gemini as tg_gemini

    response = client.models.generate_content(
        model=..., contents=history, config={"tools": tg_gemini.tools(dispatcher)}
    )
    calls = tg_gemini.parse_calls(response)                    # functionCall parts in
    round_ = dispatcher.run(calls)
    history += [response.candidates[0].content, tg_gemini.content(round_)]

A result is a ``function_response`` part whose ``response`` is ``{"output": text}``,
or ``{"error": text}`` for a failed call. Keys are written as the SDK's own dict
types spell them (``function_response``, ``parameters_json_schema``); the SDK and
the REST API (protobuf JSON) accept these names as well as the camelCase ones, and
:func:`parse_calls` reads both. No Google SDK is imported.
"""

from __future__ import annotations

import base64
import re
from typing import Any, Final

from toolguard._values import Text, ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError
from toolguard.formats._common import (
    Results,
    ToolSource,
    declared,
    get,
    has,
    parameters,
    results,
    sequence,
)

__all__ = ["content", "function_declarations", "parse_calls", "parts", "tools"]

_NAME: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$")


def function_declarations(source: ToolSource) -> list[dict[str, Any]]:
    """One function declaration per tool: ``name``, ``description`` and the arguments'
    JSON Schema as ``parameters_json_schema``.

    Gemini wants a name that starts with a letter or an underscore; another name is
    a :class:`~toolguard.ToolDefinitionError`.
    """
    found: list[dict[str, Any]] = []
    for t in declared(source):
        if not _NAME.match(t.name):
            raise ToolDefinitionError(
                f"tool {t.name!r}: Gemini function names start with a letter or an "
                "underscore; rename it with @tool(name=...)"
            )
        declaration: dict[str, Any] = {"name": t.name}
        if t.description:
            declaration["description"] = t.description
        declaration["parameters_json_schema"] = parameters(t)
        found.append(declaration)
    return found


def tools(source: ToolSource) -> list[dict[str, Any]]:
    """The request's ``tools``: one Tool holding every function declaration."""
    return [{"function_declarations": function_declarations(source)}]


def _parts_of(response: Any) -> Any:
    if sequence(response):
        return response
    if has(response, "candidates"):
        candidates = get(response, "candidates") or []
        if not candidates:
            return []
        return get(get(candidates[0], "content") or {}, "parts") or []
    if has(response, "parts"):
        return get(response, "parts") or []
    raise TypeError(
        "gemini.parse_calls takes a GenerateContentResponse, a Content or its parts, "
        f"got {type(response).__name__}"
    )


def parse_calls(response: Any) -> list[ToolCall]:
    """The ``function_call`` parts of a Gemini reply, in order.

    Takes a ``GenerateContentResponse`` (its first candidate), a ``Content``, or its
    list of parts, as SDK objects or dicts (``function_call`` or ``functionCall``).
    A call without an id (the Gemini API may omit it) gives ``ToolCall.id = None``.
    """
    calls: list[ToolCall] = []
    for part in _parts_of(response):
        call = get(part, "function_call", "functionCall")
        if call is not None:
            calls.append(
                ToolCall(
                    name=get(call, "name") or "", arguments=get(call, "args"), id=get(call, "id")
                )
            )
    return calls


def _part(result: ToolResult) -> dict[str, Any]:
    texts: list[str] = []
    media: list[dict[str, Any]] = []
    if isinstance(result.content, str):
        texts.append(result.content)
    else:
        for block in result.content:
            if isinstance(block, Text):
                texts.append(block.text)
            else:
                raw = base64.b64decode(block.data)
                media.append({"inline_data": {"mime_type": block.media_type, "data": raw}})
    response: dict[str, Any] = {"error" if result.is_error else "output": "\n".join(texts)}
    function_response: dict[str, Any] = {}
    if result.call_id is not None:
        function_response["id"] = result.call_id
    function_response["name"] = result.name
    function_response["response"] = response
    if media:
        function_response["parts"] = media
    return {"function_response": function_response}


def parts(source: Results) -> list[dict[str, Any]]:
    """One ``function_response`` part per result, in call order.

    Images go in the function response's own ``parts`` as ``inline_data`` with raw
    bytes, as the SDK's dict types want them.
    """
    return [_part(result) for result in results(source)]


def content(source: Results) -> dict[str, Any]:
    """The ``user`` Content answering a round: its ``function_response`` parts."""
    return {"role": "user", "parts": parts(source)}
