"""What a call answers the Agents SDK with, and the decision that travels with it.

* toolguard's content as the SDK's tool output (text, or ``ToolOutputText`` /
  ``ToolOutputImage`` items), and the SDK's own output types a toolguard tool returned,
  handed back as they were;
* each answer's decision (``return_direct``, ``is_error``, ``error_id``) in the output
  item's ``custom_data["toolguard"]``, read by :func:`stop_requested` and
  :func:`tool_use_behavior`.
"""

from __future__ import annotations

import inspect
import typing
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, Final, Literal

import pydantic
from agents import (
    FunctionToolCustomDataContext,
    FunctionToolResult,
    RunContextWrapper,
    ToolCallOutputItem,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
    ToolsToFinalOutputFunction,
    ToolsToFinalOutputResult,
)
from agents.tool import ToolOutputFileContentDict, ToolOutputImageDict, ToolOutputTextDict
from agents.tool_context import ToolContext

from toolguard import Dispatcher, Image, ToolResult
from toolguard.integrations._common import any_agent

__all__ = [
    "METADATA_KEY",
    "CustomDataExtractor",
    "ToolOutput",
    "decision_extractor",
    "native_adapter",
    "output_of",
    "remember",
    "stop_requested",
    "tool_use_behavior",
]

METADATA_KEY: Final = "toolguard"
"""Key in ``ToolCallOutputItem.custom_data`` of toolguard's decision about a call:
``{"return_direct": bool, "is_error": bool, "error_id": str | None}``. The SDK
never sends ``custom_data`` to the model; it keeps it in ``RunResult.new_items``
and in a serialised ``RunState``."""

ToolOutput = Any  # what on_invoke_tool returns: text, the SDK's output items, or a value
CustomDataExtractor = Callable[
    [FunctionToolCustomDataContext], Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None
]

# The SDK's structured output types, as a tool may return them (models or dicts).
_NATIVE: Final[frozenset[Any]] = frozenset(
    {
        ToolOutputText,
        ToolOutputImage,
        ToolOutputFileContent,
        ToolOutputTextDict,
        ToolOutputImageDict,
        ToolOutputFileContentDict,
    }
)

# The result each invocation answered with, until the SDK asks for the output item's
# custom data (same ToolContext object); weak, so an abandoned call leaves nothing.
_answers: weakref.WeakKeyDictionary[ToolContext[Any], tuple[ToolResult, ToolOutput]] = (
    weakref.WeakKeyDictionary()
)
# The dict beneath it (stdlib's WeakKeyDictionary keeps its entries in ``.data``, never
# replaced): empty while nothing is remembered, and asked directly, as the mapping's
# own __len__ is Python code, which the extractor would pay on every call.
_remembered: Final[dict[Any, Any]] = _answers.data  # type: ignore[attr-defined]  # see above


# --- outputs ----------------------------------------------------------------------------


def _mentions_native(annotation: Any) -> bool:
    seen: list[Any] = [annotation]
    while seen:
        current = seen.pop()
        if current in _NATIVE:
            return True
        if typing.get_origin(current) is Annotated:
            seen.append(typing.get_args(current)[0])
            continue
        seen.extend(arg for arg in typing.get_args(current) if arg is not Ellipsis)
    return False


def native_adapter(function: Callable[..., Any]) -> pydantic.TypeAdapter[Any] | None:
    """A validator of the tool's declared return type, when that names one of the SDK's
    output types (``ToolOutputText``, ``ToolOutputImage``, ``ToolOutputFileContent``,
    their ``...Dict`` forms, or lists of them); ``None`` otherwise."""
    try:
        annotation = typing.get_type_hints(function, include_extras=True).get("return")
    except (NameError, TypeError):  # an annotation that cannot be read: nothing to rebuild
        return None
    if annotation is None or not _mentions_native(annotation):
        return None
    try:
        return pydantic.TypeAdapter(annotation)
    except (pydantic.PydanticSchemaGenerationError, pydantic.PydanticUserError):
        return None


def _is_native(value: Any) -> bool:
    if isinstance(value, ToolOutputText | ToolOutputImage | ToolOutputFileContent):
        return True
    if isinstance(value, dict):
        return value.get("type") in ("text", "image", "file")
    if isinstance(value, list | tuple):
        return bool(value) and all(_is_native(item) for item in value)
    return False


def output_of(result: ToolResult, native: pydantic.TypeAdapter[Any] | None = None) -> ToolOutput:
    """toolguard's content as the SDK's tool output.

    Text stays text; content blocks become ``ToolOutputText``/``ToolOutputImage``
    items. A success of a tool whose return type names the SDK's output types gets
    them back as the tool returned them (toolguard serialised them to JSON text on
    the way: ``native`` reads it back); a failure is always toolguard's text.
    """
    content = result.content
    if isinstance(content, str):
        if native is not None and not result.is_error:
            try:
                value = native.validate_json(content)
            except (pydantic.ValidationError, ValueError):
                return content  # a text answer of the same tool, or cut by max_result_chars
            if _is_native(value):
                return value
        return content
    return [
        ToolOutputImage(image_url=f"data:{block.media_type};base64,{block.data}")
        if isinstance(block, Image)
        else ToolOutputText(text=block.text)
        for block in content
    ]


# --- the decision, as custom data of the output item --------------------------------------------


def remember(context: Any, result: ToolResult, output: ToolOutput) -> None:
    """Keep ``result`` until the SDK builds this call's output item."""
    if isinstance(context, ToolContext):
        _answers[context] = (result, output)


def decision_extractor(own: CustomDataExtractor | None = None) -> CustomDataExtractor:
    """A ``custom_data_extractor`` adding toolguard's decision to the output item (after
    what the tool's own extractor, ``own``, returns).

    When something replaced the output toolguard answered with (a tool output
    guardrail that rejected it), the call does not ask to stop. Sync, as the SDK
    allows: the runner calls it after every call, and a coroutine would cost each
    call its creation even where toolguard decided nothing; only an async ``own``
    makes the answer awaitable.
    """

    if own is None:  # the usual tool: one dict check per call where nothing was decided

        def decided(
            data: FunctionToolCustomDataContext,
        ) -> Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None:
            return _decision(data) if _remembered else None

        return decided

    def extract(
        data: FunctionToolCustomDataContext,
    ) -> Mapping[str, Any] | Awaitable[Mapping[str, Any] | None] | None:
        mine = _decision(data)
        theirs = own(data) if own is not None else None
        if inspect.isawaitable(theirs):
            return _merged_later(theirs, mine)
        return _merged(theirs, mine)

    return extract


def _merged(
    theirs: Mapping[str, Any] | None, mine: dict[str, Any] | None
) -> Mapping[str, Any] | None:
    if mine is None:
        return theirs
    return {**(theirs or {}), **mine}


async def _merged_later(
    theirs: Awaitable[Mapping[str, Any] | None], mine: dict[str, Any] | None
) -> Mapping[str, Any] | None:
    return _merged(await theirs, mine)


def _decision(data: FunctionToolCustomDataContext) -> dict[str, Any] | None:
    if not _remembered:  # nothing remembered (the usual success): no weak reference made
        return None
    answer = _answers.pop(data.tool_context, None)
    if answer is None:
        return None
    result, output = answer
    return {
        METADATA_KEY: {
            "return_direct": result.return_direct and data.output is output,
            "is_error": result.is_error,
            "error_id": result.error_id,
        }
    }


# --- return_direct -> tool_use_behavior ---------------------------------------------------


def _asked_to_stop(result: FunctionToolResult) -> bool:
    item = result.run_item
    if not isinstance(item, ToolCallOutputItem) or not item.custom_data:
        return False
    decision = item.custom_data.get(METADATA_KEY)
    return isinstance(decision, dict) and decision.get("return_direct") is True


def stop_requested(
    tool_results: Sequence[FunctionToolResult], *, mode: Literal["any", "all"] = "any"
) -> FunctionToolResult | None:
    """The result that ends the run after this round of function tool calls, if any.

    The round asks to stop when any (``mode="any"``) or every (``mode="all"``) one of
    its results carries toolguard's ``return_direct``; the answer is then the first
    such result, in call order. Results of tools toolguard neither runs nor guards
    never ask.
    """
    return _stopping(tool_results, any_agent(), mode)


def _stopping(
    tool_results: Sequence[FunctionToolResult], agent: Dispatcher, mode: Literal["any", "all"]
) -> FunctionToolResult | None:
    stops = [_asked_to_stop(result) for result in tool_results]
    if not agent.round_stops(stops, mode=mode):
        return None
    return next(result for result, stop in zip(tool_results, stops, strict=True) if stop)


def tool_use_behavior(
    dispatcher: Dispatcher | None = None, *, mode: Literal["any", "all"] | None = None
) -> ToolsToFinalOutputFunction[Any]:
    """An ``Agent(tool_use_behavior=...)`` that stops where toolguard's ``return_direct`` says.

    After each round of tool calls, the run ends when the round asks to stop
    (:func:`stop_requested`); ``final_output`` is then that call's output, exactly
    what the tool answered (a ``str``, the SDK's output items, or a list of
    ``ToolOutputText``/``ToolOutputImage`` for content blocks). Otherwise the model
    runs again. A failed call never stops the run unless its tool's
    ``return_direct`` says so (``"always"``, a predicate). It reads toolguard's own
    tools and the tools :func:`guard` guards alike. The round's rule is ``mode``,
    else the dispatcher's ``return_direct_mode``, else ``"any"``.
    """
    rule: Literal["any", "all"] = mode or (
        dispatcher.return_direct_mode if dispatcher is not None else "any"
    )
    agent = dispatcher if dispatcher is not None else any_agent()

    def stop_on_return_direct(
        context: RunContextWrapper[Any], tool_results: list[FunctionToolResult]
    ) -> ToolsToFinalOutputResult:
        final = _stopping(tool_results, agent, rule)
        if final is None:
            return ToolsToFinalOutputResult(is_final_output=False, final_output=None)
        return ToolsToFinalOutputResult(is_final_output=True, final_output=final.output)

    return stop_on_return_direct
