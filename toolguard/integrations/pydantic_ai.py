"""toolguard for Pydantic AI (``pip install "toolguard-agents[pydantic-ai]"``).

::

    from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tools

    guard = Dispatcher([search, lookup_order, final_answer])
    agent = Agent(
        model,
        tools=as_pydantic_ai_tools(guard),
        capabilities=[ToolguardCapability(guard)],   # only needed for return_direct
    )

* :func:`as_pydantic_ai_tool` turns a toolguard tool into a ``pydantic_ai.Tool``
  whose schema is toolguard's and whose arguments toolguard validates. Its answers
  map onto Pydantic AI's own outcomes:

  ======================================================  ==================================
  toolguard                                               Pydantic AI
  ======================================================  ==================================
  success                                                 ``ToolReturn`` (the content)
  ``RetryWithFeedback``, invalid arguments                ``ModelRetry``: its retry loop runs
  other model-visible failures (``ToolError``, timeout)   ``ToolFailed``: a failed result
  hidden failures                                         ``ToolFailed`` with toolguard's
                                                          generic message and error id
  a handler fails the invocation (``fail``)               ``ToolCallFailed`` ends the run
  ======================================================  ==================================

  ``retry_on="visible"`` sends every model-visible failure as ``ModelRetry``.
* :class:`ToolguardCapability` ends the run when toolguard's ``return_direct``
  asks for it: Pydantic AI has no such switch for function tools.

``return_direct``. Every answer carries toolguard's decision in
``ToolReturnPart.metadata["toolguard"]`` (never sent to the model). Before the next
model request, :class:`ToolguardCapability` looks at the round of tool returns
the request would send; when the round asks to stop (the dispatcher's
``return_direct_mode``), it skips the model call with ``SkipModelRequest``, answering
with the stopping tool's text, which becomes the run's output. The history stays
valid: every call has its return, and the last response is that text (its
``ModelResponse.metadata["toolguard"]`` says which call it came from).

Control flow. Importing this module registers Pydantic AI's signals with
:func:`toolguard.register_control_flow`: ``CallDeferred`` and ``ApprovalRequired``
(deferred tools, human approval), ``ModelRetry`` and ``ToolFailed`` raised by a
tool itself (Pydantic AI answers them as their author meant), and
``UsageLimitExceeded`` (a nested run sharing ``ctx.usage`` went over the run's
limits: the run must stop, not hear about it as a tool failure).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Final, Literal

try:
    from pydantic_ai import (
        ApprovalRequired,
        BinaryContent,
        CallDeferred,
        ModelRequest,
        ModelResponse,
        ModelRetry,
        RunContext,
        SkipModelRequest,
        TextPart,
        ToolFailed,
        ToolReturn,
        ToolReturnPart,
        UsageLimitExceeded,
    )
    from pydantic_ai import Tool as PydanticAITool
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models import ModelRequestContext
    from pydantic_core import SchemaValidator, core_schema
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.pydantic_ai needs Pydantic AI: "
        'pip install "toolguard-agents[pydantic-ai]"'
    ) from error

from toolguard._decorator import BoundTool, Tool
from toolguard._dispatcher import Dispatcher
from toolguard._rounds import round_stops
from toolguard._values import Content, Image, ToolCall, ToolResult
from toolguard.errors import (
    register_control_flow,
)
from toolguard.integrations._common import guarded

__all__ = [
    "METADATA_KEY",
    "ToolguardCapability",
    "as_pydantic_ai_tool",
    "as_pydantic_ai_tools",
    "stop_requested",
]

register_control_flow(CallDeferred, ApprovalRequired, ModelRetry, ToolFailed, UsageLimitExceeded)

METADATA_KEY: Final = "toolguard"
"""Key in ``ToolReturnPart.metadata`` of toolguard's decision about a successful call:
``{"return_direct": bool, "is_error": bool, "error_id": str | None}``. Pydantic AI
never sends ``metadata`` to the model. Failed calls (``outcome="failed"``) carry
none, unless their tool asked to stop even on failure."""

RetryOn = Literal["feedback", "visible"]

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


# --- toolguard tools as Pydantic AI tools ---------------------------------------------


def _return_value(content: Content) -> str | list[str | BinaryContent]:
    """toolguard's content as a tool return value: text, or text and binary images."""
    if isinstance(content, str):
        return content
    return [
        BinaryContent(data=base64.b64decode(block.data), media_type=block.media_type)
        if isinstance(block, Image)
        else block.text
        for block in content
    ]


def _answer(result: ToolResult, retry_on: RetryOn) -> ToolReturn:
    """Pydantic AI's outcome for toolguard's result: return it, or raise the signal."""
    if result.is_error and not result.return_direct:
        kinds = _RETRY_KINDS if retry_on == "feedback" else _VISIBLE_KINDS
        if result.error_kind in kinds and result.error_id is None:
            raise ModelRetry(result.text)
        raise ToolFailed(result.text)
    return ToolReturn(
        return_value=_return_value(result.content),
        metadata={
            METADATA_KEY: {
                "return_direct": result.return_direct,
                "is_error": result.is_error,
                "error_id": result.error_id,
            }
        },
    )


def _function(dispatcher: Dispatcher, name: str, retry_on: RetryOn) -> Callable[..., Any]:
    # A sync tool runs on the dispatcher's thread pool, as Pydantic AI runs its own
    # sync tools off the event loop; async handlers still run on the loop.
    offload = not dispatcher.tools[name].spec.is_async

    async def run_tool(ctx: RunContext[Any], **arguments: Any) -> ToolReturn:
        sent: Any = arguments.get(_NOT_AN_OBJECT, arguments)
        call = ToolCall(name=name, arguments=sent, id=ctx.tool_call_id)
        result = await dispatcher.adispatch(call, context=ctx.deps, offload=offload)
        return _answer(result, retry_on)

    run_tool.__qualname__ = f"toolguard[{name}].run_tool"
    return run_tool


def _max_retries(dispatcher: Dispatcher, name: str) -> int | None:
    setting = dispatcher.explain(name)["max_model_retries"]
    value = getattr(setting, "value", None)
    return value if isinstance(value, int) else None


def _pydantic_ai_tool(
    dispatcher: Dispatcher, name: str, retry_on: RetryOn, max_retries: int | None
) -> PydanticAITool[Any]:
    if retry_on not in ("feedback", "visible"):
        raise ValueError(f"retry_on={retry_on!r} is not allowed; use 'feedback' or 'visible'")
    guarded = dispatcher.tools[name]
    made: PydanticAITool[Any] = PydanticAITool.from_schema(
        _function(dispatcher, name, retry_on),
        name=name,
        description=guarded.description or None,
        json_schema=copy.deepcopy(guarded.parameters),
        takes_ctx=True,
    )
    made.function_schema = dataclasses.replace(made.function_schema, validator=_ARGUMENTS)
    made.max_retries = max_retries if max_retries is not None else _max_retries(dispatcher, name)
    return made


def as_pydantic_ai_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    retry_on: RetryOn = "feedback",
    max_retries: int | None = None,
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
    * ``InjectedCallId`` parameters get the call's ``tool_call_id``; ``Injected``
      parameters get the run's ``deps`` (``agent.run(..., deps=...)``);
    * a successful answer's ``ToolReturnPart.metadata["toolguard"]`` carries
      toolguard's decision, which :class:`ToolguardCapability` reads.

    ``max_retries`` is Pydantic AI's retry budget for this tool; by default it is
    toolguard's ``max_model_retries`` for the tool (as ``explain`` shows it when the
    tool is made) when one is set, else the agent's default.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_pydantic_ai_tool")
    return _pydantic_ai_tool(dispatcher, name, retry_on, max_retries)


def as_pydantic_ai_tools(
    dispatcher: Dispatcher, *, retry_on: RetryOn = "feedback"
) -> list[PydanticAITool[Any]]:
    """Every tool of ``dispatcher`` as a Pydantic AI tool, in declaration order."""
    return [_pydantic_ai_tool(dispatcher, name, retry_on, None) for name in dispatcher.tools]


# --- return_direct ----------------------------------------------------------------------


def _asked_to_stop(part: ToolReturnPart) -> bool:
    decision = part.metadata.get(METADATA_KEY) if isinstance(part.metadata, dict) else None
    return isinstance(decision, dict) and decision.get("return_direct") is True


def stop_requested(
    messages: Sequence[ModelMessage], *, mode: Literal["any", "all"] = "any"
) -> ToolReturnPart | None:
    """The tool return that ends the run, when the last round of tool calls asks to stop.

    The round is the ``ToolReturnPart`` s of the last message, when that message is a
    request answering tool calls. It asks to stop when any (``mode="any"``) or
    every (``mode="all"``) return carries toolguard's ``return_direct``; the answer
    is then the first such return, in call order. Returns of tools that are not
    toolguard's never ask.
    """
    if not messages or not isinstance(messages[-1], ModelRequest):
        return None
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    stops = [_asked_to_stop(part) for part in returns]
    if not round_stops(stops, mode):
        return None
    return next(part for part, stop in zip(returns, stops, strict=True) if stop)


def _text(part: ToolReturnPart) -> str:
    if isinstance(part.content, str):
        return part.content
    return part.model_response_str(wrap_if_error=False)


@dataclasses.dataclass
class ToolguardCapability(AbstractCapability[Any]):
    """End a Pydantic AI run where toolguard's ``return_direct`` says.

    ``Agent(..., capabilities=[ToolguardCapability(dispatcher)])``. Before each model
    request, when the round of tool returns it would send asks to stop
    (:func:`stop_requested`, with ``mode`` or else the dispatcher's
    ``return_direct_mode``), the model is not called: the request is answered with
    the stopping tool's text, which becomes the run's output (``result.output``).
    That response's ``metadata["toolguard"]`` names the tool and call it came from
    (``{"return_direct": True, "tool_name": ..., "tool_call_id": ...}``); it was
    not the model's. A failed call never stops the run unless its tool's ``return_direct`` says so
    (``"always"``, a predicate).

    The output is text: use it with agents whose output type accepts a ``str`` (the
    default). With a structured output type, Pydantic AI asks the model again.
    """

    dispatcher: Dispatcher | None = None
    mode: Literal["any", "all"] | None = None

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # not spec-serialisable: it holds a dispatcher

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        rule: Literal["any", "all"] = self.mode or (
            self.dispatcher.return_direct_mode if self.dispatcher is not None else "any"
        )
        final = stop_requested(request_context.messages, mode=rule)
        if final is not None:
            raise SkipModelRequest(
                ModelResponse(
                    parts=[TextPart(content=_text(final))],
                    finish_reason="stop",
                    metadata={
                        METADATA_KEY: {
                            "return_direct": True,
                            "tool_name": final.tool_name,
                            "tool_call_id": final.tool_call_id,
                        }
                    },
                )
            )
        return request_context
