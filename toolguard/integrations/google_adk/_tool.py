"""A toolguard tool as an ADK tool: toolguard's schema, validation and answers."""

from __future__ import annotations

import copy
from typing import Any, Final

from google.adk.tools.base_tool import BaseTool
from google.adk.tools.tool_context import ToolContext
from google.genai import types

from toolguard import Dispatcher
from toolguard.integrations.google_adk._calls import call_of, response, scope_of

__all__ = ["FRAMEWORK", "ToolguardTool"]

FRAMEWORK: Final = "google-adk"


class ToolguardTool(BaseTool):
    """A toolguard tool that ADK runs, with toolguard deciding every answer.

    Guarantees, for every call ADK makes:

    * the model sees toolguard's JSON Schema (``parameters_json_schema``) and
      toolguard validates the arguments: a bad call gets toolguard's message naming
      the argument, and the tool does not run;
    * failures are answered by the dispatcher's handler chain as ``{"error": text}``:
      a ``ToolError``'s message as it is, a hidden cause as toolguard's generic
      message with its error id (the cause logged once); only control flow and
      ``ToolCallFailed`` (a handler chose to fail the invocation) escape;
    * parameters annotated with ADK's ``ToolContext`` get the call's context, never
      a model argument; ``InjectedCallId`` gets the function call id; ``Injected``
      gets the session state (``tool_context.state``);
    * the call runs in the toolguard session of the ADK session (:func:`session_id`),
      as one step with the other calls of its model message; a sync tool runs on the
      dispatcher's thread pool, off the event loop;
    * on a ``return_direct`` answer it sets ``tool_context.actions.skip_summarization``.
    """

    def __init__(
        self,
        *,
        dispatcher: Dispatcher,
        name: str,
        is_long_running: bool = False,
        custom_metadata: dict[str, Any] | None = None,
    ) -> None:
        guarded_tool = dispatcher.tools[name]
        injected = guarded_tool.injected_by(FRAMEWORK, call_id=True, context=True)
        super().__init__(
            name=name,
            description=guarded_tool.description,
            is_long_running=is_long_running,
            custom_metadata=custom_metadata,
        )
        self._guarding = dispatcher
        self._context_parameters = tuple(injected)
        self._offload = not guarded_tool.spec.is_async

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._guarding

    # ADK's own hook for a BaseTool subclass to declare itself (private-named; ADK's
    # docs and its own tools override it, no public one exists). If a release stops
    # calling it, tests/integrations/test_google_adk.py's declaration test fails.
    def _get_declaration(self) -> types.FunctionDeclaration:
        return types.FunctionDeclaration(
            name=self.name,
            description=self.description,
            parameters_json_schema=copy.deepcopy(self._guarding.tools[self.name].parameters),
        )

    async def run_async(self, *, args: dict[str, Any], tool_context: ToolContext) -> Any:
        result = await scope_of(self._guarding, tool_context).adispatch(
            call_of(self.name, args, tool_context),
            context=tool_context.state,
            offload=self._offload,
            framework_values=dict.fromkeys(self._context_parameters, tool_context),
        )
        if result.return_direct:
            tool_context.actions.skip_summarization = True
        return response(result)
