"""toolguard for LlamaIndex agents (``pip install "toolguard-agents[llama-index]"``).

Two pieces, usable together or apart::

    from toolguard.integrations.llama_index import as_llama_index_tools, guard

    dispatcher = Dispatcher([search], external_tools=["lookup_order"])
    agent = FunctionAgent(
        tools=[*as_llama_index_tools(dispatcher), *guard([lookup_order], dispatcher)],
        llm=llm,
    )

* :func:`guard` puts an existing app's tools (``FunctionTool``, any ``BaseTool``)
  under a dispatcher's policy, in place: LlamaIndex's agents send ``str(e)`` to the
  model for a tool that raises, and log nothing; a guarded tool's failure is
  answered by the dispatcher's handler chain instead (a ``ToolError``'s message as
  it is, a hidden cause as toolguard's generic message with its error id, the cause
  logged once), as a ``ToolOutput(is_error=True)``.
* :func:`as_llama_index_tool` turns a toolguard ``@tool`` into a LlamaIndex tool:
  toolguard's schema, toolguard's validation, every call answered by toolguard. A
  parameter annotated with LlamaIndex's workflow ``Context`` gets the agent's
  context and never appears in the schema.

Both take the agent's workflow ``Context``: a conversation (the same ``Context``
reused across ``agent.run(..., ctx=ctx)``) is one toolguard session, found again by
an id kept in the context's store (:data:`SESSION_KEY`), and each model message is
one model step (the run's id and the agent's iteration), so breakers and
model-retry budgets work across a conversation.

``return_direct``. LlamaIndex's ``ToolMetadata.return_direct`` is declared per tool,
up front, and its agents stop after a tool that has it unless the output is an
error. toolguard decides per call: the tool's ``metadata`` answers with
toolguard's decision about the call that just ran (on success only by default, or
as a predicate says). A failure never stops the run: LlamaIndex never ends a run on
an error output, so ``return_direct="always"`` stops on success only here. A guarded
tool that LlamaIndex's own ``return_direct=True`` marks keeps stopping on success,
never on failure.

Control flow. Importing this module registers the workflow's ``WaitingForEvent``
(``ctx.wait_for_event`` inside a tool: human in the loop) with
:func:`toolguard.register_control_flow`: it reaches the workflow untouched.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

try:
    from llama_index.core.tools import FunctionTool
    from llama_index.core.tools.types import BaseTool
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError(
        "toolguard.integrations.llama_index needs llama-index-core: "
        'pip install "toolguard-agents[llama-index]"'
    ) from error

from toolguard import BoundTool, Dispatcher, Tool
from toolguard.errors import register_control_flow
from toolguard.integrations._common import (
    declared_schema,
    guarded,
    may_stop,
    refuse_not_run,
    the_dispatcher,
    the_tools,
)
from toolguard.integrations.llama_index._conversation import SESSION_KEY
from toolguard.integrations.llama_index._guarded import GuardedTool
from toolguard.integrations.llama_index._tools import ToolguardFunctionTool

__all__ = [
    "SESSION_KEY",
    "GuardedTool",
    "ToolguardFunctionTool",
    "as_llama_index_tool",
    "as_llama_index_tools",
    "guard",
]

# A private module path of llama-index-workflows (the workflow's pause,
# ``ctx.wait_for_event``): no public name exports it. Workflows before 2.9 pause
# differently; tests/integrations/test_llama_index.py fails loudly if a release
# moves it (a paused workflow would then be answered as a tool failure).
try:
    from workflows.runtime.types.results import WaitingForEvent
except ImportError:  # pragma: no cover - workflows before 2.9
    pass
else:
    register_control_flow(WaitingForEvent)


def guard(
    tools: Iterable[BaseTool | Callable[..., Any]], dispatcher: Dispatcher | None = None
) -> list[BaseTool]:
    """``tools`` under ``dispatcher``'s policy, in place, for ``FunctionAgent``,
    ``ReActAgent`` and ``AgentWorkflow``.

    ``agent = FunctionAgent(tools=guard(tools, dispatcher), llm=llm)``: the one line to
    add to an existing app; plain functions among ``tools`` become
    ``FunctionTool.from_defaults(function)``, as the agent itself makes them. Each tool
    keeps its name, description, schema and behaviour (a ``FunctionTool`` that takes
    ``Context`` still gets it, its ``callback`` still runs, its own error outputs reach
    the model as it wrote them); what changes is the answer to a failure: the
    dispatcher's handler chain for the tool's name (overrides by name or glob, agent
    defaults and policy files; name the tools in ``external_tools=`` so overrides may
    name them exactly), hidden causes logged once with the error id the model sees; and
    a ``FunctionTool``'s arguments are checked against its own ``fn_schema`` (LlamaIndex
    checks nothing), so a bad call gets toolguard's message and the tool does not run.
    Successful outputs reach the agent as the tool made them. ``retries`` and
    ``timeout`` for a tool LlamaIndex runs are refused (``ToolDefinitionError``), never
    ignored. Tools already guarded, and toolguard's own (:func:`as_llama_index_tool`),
    are returned as they are. Without a dispatcher, an empty one under the global
    defaults.
    """
    dispatcher = the_dispatcher(dispatcher, entry="guard(tools, dispatcher)", optional=True)
    listed = the_tools(
        tools,
        _a_tool_or_function,
        entry="guard(tools, dispatcher)",
        what="LlamaIndex tools (BaseTool) or plain functions",
    )
    found: list[BaseTool] = []
    for given in listed:
        # a plain function, as an agent's tools= takes it (and converts it the same way)
        tool = given if isinstance(given, BaseTool) else FunctionTool.from_defaults(given)
        if not isinstance(tool, GuardedTool | ToolguardFunctionTool):
            refuse_not_run(
                dispatcher,
                tool.metadata.get_name(),
                framework="LlamaIndex",
                instead="write it with @tool and as_llama_index_tool instead",
            )
            tool = GuardedTool(tool, dispatcher)
        found.append(tool)
    return found


def _a_tool_or_function(value: object) -> bool:
    """What an agent's ``tools=`` takes: a LlamaIndex tool, or a function it wraps."""
    return isinstance(value, BaseTool) or (
        callable(value) and not isinstance(value, type) and hasattr(value, "__name__")
    )


def _function_tool(dispatcher: Dispatcher, name: str) -> ToolguardFunctionTool:
    schema = declared_schema(name, dispatcher.tools[name].parameters)
    return ToolguardFunctionTool(dispatcher, name, may_stop(dispatcher, name), schema)


def as_llama_index_tool(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    *,
    dispatcher: Dispatcher | None = None,
) -> ToolguardFunctionTool:
    """A LlamaIndex ``FunctionTool`` that runs ``tool`` under toolguard.

    Guarantees, for every call a LlamaIndex agent makes:

    * the model sees toolguard's JSON Schema (``fn_schema`` declares it as it is);
      toolguard validates the arguments, so a bad call gets toolguard's message
      naming the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain, as a
      ``ToolOutput(is_error=True)`` with toolguard's content; only control flow and
      ``ToolCallFailed`` (a handler chose to fail the invocation) escape;
    * a parameter annotated ``Context`` (LlamaIndex's workflow context) gets the
      agent's context; a parameter of another framework's injection type is refused
      here (``ToolDefinitionError`` naming it);
    * content blocks (``toolguard.Text``/``Image``) become ``TextBlock``/``ImageBlock``;
      an ``Output``'s artifact is the ``ToolOutput``'s ``raw_output``;
    * ``return_direct`` ends the run on success only (see the module docstring);
    * a sync tool runs on the dispatcher's thread pool, off the event loop.

    Without ``dispatcher``, the tool runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of
    that dispatcher's tools.
    """
    dispatcher, name = guarded(tool, dispatcher, adapter="as_llama_index_tool")
    return _function_tool(dispatcher, name)


def as_llama_index_tools(dispatcher: Dispatcher) -> list[ToolguardFunctionTool]:
    """Every tool of ``dispatcher`` as a LlamaIndex tool, in declaration order."""
    dispatcher = the_dispatcher(dispatcher, entry="as_llama_index_tools(dispatcher)")
    return [_function_tool(dispatcher, name) for name in dispatcher.tools]
