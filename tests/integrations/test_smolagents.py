"""The smolagents integration, driven through smolagents' own agents.

The model is a smolagents ``Model`` subclass playing a script (smolagents' documented
way to bring a model, as its own tests fake one): each step is a list of tool calls
(a ``ToolCallingAgent``) or a code snippet (a ``CodeAgent``), and every list of
messages it is sent is recorded. The agents, their memory, the local Python executor
and the tools' own ``__call__`` are smolagents'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from smolagents import CodeAgent, Model, ToolCallingAgent, tool
from smolagents import Tool as SmolTool
from smolagents.memory import ActionStep
from smolagents.models import (
    ChatMessage,
    ChatMessageToolCall,
    ChatMessageToolCallFunction,
    MessageRole,
)
from smolagents.monitoring import LogLevel
from structlog.testing import capture_logs

from toolguard import Dispatcher, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.smolagents import (
    GuardedTool,
    as_smolagents_tool,
    as_smolagents_tools,
    guard,
)

from ._served import SECRET, search

Step = str | Sequence[tuple[str, dict[str, Any]]]


class ScriptedModel(Model):  # type: ignore[misc]  # smolagents is untyped
    """A smolagents ``Model`` playing ``steps``: a str is the assistant's text (a
    ``CodeAgent``'s code), a list is one message of tool calls (ids ``c0``, ``c1``...)."""

    def __init__(self, steps: Sequence[Step]) -> None:
        super().__init__(model_id="scripted")
        self.steps = list(steps)
        self.seen: list[list[ChatMessage]] = []

    def generate(self, messages: list[ChatMessage], *args: Any, **kwargs: Any) -> ChatMessage:
        self.seen.append(list(messages))
        step = self.steps.pop(0)
        if isinstance(step, str):
            return ChatMessage(role=MessageRole.ASSISTANT, content=step)
        calls = [
            ChatMessageToolCall(
                id=f"c{i}",
                type="function",
                function=ChatMessageToolCallFunction(name=name, arguments=arguments),
            )
            for i, (name, arguments) in enumerate(step)
        ]
        return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=calls)

    def last_text(self) -> str:
        """Everything the model was sent last, as text."""
        return "\n".join(str(message.content) for message in self.seen[-1])


def calling(tools: list[Any], steps: Sequence[Step]) -> tuple[ToolCallingAgent, ScriptedModel]:
    model = ScriptedModel([*steps, [("final_answer", {"answer": "done"})]])
    return ToolCallingAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF), model


def coding(tools: list[Any], code: str) -> tuple[CodeAgent, ScriptedModel]:
    steps = [f"<code>\n{code}\n</code>", "<code>\nfinal_answer('done')\n</code>"]
    model = ScriptedModel(steps)
    return CodeAgent(tools=tools, model=model, verbosity_level=LogLevel.OFF), model


@tool  # type: ignore[untyped-decorator]  # smolagents is untyped
def lookup_order(number: int) -> str:
    """Look an order up.

    Args:
        number: The order's number.
    """
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


def errors(agent: Any) -> list[str]:
    return [str(s.error) for s in agent.memory.steps if isinstance(s, ActionStep) and s.error]


# --- what smolagents does by default (the docs' claim) ---------------------------------


def test_unguarded_smolagents_sends_the_exception_text_to_the_model() -> None:
    """If this fails, smolagents stopped leaking: update docs/integrations/smolagents.md."""
    agent, model = calling([lookup_order], [[("lookup_order", {"number": 7})]])
    assert agent.run("where is 7?") == "done"
    assert SECRET in model.last_text()
    assert "Error executing tool 'lookup_order'" in model.last_text()
    agent, model = coding([lookup_order], "print(lookup_order(number=7))")
    agent.run("where is 7?")
    assert SECRET in model.last_text() and "RuntimeError" in model.last_text()


# --- guard: the app's own tools, in place ---------------------------------------------


@pytest.mark.parametrize("make", [calling, coding])
def test_guarded_failures_are_answered_by_the_dispatcher(make: Any) -> None:
    tools = guard([lookup_order], Dispatcher([], external_tools=["lookup_order"]))
    script: Any = (
        [[("lookup_order", {"number": 7})]] if make is calling else "lookup_order(number=7)"
    )
    with capture_logs() as logs:
        agent, model = make(tools, script)
        assert agent.run("where is 7?") == "done"
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1 and hidden[0]["error_id"] in model.last_text()
    assert SECRET not in model.last_text() and "RuntimeError" not in model.last_text()
    (told,) = errors(agent)
    assert "ToolError: The tool 'lookup_order' failed" in told


@pytest.mark.parametrize("make", [calling, coding])
def test_a_tool_errors_message_and_a_success_reach_the_model_as_unguarded(make: Any) -> None:
    for number, text in ((42, "There is no order 42."), (1, "Order 1: shipped")):
        script: Any = (
            [[("lookup_order", {"number": number})]]
            if make is calling
            else f"print(lookup_order(number={number}))"
        )
        plain, _plain_model = make([lookup_order], script)
        guarded, guarded_model = make(guard([lookup_order]), script)
        plain.run("go")
        guarded.run("go")
        assert text in guarded_model.last_text()
        assert errors(guarded) == errors(plain)


class Counting(SmolTool):  # type: ignore[misc]  # smolagents is untyped
    name = "bump"
    description = "Count the calls."
    inputs: dict[str, Any] = {}
    output_type = "integer"

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.setups = 0

    def setup(self) -> None:
        self.setups += 1
        super().setup()

    def forward(self) -> int:
        self.calls += 1
        return self.calls


def test_the_tool_keeps_its_state_setup_and_value_in_a_code_agent() -> None:
    counting = Counting()
    (guarded,) = guard([counting])
    assert isinstance(guarded, GuardedTool) and guarded.guarded_tool is counting
    agent, model = coding([guarded], "a = bump()\nb = bump()\nprint(a + b)")
    agent.run("go")
    assert (counting.calls, counting.setups) == (2, 1)
    assert "3" in model.last_text()  # the ints themselves reached the code


def test_retries_apply_to_a_guarded_tool() -> None:
    attempts: list[int] = []

    @tool  # type: ignore[untyped-decorator]  # smolagents is untyped
    def flaky(query: str) -> str:
        """Fail once.

        Args:
            query: What.
        """
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    dispatcher = Dispatcher(
        [], external_tools=["flaky"], overrides={"flaky": ToolPolicy(retries=2)}
    )
    (guarded,) = guard([flaky], dispatcher)
    assert guarded(query="x") == "found x" and len(attempts) == 2


def test_return_direct_cannot_apply_and_is_refused() -> None:
    dispatcher = Dispatcher(
        [], external_tools=["lookup_order"], overrides={"*": ToolPolicy(return_direct=True)}
    )
    with pytest.raises(ToolDefinitionError, match="final_answer"):
        guard([lookup_order], dispatcher)


def test_plain_functions_become_smolagents_tools_and_guarded_ones_stay() -> None:
    def where(city: str) -> str:
        """Say where.

        Args:
            city: A city.
        """
        return f"in {city}"

    (guarded,) = guard([where])
    assert guarded.name == "where" and guarded(city="Oslo") == "in Oslo"
    assert guard([guarded]) == [guarded]
    with pytest.raises(TypeError, match="list of smolagents tools"):
        guard(lookup_order)  # one tool, not a list


# --- as_smolagents_tool: toolguard's own tools ------------------------------------------


def test_toolguard_tools_declare_their_schema_as_smolagents_inputs() -> None:
    made = as_smolagents_tool(search)
    assert made.name == "search" and made.description.startswith("Search the catalogue")
    assert made.inputs == {
        "query": {"type": "string", "description": "What to look for."},
        "limit": {"type": "integer", "description": "How many results.", "nullable": True},
    }


@pytest.mark.parametrize("make", [calling, coding])
def test_toolguard_tools_answer_in_both_agents(make: Any) -> None:
    tools = as_smolagents_tools(Dispatcher([search]))
    ok: Any = (
        [[("search", {"query": "hat", "limit": 2})]]
        if make is calling
        else "print(search(query='hat', limit=2)[1])"
    )
    agent, model = make(tools, ok)
    agent.run("go")
    assert "hat 1" in model.last_text() and not errors(agent)
    bad: Any = [[("search", {"query": "boom"})]] if make is calling else "search(query='boom')"
    with capture_logs() as logs:
        agent, model = make(tools, bad)
        agent.run("go")
    assert SECRET not in model.last_text()
    assert [e for e in logs if e["event"] == "tool_error_hidden"]


def test_toolguard_validates_a_code_agents_arguments() -> None:
    agent, _model = coding(
        as_smolagents_tools(Dispatcher([search])), "search(query='a', limit='x')"
    )
    agent.run("go")
    (told,) = errors(agent)
    assert "limit" in told and "ToolError" in told


def test_return_direct_on_a_toolguard_tool_is_refused() -> None:
    @guard_tool(return_direct=True)
    def finish(answer: str) -> str:
        """Finish.

        Args:
            answer: The answer.
        """
        return answer

    with pytest.raises(ToolDefinitionError, match="return_direct"):
        as_smolagents_tool(finish)
