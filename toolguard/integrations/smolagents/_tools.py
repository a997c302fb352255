"""A toolguard tool as a smolagents tool: toolguard's schema, validation and answers."""

from __future__ import annotations

from typing import Any, Final

from smolagents import Tool

from toolguard import Dispatcher, ToolCall, ToolError

__all__ = ["ToolguardSmolTool", "inputs_of"]

FRAMEWORK: Final = "smolagents"

# JSON Schema types smolagents declares as they are (its AUTHORIZED_TYPES less its own
# "image", "audio" and "any"); anything else is declared "any": toolguard validates.
_PLAIN: Final = frozenset({"string", "boolean", "integer", "number", "array", "object", "null"})


class ToolguardSmolTool(Tool):  # type: ignore[misc]  # smolagents is untyped
    """A toolguard tool that smolagents' agents run (see ``as_smolagents_tool``)."""

    skip_forward_signature_validation = True
    output_type = "any"

    def __init__(self, dispatcher: Dispatcher, name: str) -> None:
        guarded = dispatcher.tools[name]
        guarded.injected_by(FRAMEWORK)  # smolagents hands a tool only the model's arguments
        self.name = name
        self.description = guarded.description or name
        self.inputs = inputs_of(guarded.parameters)
        self._dispatcher = dispatcher
        super().__init__()

    @property
    def dispatcher(self) -> Dispatcher:
        """The dispatcher whose policy answers this tool's calls."""
        return self._dispatcher

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """One call, answered by toolguard: the tool's value on success (what it
        returned, as a ``CodeAgent``'s code reads it), a ``ToolError`` with toolguard's
        answer on failure (smolagents' own error path tells the model)."""
        arguments = {**dict(zip(self.inputs, args, strict=False)), **kwargs}
        result = self._dispatcher.scope().dispatch(ToolCall(name=self.name, arguments=arguments))
        if result.is_error:
            raise ToolError(result.text) from None  # the cause: logged, not chained
        if result.truncated or result.value is None:
            return result.text
        return result.value


def inputs_of(parameters: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """toolguard's JSON Schema as smolagents' ``inputs``: each property's type (a plain
    JSON type, else ``"any"``), its description, ``nullable`` where it may be left out."""
    required = set(parameters.get("required", ()))
    inputs: dict[str, dict[str, Any]] = {}
    for key, schema in dict(parameters.get("properties", {})).items():
        declared: dict[str, Any] = {
            "type": _type_of(schema),
            "description": str(schema.get("description") or key),
        }
        if key not in required:
            declared["nullable"] = True
        inputs[key] = declared
    return inputs


def _type_of(schema: dict[str, Any]) -> str | list[str]:
    kind = schema.get("type")
    if isinstance(kind, str) and kind in _PLAIN:
        return kind
    if isinstance(kind, list) and kind and all(k in _PLAIN for k in kind):
        return list(kind)
    options = [option.get("type") for option in schema.get("anyOf", ())]
    if options and all(isinstance(k, str) and k in _PLAIN for k in options):
        return options[0] if len(options) == 1 else options
    return "any"
