"""toolguard for AG2 (``pip install "toolguard-agents[ag2]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.ag2 import as_ag2_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = Agent(
        "assistant",
        config=config,
        tools=[lookup_order, *as_ag2_tools(dispatcher)],
        middleware=[guard(dispatcher)],
    )

* :func:`guard` puts an agent's existing tools under a dispatcher's policy, in place,
  as one AG2 agent middleware (``BaseMiddleware.on_tool_execution``, AG2's own hook
  around every execution of a function tool, outside the tool's own hooks). For a
  tool that raises, AG2's ``FunctionTool`` tells the model the whole formatted
  traceback (``traceback.format_exception``): the exception's text, its cause chain
  and the code around it. Guarded, that failure is answered by the dispatcher's
  handler chain instead, as AG2's own ``ToolErrorEvent`` carrying toolguard's text (a
  ``ToolError``'s message as it is, a hidden cause as the generic message with its
  error id, logged once); arguments AG2 refused (its validation of the model's
  arguments, before the body ran) as toolguard's bad-arguments answer naming the
  argument. A tool's ``retries`` and ``timeout`` apply to its execution.
* :func:`as_ag2_tool` turns a toolguard ``@tool`` into AG2's own ``FunctionTool``:
  toolguard's schema, toolguard's validation, every call answered by toolguard.

Conversations: AG2 runs a conversation on a stream (``reply.ask(...)`` goes on with
the same one); each stream is one toolguard session
(``dispatcher.session(id="ag2-stream:<stream id>")``), and the model response a call
came in is its step, so breakers and model-retry budgets count per conversation.

``return_direct`` is AG2's own stop: a result asking to stop is a
``ToolResult(final=True)``, which ends AG2's turn with that text as the reply (AG2
ends it on the first such result in call order: a dispatcher whose
``return_direct_mode`` is ``"all"`` is refused, never ignored).

What AG2 answers itself stays AG2's: a tool name the model invented
(``ToolNotFoundEvent``, answered by AG2's fallback before any tool or middleware),
what a tool's own hooks answer (an approval denied, a hook's own ``ToolErrorEvent``),
and what AG2 or a hook raises through the execution (``HumanInputError``, a wiring
error) passes untouched.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

try:
    from ag2 import Middleware
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        'toolguard.integrations.ag2 needs AG2: pip install "toolguard-agents[ag2]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool, ToolDefinitionError
from toolguard.integrations._common import guarded, may_stop, the_dispatcher
from toolguard.integrations.ag2._middleware import ToolguardMiddleware
from toolguard.integrations.ag2._tools import ToolguardAG2Tool

__all__ = ["ToolguardAG2Tool", "ToolguardMiddleware", "as_ag2_tool", "as_ag2_tools", "guard"]


def _refuse_all(dispatcher: Dispatcher) -> None:
    if dispatcher.return_direct_mode == "all":
        raise ToolDefinitionError(
            "return_direct_mode='all' cannot apply: AG2 ends a turn on the first tool "
            "result asking to stop (ToolResult(final=True)), in call order; use 'any'"
        )


def guard(dispatcher: Dispatcher | None = None) -> Middleware:
    """An AG2 middleware factory guarding an agent's tools by ``dispatcher``'s policy.

    ``Agent(..., middleware=[guard(dispatcher)])``: the one line to add to an
    existing app (or ``agent.add_middleware(guard(dispatcher))``, or per run:
    ``agent.ask(..., middleware=[guard(dispatcher)])``). Every function tool the agent
    runs keeps its name, schema, hooks, dependencies and results; what changes is the
    answer to a failure raised in its run: the dispatcher's handler chain for the
    tool's name (overrides by name or glob, agent defaults and policy files; name the
    tools in ``external_tools=`` so overrides may name them exactly). Without a
    dispatcher, an empty one under the global defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(dispatcher)", optional=True)
    _refuse_all(dispatcher)
    return Middleware(ToolguardMiddleware, dispatcher=dispatcher)


def as_ag2_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardAG2Tool:
    """An AG2 ``FunctionTool`` that runs ``tool`` under toolguard.

    Guarantees, for every call an AG2 agent makes:

    * the model sees toolguard's JSON Schema; toolguard validates the arguments, so a
      bad call gets toolguard's message naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, as AG2's
      ``ToolErrorEvent`` with toolguard's text; only control flow and
      ``ToolCallFailed`` escape otherwise;
    * a success is the tool's text as AG2's ``ToolResult``; ``return_direct`` ends
      the turn with it (``final=True``);
    * calls in one AG2 conversation (stream) share a toolguard session.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_ag2_tool")
    if may_stop(dispatcher, name):
        _refuse_all(dispatcher)
    return ToolguardAG2Tool(dispatcher, name)


def as_ag2_tools(dispatcher: Dispatcher) -> list[ToolguardAG2Tool]:
    """Every tool of ``dispatcher`` as an AG2 tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_ag2_tools(dispatcher)")
    return [as_ag2_tool(name, dispatcher=dispatcher) for name in dispatcher.tools]
