"""toolguard tools as Pydantic AI tools, and toolguard's answers as Pydantic AI's outcomes.

:func:`as_pydantic_ai_tool` builds a ``pydantic_ai.Tool`` whose schema is toolguard's
and whose calls go through the dispatcher; :func:`answer` (shared with the
capability) maps a :class:`~toolguard.ToolResult` onto what Pydantic AI expects back
from a tool: a return, ``ModelRetry`` or ``ToolFailed``.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final, Literal, TypedDict

from pydantic_ai import (
    ApprovalRequired,
    BinaryContent,
    CallDeferred,
    ModelRetry,
    RunContext,
    ToolFailed,
    ToolReturn,
    UsageLimitExceeded,
)
from pydantic_ai import Tool as PydanticAITool
from pydantic_ai.exceptions import (
    RunCancelled,
    SkipToolExecution,
    ToolFailedError,
    ToolRetryError,
)
from pydantic_ai.tools import ToolPrepareFunc
from pydantic_core import SchemaValidator, core_schema
from typing_extensions import Unpack

from toolguard import (
    BoundTool,
    Dispatcher,
    Image,
    Output,
    Scope,
    Text,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolResult,
    register_control_flow,
)
from toolguard.integrations._common import guarded

__all__ = [
    "FRAMEWORK",
    "METADATA_KEY",
    "PydanticAIToolOptions",
    "RetryOn",
    "SIGNALS",
    "answer",
    "as_pydantic_ai_tool",
    "as_pydantic_ai_tools",
    "decision",
    "passes_through",
    "raise_for",
    "scope",
    "with_decision",
]

FRAMEWORK: Final = "pydantic-ai"
"""The name ``toolguard.schema._frameworks`` gives Pydantic AI (its ``RunContext``)."""

# Pydantic AI's own signals: a tool (or a hook) says what Pydantic AI should do.
# None of them is a failure for toolguard's handlers to answer.
SIGNALS: Final = (
    CallDeferred,
    ApprovalRequired,
    ModelRetry,
    ToolFailed,
    ToolRetryError,
    ToolFailedError,
    SkipToolExecution,
    UsageLimitExceeded,
    RunCancelled,  # a run cancelled (its own, or a sub-agent's Pydantic AI answers itself)
)
register_control_flow(*SIGNALS)

METADATA_KEY: Final = "toolguard"
"""Key of toolguard's entries in Pydantic AI's ``metadata`` (never sent to the model).

On a ``ToolReturnPart``: toolguard's decision about the call,
``{"return_direct": bool, "is_error": bool, "error_id": str | None}``. A tool made
by :func:`as_pydantic_ai_tool` carries it on every successful return; a tool
guarded in place by ``ToolguardCapability`` only when it asks to stop the run. On
a ``ToolDefinition`` (``tool_def.metadata``): ``{"adapter": True}``, marking a tool
that toolguard already runs."""

RetryOn = Literal["feedback", "visible"]
AnyTool = Tool[..., Any] | BoundTool[..., Any]

# The failures that mean "call again, differently": Pydantic AI's ModelRetry.
_RETRY_KINDS: Final[frozenset[str]] = frozenset({"feedback", "arguments"})
_VISIBLE_KINDS: Final[frozenset[str]] = _RETRY_KINDS | {"visible", "timeout", "unavailable"}

# Arguments that are not a JSON object reach the tool function under this key, so
# toolguard can answer them (Pydantic AI would otherwise fail the run on `**[1]`).
# A dict passes unchanged, so re-validating validated arguments changes nothing.
_NOT_AN_OBJECT: Final = "\x00toolguard:arguments"
_ARGUMENTS: Final = SchemaValidator(
    core_schema.no_info_after_validator_function(
        lambda value: value if isinstance(value, dict) else {_NOT_AN_OBJECT: value},
        core_schema.any_schema(),
    )
)

# text and toolguard's own content: what the adapter sends as toolguard's content
_AS_CONTENT: Final = (str, Output, Text, Image)


class PydanticAIToolOptions(TypedDict, total=False):
    """Pydantic AI's own ``Tool`` options, forwarded as they are.

    ``name``, ``description``, ``takes_ctx`` and the schema are toolguard's (the
    tool's); ``max_retries`` is :func:`as_pydantic_ai_tool`'s own argument.
    ``args_validator``, ``docstring_format``, ``require_parameter_descriptions`` and
    ``schema_generator`` are not taken: toolguard builds the schema and validates
    the arguments.
    """

    prepare: ToolPrepareFunc[Any] | None
    strict: bool | None
    sequential: bool
    requires_approval: bool
    metadata: dict[str, Any] | None
    timeout: float | None
    defer_loading: bool
    include_return_schema: bool | None


# --- what a tool returned ---------------------------------------------------------------


def passes_through(value: Any, result: ToolResult) -> bool:
    """Whether a successful ``value`` reaches Pydantic AI as the tool returned it.

    Every value does (Pydantic AI serialises it as for its own tools: a ``ToolReturn``,
    multimodal content, a dict, a model...), except toolguard's own content
    (``Output``, ``Text``/``Image`` blocks) and a result cut by ``max_result_chars``,
    which go as toolguard's content.
    """
    if isinstance(value, _AS_CONTENT):
        return False
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(v, Text | Image) for v in value)
    ):
        return False
    return not result.truncated


# --- toolguard's answer as Pydantic AI's outcome -----------------------------------------


def _return_value(content: str | tuple[Text | Image, ...]) -> str | list[str | BinaryContent]:
    """toolguard's content as a tool return value: text, or text and binary images."""
    if isinstance(content, str):
        return content
    return [
        BinaryContent(data=base64.b64decode(block.data), media_type=block.media_type)
        if isinstance(block, Image)
        else block.text
        for block in content
    ]


def decision(result: ToolResult) -> dict[str, Any]:
    """toolguard's decision about a call, as recorded in a return's ``metadata``."""
    return {
        "return_direct": result.return_direct,
        "is_error": result.is_error,
        "error_id": result.error_id,
    }


def with_decision(value: Any, decided: dict[str, Any]) -> Any:
    """``value`` as a return carrying toolguard's decision in its ``metadata``.

    A ``ToolReturn`` keeps everything it has (its own ``metadata`` too, when that is
    a dict; other metadata is left as it is, without the decision); any other value
    becomes the ``return_value`` of a ``ToolReturn``.
    """
    if isinstance(value, ToolReturn):
        if value.metadata is None or isinstance(value.metadata, dict):
            metadata = {**(value.metadata or {}), METADATA_KEY: decided}
            return dataclasses.replace(value, metadata=metadata)
        return value
    return ToolReturn(return_value=value, metadata={METADATA_KEY: decided})


def raise_for(result: ToolResult, retry_on: RetryOn) -> None:
    """Raise Pydantic AI's signal for a failed result that does not stop the run.

    ``ModelRetry`` for a ``RetryWithFeedback`` or invalid arguments (every
    model-visible failure with ``retry_on="visible"``); ``ToolFailed`` otherwise.
    The kind of failure decides (``ToolResult.error_kind``): a hidden failure is
    never a retry; a ``RetryWithFeedback`` raised from a hidden cause still is.
    """
    if result.is_error and not result.return_direct:
        kinds = _RETRY_KINDS if retry_on == "feedback" else _VISIBLE_KINDS
        if result.error_kind in kinds:
            raise ModelRetry(result.text)
        raise ToolFailed(result.text)


_NOTHING: Final = object()


def answer(result: ToolResult, retry_on: RetryOn, value: Any = _NOTHING) -> Any:
    """Pydantic AI's outcome for toolguard's result: a return, or the signal raised.

    On success, ``value`` (what the tool returned) is returned untouched when it
    :func:`passes_through`; otherwise toolguard's content.
    """
    raise_for(result, retry_on)
    if value is not _NOTHING and not result.is_error and passes_through(value, result):
        return with_decision(value, decision(result))
    return ToolReturn(
        return_value=_return_value(result.content), metadata={METADATA_KEY: decision(result)}
    )


# --- the conversation an adapter call runs in --------------------------------------------

scope: ContextVar[tuple[Dispatcher, Scope] | None] = ContextVar(
    "toolguard_pydantic_ai_scope", default=None
)
"""Set by ``ToolguardCapability`` around an adapter tool's execution: its dispatcher
and the scope (conversation and model step) its calls run in."""


# --- toolguard tools as Pydantic AI tools ---------------------------------------------


def _function(dispatcher: Dispatcher, name: str, retry_on: RetryOn) -> Callable[..., Any]:
    guarded_tool = dispatcher.tools[name]
    # A sync tool runs on the dispatcher's thread pool, as Pydantic AI runs its own
    # sync tools off the event loop; async handlers still run on the loop.
    offload = not guarded_tool.spec.is_async
    contexts = tuple(
        p.name for p in guarded_tool.spec.arguments.framework if p.framework == FRAMEWORK
    )
    unscoped = dispatcher.scope()

    async def run_tool(ctx: RunContext[Any], /, **arguments: Any) -> Any:
        sent: Any = arguments.get(_NOT_AN_OBJECT, arguments)
        call = ToolCall(name=name, arguments=sent, id=ctx.tool_call_id)
        current = scope.get()
        runs = current[1] if current is not None and current[0] is dispatcher else unscoped
        result = await runs.adispatch(
            call,
            context=ctx.deps,
            offload=offload,
            framework_values=dict.fromkeys(contexts, ctx) if contexts else None,
        )
        return answer(result, retry_on, result.value if not result.is_error else _NOTHING)

    run_tool.__qualname__ = f"toolguard[{name}].run_tool"
    return run_tool


def _max_retries(dispatcher: Dispatcher, name: str) -> int | None:
    value = dispatcher.scope().policy(name).max_model_retries
    return value if isinstance(value, int) else None


def _refuse_foreign_parameters(tool: AnyTool, name: str) -> None:
    """A parameter another framework supplies cannot be filled by Pydantic AI."""
    for parameter in tool.spec.arguments.framework:
        if parameter.framework != FRAMEWORK and not parameter.has_default:
            raise ToolDefinitionError(
                f"tool {name!r} takes {parameter.framework}'s {parameter.kind} (parameter "
                f"{parameter.name!r}), which Pydantic AI cannot supply: serve this tool "
                f"through toolguard.integrations for {parameter.framework}, take Pydantic "
                "AI's RunContext instead, or give the parameter a default"
            )


def _pydantic_ai_tool(
    dispatcher: Dispatcher,
    name: str,
    retry_on: RetryOn,
    max_retries: int | None,
    options: PydanticAIToolOptions,
) -> PydanticAITool[Any]:
    if retry_on not in ("feedback", "visible"):
        raise ValueError(f"retry_on={retry_on!r} is not allowed; use 'feedback' or 'visible'")
    guarded_tool = dispatcher.tools[name]
    _refuse_foreign_parameters(guarded_tool, name)
    function = _function(dispatcher, name, retry_on)
    description = guarded_tool.description or None
    schema = PydanticAITool.from_schema(
        function,
        name=name,
        description=description,
        json_schema=copy.deepcopy(guarded_tool.parameters),
        takes_ctx=True,
    ).function_schema
    forwarded: dict[str, Any] = dict(options)
    metadata = forwarded.pop("metadata", None) or {}
    made: PydanticAITool[Any] = PydanticAITool(
        function,
        takes_ctx=True,
        name=name,
        description=description,
        max_retries=max_retries if max_retries is not None else _max_retries(dispatcher, name),
        function_schema=dataclasses.replace(schema, validator=_ARGUMENTS),
        metadata={**metadata, METADATA_KEY: {"adapter": True}},
        **forwarded,
    )
    return made


def as_pydantic_ai_tool(
    tool: AnyTool | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    retry_on: RetryOn = "feedback",
    max_retries: int | None = None,
    **options: Unpack[PydanticAIToolOptions],
) -> PydanticAITool[Any]:
    """A ``pydantic_ai.Tool`` that runs ``tool`` under toolguard.

    Guarantees, for every call Pydantic AI makes:

    * the tool is declared with toolguard's JSON Schema, and toolguard validates the
      arguments (Pydantic AI only parses the JSON): a bad call gets toolguard's
      message naming the argument as a ``ModelRetry``, and the tool does not run;
    * a ``RetryWithFeedback`` becomes a ``ModelRetry`` with toolguard's message:
      Pydantic AI's retry loop runs, within the tool's ``max_retries``;
    * other failures are answered by the dispatcher's handler chain and reach the
      model as a failed tool result (``ToolFailed``): a ``ToolError``'s message as it
      is, a hidden cause as toolguard's generic message with its error id (the
      cause logged once), instead of failing the run; with ``retry_on="visible"``,
      every model-visible failure is a ``ModelRetry`` instead;
    * only control flow and ``ToolCallFailed`` (a handler chose to fail the
      invocation) escape, and the run fails with them;
    * a ``RunContext`` parameter gets Pydantic AI's context (it is in no schema);
      ``InjectedCallId`` parameters get the call's ``tool_call_id``; ``Injected``
      parameters get the run's ``deps`` (``agent.run(..., deps=...)``);
    * a successful ``ToolReturn``, ``BinaryContent``, ``ImageUrl``... (Pydantic AI's
      own return values) reaches Pydantic AI untouched; other values as toolguard's
      content; the return's ``metadata["toolguard"]`` carries toolguard's decision,
      which ``ToolguardCapability`` reads;
    * under a ``ToolguardCapability`` of the same dispatcher, the call runs in the
      capability's session (breakers, model-retry budgets).

    ``options`` are Pydantic AI's own ``Tool`` options (:class:`PydanticAIToolOptions`:
    ``requires_approval``, ``prepare``, ``timeout``, ``strict``, ``sequential``...).
    ``max_retries`` is Pydantic AI's retry budget for this tool; by default it is
    toolguard's ``max_model_retries`` for the tool (as ``explain`` shows it when the
    tool is made) when one is set, else the agent's default.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools. A parameter only another framework supplies (LangChain's
    ``InjectedState``...) is refused here, with ``ToolDefinitionError``.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_pydantic_ai_tool")
    return _pydantic_ai_tool(dispatcher, name, retry_on, max_retries, options)


def as_pydantic_ai_tools(
    dispatcher: Dispatcher,
    *,
    retry_on: RetryOn = "feedback",
    **options: Unpack[PydanticAIToolOptions],
) -> list[PydanticAITool[Any]]:
    """Every tool of ``dispatcher`` as a Pydantic AI tool, in declaration order.

    ``options`` (Pydantic AI's ``Tool`` options) apply to each; for one tool's own,
    use :func:`as_pydantic_ai_tool`.
    """
    return [
        _pydantic_ai_tool(dispatcher, name, retry_on, None, options) for name in dispatcher.tools
    ]
