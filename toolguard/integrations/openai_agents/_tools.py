"""toolguard tools as the Agents SDK's ``FunctionTool``: :func:`as_function_tool`.

The model sees what the SDK's own ``function_tool`` would declare for the same
function (the SDK builds the schema, over the parameters the model may send); the
SDK's own injection (a ``RunContextWrapper``/``ToolContext`` parameter) gets the
call's ``ToolContext``; toolguard validates, runs and answers every call.
"""

from __future__ import annotations

import copy
import inspect
import typing
from collections.abc import Awaitable, Callable
from typing import Any, Final

from agents import (
    AgentBase,
    FunctionTool,
    RunContextWrapper,
    ToolInputGuardrail,
    ToolOutputGuardrail,
    UserError,
)
from agents import Tool as AgentsTool
from agents.function_schema import function_schema
from agents.tool import ToolCaller
from agents.tool_context import ToolContext

from toolguard import BoundTool, Dispatcher, Tool, ToolDefinitionError
from toolguard.formats import strict_schema
from toolguard.integrations._common import guarded
from toolguard.integrations.openai_agents._outputs import (
    CustomDataExtractor,
    ToolOutput,
    decision_extractor,
    native_adapter,
    output_of,
    remember,
)
from toolguard.integrations.openai_agents._runs import SessionSource, call_of, scope_for

__all__ = ["FRAMEWORK", "GUARDED", "as_function_tool", "as_function_tools"]

FRAMEWORK: Final = "openai-agents"  # the name FRAMEWORK_MARKERS gives the SDK
GUARDED: Final = "_toolguard_guarded"  # set on every FunctionTool toolguard answers

AnyTool = Tool[..., Any] | BoundTool[..., Any]
NeedsApproval = bool | Callable[[RunContextWrapper[Any], dict[str, Any], str], Awaitable[bool]]
IsEnabled = bool | Callable[[RunContextWrapper[Any], AgentBase[Any]], bool | Awaitable[bool]]


# --- the schema the model sees ---------------------------------------------------------------


def _model_view(tool: AnyTool) -> Callable[..., Any]:
    """A stand-in with the tool's name, docstring and the parameters the model may send,
    for the SDK's own ``function_schema``: toolguard's injected parameters and the
    frameworks' are left out (toolguard supplies them)."""
    hidden = set(tool.spec.arguments.injected)
    signature = inspect.signature(tool)
    hints = typing.get_type_hints(tool, include_extras=True)
    kept = [p for p in signature.parameters.values() if p.name not in hidden]

    def view(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never called
        raise AssertionError("a schema stand-in is never called")

    view.__signature__ = signature.replace(parameters=kept)  # type: ignore[attr-defined]  # read by inspect
    view.__annotations__ = {
        name: hint for name, hint in hints.items() if name in {p.name for p in kept}
    }
    view.__doc__ = inspect.getdoc(tool)
    view.__name__ = view.__qualname__ = tool.name
    view.__module__ = tool.__module__
    return view


def _declared(tool: AnyTool, strict_mode: bool | None) -> tuple[dict[str, Any], bool]:
    """The parameters' JSON Schema to declare, and whether it is strict.

    The SDK's own schema for the function (what ``function_tool`` declares), strict
    when it can be (``strict_mode=None``). A tool taking ``**kwargs`` (which toolguard
    reads as top-level arguments, the SDK as one nested object) is declared with
    toolguard's schema; so is one the SDK cannot describe.
    """
    flat_extras = any(p.kind is p.VAR_KEYWORD for p in inspect.signature(tool).parameters.values())
    if not flat_extras:
        view = _model_view(tool)
        for strict in (True, False) if strict_mode is None else (strict_mode,):
            try:
                schema = function_schema(
                    view,
                    name_override=tool.name,
                    description_override=tool.description or None,
                    strict_json_schema=strict,
                )
            except UserError as error:
                if strict_mode is None and strict:
                    continue
                raise ToolDefinitionError(f"tool {tool.name!r}: {error}") from None
            except Exception:  # noqa: BLE001 - the SDK cannot describe it: toolguard's schema
                break
            return schema.params_json_schema, strict
    if strict_mode is False:
        return copy.deepcopy(tool.parameters), False
    try:
        return strict_schema(tool.parameters, tool=tool.name), True
    except ToolDefinitionError:
        if strict_mode:
            raise
        return copy.deepcopy(tool.parameters), False


def _check_injection(tool: AnyTool) -> tuple[str, ...]:
    """The parameters the SDK fills (its ``ToolContext``); another framework's parameter
    without a default is refused here, at conversion."""
    ours: list[str] = []
    for parameter in tool.spec.arguments.framework:
        if parameter.framework == FRAMEWORK:
            ours.append(parameter.name)
        elif not parameter.has_default:
            raise ToolDefinitionError(
                f"tool {tool.name!r} takes {parameter.framework}'s {parameter.kind} "
                f"(parameter {parameter.name!r}), which the OpenAI Agents SDK cannot "
                f"supply: run it through toolguard's {parameter.framework} integration, "
                "or give the parameter a default"
            )
    return tuple(ours)


# --- the invocation ---------------------------------------------------------------------------


def _invoker(
    dispatcher: Dispatcher, tool: AnyTool, session: SessionSource | None
) -> Callable[[ToolContext[Any], str], Awaitable[ToolOutput]]:
    name = tool.name
    # A sync tool runs on the dispatcher's thread pool, as the SDK runs its own sync
    # tools off the event loop; async handlers still run on the loop.
    offload = not tool.spec.is_async
    sdk_parameters = _check_injection(tool)
    native = native_adapter(tool)

    async def on_invoke_tool(ctx: ToolContext[Any], arguments: str) -> ToolOutput:
        call = call_of(ctx, name, arguments)
        values = dict.fromkeys(sdk_parameters, ctx) if sdk_parameters else None
        result = await scope_for(session, dispatcher, ctx).adispatch(
            call, context=getattr(ctx, "context", None), offload=offload, framework_values=values
        )
        output = output_of(result, native)
        remember(ctx, result, output)
        return output

    on_invoke_tool.__qualname__ = f"toolguard[{name}].on_invoke_tool"
    return on_invoke_tool


def _function_tool(
    dispatcher: Dispatcher,
    name: str,
    *,
    session: SessionSource | None,
    strict_mode: bool | None,
    is_enabled: IsEnabled = True,
    needs_approval: NeedsApproval = False,
    tool_input_guardrails: list[ToolInputGuardrail[Any]] | None = None,
    tool_output_guardrails: list[ToolOutputGuardrail[Any]] | None = None,
    defer_loading: bool = False,
    custom_data_extractor: CustomDataExtractor | None = None,
    allowed_callers: list[ToolCaller] | None = None,
) -> FunctionTool:
    tool = dispatcher.tools[name]
    on_invoke_tool = _invoker(dispatcher, tool, session)
    parameters, strict = _declared(tool, strict_mode)
    # only what was asked for reaches FunctionTool: an option the installed SDK lacks
    # fails only for an application that uses it
    options: dict[str, Any] = {
        key: value
        for key, value, default in (
            ("is_enabled", is_enabled, True),
            ("needs_approval", needs_approval, False),
            ("tool_input_guardrails", tool_input_guardrails, None),
            ("tool_output_guardrails", tool_output_guardrails, None),
            ("defer_loading", defer_loading, False),
            ("allowed_callers", allowed_callers, None),
        )
        if value is not default
    }

    def build(schema: dict[str, Any], strict_json_schema: bool) -> FunctionTool:
        function_tool = FunctionTool(
            name=name,
            description=tool.description,
            params_json_schema=schema,
            on_invoke_tool=on_invoke_tool,
            strict_json_schema=strict_json_schema,
            custom_data_extractor=decision_extractor(custom_data_extractor),
            **options,
        )
        setattr(function_tool, GUARDED, True)
        return function_tool

    if not strict:
        return build(parameters, False)
    try:
        return build(parameters, True)
    except UserError:
        # The SDK's own strict conversion refused the schema.
        if strict_mode:
            raise
        return build(copy.deepcopy(tool.parameters), False)


def as_function_tool(
    tool: AnyTool | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
    session: SessionSource | None = None,
    strict_mode: bool | None = None,
    is_enabled: IsEnabled = True,
    needs_approval: NeedsApproval = False,
    tool_input_guardrails: list[ToolInputGuardrail[Any]] | None = None,
    tool_output_guardrails: list[ToolOutputGuardrail[Any]] | None = None,
    defer_loading: bool = False,
    custom_data_extractor: CustomDataExtractor | None = None,
    allowed_callers: list[ToolCaller] | None = None,
) -> FunctionTool:
    """An ``agents.FunctionTool`` that runs ``tool`` under toolguard.

    It declares what the SDK's own ``function_tool`` declares for the same function
    (name and description are the toolguard tool's), and for every call:

    * toolguard validates the model's JSON arguments: a bad call gets toolguard's
      message naming the argument, and the tool does not run;
    * a parameter typed ``RunContextWrapper[...]`` or ``ToolContext[...]`` (in any
      position) receives the call's ``ToolContext``, as with ``function_tool``;
      ``InjectedCallId`` receives the SDK's ``tool_call_id``, ``Injected`` the run's
      context object (``Runner.run(..., context=...)``); none is in the schema and
      the model can set none. Another framework's parameter without a default is a
      ``ToolDefinitionError`` here;
    * failures are answered by the dispatcher's handler chain: a ``ToolError``'s
      message as it is, a hidden cause as toolguard's generic message with its error
      id (the cause logged once); only control flow and ``ToolCallFailed`` escape (the
      SDK fails the run with them, ``ToolCallFailed`` as the ``__cause__`` of its
      ``UserError``);
    * a success is the tool's value: text as it is, the SDK's own output types
      (``ToolOutputText``, ``ToolOutputImage``, ``ToolOutputFileContent``, their dict
      forms, lists of them) as the tool returned them when its return annotation names
      them, toolguard's content blocks as ``ToolOutputText``/``ToolOutputImage``,
      anything else as toolguard's JSON text;
    * a sync tool runs on the dispatcher's thread pool, off the event loop;
    * the output item's ``custom_data["toolguard"]`` carries toolguard's decision,
      which :func:`tool_use_behavior` reads.

    ``session``: the conversation whose breakers and model-retry budgets apply, a
    ``Session`` or a function of the run context naming one (a ``Session``, an id for
    ``dispatcher.session(id=...)``, or ``None``). Without it, calls run on the
    dispatcher alone.

    ``strict_mode`` (the SDK's ``function_tool`` option): ``None`` (default) declares a
    strict schema when the SDK can make one, else a non-strict one; ``True`` requires
    it (``ToolDefinitionError`` when impossible); ``False`` declares a non-strict one.

    The other keywords are the SDK's own ``FunctionTool`` options, passed on as they
    are; ``custom_data_extractor``'s data is kept beside toolguard's. The SDK's own
    timeout is not offered: give the tool toolguard's ``timeout`` policy.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_function_tool")
    return _function_tool(
        dispatcher,
        name,
        session=session,
        strict_mode=strict_mode,
        is_enabled=is_enabled,
        needs_approval=needs_approval,
        tool_input_guardrails=tool_input_guardrails,
        tool_output_guardrails=tool_output_guardrails,
        defer_loading=defer_loading,
        custom_data_extractor=custom_data_extractor,
        allowed_callers=allowed_callers,
    )


def as_function_tools(
    dispatcher: Dispatcher,
    *,
    session: SessionSource | None = None,
    strict_mode: bool | None = None,
) -> list[AgentsTool]:
    """Every tool of ``dispatcher`` as a ``FunctionTool``, in declaration order
    (see :func:`as_function_tool`). Typed as the SDK's ``list[Tool]``, what
    ``Agent(tools=...)`` takes."""
    return [
        _function_tool(dispatcher, name, session=session, strict_mode=strict_mode)
        for name in dispatcher.tools
    ]
