"""The tools an app already has, guarded in place: :func:`guard`.

An SDK ``FunctionTool`` (from ``@function_tool``, an MCP server's tools converted by
the SDK, ``agent.as_tool()``) keeps everything it is: its schema, its own argument
validation, its ``ToolContext``, approvals, guardrails, ``is_enabled``, its output.
Two of the SDK's own hooks change:

* its ``failure_error_function`` is turned off (``None``: the SDK re-raises), so a
  failure reaches toolguard instead of the SDK's formatter, the SDK's error log and
  its trace span;
* its ``on_invoke_tool`` is wrapped: toolguard asks the conversation's breaker, runs
  the SDK's own invoker under the policy's timeout and retries, answers a failure
  with the dispatcher's handler chain, and records its decision for
  ``tool_use_behavior``.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Final

import pydantic
import pydantic_core
from agents import FunctionTool, ModelBehaviorError
from agents import Tool as AgentsTool
from agents.function_schema import function_schema
from agents.tool import (
    set_function_tool_failure_error_function,
    with_function_tool_failure_error_handler,
)
from agents.tool_context import ToolContext

from toolguard._dispatcher import Dispatcher
from toolguard._marks import is_control_flow
from toolguard._session import Session
from toolguard._values import ToolCall, ToolResult
from toolguard.errors import InvalidArguments
from toolguard.integrations._openai_agents_outputs import (
    ToolOutput,
    decision_extractor,
    output_of,
    remember,
)
from toolguard.integrations._openai_agents_runs import (
    SessionSource,
    call_of,
    session_for,
    step_key,
)
from toolguard.integrations._openai_agents_tools import GUARDED
from toolguard.policy._precedence import Setting
from toolguard.policy._resilience import Retry
from toolguard.runner._attempts import Attempts, acall_with_timeout, retry_async
from toolguard.schema._arguments import Arguments

__all__ = ["guard"]

Invoker = Callable[[ToolContext[Any], str], Awaitable[Any]]

# how the SDK's own argument parsing says the model sent arguments that do not fit
_BAD_INPUT: Final = "Invalid JSON input for tool"
_OBJECT: Final = pydantic.TypeAdapter(dict[str, Any])
_ANY: Final = pydantic_core.SchemaValidator(pydantic_core.core_schema.any_schema())
# where the SDK keeps the function a function_tool wraps (FunctionTool.__wrapped__)
_WRAPPED: Final = "__agents_function_tool_wrapped_callable__"


def guard(
    tools: Iterable[AgentsTool],
    dispatcher: Dispatcher,
    *,
    session: SessionSource | None = None,
) -> list[AgentsTool]:
    """The agent's tools, each ``FunctionTool`` guarded in place by ``dispatcher``.

    ``agent = Agent(..., tools=guard([lookup_order, refund], dispatcher))``

    A guarded tool answers the model as before on success (its output, untouched)
    and with toolguard's answer on failure: the handler chain for its name (call,
    override, the tool's own policy when it is one of the dispatcher's ``@tool``
    functions, agent defaults, global, built-in), a hidden cause logged once with the
    error id the model is told. Arguments that do not fit the tool's schema get
    toolguard's message naming the argument. The policy's ``timeout`` and
    ``retries`` apply around the SDK's own invocation, a ``Session``'s breaker and
    model-retry budget through ``session=`` (as for :func:`as_function_tool`).

    Name the tools in ``Dispatcher(external_tools=[...])`` so that overrides may name
    them exactly (globs match any name). Tools toolguard already answers
    (:func:`as_function_tool`'s, or guarded before) and tools that are not function
    tools (hosted tools, computer and shell tools) are returned as they are. The
    originals are not changed: each guarded tool is a copy.
    """
    return [
        _guarded(tool, dispatcher, session)
        if isinstance(tool, FunctionTool) and not getattr(tool, GUARDED, False)
        else tool
        for tool in tools
    ]


def _guarded(
    tool: FunctionTool, dispatcher: Dispatcher, session: SessionSource | None
) -> FunctionTool:
    # the SDK's own invoker, on a copy whose failures are raised, not formatted
    inner = copy.copy(tool)
    set_function_tool_failure_error_function(inner, None)
    invoke = _guarded_invoker(inner.on_invoke_tool, inner, dispatcher, session)
    prepare = getattr(inner.on_invoke_tool, "prepare_arguments", None)
    if callable(prepare):
        # approvals evaluate the arguments the SDK's own invoker will run with
        invoke.__agents_prepare_arguments__ = prepare  # type: ignore[attr-defined]  # the SDK reads it
    with contextlib.suppress(AttributeError):  # FunctionTool.__wrapped__: the function
        setattr(invoke, _WRAPPED, tool.__wrapped__)

    staged = copy.copy(tool)
    staged.on_invoke_tool = with_function_tool_failure_error_handler(invoke, _never_reported)
    staged.custom_data_extractor = decision_extractor(tool.custom_data_extractor)
    set_function_tool_failure_error_function(staged, None)
    setattr(staged, GUARDED, True)
    return copy.copy(staged)  # the SDK's own copy binds the new invoker to its tool


def _never_reported(tool: FunctionTool, error: Exception, arguments: str) -> None:
    """The SDK reports a failure its formatter answered; a guarded tool has none."""


def _guarded_invoker(
    inner: Invoker, tool: FunctionTool, dispatcher: Dispatcher, source: SessionSource | None
) -> Invoker:
    name = tool.name
    validate = _sdk_validator(tool)

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> ToolOutput:
        call = call_of(ctx, name, arguments)
        session = session_for(source, dispatcher, ctx)
        step = step_key(ctx) if session is not None else None
        if session is not None:
            refused = session.admit(call, step=step)
            if refused is not None:
                return _answered(ctx, refused)
        timeout, retries = _resilience(dispatcher, name)
        try:
            value = await _attempts(inner, ctx, arguments, tool, call, timeout, retries)
        except Exception as error:  # noqa: BLE001 - every failure of the tool is toolguard's
            failure = _model_mistake(error, tool, arguments, validate)
            if session is not None:
                result = await session.ahandle_error(call, failure, step=step)
            else:
                result = await dispatcher.ahandle_error(call, failure)
            return _answered(ctx, result)
        return await _succeeded(ctx, call, value, dispatcher, session, step)

    on_invoke_tool.__qualname__ = f"toolguard[{name}].on_invoke_tool"
    return on_invoke_tool


def _resilience(dispatcher: Dispatcher, name: str) -> tuple[float | None, Retry | None]:
    """The policy's ``timeout`` and ``retries`` for ``name``, as the chain resolves them
    now (a later ``configure()`` counts)."""
    settings = dispatcher.explain(name, foreign=True)
    timeout, retries = settings["timeout"], settings["retries"]
    assert isinstance(timeout, Setting)
    assert isinstance(retries, Setting)
    return timeout.value, retries.value


async def _attempts(
    inner: Invoker,
    ctx: ToolContext[Any],
    arguments: str,
    tool: FunctionTool,
    call: ToolCall,
    seconds: float | None,
    retry: Retry | None,
) -> Any:
    """The SDK's own invocation under toolguard's timeout and retries."""

    async def attempt() -> Any:
        if seconds is None:
            return await inner(ctx, arguments)
        return await acall_with_timeout(
            None, inner(ctx, arguments), tool=tool.name, seconds=seconds
        )

    try:
        return await attempt()
    except Exception as first:
        if (
            retry is None
            or is_control_flow(first)
            or _is_bad_input(first)
            or not retry.retryable(first)
        ):
            raise
        return await retry_async(
            retry, first, attempt, tool=tool.name, call_id=call.id, counter=Attempts()
        )


async def _succeeded(
    ctx: ToolContext[Any],
    call: ToolCall,
    value: Any,
    dispatcher: Dispatcher,
    session: Session | None,
    step: str | None,
) -> ToolOutput:
    """The tool's own output, untouched (text cut per ``max_result_chars``); the
    dispatcher decides ``return_direct`` on the text the model is sent."""
    text = value if isinstance(value, str) else str(value)
    if session is not None:
        result = await session.ahandle_result(call, text, step=step)
    else:
        result = await dispatcher.ahandle_result(call, text)
    output = result.content if isinstance(value, str) else value
    remember(ctx, result, output)
    return output


def _answered(ctx: ToolContext[Any], result: ToolResult) -> ToolOutput:
    output = output_of(result)
    remember(ctx, result, output)
    return output


# --- the model's own mistakes ------------------------------------------------------------------


def _is_bad_input(error: BaseException) -> bool:
    return isinstance(error, ModelBehaviorError) and str(error).startswith(_BAD_INPUT)


def _sdk_validator(tool: FunctionTool) -> Callable[[dict[str, Any]], object] | None:
    """The SDK's own argument model of a ``function_tool``'s function, rebuilt to read
    what the SDK withheld; ``None`` for other function tools (MCP, agents as tools)."""
    try:
        function = tool.__wrapped__
    except AttributeError:
        return None
    try:
        model = function_schema(function, strict_json_schema=tool.strict_json_schema)
    except Exception:  # noqa: BLE001 - a function the SDK could describe once, not now
        return None
    return model.params_pydantic_model.model_validate


def _model_mistake(
    error: Exception,
    tool: FunctionTool,
    arguments: str,
    validate: Callable[[dict[str, Any]], object] | None,
) -> Exception:
    """The SDK's "Invalid JSON input" (JSON that does not parse, or arguments its
    validation refused) as toolguard's ``InvalidArguments``: the model is told what is
    wrong, in toolguard's words, as for toolguard's own tools. Anything else as it is.

    The SDK withholds its validation's details by default
    (``OPENAI_AGENTS_DONT_LOG_TOOL_DATA``): they are read again from the SDK's own
    argument model of the tool's function.
    """
    if not _is_bad_input(error):
        return error
    shape = Arguments(
        tool=tool.name,
        parameters=tool.params_json_schema,
        validator=_ANY,
        positional=(),
        call_id_params=(),
        context_params=(),
    )
    try:
        parsed = _OBJECT.validate_json(arguments or "{}")
    except pydantic.ValidationError as not_an_object:
        return shape.invalid(not_an_object)
    cause = error.__cause__
    if isinstance(cause, pydantic_core.ValidationError):
        return shape.invalid(cause)
    if validate is not None:
        try:
            validate(parsed)
        except pydantic.ValidationError as refused:
            return shape.invalid(refused)
    invalid = InvalidArguments(
        f"Invalid arguments for tool '{tool.name}': they do not fit its parameters. "
        "Check the tool's schema and call it again.",
        tool=tool.name,
    )
    invalid.__cause__ = error
    return invalid
