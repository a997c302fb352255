"""What every integration does the same way, written once."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict

from toolguard import BoundTool, Dispatcher, ReturnDirect, Scope, Tool, ToolCall, ToolResult
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.inplace import Adapter

__all__ = [
    "HookAdapter",
    "any_agent",
    "declared_schema",
    "guarded",
    "may_stop",
    "refuse_not_run",
    "refuse_return_direct",
    "the_dispatcher",
    "the_tools",
]

Outcome = TypeVar("Outcome")

_NOT_RUN: Final = ("retries", "timeout")  # settings toolguard applies only to tools it runs


def refuse_not_run(dispatcher: Dispatcher, name: str, *, framework: str, instead: str) -> None:
    """Settings that apply only to a tool toolguard runs, set for ``name`` (a tool
    ``framework`` runs itself), are refused, never ignored."""
    policy = dispatcher.scope().policy(name)
    set_here = [key for key in _NOT_RUN if getattr(policy, key) is not None]
    if set_here:
        raise ToolDefinitionError(
            f"{', '.join(set_here)} for {name!r} cannot apply: {framework} runs this tool, "
            f"not toolguard; {instead}"
        )


def may_stop(where: Dispatcher | Scope, name: str) -> bool:
    """Whether the policy for ``name`` (resolved now, at every level) may ask the agent
    loop to stop after the tool: ``return_direct`` set to anything but ``"never"``."""
    scope = where.scope() if isinstance(where, Dispatcher) else where
    stop = scope.policy(name).return_direct
    return isinstance(stop, ReturnDirect) and stop.mode != "never"


def refuse_return_direct(where: Dispatcher | Scope, name: str, *, why: str) -> None:
    """``return_direct`` set for ``name`` where the framework has no stop toolguard can
    set is refused (``ToolDefinitionError``: ``return_direct for 'name' <why>``), never
    ignored."""
    if may_stop(where, name):
        raise ToolDefinitionError(f"return_direct for {name!r} {why}")


def the_dispatcher(
    dispatcher: object, *, entry: str, optional: bool = False, instead: str | None = None
) -> Dispatcher:
    """``dispatcher`` checked at the entry point, not on the first call (``None``, where
    ``optional``: an empty one under the global defaults): anything but a toolguard
    ``Dispatcher`` (an agent, a list of tools) is a ``TypeError`` saying what ``entry``
    takes, and what to write ``instead`` (by default: how to build one)."""
    if dispatcher is None and optional:
        return Dispatcher([])
    if not isinstance(dispatcher, Dispatcher):
        raise TypeError(
            f"{entry} takes a toolguard Dispatcher, got {type(dispatcher).__name__}: "
            + (
                instead
                or "build one with Dispatcher([...]) (external_tools=[...] names the "
                "framework's own tools)"
            )
        )
    return dispatcher


def the_tools(
    tools: object,
    accepted: Callable[[object], bool],
    *,
    entry: str,
    what: str,
) -> list[Any]:
    """``tools`` as a list, checked at the entry point: a list (any iterable but a str,
    a mapping or one tool) whose every item ``accepted`` takes; else a ``TypeError``
    naming ``entry``, the item and ``what`` it takes."""
    if (
        accepted(tools)
        or isinstance(tools, str | bytes | Mapping)
        or not isinstance(tools, Iterable)
    ):
        raise TypeError(
            f"{entry} takes a list of {what}, got {type(tools).__name__}: "
            "pass the agent's tools as a list, [tool] for one"
        )
    listed = list(tools)
    for index, item in enumerate(listed):
        if not accepted(item):
            raise TypeError(
                f"{entry} takes a list of {what}; item {index} is "
                f"{type(item).__name__}: {item!r:.80}"
            )
    return listed


def guarded(
    tool: Tool[..., Any] | BoundTool[..., Any] | Callable[..., Any] | str,
    dispatcher: Dispatcher | None,
    *,
    adapter: str,
) -> tuple[Dispatcher, str]:
    """The dispatcher and tool name an ``as_*_tool(tool, dispatcher=...)`` adapter serves.

    Without a dispatcher, ``tool`` runs in a one-tool dispatcher under the global
    defaults and its own policy; with one, ``tool`` (or its name) must be one of that
    dispatcher's tools.
    """
    if dispatcher is None:
        if isinstance(tool, str):
            raise TypeError(f"{adapter}() takes a tool name only with dispatcher=...")
        dispatcher = Dispatcher([tool])
        return dispatcher, next(iter(dispatcher.tools))
    dispatcher = the_dispatcher(dispatcher, entry=f"{adapter}(dispatcher=...)")
    name = tool if isinstance(tool, str) else getattr(tool, "name", None) or tool.__name__
    if name not in dispatcher.tools:
        raise ToolDefinitionError(
            f"{name!r} is not one of this dispatcher's tools "
            f"({', '.join(dispatcher.tools) or 'none'}); add it to the Dispatcher"
        )
    return dispatcher, name


def declared_schema(name: str, parameters: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model that declares toolguard's JSON Schema as it is, for a framework
    that reads a tool's schema from ``model_json_schema()`` (CrewAI's ``args_schema``,
    LlamaIndex's ``fn_schema``). It declares no field and keeps every one it is given
    (``extra="allow"``), so a framework that validates with it (CrewAI's text tool
    calling: ``args_schema.model_validate(arguments).model_dump()``) hands the model's
    arguments on as they came: toolguard validates them."""
    schema = dict(parameters)

    class ToolguardArguments(BaseModel):
        model_config = ConfigDict(extra="allow")

        @classmethod
        def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
            return dict(schema)

    ToolguardArguments.__name__ = ToolguardArguments.__qualname__ = f"{name}_arguments"
    return ToolguardArguments


class HookAdapter(Adapter[Outcome]):
    """An adapter for the pipeline's step 4 alone (``aguard_result``), in a framework
    whose after-hook sees a call's outcome (Google ADK, Strands): a success and a kept
    own error come back as they were, and whether the decided result asks to stop is
    remembered in :attr:`stop` for the hook's round. A subclass writes
    :meth:`respond` (toolguard's answer in the framework's shape) and what it reads of
    an outcome (``own_error``, ``seen``)."""

    stop = False

    def respond(self, call: ToolCall, result: ToolResult) -> Outcome:
        raise NotImplementedError

    def answer(self, call: ToolCall, result: ToolResult) -> Outcome:
        self.stop = result.return_direct
        return self.respond(call, result)

    def succeeded(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        self.stop = result.return_direct
        return outcome

    def kept(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        self.stop = result.return_direct
        return outcome

    def stood(self, call: ToolCall, outcome: Outcome) -> Outcome:
        self.stop = False
        return outcome


@functools.cache
def any_agent() -> Dispatcher:
    """A tool-less dispatcher, made once: ``any_agent().round_stops(stops, mode=...)`` is
    the core's one rule for a round, for an integration's public helper that has no
    dispatcher at hand (``stop_requested(..., mode=...)``)."""
    return Dispatcher([])
