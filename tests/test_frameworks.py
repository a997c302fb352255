"""A framework's own parameters in a toolguard tool: not the model's, the framework's.

These use the real injection types of the installed frameworks (their classes, not
stand-ins); how each integration supplies them is pinned in ``tests/integrations``.
"""

from __future__ import annotations

import inspect
import typing
from typing import Annotated, Any

import pytest
from agents import RunContextWrapper
from langchain_core.tools import InjectedToolCallId
from langgraph.prebuilt import InjectedState
from pydantic_ai import RunContext

from toolguard import Dispatcher, ToolCall, tool
from toolguard.schema._frameworks import framework_of


def plain(order: int, state: Annotated[dict[str, Any], InjectedState], note: str = "") -> str:
    """Look an order up.

    Args:
        order: The order number.
        state: The graph's state.
        note: A note.
    """
    return f"{order}:{state.get('user')}:{note}"


guarded = tool(plain)


def test_a_tool_answers_every_introspection_like_the_plain_function() -> None:
    for attribute in ("__annotations__", "__doc__", "__name__", "__qualname__", "__module__"):
        assert getattr(guarded, attribute) == getattr(plain, attribute), attribute
    assert typing.get_type_hints(guarded, include_extras=True) == typing.get_type_hints(
        plain, include_extras=True
    )
    assert inspect.signature(guarded) == inspect.signature(plain)
    assert guarded.__wrapped__ is plain


def test_a_frameworks_parameter_is_not_in_the_schema_and_the_model_cannot_send_it() -> None:
    assert set(guarded.parameters["properties"]) == {"order", "note"}
    [parameter] = guarded.spec.arguments.framework
    assert (parameter.name, parameter.framework) == ("state", "langchain")
    agent = Dispatcher([guarded])
    spoofed = agent.dispatch(
        ToolCall(name="plain", arguments={"order": 1, "state": {"user": "admin"}}),
        framework_values={"state": {"user": "ann"}},
    )
    assert spoofed.is_error and spoofed.error_kind == "arguments"
    assert "state" in spoofed.text and "cannot be sent" in spoofed.text


def test_the_framework_supplies_it_and_without_it_the_call_fails_naming_it(
    logs: list[dict[str, Any]],
) -> None:
    agent = Dispatcher([guarded])
    call = ToolCall(name="plain", arguments={"order": 7})
    assert agent.dispatch(call, framework_values={"state": {"user": "ann"}}).content == "7:ann:"
    missing = agent.dispatch(call)
    assert missing.is_error and missing.error_id is not None
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    message = str(event["exc_info"])
    assert "'state'" in message and "langchain" in message and "InjectedState" in message
    assert "pydantic" not in message.lower()


@pytest.mark.parametrize(
    ("annotation", "framework"),
    [
        (Annotated[str, InjectedToolCallId], "langchain"),
        (RunContextWrapper[Any], "openai-agents"),
        (RunContext[None], "pydantic-ai"),
        (RunContext[None] | None, "pydantic-ai"),
        (int, None),
        (Annotated[int, "a description"], None),
    ],
)
def test_injection_types_are_known_by_their_classes(annotation: Any, framework: str | None) -> None:
    found = framework_of(annotation)
    assert (found[0] if found else None) == framework
