"""@tool: the function stays a normal function; bad declarations fail at import time."""

from __future__ import annotations

import asyncio
import inspect
import json
import pickle
from pathlib import Path
from typing import Any

import pytest

from toolguard import (
    PolicyFileError,
    Tool,
    ToolCall,
    ToolDefinitionError,
    ToolPolicy,
    ToolResult,
    load_policy,
    tool,
)
from toolguard.handlers import fail
from toolguard.policy._values import ON_SUCCESS, UNSET


@tool
def greet(name: str, punctuation: str = "!") -> str:
    """Greet someone by name.

    A second paragraph that is not part of the description.

    Args:
        name: Who to greet.
        punctuation: How to end.
    """
    return f"Hello, {name}{punctuation}"


@tool(name="divide_numbers", description="Divide a by b.", on_error="Cannot divide.")
def divide(a: float, b: float) -> float:
    return a / b


@tool
async def fetch(url: str) -> str:
    await asyncio.sleep(0)
    return url.upper()


def test_calling_the_function_directly_is_unchanged() -> None:
    assert greet("Ada") == "Hello, Ada!"
    assert greet(name="Ada", punctuation="?") == "Hello, Ada?"
    with pytest.raises(ZeroDivisionError):
        divide(1, 0)
    assert asyncio.run(fetch("x")) == "X"


def test_signature_docs_and_introspection_are_preserved() -> None:
    assert str(inspect.signature(greet)) == "(name: 'str', punctuation: 'str' = '!') -> 'str'"
    assert greet.__name__ == "greet"
    assert greet.__doc__ is not None and greet.__doc__.startswith("Greet someone")
    assert greet.__module__ == __name__
    assert inspect.iscoroutinefunction(fetch)
    assert not inspect.iscoroutinefunction(greet)
    assert isinstance(greet, Tool)
    assert callable(greet)


def test_name_and_description_default_to_the_function_and_first_paragraph() -> None:
    assert greet.name == "greet"
    assert greet.description == "Greet someone by name."
    assert divide.name == "divide_numbers"
    assert divide.description == "Divide a by b."


def test_parameters_are_the_json_schema_with_docstring_descriptions() -> None:
    assert greet.parameters == {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Who to greet."},
            "punctuation": {"type": "string", "description": "How to end.", "default": "!"},
        },
        "required": ["name"],
        "additionalProperties": False,
    }


def test_the_policy_is_a_frozen_value_with_unset_fields() -> None:
    assert greet.policy == ToolPolicy()
    assert greet.policy.on_error is UNSET
    assert divide.policy.on_error is not UNSET
    with pytest.raises(AttributeError):
        greet.policy.on_error = fail  # type: ignore[misc]


def test_return_direct_is_normalised_at_decoration() -> None:
    @tool(return_direct=True)
    def stop() -> str:
        return "bye"

    assert stop.policy.return_direct is ON_SUCCESS


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"on_error": 42}, r"tool 'bad': on_error=42: 42 is not a handler; expected a handler"),
        (
            {"return_direct": "maybe"},
            r"tool 'bad'.*return_direct='maybe' is not allowed; allowed: False",
        ),
        ({"on_eror": "x"}, r"tool 'bad': unknown option 'on_eror' \(did you mean 'on_error'\?\)"),
        ({"log_level": "loud"}, r"tool 'bad'.*log_level='loud' is not allowed; allowed: debug"),
        ({"redact": "password"}, r"tool 'bad'.*redact='password' is not allowed"),
    ],
)
def test_a_bad_policy_fails_at_decoration_naming_the_tool_and_allowed_values(
    options: dict[str, Any], message: str
) -> None:
    def bad() -> None:
        pass

    with pytest.raises(ToolDefinitionError, match=message):
        tool(**options)(bad)


@pytest.mark.parametrize(
    "name", ["", "has space", "x" * 65, "dots.not.allowed", "trailing_newline\n", "é"]
)
def test_tool_names_must_suit_every_provider(name: str) -> None:
    with pytest.raises(ToolDefinitionError, match="is not allowed; providers accept"):
        tool(name=name)(lambda: None)


@pytest.mark.parametrize("name", ["trailing_newline\n", "x" * 65, "a.b", "x" * 64])
def test_a_policy_file_and_the_decorator_refuse_the_same_tool_names(
    name: str, tmp_path: Path
) -> None:
    """One rule for a tool name: a name @tool refuses is no tool name in a policy file,
    and a name it accepts is one."""
    path = tmp_path / "agent.toml"
    path.write_text(
        f'version = 1\n[tools.{json.dumps(name)}]\non_error = "fail"\n', encoding="utf-8"
    )
    try:
        tool(name=name)(lambda: None)
    except ToolDefinitionError:
        with pytest.raises(PolicyFileError, match="is not a tool name"):
            load_policy(path)
    else:
        assert name in load_policy(path).overrides


def test_varargs_and_generators_are_refused_at_decoration() -> None:
    def star(*items: int) -> int:
        return sum(items)

    def gen() -> Any:
        yield 1

    with pytest.raises(ToolDefinitionError, match=r"\*items is not supported"):
        tool(star)
    with pytest.raises(ToolDefinitionError, match="generators are not supported"):
        tool(gen)


def test_unresolvable_annotations_are_a_clear_error() -> None:
    def f(x: NotDefinedAnywhere) -> None:  # type: ignore[name-defined]  # noqa: F821
        pass

    with pytest.raises(ToolDefinitionError, match="tool 'f': cannot read its signature"):
        tool(f)


def test_invoke_is_one_guarded_call_under_the_global_defaults() -> None:
    assert greet.invoke({"name": "Ada"}) == ToolResult(
        call_id=None, name="greet", content="Hello, Ada!"
    )
    assert greet.invoke('{"name": "Bo"}').content == "Hello, Bo!"
    assert divide.invoke({"a": 1, "b": 0}).content == "Cannot divide."
    call = ToolCall(name="greet", arguments={"name": "Cy"}, id="c1")
    assert greet.invoke(call).call_id == "c1"
    assert asyncio.run(fetch.ainvoke({"url": "a"})).content == "A"


def test_invoke_on_a_bound_method_uses_its_instance() -> None:
    class Counter:
        def __init__(self, start: int) -> None:
            self.value = start

        @tool
        def bump(self, by: int) -> int:
            self.value += by
            return self.value

    first, second = Counter(0), Counter(100)
    assert first.bump.invoke({"by": 1}).content == "1"
    assert second.bump.invoke({"by": 1}).content == "101"
    assert first.bump.name == "bump"


def test_tools_are_importable_by_qualified_name_like_functions() -> None:
    # pickling a function pickles a reference to it by its qualified name
    assert pickle.loads(pickle.dumps(greet)) is greet
