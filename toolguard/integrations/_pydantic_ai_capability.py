"""``ToolguardCapability``: a Pydantic AI agent's tools under a dispatcher's policy, in place.

Two of Pydantic AI's capability hooks:

* ``wrap_tool_execute`` guards every tool the agent runs that toolguard does not
  already run (plain functions, ``Tool(...)``, toolsets): a failure goes through the
  dispatcher's handler chain (``ahandle_error``) and becomes Pydantic AI's
  ``ModelRetry`` or ``ToolFailed``; a success passes through as the tool returned
  it, with toolguard's ``return_direct`` decision. Tools made by
  ``as_pydantic_ai_tool`` run as they are, in the capability's session.
* ``before_model_request`` ends the run when the last round of tool returns asks to
  stop (toolguard's ``return_direct``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

from pydantic_ai import (
    ModelRequest,
    ModelResponse,
    RunContext,
    SkipModelRequest,
    TextPart,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import ValidatedToolArgs, WrapToolExecuteHandler
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from toolguard._dispatcher import Dispatcher
from toolguard._session import Session
from toolguard._values import ToolCall, ToolResult
from toolguard.integrations._pydantic_ai_tools import (
    METADATA_KEY,
    SIGNALS,
    RetryOn,
    answer,
    decision,
    raise_for,
    scope,
    with_decision,
)
from toolguard.runner._rounds import round_stops

__all__ = ["ToolguardCapability", "conversation_session", "stop_requested"]


# --- sessions -----------------------------------------------------------------------------


def conversation_session(dispatcher: Dispatcher, ctx: RunContext[Any]) -> Session | None:
    """The default: the session of the run's conversation.

    ``dispatcher.session(id=ctx.conversation_id)``: Pydantic AI gives every run a
    conversation id, carried over by ``message_history`` (or passed as
    ``agent.run(..., conversation_id=...)``), so the runs of one conversation share
    their breakers and budgets. ``None`` (no session) when the run has no id.
    """
    conversation = getattr(ctx, "conversation_id", None)
    return dispatcher.session(id=conversation) if conversation else None


def _step(ctx: RunContext[Any]) -> str:
    """The model step a call came in: the run's step (one per model response)."""
    return f"{ctx.run_id}:{ctx.run_step}"


def _stand_in(value: Any) -> str:
    """What the model will read of a successful value, for toolguard's success rules
    (``return_direct`` predicates, ``max_result_chars``): never a failure."""
    if isinstance(value, str):
        return value
    shown = value.return_value if isinstance(value, ToolReturn) else value
    if isinstance(shown, str):
        return shown
    try:
        return ToolReturnPart(tool_name="", content=shown).model_response_str()
    except Exception:  # noqa: BLE001 - Pydantic AI answers a value it cannot serialise
        return ""


# --- return_direct ----------------------------------------------------------------------


def _asked_to_stop(part: ToolReturnPart) -> bool:
    decided = part.metadata.get(METADATA_KEY) if isinstance(part.metadata, dict) else None
    return isinstance(decided, dict) and decided.get("return_direct") is True


def stop_requested(
    messages: Sequence[ModelMessage], *, mode: Literal["any", "all"] = "any"
) -> ToolReturnPart | None:
    """The tool return that ends the run, when the last round of tool calls asks to stop.

    The round is the ``ToolReturnPart`` s of the last message, when that message is a
    request answering tool calls. It asks to stop when any (``mode="any"``) or
    every (``mode="all"``) return carries toolguard's ``return_direct``; the answer
    is then the first such return, in call order. Returns without toolguard's
    decision never ask.
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


def _is_adapter(tool_def: ToolDefinition) -> bool:
    marked = tool_def.metadata.get(METADATA_KEY) if tool_def.metadata else None
    return isinstance(marked, dict) and marked.get("adapter") is True


@dataclasses.dataclass
class ToolguardCapability(AbstractCapability[Any]):
    """Put a Pydantic AI agent's tools under ``dispatcher``'s policy, in place.

    ``Agent(..., capabilities=[ToolguardCapability(dispatcher)])``:

    * **Every tool the agent runs** (plain functions, ``Tool(...)``, toolsets; not
      output tools) is guarded: an exception goes through the dispatcher's handler
      chain for the tool's name (overrides by name or glob, agent defaults, policy
      files, the global and built-in levels). A hidden cause is logged once and the
      model gets a failed result (``ToolFailed``) quoting the error id; a
      model-visible message (``ToolError``) arrives intact; ``RetryWithFeedback``
      is Pydantic AI's ``ModelRetry``. Pydantic AI's own signals (``ModelRetry``,
      ``ToolFailed``, ``CallDeferred``, ``ApprovalRequired``...) pass untouched, and
      so does a successful value (a ``ToolReturn`` too). Pydantic AI validates
      these tools' arguments, as without the capability. Name the tools in
      ``Dispatcher(external_tools=[...])`` to give them exact-name overrides and
      ``explain``.
    * **Tools made by** ``as_pydantic_ai_tool`` already run under toolguard: they
      run as they are, in this capability's session when their dispatcher is this one.
    * **return_direct**: before each model request, when the round of tool returns
      it would send asks to stop (:func:`stop_requested`, with ``mode`` or else the
      dispatcher's ``return_direct_mode``), the model is not called: the request is
      answered with the stopping tool's text, which becomes the run's output. That
      response's ``metadata["toolguard"]`` names the tool and call it came from. A
      failed call never stops the run unless its tool's ``return_direct`` says so.
    * **Sessions**: ``session(ctx)`` gives the session of the run (breakers,
      model-retry budgets); by default the conversation's
      (:func:`conversation_session`). Calls of one model response are one step.

    ``retry_on="visible"`` sends every model-visible failure as ``ModelRetry``.
    Without ``dispatcher``, the tools are guarded under the global defaults.
    """

    dispatcher: Dispatcher = dataclasses.field(default_factory=lambda: Dispatcher([]))
    mode: Literal["any", "all"] | None = None
    session: Callable[[RunContext[Any]], Session | None] | None = None
    retry_on: RetryOn = "feedback"

    def __post_init__(self) -> None:
        if not isinstance(self.dispatcher, Dispatcher):
            raise TypeError(
                f"ToolguardCapability takes a toolguard Dispatcher, got {self.dispatcher!r}"
            )
        if self.retry_on not in ("feedback", "visible"):
            raise ValueError(
                f"retry_on={self.retry_on!r} is not allowed; use 'feedback' or 'visible'"
            )

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # not spec-serialisable: it holds a dispatcher

    def _session_of(self, ctx: RunContext[Any]) -> Session | None:
        if self.session is not None:
            return self.session(ctx)
        return conversation_session(self.dispatcher, ctx)

    # --- every tool call -------------------------------------------------------------

    async def wrap_tool_execute(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: ValidatedToolArgs,
        handler: WrapToolExecuteHandler,
    ) -> Any:
        session = self._session_of(ctx)
        if _is_adapter(tool_def):
            token = scope.set((self.dispatcher, session) if session is not None else None)
            try:
                return await handler(args)
            finally:
                scope.reset(token)
        step = _step(ctx)
        guarded = ToolCall(name=call.tool_name, arguments=call.args, id=call.tool_call_id)
        if session is not None:
            refused = session.admit(guarded, step=step)
            if refused is not None:
                return answer(refused, self.retry_on)
        failed: ToolResult | None = None
        try:
            value = await handler(args)
        except SIGNALS:
            raise
        except Exception as error:  # noqa: BLE001 - every failure goes to the handler chain
            failed = await self._failed(session, guarded, error, step)
        if failed is not None:  # raised outside the except block: no __context__ to the cause
            return answer(failed, self.retry_on)
        return await self._succeeded(session, guarded, value, step)

    async def _failed(
        self, session: Session | None, call: ToolCall, error: Exception, step: str
    ) -> ToolResult:
        if session is not None:
            return await session.ahandle_error(call, error, step=step)
        return await self.dispatcher.ahandle_error(call, error)

    async def _succeeded(
        self, session: Session | None, call: ToolCall, value: Any, step: str
    ) -> Any:
        seen = _stand_in(value)
        if session is not None:
            result = await session.ahandle_result(call, seen, step=step)
        else:
            result = await self.dispatcher.ahandle_result(call, seen)
        raise_for(result, self.retry_on)
        if result.content != seen:
            value = result.content  # cut by max_result_chars
        if result.return_direct:
            return with_decision(value, decision(result))
        return value

    # --- return_direct -----------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        rule: Literal["any", "all"] = self.mode or self.dispatcher.return_direct_mode
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
