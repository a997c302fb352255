"""A toolguard tool as a Strands tool: toolguard's schema, validation and answers."""

from __future__ import annotations

import warnings
from collections.abc import AsyncGenerator
from typing import Any, Final

from strands.types.events import ToolResultEvent
from strands.types.tools import AgentTool, ToolContext, ToolSpec, ToolUse

from toolguard import Dispatcher, ToolCall
from toolguard.integrations.strands._calls import remember, scope_of, tool_result

__all__ = ["FRAMEWORK", "GUARDED_MARK", "ToolguardTool"]

FRAMEWORK: Final = "strands"
GUARDED_MARK: Final = "toolguard.hooks"  # invocation_state key: ToolguardHooks is on
_warned: set[str] = set()


class ToolguardTool(AgentTool):
    """A toolguard tool that Strands runs, with toolguard deciding every answer.

    Guarantees, for every call Strands makes:

    * the model sees toolguard's JSON Schema (``inputSchema``) and toolguard
      validates the input: a bad call gets toolguard's message naming the argument,
      and the tool does not run;
    * failures are answered by the dispatcher's handler chain as an error result: a
      ``ToolError``'s message as it is, a hidden cause as toolguard's generic
      message with its error id (the cause logged once); only control flow
      (``tool_context.interrupt()`` halts the agent for human input) and
      ``ToolCallFailed`` (a handler chose to fail the invocation) escape;
    * parameters annotated with Strands' ``ToolContext`` get the call's context, and
      ``Agent`` the running agent, never model arguments; ``InjectedCallId`` gets the
      tool use id; ``Injected`` gets the invocation state (``agent(..., **state)``);
    * the call runs in the agent's toolguard session (:func:`session_id`), as one
      step with the other calls of its model message;
    * ``return_direct`` ends the turn with :class:`ToolguardHooks` on the agent (a
      warning says so, once, when it asks to stop without them).
    """

    def __init__(self, *, dispatcher: Dispatcher, name: str) -> None:
        super().__init__()
        guarded_tool = dispatcher.tools[name]
        self._parameters = guarded_tool.injected_by(FRAMEWORK, call_id=True, context=True)
        self._guarding = dispatcher
        self._name = name
        self._offload = not guarded_tool.spec.is_async
        self._spec: ToolSpec = {
            "name": name,
            "description": guarded_tool.description or name,
            "inputSchema": {"json": guarded_tool.parameters},
        }

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._guarding

    @property
    def tool_name(self) -> str:
        return self._name

    @property
    def tool_spec(self) -> ToolSpec:
        return self._spec

    @property
    def tool_type(self) -> str:
        return "toolguard"

    async def stream(
        self, tool_use: ToolUse, invocation_state: dict[str, Any], **kwargs: Any
    ) -> AsyncGenerator[Any, None]:
        call_id = str(tool_use.get("toolUseId", ""))
        agent = invocation_state.get("agent")
        # Strands hands an AgentTool its ToolContext as the keyword "_tool_context"
        # (no public name; a release that stops makes a new one here, as before 1.x).
        context = kwargs.get("_tool_context")
        if context is None:
            context = ToolContext(tool_use=tool_use, agent=agent, invocation_state=invocation_state)
        values = {
            name: (agent if kind == "Agent" else context) for name, kind in self._parameters.items()
        }
        call = ToolCall(name=self._name, arguments=tool_use.get("input"), id=call_id)
        # An interrupt (tool_context.interrupt(...)) is control flow: it propagates,
        # and Strands' executor halts the agent for it as for its own tools.
        result = await scope_of(self._guarding, agent, call_id).adispatch(
            call, context=invocation_state, offload=self._offload, framework_values=values
        )
        if result.return_direct:
            remember(invocation_state, call_id)
            if not invocation_state.get(GUARDED_MARK):
                _warn_without_hooks(self._name)
        yield ToolResultEvent(tool_result(call_id, result))


def _warn_without_hooks(name: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    warnings.warn(
        f"toolguard tool {name!r} asked to end the turn (return_direct), but the agent has "
        "no ToolguardHooks: add hooks=[ToolguardHooks(dispatcher)] to the Agent",
        UserWarning,
        stacklevel=2,
    )
