"""AG2's tool executions under a dispatcher's policy, on the in-place pipeline.

AG2's ``FunctionTool`` answers a tool that raises with a ``ToolErrorEvent`` whose
result is ``traceback.format_exception(...)``: the whole formatted traceback, the
exception's text and its cause chain, reaches the model. An agent-level middleware
(``BaseMiddleware.on_tool_execution``) sees every execution of the agent's function
tools, around their own tool-level hooks: this one runs the execution through the
pipeline, and answers a failure the tool raised by the dispatcher's handler chain,
as a ``ToolErrorEvent`` carrying toolguard's text.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any, Final

import pydantic
from ag2.annotations import Context
from ag2.events import (
    BaseEvent,
    DataInput,
    ModelResponse,
    TextInput,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
)
from ag2.events import ToolResult as AG2ToolResult
from ag2.middleware import BaseMiddleware, LLMCall, ToolExecution, ToolResultType
from ag2.tools.types import FunctionTool
from ag2.utils import AGENT_CONTEXT_DEPENDENCY_KEY

from toolguard import Dispatcher, Scope, ToolCall, ToolError, ToolResult
from toolguard.integrations.ag2._calls import Steps, arguments_of, scope_of, text_of, where
from toolguard.integrations.inplace import Adapter, aguard_call

__all__ = ["ToolguardMiddleware", "error_event", "stopping_event"]

_EMPTY: Final[dict[str, Any]] = {}


def error_event(call: ToolCallEvent, text: str) -> ToolErrorEvent:
    """toolguard's answer to a failed call, as AG2's own ``ToolErrorEvent``: its
    ``result`` the text the model reads, its ``error`` a ``ToolError`` with the same
    text (what AG2's mappers, metrics and stores read of an error): the hidden cause is
    neither (it was logged once)."""
    return ToolErrorEvent(
        parent_id=call.id, name=call.name, error=ToolError(text), result=AG2ToolResult(text)
    )


def stopping_event(call: ToolCallEvent, text: str, metadata: dict[str, Any]) -> ToolResultEvent:
    """A result that ends AG2's turn with ``text`` as the final reply: AG2's own stop,
    ``ToolResult(final=True)`` (one text part). AG2 ignores ``final`` on a
    ``ToolErrorEvent``, so a failure asked to stop (``return_direct="always"``) is a
    plain result here."""
    return ToolResultEvent(
        parent_id=call.id,
        name=call.name,
        result=AG2ToolResult(text, final=True, metadata=dict(metadata)),
    )


class _Execution(Adapter[ToolResultType]):
    """What the pipeline needs of one AG2 tool execution (made per call)."""

    __slots__ = ("context", "event", "raised", "scope")

    lazy_seen = True  # seen() is the result's text, read only where toolguard decides

    def __init__(self, event: ToolCallEvent, context: Context, scope: Scope) -> None:
        self.event = event
        self.context = context
        self.scope = scope
        self.raised: BaseException | None = None  # a tool's failure, raised for the pipeline

    def answer(self, call: ToolCall, result: ToolResult) -> ToolResultType:
        if result.return_direct:
            return stopping_event(self.event, result.text, _EMPTY)
        return error_event(self.event, result.text)

    def passes(self, error: Exception) -> bool:
        # Only a failure raised in the tool's run is the tool's: anything AG2 or a tool
        # hook raises through the execution (a human-input error, an approval timing
        # out, a wiring error) is AG2's, and propagates as it would unguarded; a
        # ToolError here is toolguard's own (a timeout while running the tool).
        return error is not self.raised and not isinstance(error, ToolError)

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        if isinstance(error, pydantic.ValidationError) and where(error) == "arguments":
            return self.scope.invalid_arguments(call, error, self._schema())
        return error

    def _schema(self) -> dict[str, Any]:
        """The tool's JSON Schema, as the agent declares it (for the bad-arguments
        answer); an empty one where the agent is not at hand."""
        agent = self.context.dependencies.get(AGENT_CONTEXT_DEPENDENCY_KEY)
        for tool in getattr(agent, "tools", ()):
            if isinstance(tool, FunctionTool) and tool.name == self.event.name:
                return dict(tool.schema.function.parameters)
        return {}

    def own_error(self, outcome: ToolResultType) -> str | None:
        # a ToolErrorEvent not raised in the tool's run: a tool hook's own answer
        if isinstance(outcome, ToolErrorEvent):
            return text_of(outcome)
        return None

    def seen(self, outcome: ToolResultType) -> object:
        return text_of(outcome) if isinstance(outcome, ToolResultEvent) else ""

    def succeeded(
        self, call: ToolCall, outcome: ToolResultType, result: ToolResult
    ) -> ToolResultType:
        if not isinstance(outcome, ToolResultEvent):
            return outcome  # a client tool's call, handed to the client: AG2's
        if result.return_direct:
            parts = outcome.result.parts
            one = len(parts) == 1 and isinstance(parts[0], (TextInput, DataInput))
            if one and not result.truncated:
                stopped = copy.copy(outcome)
                stopped.result = copy.copy(outcome.result)
                stopped.result.final = True
                return stopped
            return stopping_event(self.event, result.text, outcome.result.metadata)
        if result.truncated and all(isinstance(p, TextInput) for p in outcome.result.parts):
            cut = copy.copy(outcome)
            cut.result = AG2ToolResult(result.text, metadata=dict(outcome.result.metadata))
            return cut
        return outcome

    def kept(self, call: ToolCall, outcome: ToolResultType, result: ToolResult) -> ToolResultType:
        if result.return_direct and isinstance(outcome, ToolResultEvent):
            return stopping_event(self.event, result.text, outcome.result.metadata)
        return outcome


class ToolguardMiddleware(BaseMiddleware):
    """An AG2 agent middleware answering its tools' failures by a dispatcher's policy
    (see :func:`toolguard.integrations.ag2.guard`, which makes its factory). AG2 makes
    one per turn; it records the model step each tool call came in."""

    def __init__(self, event: BaseEvent, context: Context, *, dispatcher: Dispatcher) -> None:
        super().__init__(event, context)
        self.dispatcher = dispatcher
        self.steps = Steps()

    async def on_llm_call(
        self, call_next: LLMCall, events: Sequence[BaseEvent], context: Context
    ) -> ModelResponse:
        response = await call_next(events, context)
        self.steps.saw(response)
        return response

    async def on_tool_execution(
        self, call_next: ToolExecution, event: ToolCallEvent, context: Context
    ) -> ToolResultType:
        call = ToolCall(name=event.name, arguments=arguments_of(event), id=event.id)
        scope = scope_of(self.dispatcher, context, self.steps, call)
        execution = _Execution(event, context, scope)

        async def invoke() -> ToolResultType:
            outcome = await call_next(event, context)
            if isinstance(outcome, ToolErrorEvent) and where(outcome.error) != "ag2":
                execution.raised = outcome.error
                raise outcome.error  # the tool's failure: the handler chain answers it
            return outcome

        return await aguard_call(scope, call, invoke, execution)
