"""A toolguard tool as a ``dspy.Tool``: toolguard's schema, validation and answers."""

from __future__ import annotations

from typing import Any, Final

import dspy  # type: ignore[import-untyped]  # dspy ships no type information
from dspy.utils.callback import with_callbacks  # type: ignore[import-untyped]  # dspy is untyped

from toolguard import Dispatcher, ToolCall, ToolError, ToolResult

__all__ = ["ToolguardDspyTool", "args_of"]

FRAMEWORK: Final = "dspy"


class _Dispatch:
    """The ``func`` of a :class:`ToolguardDspyTool`: one call, answered by toolguard."""

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        self.dispatcher = dispatcher
        self.name = name

    def __deepcopy__(self, memo: dict[int, Any]) -> _Dispatch:
        return self  # a copy of the program (DSPy's optimizers) serves the same dispatcher

    def __call__(self, **kwargs: Any) -> Any:
        call = ToolCall(name=self.name, arguments=kwargs)
        return _value(self.dispatcher.scope().dispatch(call))

    async def acall(self, **kwargs: Any) -> Any:
        call = ToolCall(name=self.name, arguments=kwargs)
        return _value(await self.dispatcher.scope().adispatch(call))


def _value(result: ToolResult) -> Any:
    """The tool's value on success (its text, where the content was cut); toolguard's
    answer raised as a ``ToolError`` on failure, for ReAct's own error path."""
    if result.is_error:
        raise ToolError(result.text) from None  # the cause: logged, not chained
    if result.truncated or result.value is None:
        return result.text
    return result.value


class ToolguardDspyTool(dspy.Tool):  # type: ignore[misc]  # dspy is untyped
    """A toolguard tool that ``dspy.ReAct`` runs (see ``as_dspy_tool``).

    DSPy's own check of the model's arguments is toolguard's here: a call is handed
    to the dispatcher as the model sent it, so a bad argument gets toolguard's answer
    naming it, and the tool does not run. DSPy's callbacks see every call as for any
    ``dspy.Tool``.
    """

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK)  # DSPy hands a tool only the model's arguments
        super().__init__(
            func=_Dispatch(dispatcher, name),
            name=name,
            desc=guarded.description or name,
            args=args_of(guarded.parameters),
            arg_types={},
        )

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        dispatcher: Dispatcher = self.func.dispatcher
        return dispatcher

    @with_callbacks  # type: ignore[untyped-decorator]  # dspy is untyped
    def __call__(self, **kwargs: Any) -> Any:
        return self.func(**kwargs)

    @with_callbacks  # type: ignore[untyped-decorator]  # dspy is untyped
    async def acall(self, **kwargs: Any) -> Any:
        return await self.func.acall(**kwargs)


def args_of(parameters: dict[str, Any]) -> dict[str, Any]:
    """toolguard's JSON Schema as DSPy's ``args``: one schema per argument, its
    ``$ref``s to the schema's ``$defs`` written out (DSPy shows each argument alone)."""
    defs = dict(parameters.get("$defs", {}))

    def inline(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/$defs/"):
                key = ref.removeprefix("#/$defs/")
                if key in defs and key not in seen:
                    rest = {k: v for k, v in node.items() if k != "$ref"}
                    return {**inline(defs[key], seen | {key}), **inline(rest, seen)}
            return {k: inline(v, seen) for k, v in node.items()}
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        return node

    properties: dict[str, Any] = inline(dict(parameters.get("properties", {})), frozenset())
    return properties
