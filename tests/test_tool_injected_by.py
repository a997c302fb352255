"""``Tool.injected_by``: the one refusal of injected parameters a framework cannot
supply, for every integration that runs toolguard tools in its framework."""

from __future__ import annotations

from typing import Annotated, Any

import pytest

from toolguard import Injected, InjectedCallId, tool
from toolguard.errors import ToolDefinitionError

# Frameworks' injection types as toolguard knows them: by qualified name.
RunContext = type("RunContext", (), {"__module__": "pydantic_ai._run_context"})
ToolContext = type("ToolContext", (), {"__module__": "strands.types.tools"})
Agent = type("Agent", (), {"__module__": "strands.agent.agent"})


@tool
def strands_tool(ctx: ToolContext, agent: Agent, x: int) -> int:  # type: ignore[valid-type]
    """Takes Strands' context and agent."""
    return x


@tool
def pydantic_tool(ctx: RunContext, x: int) -> int:  # type: ignore[valid-type]
    """Takes Pydantic AI's context."""
    return x


@tool
def wants_call_id(x: int, call_id: Annotated[str, InjectedCallId]) -> int:
    """Needs the call id."""
    return x


@tool
def wants_context(x: int, user: Annotated[str, Injected]) -> int:
    """Needs application context."""
    return x


def test_the_frameworks_own_parameters_come_back_by_name_with_their_kind() -> None:
    assert strands_tool.injected_by("strands") == {"ctx": "ToolContext", "agent": "Agent"}
    assert pydantic_tool.injected_by("pydantic-ai") == {"ctx": "RunContext"}


def test_another_frameworks_parameter_is_refused_naming_it_and_its_framework() -> None:
    with pytest.raises(ToolDefinitionError, match=r"'ctx'.*which crewai cannot supply"):
        pydantic_tool.injected_by("crewai")


@pytest.mark.parametrize(
    ("guarded", "parameter"), [(wants_call_id, "'call_id'"), (wants_context, "'user'")]
)
def test_call_ids_and_context_are_refused_unless_the_framework_hands_them_over(
    guarded: Any, parameter: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=parameter):
        guarded.injected_by("llama-index")
    assert guarded.injected_by("google-adk", call_id=True, context=True) == {}
