"""A toolguard tool's LangChain parameters: what ``ToolNode`` injects, and where.

Part of :mod:`toolguard.integrations.langchain`. A toolguard tool's parameters of
LangChain's injection types (``Annotated[..., InjectedState]``, ``InjectedStore``,
``InjectedToolCallId``, ``ToolRuntime``, ``RunnableConfig``) are out of the schema the
model sees (the core leaves them out). The LangChain tool declares them, with their
annotations as written, in its *input* schema (``get_input_schema``), which is where
LangGraph's ``ToolNode`` looks for what to inject, so ``ToolNode`` supplies them
exactly as for one of LangChain's own tools, and strips whatever the model sent under
those names. The call id comes with the call, the ``RunnableConfig`` with the run. The
tool also asks ``ToolNode`` for the ``ToolRuntime`` (under :data:`RUNTIME` unless it
takes one itself): its state names the model step of the call, and its config the thread.
"""

from __future__ import annotations

import inspect
import typing
import warnings
from typing import Any, Final

import attrs
import pydantic
from langchain_core.tools import InjectedToolCallId
from langgraph.prebuilt import ToolRuntime

from toolguard import BoundTool, Tool, ToolDefinitionError

__all__ = ["RUNTIME", "Injected", "Injection", "injection"]

RUNTIME: Final = "toolguard_runtime"
"""The input-schema field under which ``ToolNode`` hands a toolguard tool the
``ToolRuntime``, when the tool does not take one itself."""


# --- LangChain's injection ----------------------------------------------------------------


def _annotated_with(annotation: Any, marker: type) -> bool:
    if typing.get_origin(annotation) is not typing.Annotated:
        return False
    return any(
        meta is marker
        or isinstance(meta, marker)
        or (isinstance(meta, type) and issubclass(meta, marker))
        for meta in annotation.__metadata__
    )


@attrs.frozen
class Injection:
    """How LangChain supplies one toolguard tool's framework parameters."""

    from_graph: tuple[str, ...]  # ToolNode fills these: state, store, runtime, ...
    call_id: tuple[str, ...]  # the tool call's id
    config: tuple[str, ...]  # the run's RunnableConfig
    runtime: str  # where ToolNode puts the ToolRuntime
    schema: type[pydantic.BaseModel]

    @property
    def filled(self) -> frozenset[str]:
        """Every key ToolNode adds to the model's arguments."""
        return frozenset((*self.from_graph, *self.call_id, self.runtime))


def injection(tool: Tool[..., Any] | BoundTool[..., Any]) -> Injection:
    """Read a toolguard tool's LangChain parameters; refuse another framework's.

    A parameter another framework supplies (Pydantic AI's ``RunContext``...) is
    refused at conversion unless it has a default (LangChain never supplies it).
    """
    from_graph: list[str] = []
    call_id: list[str] = []
    config: list[str] = []
    runtime: str | None = None
    fields: dict[str, Any] = {}
    for parameter in tool.spec.arguments.framework:
        if parameter.framework != "langchain":
            if parameter.has_default:
                continue
            raise ToolDefinitionError(
                f"tool {tool.name!r} takes {parameter.framework}'s {parameter.kind} "
                f"(parameter {parameter.name!r}), which LangChain cannot supply; run it "
                f"through toolguard.integrations for {parameter.framework}, or give the "
                "parameter a default"
            )
        annotation = parameter.annotation
        default = None if parameter.has_default else ...
        if parameter.kind == "RunnableConfig":
            config.append(parameter.name)
            continue
        if _annotated_with(annotation, InjectedToolCallId):
            call_id.append(parameter.name)
        else:
            from_graph.append(parameter.name)
            # ToolRuntime's marker class is LangChain's private _DirectlyInjectedToolArg:
            # no public name tells a ToolRuntime parameter from other injected ones
            # (pinned by tests/integrations/test_langchain_private.py)
            if runtime is None and parameter.marker.endswith("._DirectlyInjectedToolArg"):
                runtime = parameter.name
        fields[parameter.name] = (annotation, default)
    if runtime is None:
        runtime = RUNTIME
        fields[RUNTIME] = (ToolRuntime, None)
    return Injection(
        tuple(from_graph), tuple(call_id), tuple(config), runtime, _schema(tool.name, fields)
    )


def _schema(name: str, fields: dict[str, tuple[Any, Any]]) -> type[pydantic.BaseModel]:
    """A model of the injected parameters, for ``ToolNode`` to read, never to validate.

    Its validator is never built (a ``ToolRuntime`` or a store need not have a pydantic
    schema); ``ToolNode`` reads the annotations from the signature, given here.
    """
    make_model: Any = pydantic.create_model
    with warnings.catch_warnings():  # a field that shadows a BaseModel attribute is fine here
        warnings.simplefilter("ignore")
        schema: type[pydantic.BaseModel] = make_model(
            f"{name}_injected",
            __config__=pydantic.ConfigDict(arbitrary_types_allowed=True, defer_build=True),
            **fields,
        )
    parameters = [
        inspect.Parameter(
            field,
            inspect.Parameter.KEYWORD_ONLY,
            annotation=annotation,
            default=inspect.Parameter.empty if default is ... else default,
        )
        for field, (annotation, default) in fields.items()
    ]
    schema.__signature__ = inspect.Signature(parameters, return_annotation=None)
    return schema


@attrs.frozen
class Injected:
    """What one call brought for the framework parameters, and the ``ToolRuntime``."""

    values: dict[str, Any]
    runtime: ToolRuntime[Any, Any] | None
