"""One plain LangChain tool call through toolguard's in-place pipeline.

Part of :mod:`toolguard.integrations.langchain`. :class:`Call` is the pipeline's
:class:`~toolguard.integrations.inplace.Adapter` for one ``ToolCallRequest``: it holds
only what is LangChain's.

* **The invocation** (:meth:`Call.invoke`/:meth:`Call.ainvoke`) is LangGraph's own
  handler, with a :class:`~._failures.Witness` set for the call. ``ToolNode`` answers
  every pydantic ``ValidationError`` out of ``tool.invoke`` itself ("Error invoking
  tool ..."), the model's bad arguments and a body's own failure alike: when the
  witness saw the tool raise one, that answer is taken back and the exception goes to
  the pipeline (bad arguments as toolguard's ``InvalidArguments``, a body's as a
  failure). A call of a tool ``ToolNode`` does not have, answered by ``ToolNode``,
  leaves the pipeline as :class:`Unregistered` for toolguard's unknown-tool answer.
* **What passes** (:meth:`Call.passes`): every exception the tool run did not report
  (LangChain's and LangGraph's wiring errors, another middleware's own), and the ones
  LangChain raised itself inside the run: they reach the developer as raised.
* **The tool's own error result** (:meth:`Call.own_error`): a ``ToolMessage`` with
  ``status="error"`` that something inside the middleware wrote (the tool's
  ``handle_tool_error``/``handle_validation_error``, the tool's own message, an inner
  middleware such as ``ToolErrorMiddleware``): the author's word, kept at the tool
  level of the chain unless an override answers otherwise.
* **A success** comes back as LangChain made it; toolguard changes the content only
  where it cut or mended it, and adds its ``return_direct`` only where it asks to stop.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final, Literal, Protocol

import pydantic
from langchain.agents.middleware import ToolCallRequest
from langchain_core.messages import ToolMessage
from langchain_core.tools import BaseTool, ToolException

# ToolNode answers bad arguments and unknown tools itself, inside the middleware's
# handler, with these texts; nothing public marks such a message as ToolNode's, so
# the texts (and ToolInvocationError, when it raises instead) are how they are told
# apart (pinned by tests/integrations/test_langchain_private.py).
from langgraph.prebuilt.tool_node import (
    INVALID_TOOL_NAME_ERROR_TEMPLATE,
    TOOL_INVOCATION_ERROR_TEMPLATE,
    ToolInvocationError,
)
from langgraph.types import Command

from toolguard import ControlFlow, Scope, ToolCall, ToolError, ToolPolicy, ToolResult
from toolguard.errors import is_control_flow
from toolguard.integrations.inplace import Adapter
from toolguard.integrations.langchain._failures import WITNESS, Witness, place, visible
from toolguard.integrations.langchain._messages import (
    as_toolguard_content,
    decided,
    message_content,
    tool_message,
)


class Guard(Protocol):
    """What a call asks of its middleware (``ToolguardMiddleware``)."""

    tool_exceptions: Literal["visible", "hidden"]

    def unshaped(self, tool: str) -> None:
        """Warn once that ``max_result_chars`` could not cut ``tool``'s content."""


__all__ = ["Call", "Guard", "Outcome", "Unregistered"]

Outcome = ToolMessage | Command[Any]


class Unregistered(ControlFlow):
    """``ToolNode`` has no tool by the call's name (and nothing inside supplied one):
    toolguard's unknown-tool answer, outside the pipeline (control flow, so that
    nothing retries it)."""


def _keep_own(error: Exception, context: object) -> str | None:
    """The tool level for a tool's own error result: its text, as written."""
    text = getattr(error, "message_for_model", None)
    return text() if callable(text) else None


_KEEP: Final = ToolPolicy(on_error=_keep_own)
_INVOKING: Final = TOOL_INVOCATION_ERROR_TEMPLATE.partition("{tool_kwargs}")[0]


class Call(Adapter[Outcome]):
    """The pipeline's adapter for one plain LangChain tool call (see the module)."""

    __slots__ = ("call", "guard", "own", "request", "scope", "shown", "witness")

    def __init__(
        self, guard: Guard, request: ToolCallRequest, call: ToolCall, scope: Scope
    ) -> None:
        self.guard = guard
        self.request = request
        self.call = call
        self.scope = scope
        self.witness = Witness(str(call.id))
        self.own = False  # the outcome is the tool's own error result
        self.shown: object = None  # what the model reads of a success, as toolguard has it

    # --- the invocation -------------------------------------------------------------------

    def invoke(self, handler: Callable[[ToolCallRequest], Outcome]) -> Callable[[], Outcome]:
        """LangGraph's handler for this call, with the witness set (see the module)."""

        def invoke() -> Outcome:
            token = WITNESS.set(self.witness)
            error: Exception | None
            try:
                outcome = handler(self.request)
            except Exception as failed:  # noqa: BLE001 - each is raised again, or the tool's
                error = self._traced(failed)
            else:
                error = self._answered(outcome)
            finally:
                WITNESS.reset(token)
            if error is None:
                return outcome
            raise error  # outside the except: the tool's exception keeps its own context

        return invoke

    def ainvoke(
        self, handler: Callable[[ToolCallRequest], Awaitable[Outcome]]
    ) -> Callable[[], Awaitable[Outcome]]:
        """Async :meth:`invoke`."""

        async def invoke() -> Outcome:
            token = WITNESS.set(self.witness)
            error: Exception | None
            try:
                outcome = await handler(self.request)
            except Exception as failed:  # noqa: BLE001 - as above
                error = self._traced(failed)
            else:
                error = self._answered(outcome)
            finally:
                WITNESS.reset(token)
            if error is None:
                return outcome
            raise error

        return invoke

    def _traced(self, error: Exception) -> Exception:
        """What the pipeline is given of an exception out of the handler: the tool's own
        exception where LangGraph wrapped it (``ToolInvocationError``, with
        ``handle_tool_errors=False``) or tripped over it (its ``is_invalid_resume``
        reading an attribute that raises); else ``error`` itself."""
        if isinstance(error, ToolInvocationError) and self.witness.saw(error.source):
            return self._classified(error.source)
        raised = self.witness.error
        if (
            isinstance(raised, Exception)
            and error is not raised
            and error.__context__ is raised
            and not is_control_flow(error)
            and place(raised) == "body"
        ):
            return raised
        return error

    def _answered(self, outcome: Outcome) -> Exception | None:
        """The exception behind ``ToolNode``'s own answer, when ``outcome`` is one
        toolguard answers instead; else ``None``."""
        if not isinstance(outcome, ToolMessage) or outcome.status != "error":
            return None
        content = outcome.content
        name = self.call.name
        if self.request.tool is None and content == self._invalid_tool_text():
            return Unregistered()
        error = self.witness.error
        if (
            isinstance(error, pydantic.ValidationError)
            and isinstance(content, str)
            and content.startswith(_INVOKING.replace("{tool_name}", name))
        ):
            return self._classified(error)
        return None

    def _invalid_tool_text(self) -> str:
        return INVALID_TOOL_NAME_ERROR_TEMPLATE.format(
            requested_tool=self.call.name, available_tools=", ".join(self.available())
        )

    def available(self) -> list[str]:
        """The names of the tools ``ToolNode`` has (``ToolRuntime.tools``)."""
        tools = getattr(self.request.runtime, "tools", None) or ()
        return [tool.name for tool in tools if isinstance(tool, BaseTool)]

    def _classified(self, error: Exception) -> Exception:
        """A bad-arguments ``ValidationError`` as toolguard's ``InvalidArguments`` (not
        retried); anything else as it is."""
        if not isinstance(error, pydantic.ValidationError) or place(error) != "arguments":
            return error
        tool = self.request.tool
        if tool is None:
            return error
        schema, injected = _schemas(tool)
        if any(detail["loc"][:1] and detail["loc"][0] in injected for detail in error.errors()):
            return error  # about what LangGraph injects: the application's, hidden
        return self.scope.invalid_arguments(self.call, error, schema)

    # --- the pipeline's questions -----------------------------------------------------------

    def answer(self, call: ToolCall, result: ToolResult) -> Outcome:
        return tool_message(result)

    def passes(self, error: Exception) -> bool:
        if isinstance(error, ToolError):  # toolguard's own (a timeout, bad arguments)
            return False
        if not self.witness.saw(error):
            return True  # not the tool's: LangChain's, LangGraph's, another middleware's
        found = place(error)
        return found == "langchain" or (
            found == "arguments" and not isinstance(error, pydantic.ValidationError)
        )

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        if isinstance(error, ToolException) and self.guard.tool_exceptions == "visible":
            return visible(error)
        return error

    def tool_setting(self, call: ToolCall) -> ToolPolicy | None:
        return _KEEP if self.own else None

    def own_error(self, outcome: Outcome) -> str | None:
        if isinstance(outcome, ToolMessage) and outcome.status == "error":
            self.own = True
            return outcome.text
        return None

    def seen(self, outcome: Outcome) -> object:
        if not isinstance(outcome, ToolMessage):
            return ""  # a Command: LangGraph applies it; a success for the breaker
        content = as_toolguard_content(outcome.content)
        self.shown = content
        return outcome.text if content is None else content

    def succeeded(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        if not isinstance(outcome, ToolMessage):
            return outcome
        shown = self.shown
        if shown is None:  # blocks toolguard has no form for: sent as written
            if result.truncated:
                self.guard.unshaped(call.name)
        elif result.content is not shown and result.content != shown:  # cut or mended
            outcome = outcome.model_copy(update={"content": message_content(result.content)})
        return decided(outcome, result.return_direct)

    def kept(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        assert isinstance(outcome, ToolMessage)  # own_error() said so
        return decided(outcome, result.return_direct)


def _schemas(tool: BaseTool) -> tuple[Mapping[str, Any], frozenset[str]]:
    """The JSON Schema the model is shown and the names LangGraph injects (read only
    for a call with bad arguments)."""
    model_schema = tool.tool_call_schema
    full = tool.args_schema
    try:
        if not (isinstance(model_schema, type) and issubclass(model_schema, pydantic.BaseModel)):
            return (
                (model_schema, frozenset()) if isinstance(model_schema, dict) else ({}, frozenset())
            )
        parameters = model_schema.model_json_schema()
        injected: frozenset[str] = frozenset()
        if isinstance(full, type) and issubclass(full, pydantic.BaseModel):
            injected = frozenset(full.model_fields) - frozenset(model_schema.model_fields)
        return parameters, injected
    except Exception:  # noqa: BLE001 - a schema LangChain cannot render: no argument list
        return {}, frozenset()
