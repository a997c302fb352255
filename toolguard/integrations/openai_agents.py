"""toolguard for the OpenAI Agents SDK (``pip install "toolguard-agents[openai-agents]"``).

::

    from toolguard.integrations.openai_agents import as_function_tools, tool_use_behavior

    guard = Dispatcher([search, lookup_order, final_answer])
    agent = Agent(
        name="support",
        tools=as_function_tools(guard),
        tool_use_behavior=tool_use_behavior(guard),
    )

* :func:`as_function_tool` turns a toolguard tool into an ``agents.FunctionTool``.
  The SDK calls its ``on_invoke_tool`` with the model's raw JSON arguments; toolguard
  validates them, runs the tool and answers every call, failures included, with
  its own content. Nothing reaches the SDK's ``failure_error_function`` (whose
  default tells the model only "An error occurred while running the tool").
* :func:`tool_use_behavior` is the ``Agent(tool_use_behavior=...)`` that ends the run
  when toolguard's ``return_direct`` asks for it, so that a failed tool never
  becomes the final output.

``return_direct``. The SDK's own ``StopAtTools`` (and ``"stop_on_first_tool"``)
stop on a tool's *name*: a failed call's error text becomes ``final_output``.
toolguard stops, by default, only on success. So each answer's decision travels
in ``ToolCallOutputItem.custom_data["toolguard"]`` (``return_direct``,
``is_error``, ``error_id``; SDK-only data, never sent to the model) and
:func:`tool_use_behavior` reads it.

Strict schemas. The SDK declares function tools with ``strict: true`` by default,
and ``FunctionTool`` makes every property required. toolguard's
:func:`toolguard.formats.strict_schema` does that the way toolguard's validator
understands: an argument with a default becomes nullable, and ``null`` means "use
the default". A tool whose schema cannot be strict (``**kwargs``, ``dict[str,
X]``, ``Any``) is declared non-strict instead (see :func:`as_function_tool`).

Control flow. Importing this module registers the SDK's guardrail tripwires
(``InputGuardrailTripwireTriggered``, ``OutputGuardrailTripwireTriggered``,
``ToolInputGuardrailTripwireTriggered``, ``ToolOutputGuardrailTripwireTriggered``)
with :func:`toolguard.register_control_flow`: a tool that runs a nested agent whose
guardrail trips stops the outer run too, as a tripwire means to, instead of being
answered as a tool failure.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

try:
    from agents import (
        FunctionTool,
        FunctionToolCustomDataContext,
        FunctionToolResult,
        InputGuardrailTripwireTriggered,
        OutputGuardrailTripwireTriggered,
        RunContextWrapper,
        ToolCallOutputItem,
        ToolInputGuardrailTripwireTriggered,
        ToolOutputGuardrailTripwireTriggered,
        ToolOutputImage,
        ToolOutputText,
        ToolsToFinalOutputFunction,
        ToolsToFinalOutputResult,
        UserError,
    )
    from agents import Tool as AgentsTool
    from agents.tool_context import ToolContext
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.openai_agents needs the OpenAI Agents SDK: "
        'pip install "toolguard-agents[openai-agents]"'
    ) from error

from toolguard._decorator import BoundTool, Tool
from toolguard._dispatcher import Dispatcher
from toolguard._rounds import round_stops
from toolguard._values import Image, ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError, register_control_flow
from toolguard.formats import strict_schema
from toolguard.integrations._common import guarded

__all__ = [
    "METADATA_KEY",
    "as_function_tool",
    "as_function_tools",
    "stop_requested",
    "tool_use_behavior",
]

register_control_flow(
    InputGuardrailTripwireTriggered,
    OutputGuardrailTripwireTriggered,
    ToolInputGuardrailTripwireTriggered,
    ToolOutputGuardrailTripwireTriggered,
)

METADATA_KEY: Final = "toolguard"
"""Key in ``ToolCallOutputItem.custom_data`` of toolguard's decision about a call:
``{"return_direct": bool, "is_error": bool, "error_id": str | None}``. The SDK
never sends ``custom_data`` to the model; it keeps it in ``RunResult.new_items``
and in a serialised ``RunState``."""

# FunctionTool fields toolguard sets itself; everything else may be passed through.
_OWNED: Final = frozenset(
    {
        "name",
        "description",
        "params_json_schema",
        "on_invoke_tool",
        "strict_json_schema",
        "custom_data_extractor",
        "timeout_seconds",
        "timeout_behavior",
        "timeout_error_function",
    }
)

ToolOutput = str | list[ToolOutputText | ToolOutputImage]

# The result each invocation answered with, until the SDK asks for the output item's
# custom data (same ToolContext object); weak, so an abandoned call leaves nothing.
_answers: weakref.WeakKeyDictionary[ToolContext[Any], tuple[ToolResult, ToolOutput]] = (
    weakref.WeakKeyDictionary()
)


# --- toolguard tools as FunctionTools -----------------------------------------------------


def _output(result: ToolResult) -> ToolOutput:
    """toolguard's content as the SDK's tool output: text, or text and image items."""
    if isinstance(result.content, str):
        return result.content
    return [
        ToolOutputImage(image_url=f"data:{block.media_type};base64,{block.data}")
        if isinstance(block, Image)
        else ToolOutputText(text=block.text)
        for block in result.content
    ]


def _decision(data: FunctionToolCustomDataContext) -> dict[str, Any] | None:
    """The ``custom_data`` of a call's output item: toolguard's decision about it.

    When something replaced the output toolguard answered with (a tool output
    guardrail that rejected it), the call does not ask to stop.
    """
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


def _invoker(dispatcher: Dispatcher, name: str) -> Callable[[ToolContext[Any], str], Any]:
    # A sync tool runs on the dispatcher's thread pool, as the SDK runs its own sync
    # tools off the event loop; async handlers still run on the loop.
    offload = not dispatcher.tools[name].spec.is_async

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> ToolOutput:
        call = ToolCall(name=name, arguments=arguments, id=getattr(ctx, "tool_call_id", None))
        result = await dispatcher.adispatch(
            call, context=getattr(ctx, "context", None), offload=offload
        )
        output = _output(result)
        if isinstance(ctx, ToolContext):
            _answers[ctx] = (result, output)
        return output

    on_invoke_tool.__qualname__ = f"toolguard[{name}].on_invoke_tool"
    return on_invoke_tool


def _schema(
    guarded: Tool[..., Any] | BoundTool[..., Any], strict: bool | None
) -> tuple[dict[str, Any], bool]:
    """The schema to declare, and whether it is strict."""
    if strict is False:
        return copy.deepcopy(guarded.parameters), False
    try:
        return strict_schema(guarded.parameters, tool=guarded.name), True
    except ToolDefinitionError:
        if strict:
            raise
        return copy.deepcopy(guarded.parameters), False


def _function_tool(
    dispatcher: Dispatcher, name: str, strict: bool | None, options: dict[str, Any]
) -> FunctionTool:
    owned = sorted(_OWNED.intersection(options))
    if owned:
        raise TypeError(
            f"as_function_tool() sets {', '.join(owned)} itself; toolguard's tool and "
            "policy decide them (a timeout is the tool's `timeout` policy)"
        )
    guarded = dispatcher.tools[name]
    parameters, is_strict = _schema(guarded, strict)

    def build(schema: dict[str, Any], strict_json_schema: bool) -> FunctionTool:
        return FunctionTool(
            name=name,
            description=guarded.description,
            params_json_schema=schema,
            on_invoke_tool=_invoker(dispatcher, name),
            strict_json_schema=strict_json_schema,
            custom_data_extractor=_decision,
            **options,
        )

    if not is_strict:
        return build(parameters, False)
    try:
        return build(parameters, True)
    except UserError:
        # The SDK's own strict conversion refused what toolguard made strict.
        if strict:
            raise
        return build(copy.deepcopy(guarded.parameters), False)


def as_function_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    strict: bool | None = None,
    **options: Any,
) -> FunctionTool:
    """An ``agents.FunctionTool`` that runs ``tool`` under toolguard.

    Guarantees, for every call the SDK makes:

    * the model's arguments (the raw JSON text) are validated by toolguard: a bad
      call gets toolguard's message naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain: a ``ToolError``'s
      message as it is, a hidden cause as toolguard's generic message with its
      error id (the cause logged once); only control flow and ``ToolCallFailed`` (a
      handler chose to fail the invocation) escape, and the SDK fails the run with
      them (``ToolCallFailed`` wrapped in the SDK's ``UserError``, as its
      ``__cause__``);
    * ``InjectedCallId`` parameters get the SDK's ``tool_call_id``; ``Injected``
      parameters get the run's context object (``Runner.run(..., context=...)``);
    * a sync tool runs on the dispatcher's thread pool, off the event loop;
    * the output item's ``custom_data["toolguard"]`` carries toolguard's decision,
      which :func:`tool_use_behavior` reads.

    ``strict``: ``None`` (default) declares a strict schema when the tool's schema
    can be strict (:func:`toolguard.formats.strict_schema`) and a non-strict one
    otherwise; ``True`` requires it (``ToolDefinitionError`` when impossible);
    ``False`` declares toolguard's schema as it is.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. ``options`` go to ``FunctionTool`` (``is_enabled``,
    ``needs_approval``, ``tool_input_guardrails``, ...), except the fields toolguard
    sets (the schema, the invoker, ``custom_data_extractor`` and the SDK's timeout:
    use toolguard's ``timeout`` policy).
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_function_tool")
    return _function_tool(dispatcher, name, strict, options)


def as_function_tools(dispatcher: Dispatcher, *, strict: bool | None = None) -> list[AgentsTool]:
    """Every tool of ``dispatcher`` as a ``FunctionTool``, in declaration order.

    Typed as the SDK's ``list[Tool]``, what ``Agent(tools=...)`` takes.
    """
    return [_function_tool(dispatcher, name, strict, {}) for name in dispatcher.tools]


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
    such result, in call order. Results of tools that are not toolguard's never ask.
    """
    stops = [_asked_to_stop(result) for result in tool_results]
    if not round_stops(stops, mode):
        return None
    return next(result for result, stop in zip(tool_results, stops, strict=True) if stop)


def tool_use_behavior(
    dispatcher: Dispatcher | None = None, *, mode: Literal["any", "all"] | None = None
) -> ToolsToFinalOutputFunction[Any]:
    """An ``Agent(tool_use_behavior=...)`` that stops where toolguard's ``return_direct`` says.

    After each round of tool calls, the run ends when the round asks to stop
    (:func:`stop_requested`); ``final_output`` is then that call's output, exactly
    what the tool answered (a ``str``, or a list of ``ToolOutputText``/
    ``ToolOutputImage`` for content blocks). Otherwise the model runs again. A
    failed call never stops the run unless its tool's ``return_direct`` says so
    (``"always"``, a predicate). The round's rule is ``mode``, else the
    dispatcher's ``return_direct_mode``, else ``"any"``.
    """
    rule: Literal["any", "all"] = mode or (
        dispatcher.return_direct_mode if dispatcher is not None else "any"
    )

    def stop_on_return_direct(
        context: RunContextWrapper[Any], tool_results: list[FunctionToolResult]
    ) -> ToolsToFinalOutputResult:
        final = stop_requested(tool_results, mode=rule)
        if final is None:
            return ToolsToFinalOutputResult(is_final_output=False, final_output=None)
        return ToolsToFinalOutputResult(is_final_output=True, final_output=final.output)

    return stop_on_return_direct
