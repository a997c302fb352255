"""``ToolguardMiddleware``: a dispatcher's policy over an Agent Framework agent's tools.

Part of :mod:`toolguard.integrations.agent_framework` (which re-exports it). Agent
Framework runs every function call of its loop through the function middleware given
to the agent (``Agent(..., middleware=[...])``), each around the next, the tool's own
``FunctionTool.invoke`` innermost; a middleware reads and sets ``context.result``. This
one runs that chain (``call_next``) inside toolguard's in-place pipeline
(:func:`toolguard.integrations.inplace.aguard_call`), so the answer to a failure is the
dispatcher's, set as the call's result, and a ``return_direct`` success ends the loop
with Agent Framework's own stop, ``MiddlewareTermination``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from agent_framework import (
    Content,
    FunctionInvocationContext,
    FunctionMiddleware,
    MiddlewareException,
    MiddlewareTermination,
)
from agent_framework.exceptions import UserInputRequiredException
from pydantic import BaseModel, ValidationError

from toolguard import Dispatcher, Scope, ToolCall, ToolCallFailed, ToolResult
from toolguard.integrations._common import HookAdapter, the_dispatcher
from toolguard.integrations.agent_framework._tools import (
    ToolguardFunctionTool,
    failing,
    scope_of,
)
from toolguard.integrations.inplace import aguard_call

__all__ = ["ToolguardMiddleware"]


def _framework_signal(error: Exception) -> bool:
    """Agent Framework's own signals and errors about how it was set up: its middleware
    signals (``MiddlewareTermination``, ``MiddlewareFailure``), a tool's request for
    user input, and the exceptions its function loop raises for itself inside the
    chain (its argument validation, arguments changed after an approval: private
    classes of ``agent_framework``, which the loop answers or turns into its own stop)."""
    if isinstance(error, MiddlewareException | UserInputRequiredException):
        return True
    kind = type(error)
    return kind.__module__.startswith("agent_framework") and kind.__name__.startswith("_")


def text_of(outcome: Any) -> str:
    """What the model reads of a call's result, as Agent Framework makes the function
    result of it (``Content.from_function_result``: the text items, joined)."""
    if isinstance(outcome, str):
        return outcome
    if isinstance(outcome, list) and all(isinstance(item, Content) for item in outcome):
        return "\n".join(item.text for item in outcome if item.type == "text" and item.text)
    return str(outcome)


class _Answering(HookAdapter[Any]):
    """One call's adapter: toolguard's answer is the call's result (its text); a
    success stays the framework's own value, cut to ``max_result_chars`` where it was
    text; whether the decided result asks to stop is kept in ``stop``."""

    lazy_seen = True

    def passes(self, error: Exception) -> bool:
        return _framework_signal(error)

    def respond(self, call: ToolCall, result: ToolResult) -> Any:
        return result.text

    def seen(self, outcome: Any) -> object:
        return text_of(outcome)

    def succeeded(self, call: ToolCall, outcome: Any, result: ToolResult) -> Any:
        super().succeeded(call, outcome, result)
        if result.truncated and _only_text(outcome):
            return result.text
        return outcome


def _only_text(outcome: Any) -> bool:
    if isinstance(outcome, str):
        return True
    return isinstance(outcome, list) and all(
        isinstance(item, Content) and item.type == "text" for item in outcome
    )


class ToolguardMiddleware(FunctionMiddleware):
    """Apply a toolguard policy to the tools of an Agent Framework agent.

    ``Agent(client, tools=tools, middleware=[ToolguardMiddleware(dispatcher)])``, or per
    run (``agent.run(..., middleware=[...])``), or on a chat client that invokes
    functions. Without a dispatcher, an empty one under the global defaults. Name the
    agent's tools in the dispatcher's ``external_tools`` so that its overrides may name
    them exactly (globs match any name). Put it first among the function middleware
    (outermost), after any middleware that repairs arguments, as Agent Framework asks
    of policy middleware.

    For every function call of the loop:

    * an exception out of the tool (or out of a middleware inside this one) is answered
      by the dispatcher's handler chain for the tool's name, and the answer is the
      call's result: a ``ToolError``'s message as written, a hidden cause as toolguard's
      generic message with its error id, logged once (Agent Framework would have told
      the model ``Error: Function failed.``, or the exception's text with
      ``include_detailed_errors``);
    * arguments the tool's input model refuses get toolguard's message naming each
      problem, and the tool does not run (a tool declared by a JSON schema dict is
      checked by Agent Framework itself, as without toolguard);
    * a success comes back as Agent Framework made it; toolguard cuts text at
      ``max_result_chars`` and, where the tool asks to stop (``return_direct``), raises
      ``MiddlewareTermination`` with the result set: the loop ends there, the tool's
      result last (a call of a parallel batch that asks to stop ends the loop after the
      batch: ``return_direct_mode="any"``; ``"all"`` is refused, since no middleware
      sees a batch);
    * ``retries``, ``timeout`` and ``breaker`` apply (the rest of the chain is called
      again; a timed-out call is answered at its deadline); in a run with an
      ``AgentSession``, calls are answered in ``dispatcher.session(id=session_id)``,
      each call its own model step (the middleware is not told which model message a
      call came in).

    Agent Framework's own signals and errors pass untouched: ``MiddlewareTermination``,
    ``MiddlewareFailure``, ``UserInputRequiredException``, its validation of the
    arguments and its approval checks; so does toolguard's control flow. A handler that
    fails the invocation (``ToolCallFailed``) aborts the run with Agent Framework's
    fail-closed ``MiddlewareFailure``, the ``ToolCallFailed`` its cause (any other
    exception out of a middleware becomes a result the loop goes on with). A
    tool of :func:`~toolguard.integrations.agent_framework.as_agent_framework_tool`
    answers for itself. What the function loop answers before any middleware runs
    stays its own: a tool name the model invented, a tool that needs approval.
    """

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        self.dispatcher = the_dispatcher(
            dispatcher,
            entry="ToolguardMiddleware(dispatcher)",
            optional=True,
            instead="to guard an agent's tools in place, pass the middleware to the agent: "
            "Agent(client, tools=tools, middleware=[ToolguardMiddleware(dispatcher)])",
        )
        if self.dispatcher.return_direct_mode != "any":
            raise ValueError(
                "ToolguardMiddleware cannot apply return_direct_mode="
                f"{self.dispatcher.return_direct_mode!r}: a function middleware sees one "
                "call, never its batch, so a batch ends when any call asks to stop; "
                "use return_direct_mode='any'"
            )
        self._outside = self.dispatcher.scope()

    async def process(
        self,
        context: FunctionInvocationContext,
        call_next: Callable[[], Awaitable[None]],
    ) -> None:
        """Run the rest of the chain in toolguard's pipeline (see the class)."""
        tool = context.function
        if isinstance(tool, ToolguardFunctionTool):  # it answers for itself
            await call_next()
            return
        call_id = context.metadata.get("call_id")
        call = ToolCall(
            name=tool.name,
            arguments=_arguments(context.arguments),
            id=call_id if isinstance(call_id, str) else None,
        )
        scope = scope_of(self.dispatcher, context.session, outside=self._outside)
        adapter = _Answering()
        refused = self._invalid(tool, call)
        try:
            if refused is not None:
                outcome: Any = adapter.answer(call, await scope.afailed(call, refused))
            else:
                outcome = await aguard_call(scope, call, _next(context, call_next), adapter)
        except ToolCallFailed as failed:
            raise failing(failed) from failed
        context.result = outcome
        if adapter.stop:
            raise MiddlewareTermination(result=outcome)

    def _invalid(self, tool: Any, call: ToolCall) -> Exception | None:
        """The model's arguments, checked against the tool's input model: toolguard's
        ``InvalidArguments`` where it refuses them, else ``None``."""
        model = getattr(tool, "input_model", None)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None  # a JSON schema dict: Agent Framework checks it itself
        try:
            model.model_validate(call.arguments or {})
        except ValidationError as error:
            scope: Scope = self._outside
            return scope.invalid_arguments(call, error, tool.parameters())
        return None


def _next(
    context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
) -> Callable[[], Awaitable[Any]]:
    async def invoke() -> Any:
        await call_next()
        return context.result

    return invoke


def _arguments(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, BaseModel):
        return arguments.model_dump()
    if isinstance(arguments, Mapping):
        return dict(arguments)
    return {}
