"""Strict-mode schemas (OpenAI ``strict: true``) derived from a tool's JSON Schema.

Strict mode makes the model's output follow the schema exactly, and asks for a
subset of JSON Schema in return:

* every object lists its keys (``additionalProperties: false``, ``$defs`` included),
* every key is required: an argument with a default becomes *nullable* instead, and
  the tool's validator reads ``null`` as "use the default"; a field with a default
  inside a nested model stays required with its own type (the model sends a value),
* no ``$ref`` with sibling keywords (the reference is inlined), no ``oneOf`` (it
  becomes ``anyOf``), no ``null`` defaults.

What cannot be said strictly (``**kwargs``, ``dict[str, X]``, ``Any``, a bare
``dict``) is a :class:`~toolguard.ToolDefinitionError` naming the tool and argument.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, Final

from toolguard.errors import ToolDefinitionError

__all__ = ["strict_schema"]

_MISSING: Final = object()
_KINDS: Final = ("type", "anyOf", "$ref", "enum", "const")
_OUTER: Final[tuple[str, ...]] = ("description", "default", "title")


def strict_schema(parameters: Mapping[str, Any], *, tool: str) -> dict[str, Any]:
    """A strict copy of ``parameters`` (a tool's JSON Schema); the input is unchanged.

    Raises :class:`~toolguard.ToolDefinitionError` when the schema cannot be strict.
    """
    schema = copy.deepcopy(dict(parameters))
    return _Strict(tool, schema).run()


class _Strict:
    def __init__(self, tool: str, root: dict[str, Any]) -> None:
        self.tool = tool
        self.root = root

    def run(self) -> dict[str, Any]:
        defs = self.root.get("$defs", {})
        for name, definition in defs.items():
            self.node(definition, name)
        self.object(self.root, "", top=True)
        self.prune_defs()
        return self.root

    def fail(self, where: str, why: str) -> ToolDefinitionError:
        return ToolDefinitionError(
            f"tool {self.tool!r} cannot be declared with strict=True: {where} {why}. "
            "Give it a type whose keys are all known (a TypedDict, dataclass or model), "
            "or declare the tool with strict=False."
        )

    def node(self, schema: Any, where: str) -> Any:
        if not isinstance(schema, dict):
            return schema
        ref = schema.get("$ref")
        if isinstance(ref, str) and len(schema) > 1:
            siblings = {key: value for key, value in schema.items() if key != "$ref"}
            schema.clear()
            schema.update({**copy.deepcopy(self.resolve(ref)), **siblings})
        if "oneOf" in schema:
            schema["anyOf"] = schema.pop("oneOf")
        schema.pop("discriminator", None)
        if schema.get("default", _MISSING) is None:
            del schema["default"]
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
            del schema["allOf"]
            schema.update({**all_of[0], **schema})
        for variant in schema.get("anyOf", ()):
            self.node(variant, where)
        if schema.get("type") == "object" or "properties" in schema:
            self.object(schema, where, top=False)
        items = schema.get("items")
        if isinstance(items, dict):
            self.node(items, f"{where}[]")
        for item in schema.get("prefixItems", ()):
            self.node(item, f"{where}[]")
        if not any(key in schema for key in _KINDS):
            raise self.fail(where, "accepts any value (it has no type)")
        return schema

    def object(self, schema: dict[str, Any], where: str, *, top: bool) -> None:
        extra = schema.get("additionalProperties", _MISSING)
        properties = schema.get("properties")
        if top and extra not in (_MISSING, False):
            raise self.fail("its **kwargs", "takes arguments that are not listed")
        if extra not in (_MISSING, False):
            raise self.fail(where, "is a mapping with open-ended keys")
        if not properties and extra is _MISSING:
            raise self.fail(where, "is an object whose keys are not listed")
        schema["additionalProperties"] = False
        properties = properties or {}
        schema["properties"] = properties
        required = set(schema.get("required", ()))
        for name, prop in properties.items():
            inner = f"argument {name!r}" if top else f"{where}.{name}"
            self.node(prop, inner)
            if top and name not in required:
                properties[name] = _nullable(prop)
        schema["required"] = list(properties)

    def resolve(self, ref: str) -> dict[str, Any]:
        prefix = "#/$defs/"
        definition = self.root.get("$defs", {}).get(ref[len(prefix) :])
        if not ref.startswith(prefix) or not isinstance(definition, dict):
            raise self.fail(f"the reference {ref!r}", "cannot be resolved")
        return definition

    def prune_defs(self) -> None:
        """Drop the ``$defs`` nothing refers to any more (inlined ones)."""
        defs = self.root.get("$defs")
        if not isinstance(defs, dict):
            return
        used: set[str] = set()
        pending = [value for key, value in self.root.items() if key != "$defs"]
        while pending:
            value = pending.pop()
            if isinstance(value, dict):
                ref = value.get("$ref")
                if isinstance(ref, str) and ref.startswith("#/$defs/"):
                    name = ref[len("#/$defs/") :]
                    if name not in used and name in defs:
                        used.add(name)
                        pending.append(defs[name])
                pending.extend(value.values())
            elif isinstance(value, list):
                pending.extend(value)
        for name in [name for name in defs if name not in used]:
            del defs[name]
        if not defs:
            del self.root["$defs"]


def _accepts_null(schema: Mapping[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if "const" in schema and schema["const"] is None:
        return True
    if None in schema.get("enum", ()):
        return True
    return any(isinstance(v, dict) and _accepts_null(v) for v in schema.get("anyOf", ()))


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` or ``null`` (``null`` is how a strict model leaves an argument out)."""
    if _accepts_null(schema):
        return schema
    outer = {key: schema.pop(key) for key in _OUTER if key in schema}
    return {"anyOf": [schema, {"type": "null"}], **outer}
