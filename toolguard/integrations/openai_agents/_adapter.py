"""What is the Agents SDK's own in one guarded call: an ``inplace.Adapter``.

* the SDK's tool output: toolguard's answer as text or output items, a success as the
  tool returned it (text cut per ``max_result_chars``);
* the tool's own failure setting at the tool level of the chain: its
  ``failure_error_function`` (the author's message), the run's
  ``tool_error_formatter`` for a tool on the SDK's default, and
  ``failure_error_function=None`` (fail the run) as a handler that lets it fail;
* the SDK's "Invalid JSON input" (the model's arguments do not fit) as toolguard's
  ``InvalidArguments``, with what the SDK's own validation refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable
from typing import Any, Final

import pydantic
import pydantic_core
from agents import (
    FunctionTool,
    ModelBehaviorError,
    ToolErrorFormatterArgs,
    default_tool_error_function,
)
from agents.function_schema import function_schema

from toolguard import (
    ControlFlow,
    Dispatcher,
    HandlerContext,
    InvalidArguments,
    Scope,
    ToolCall,
    ToolPolicy,
    ToolResult,
)
from toolguard.integrations.inplace import Adapter
from toolguard.integrations.openai_agents._outputs import ToolOutput, output_of, remember
from toolguard.integrations.openai_agents._runs import SessionSource, scope_for
from toolguard.integrations.openai_agents._sdk import (
    BAD_INPUT,
    failure_function,
    mark_answered_by_default,
    report_handled,
    uses_default_failure,
)

__all__ = ["CallAdapter", "LetFail", "ToolGuard"]

_OBJECT: Final = pydantic.TypeAdapter(dict[str, Any])
# Whether this release's run asks its ``tool_error_formatter`` about a function tool's
# exception (``kind="tool_exception"``, with the ``error``): from 0.24. Before, it asks
# only about approvals and unknown tools, and its arguments have no ``error`` field; the
# guard asks the formatter where the SDK would, and nowhere else.
FORMATTER_ANSWERS_EXCEPTIONS: Final = "error" in {
    field.name for field in dataclasses.fields(ToolErrorFormatterArgs)
}
Validate = Callable[[dict[str, Any]], object]


class LetFail(ControlFlow):
    """The tool's ``failure_error_function=None`` answered: the SDK fails the run with
    ``error``, as without the guard (control flow: no handler sees it, nothing logged)."""

    def __init__(self, error: Exception) -> None:
        super().__init__(type(error).__name__)
        self.error = error


def _let_fail(error: Exception, context: HandlerContext) -> None:
    raise LetFail(error)


_let_fail.__qualname__ = "failure_error_function=None"
# The SDK asks a tool's failure setting about its exceptions and about arguments that
# do not fit alike: it is the tool level of both chains.
_LET_FAIL: Final = ToolPolicy(on_error=_let_fail, on_invalid_call=_let_fail)


class ToolGuard:
    """One guarded tool: its dispatcher, where its conversation comes from, and the
    SDK's own argument model of its function (read once)."""

    __slots__ = ("_validate", "_validated", "dispatcher", "source", "tool", "unscoped")

    def __init__(self, dispatcher: Dispatcher, source: SessionSource | None, tool: FunctionTool):
        self.dispatcher = dispatcher
        self.source = source
        self.tool = tool
        self.unscoped = dispatcher.scope() if source is None else None
        self._validate: Validate | None = None
        self._validated = False

    def __deepcopy__(self, memo: dict[int, Any]) -> ToolGuard:
        """Itself: a deep copy of a guarded tool (an agent copied with
        ``copy.deepcopy``) is guarded by the same dispatcher, whose locks, pools and
        sessions are not copied (the SDK's own invoker shares its functions so too)."""
        return self

    def scope(self, ctx: Any) -> Scope:
        if self.unscoped is not None:
            return self.unscoped
        return scope_for(self.source, self.dispatcher, ctx)

    def validator(self) -> Validate | None:
        """The SDK's own argument model of a ``function_tool``'s function, rebuilt to
        read what the SDK withheld; ``None`` for other function tools."""
        if not self._validated:
            self._validated = True
            try:
                function = self.tool.__wrapped__
                model = function_schema(function, strict_json_schema=self.tool.strict_json_schema)
            except Exception:  # noqa: BLE001 - no function, or one the SDK cannot describe now
                return None
            self._validate = model.params_pydantic_model.model_validate
        return self._validate


class CallAdapter(Adapter[ToolOutput]):
    """One call's adapter: the SDK's objects of this call (its ``ToolContext``)."""

    __slots__ = ("arguments", "ctx", "error", "guard", "invoker", "scope", "tool")

    def __init__(
        self,
        guard: ToolGuard,
        tool: FunctionTool,
        ctx: Any,
        scope: Scope,
        arguments: str,
        invoker: Any,
    ) -> None:
        self.guard = guard
        self.tool = tool
        self.ctx = ctx
        self.scope = scope
        self.arguments = arguments
        self.invoker = invoker
        self.error: Exception | None = None

    def answer(self, call: ToolCall, result: ToolResult) -> ToolOutput:
        if self.error is not None and self.invoker.sdk_handles:
            # the SDK reports a failure its tool answered (its log, the tool span's error);
            # the report reads str(error) (before 0.23 always), which an exception may
            # refuse: toolguard's answer stands, its hidden cause is already logged
            with contextlib.suppress(Exception):
                report_handled(self.invoker, self.error, self.arguments, self.ctx)
            if uses_default_failure(self.tool):
                mark_answered_by_default(self.ctx)
        output = output_of(result)
        remember(self.ctx, result, output)
        return output

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        self.error = error
        if isinstance(error, ModelBehaviorError) and str(error).startswith(BAD_INPUT):
            return self._invalid(call, error)
        return error

    def tool_setting(self, call: ToolCall) -> ToolPolicy | None:
        """The tool's own ``failure_error_function`` (``None``: fail the run), else the
        run's ``tool_error_formatter`` for a tool on the SDK's default setting: the tool
        level of both chains, asked about the SDK's own exception, as the SDK asks
        them (the formatter only where this release asks it, see
        ``FORMATTER_ANSWERS_EXCEPTIONS``). The SDK's ``default_tool_error_function`` is
        nobody's word for this tool (its generic text): toolguard's chain answers
        instead."""
        own = failure_function(self.tool, self.ctx)
        if own is None:
            return _LET_FAIL
        if own is not default_tool_error_function:
            handler = _author(own, self)
            return ToolPolicy(on_error=handler, on_invalid_call=handler)
        if not FORMATTER_ANSWERS_EXCEPTIONS or not uses_default_failure(self.tool):
            return None
        config = getattr(self.ctx, "run_config", None)
        formatter = getattr(config, "tool_error_formatter", None)
        if formatter is None:
            return None
        handler = _app(formatter, own, self)
        return ToolPolicy(on_error=handler, on_invalid_call=handler)

    def seen(self, outcome: ToolOutput) -> object:
        return outcome if isinstance(outcome, str) else str(outcome)

    def succeeded(self, call: ToolCall, outcome: ToolOutput, result: ToolResult) -> ToolOutput:
        if result.truncated and isinstance(outcome, str):
            outcome = result.content
        if result.return_direct or result.truncated:
            remember(self.ctx, result, outcome)
        return outcome

    def _invalid(self, call: ToolCall, error: ModelBehaviorError) -> Exception:
        """What the SDK's validation refused, in toolguard's words. The SDK withholds
        its details by default (``OPENAI_AGENTS_DONT_LOG_TOOL_DATA``): they are read
        again from the SDK's own argument model of the tool's function, unless the
        tool's own setting answers (then the arguments are validated once, as without
        the guard)."""
        schema = self.tool.params_json_schema
        try:
            parsed = _OBJECT.validate_json(self.arguments or "{}")
        except pydantic.ValidationError as not_an_object:
            return self.scope.invalid_arguments(call, not_an_object, schema)
        if isinstance(error.__cause__, pydantic_core.ValidationError):
            return self.scope.invalid_arguments(call, error.__cause__, schema)
        validate = self.guard.validator() if self.tool_setting(call) is None else None
        if validate is not None:
            try:
                validate(parsed)
            except pydantic.ValidationError as refused:
                return self.scope.invalid_arguments(call, refused, schema)
        invalid = InvalidArguments(
            f"Invalid arguments for tool '{self.tool.name}': they do not fit its parameters. "
            "Check the tool's schema and call it again.",
            tool=self.tool.name,
        )
        invalid.__cause__ = error
        return invalid


def _author(function: Any, call: CallAdapter) -> Callable[[Exception, HandlerContext], Any]:
    """The tool's ``failure_error_function`` as a handler: its message, as the SDK sends it."""

    def failure_error_function(error: Exception, context: HandlerContext) -> Any:
        return function(call.ctx, call.error or error)

    return failure_error_function


def _app(formatter: Any, default: Any, call: CallAdapter) -> Callable[..., Any]:
    """The run's ``tool_error_formatter`` as a handler: its message, or ``None`` (ask
    the next level) where it has none, as the SDK asks it."""
    ctx = call.ctx

    async def tool_error_formatter(failure: Exception, context: HandlerContext) -> str | None:
        error = call.error or failure
        message = formatter(
            ToolErrorFormatterArgs(
                kind="tool_exception",
                tool_type="function",
                tool_name=getattr(ctx, "qualified_tool_name", context.tool),
                call_id=context.call.id or "",
                default_message=default(ctx, error),
                run_context=ctx,
                error=error,
            )
        )
        if hasattr(message, "__await__"):
            message = await message
        return message if isinstance(message, str) else None

    return tool_error_formatter
