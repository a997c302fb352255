"""OpenAI: Chat Completions and the Responses API, as plain dicts.

The three calls of a raw loop::

    from toolguard.formats import openai as tg_openai

    response = client.chat.completions.create(..., tools=tg_openai.tools(dispatcher))
    message = response.choices[0].message
    calls = tg_openai.parse_calls(message)                     # tool calls in
    round_ = dispatcher.run(calls)
    history += [message, *tg_openai.messages(round_)]          # results out

The Responses API has the same three: :func:`responses_tools`,
:func:`parse_response_calls`, :func:`response_items`.

OpenAI has no error flag on a tool result, so a failed call's content starts with
``error_prefix`` (:data:`ERROR_PREFIX`, ``"Error: "``, unless you pass another).
No OpenAI SDK is imported: SDK objects are read by attribute, dicts by key.
"""

from __future__ import annotations

from typing import Any, Final

from toolguard._values import Image, Text, ToolCall, ToolResult
from toolguard.formats._common import (
    AnyTool,
    Results,
    ToolSource,
    blocks,
    data_url,
    declared,
    get,
    has,
    need_call_id,
    parameters,
    results,
    sequence,
    with_prefix,
)
from toolguard.schema._strict import strict_schema

__all__ = [
    "ERROR_PREFIX",
    "messages",
    "parse_calls",
    "parse_response_calls",
    "response_items",
    "responses_tools",
    "tools",
]

ERROR_PREFIX: Final = "Error: "
"""What a failed call's content starts with (OpenAI results carry no error flag)."""

_PROVIDER: Final = "OpenAI"


# --- declare ----------------------------------------------------------------------


def _schema(t: AnyTool, strict: bool | None) -> tuple[dict[str, Any], bool]:
    """The schema to declare and whether it is strict (``None``: as the tool says)."""
    if strict is None:
        strict = t.spec.strict
    if not strict:
        return parameters(t), False
    cached = t.spec.strict_parameters
    return (cached if cached is not None else strict_schema(t.parameters, tool=t.name)), True


def tools(source: ToolSource, *, strict: bool | None = None) -> list[dict[str, Any]]:
    """Chat Completions ``tools``: one ``{"type": "function", "function": {...}}`` per tool.

    Strict schemas (``"strict": true``; see :func:`toolguard.formats.strict_schema`)
    are declared for tools decorated with ``@tool(strict=True)`` (checked at
    decoration); ``strict=True`` or ``False`` here decides for every tool, and
    raises :class:`~toolguard.ToolDefinitionError` for a tool that cannot be strict.
    """
    declared_tools: list[dict[str, Any]] = []
    for t in declared(source):
        function: dict[str, Any] = {"name": t.name}
        if t.description:
            function["description"] = t.description
        function["parameters"], is_strict = _schema(t, strict)
        if is_strict:
            function["strict"] = True
        declared_tools.append({"type": "function", "function": function})
    return declared_tools


def responses_tools(source: ToolSource, *, strict: bool | None = None) -> list[dict[str, Any]]:
    """Responses API ``tools``: one ``{"type": "function", "name": ...}`` per tool.

    ``strict`` as for :func:`tools`; the key is always written: the Responses API
    requires it.
    """
    declared_tools: list[dict[str, Any]] = []
    for t in declared(source):
        function: dict[str, Any] = {"type": "function", "name": t.name}
        if t.description:
            function["description"] = t.description
        function["parameters"], function["strict"] = _schema(t, strict)
        declared_tools.append(function)
    return declared_tools


# --- parse ------------------------------------------------------------------------


def parse_calls(response: Any) -> list[ToolCall]:
    """The function tool calls of a Chat Completions reply, in order.

    Takes a ``ChatCompletion`` (its first choice), its ``message``, the message's
    ``tool_calls`` list, or the dict form of any of them. Custom (free-text) tool
    calls are not toolguard's and are left out. No tool calls gives ``[]``.
    """
    calls_in: Any = response
    if not sequence(response):
        message = response
        if has(response, "choices"):
            choices = get(response, "choices") or []
            message = get(choices[0], "message") if choices else None
        elif not (has(response, "tool_calls") or has(response, "role")):
            raise TypeError(
                "openai.parse_calls takes a ChatCompletion, its message or its tool_calls, "
                f"got {type(response).__name__}"
            )
        calls_in = get(message, "tool_calls") if message is not None else None
    calls: list[ToolCall] = []
    for item in calls_in or ():
        if (get(item, "type") or "function") != "function":
            continue
        function = get(item, "function")
        calls.append(
            ToolCall(
                name=get(function, "name") or "",
                arguments=get(function, "arguments"),
                id=get(item, "id"),
            )
        )
    return calls


def parse_response_calls(response: Any) -> list[ToolCall]:
    """The ``function_call`` items of a Responses API reply, in order.

    Takes a ``Response``, its ``output`` list, or their dict forms. The call id is
    the item's ``call_id`` (what ``function_call_output`` answers), not its ``id``.
    """
    items = response if sequence(response) else get(response, "output")
    if items is None and not has(response, "output"):
        raise TypeError(
            "openai.parse_response_calls takes a Response or its output items, "
            f"got {type(response).__name__}"
        )
    return [
        ToolCall(
            name=get(item, "name") or "",
            arguments=get(item, "arguments"),
            id=get(item, "call_id"),
        )
        for item in items or ()
        if get(item, "type") == "function_call"
    ]


# --- reply ------------------------------------------------------------------------


def messages(
    source: Results, *, error_prefix: str = ERROR_PREFIX, image_message: bool = True
) -> list[dict[str, Any]]:
    """Chat Completions messages answering a round: one ``role: "tool"`` message per
    result, in call order.

    A failed call's content starts with ``error_prefix``. Tool messages carry text
    only, so an image is a placeholder there and, with ``image_message`` (the
    default), is sent in one ``role: "user"`` message after the tool messages.
    """
    answered: list[dict[str, Any]] = []
    images: list[tuple[ToolResult, Image]] = []
    for result in results(source):
        call_id = need_call_id(result, _PROVIDER)
        content = with_prefix(result.content, error_prefix) if result.is_error else result.content
        if isinstance(content, str):
            answered.append({"role": "tool", "tool_call_id": call_id, "content": content})
            continue
        parts: list[dict[str, Any]] = []
        for block in content:
            if isinstance(block, Text):
                parts.append({"type": "text", "text": block.text})
            else:
                where = "attached in the next message" if image_message else "not sent"
                parts.append({"type": "text", "text": f"[{block.media_type} image, {where}]"})
                images.append((result, block))
        answered.append({"role": "tool", "tool_call_id": call_id, "content": parts})
    if images and image_message:
        attached: list[dict[str, Any]] = []
        for result, image in images:
            attached.append(
                {
                    "type": "text",
                    "text": f"Image from tool call {result.call_id} ({result.name}):",
                }
            )
            attached.append({"type": "image_url", "image_url": {"url": data_url(image)}})
        answered.append({"role": "user", "content": attached})
    return answered


def response_items(source: Results, *, error_prefix: str = ERROR_PREFIX) -> list[dict[str, Any]]:
    """Responses API input items answering a round: one ``function_call_output`` per
    result, in call order (text as a string; images as ``input_image`` parts).

    A failed call's output starts with ``error_prefix``.
    """
    items: list[dict[str, Any]] = []
    for result in results(source):
        call_id = need_call_id(result, _PROVIDER)
        content = with_prefix(result.content, error_prefix) if result.is_error else result.content
        output: str | list[dict[str, Any]]
        if isinstance(content, str):
            output = content
        else:
            output = [
                {"type": "input_text", "text": block.text}
                if isinstance(block, Text)
                else {"type": "input_image", "image_url": data_url(block)}
                for block in blocks(content)
            ]
        items.append({"type": "function_call_output", "call_id": call_id, "output": output})
    return items
