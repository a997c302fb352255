"""``ToolguardCapability``: a Pydantic AI agent's tools under a dispatcher's policy, in place.

Three of Pydantic AI's capability hooks (public API: no private name of Pydantic AI):

* ``wrap_tool_execute`` guards every tool the agent runs that toolguard does not
  already run (plain functions, ``Tool(...)``, toolsets) through
  :func:`toolguard.integrations.inplace.aguard_call`, with :class:`PydanticAIAdapter`
  for what is Pydantic AI's: a failure goes through the dispatcher's handler chain and
  becomes Pydantic AI's ``ModelRetry`` or ``ToolFailed``; Pydantic AI's own signals
  (``ModelRetry``, ``ToolFailed``, ``CallDeferred``, ``ApprovalRequired``, the
  run-ending ``UnexpectedModelBehavior`` of a tool out of retries, ``UsageLimitExceeded``)
  pass; a success passes through as the tool returned it, with toolguard's
  ``return_direct`` decision. Tools made by ``as_pydantic_ai_tool`` run as they are,
  in the capability's scope (conversation and step).
* ``on_tool_validate_error`` answers arguments that do not fit a tool's schema with
  toolguard's words (``on_invalid_call``: the argument named, no value echoed), as the
  ``ModelRetry`` Pydantic AI's own retry loop and budget take; a tool's own
  ``args_validator`` asking again passes as it is.
* ``before_model_request`` ends the run when the last round of tool returns asks to
  stop (toolguard's ``return_direct``).

Unknown tool names are Pydantic AI's to answer: its ToolManager resolves a name before
any capability hook runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Literal

import attrs
from pydantic import ValidationError
from pydantic_ai import (
    ModelRequest,
    ModelResponse,
    ModelRetry,
    RunContext,
    SkipModelRequest,
    TextPart,
    ToolReturn,
    ToolReturnPart,
    UnexpectedModelBehavior,
    UserError,
)
from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.capabilities.abstract import (
    RawToolArgs,
    ValidatedToolArgs,
    WrapToolExecuteHandler,
)
from pydantic_ai.messages import ModelMessage, ToolCallPart
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import ToolDefinition

from toolguard import Dispatcher, Scope, Session, ToolCall, ToolResult
from toolguard.integrations._common import any_agent, the_dispatcher
from toolguard.integrations.inplace import Adapter, aguard_call
from toolguard.integrations.pydantic_ai._tools import (
    METADATA_KEY,
    RetryOn,
    answer,
    decision,
    raise_for,
    scope,
    with_decision,
)

__all__ = ["PydanticAIAdapter", "ToolguardCapability", "conversation_session", "stop_requested"]


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


# --- the adapter ----------------------------------------------------------------------


class PydanticAIAdapter(Adapter[Any]):
    """What is Pydantic AI's own in a guarded call (``retry_on`` as the capability's)."""

    lazy_seen = True  # _stand_in: always text, never raises; a serialisation per call

    def __init__(self, retry_on: RetryOn) -> None:
        self.retry_on = retry_on

    def answer(self, call: ToolCall, result: ToolResult) -> Any:
        """Pydantic AI's outcome: ``ModelRetry``/``ToolFailed`` raised, or a return (a
        failure that stops the run)."""
        return answer(result, self.retry_on)

    def passes(self, error: Exception) -> bool:
        """A tool out of retries: Pydantic AI ends the run with ``UnexpectedModelBehavior``
        ("exceeded max retries"), raised around the tool, as without the guard; and
        Pydantic AI's ``UserError``, its word for the developer's misuse (a sync
        ``run_sync`` inside a sync tool...): raised as Pydantic AI raises it."""
        return isinstance(error, UnexpectedModelBehavior | UserError)

    def seen(self, outcome: Any) -> object:
        return _stand_in(outcome)

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        if result.truncated:
            outcome = result.content  # cut by max_result_chars
        if result.return_direct:
            return with_decision(outcome, decision(result))
        return outcome


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
    return _stopping(messages, any_agent(), mode)


def _stopping(
    messages: Sequence[ModelMessage], agent: Dispatcher, mode: Literal["any", "all"]
) -> ToolReturnPart | None:
    if not messages or not isinstance(messages[-1], ModelRequest):
        return None
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    stops = [_asked_to_stop(part) for part in returns]
    if not agent.round_stops(stops, mode=mode):
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
      these tools' arguments; arguments that do not fit get toolguard's answer
      (``on_invalid_call``) as Pydantic AI's ``ModelRetry``. Name the tools in
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
        the_dispatcher(
            self.dispatcher,
            entry="ToolguardCapability(dispatcher)",
            instead="Agent(model, tools=tools, capabilities=[ToolguardCapability("
            "Dispatcher([], external_tools=[...]))])",
        )
        if self.retry_on not in ("feedback", "visible"):
            raise ValueError(
                f"retry_on={self.retry_on!r} is not allowed; use 'feedback' or 'visible'"
            )
        self._adapter = PydanticAIAdapter(self.retry_on)
        self._unscoped = self.dispatcher.scope()  # no conversation: the same for every call
        # the scope of the last model step seen: its calls (parallel ones too) share it,
        # and a session is looked up once per step, not once per call
        self._last: tuple[tuple[str | None, str | None, int], Scope] | None = None

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # not spec-serialisable: it holds a dispatcher

    def _scope(self, ctx: RunContext[Any]) -> Scope:
        """The scope of a call: its conversation's model step, or the dispatcher alone.

        With the default session (the conversation's), the scope of a model step is
        found once and kept for the step's other calls; an application's own
        ``session`` function is asked on every call, as it is documented to be."""
        if self.session is not None:
            return self._step_scope(self.session(ctx), ctx)
        key = (getattr(ctx, "conversation_id", None), ctx.run_id, ctx.run_step)
        last = self._last
        if last is not None and last[0] == key:
            return last[1]
        here = self._step_scope(conversation_session(self.dispatcher, ctx), ctx)
        self._last = (key, here)
        return here

    def _step_scope(self, session: Session | None, ctx: RunContext[Any]) -> Scope:
        if session is None:
            return self._unscoped
        return session.scope(step=f"{ctx.run_id}:{ctx.run_step}")

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
        here = self._scope(ctx)
        if _is_adapter(tool_def):
            token = scope.set((self.dispatcher, here))
            try:
                return await handler(args)
            finally:
                scope.reset(token)
        guarded = ToolCall(name=call.tool_name, arguments=call.args, id=call.tool_call_id)
        return await aguard_call(here, guarded, lambda: handler(args), self._adapter)

    async def on_tool_validate_error(
        self,
        ctx: RunContext[Any],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        error: ValidationError | ModelRetry,
    ) -> ValidatedToolArgs:
        """Arguments the model sent that do not fit the tool's schema: toolguard's answer
        (``on_invalid_call``: the argument named, no value echoed) instead of Pydantic
        AI's list of pydantic errors, as the ``ModelRetry`` Pydantic AI's own retry loop
        and budget take (the tool does not run, as without the capability). A tool's
        own ``args_validator`` asking again (``ModelRetry``) is its author's word and
        passes as it is."""
        if not isinstance(error, ValidationError) or _is_adapter(tool_def):
            raise error
        here = self._scope(ctx)
        guarded = ToolCall(name=call.tool_name, arguments=args, id=call.tool_call_id)
        invalid = here.invalid_arguments(guarded, error, tool_def.parameters_json_schema)
        result = await here.afailed(guarded, invalid)
        # a failure never ends the run from here: there is no result to stop with yet
        raise_for(attrs.evolve(result, return_direct=False), self.retry_on)
        raise AssertionError("an invalid call is always a failure")  # pragma: no cover

    # --- return_direct -----------------------------------------------------------------

    async def before_model_request(
        self, ctx: RunContext[Any], request_context: ModelRequestContext
    ) -> ModelRequestContext:
        rule: Literal["any", "all"] = self.mode or self.dispatcher.return_direct_mode
        final = _stopping(request_context.messages, self.dispatcher, rule)
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
