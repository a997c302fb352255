"""The Haystack integration, driven through Haystack's own ``Agent``.

The model is a chat generator written as a Haystack ``@component`` (Haystack's public
component protocol: ``run(messages, tools)`` returning ``{"replies": [...]}``) playing a
script: each step is a list of tool calls the assistant message carries (ids ``c0``,
``c1``...), or its text; every list of messages it is sent is recorded. The Agent, its
State, its tool execution (``Tool.invoke`` / ``invoke_async``, the tool results it
builds) and the tools are Haystack's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Annotated, Any

import pytest
from haystack import component
from haystack.components.agents import Agent
from haystack.components.agents.state import State
from haystack.dataclasses import ChatMessage, ToolCall
from haystack.tools import ComponentTool, Toolset, tool
from haystack.tools.errors import ToolInvocationError
from haystack.tools.tool import Tool
from structlog.testing import capture_logs

from toolguard import ControlFlow, Dispatcher, ToolCallFailed, ToolError, ToolPolicy, handlers
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.haystack import (
    GuardedComponentTool,
    GuardedTool,
    ToolguardHaystackTool,
    as_haystack_tool,
    as_haystack_tools,
    guard,
)

from ._served import SECRET, asearch, search

Step = str | Sequence[tuple[str, dict[str, Any]]]


@component
class ScriptedGenerator:
    """A chat generator playing ``steps`` (then ``"done"``): a str is the assistant's
    text, a list is one assistant message of tool calls."""

    def __init__(self, steps: Sequence[Step]) -> None:
        self.steps = list(steps)
        self.seen: list[list[ChatMessage]] = []

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], tools: Any = None) -> dict[str, Any]:
        self.seen.append(list(messages))
        step = self.steps.pop(0) if self.steps else "done"
        if isinstance(step, str):
            return {"replies": [ChatMessage.from_assistant(step)]}
        calls = [
            ToolCall(tool_name=name, arguments=arguments, id=f"c{i}")
            for i, (name, arguments) in enumerate(step)
        ]
        return {"replies": [ChatMessage.from_assistant(tool_calls=calls)]}

    def told(self) -> list[tuple[str, bool]]:
        """The tool results the model was sent last: ``(text, is_error)`` each."""
        return [
            (str(result.result), result.error)
            for message in self.seen[-1]
            for result in message.tool_call_results
        ]

    def last_text(self) -> str:
        return "\n".join(text for text, _ in self.told())


def agent(tools: Any, steps: Sequence[Step], **settings: Any) -> tuple[Agent, ScriptedGenerator]:
    generator = ScriptedGenerator(steps)
    return Agent(chat_generator=generator, tools=tools, **settings), generator


def ask(made: Agent, **inputs: Any) -> dict[str, Any]:
    result: dict[str, Any] = made.run(messages=[ChatMessage.from_user("go")], **inputs)
    return result


def aask(made: Agent, **inputs: Any) -> dict[str, Any]:
    result: dict[str, Any] = asyncio.run(
        made.run_async(messages=[ChatMessage.from_user("go")], **inputs)
    )
    return result


@tool
def lookup_order(number: Annotated[int, "The order's number."]) -> str:
    """Look an order up."""
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


async def _aorder(number: int) -> str:
    """Look an order up, asynchronously."""
    await asyncio.sleep(0)
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


alookup_order = Tool(
    name="alookup_order",
    description="Look an order up, asynchronously.",
    parameters={
        "type": "object",
        "properties": {"number": {"type": "integer"}},
        "required": ["number"],
    },
    async_function=_aorder,
)


def guarded_dispatcher(*names: str, **settings: Any) -> Dispatcher:
    return Dispatcher([], external_tools=list(names), **settings)


# --- what Haystack does by default (the docs' claim) ------------------------------------


def test_unguarded_haystack_sends_the_exception_text_and_arguments_to_the_model() -> None:
    """If this fails, Haystack stopped leaking: update docs/integrations/haystack.md."""
    made, model = agent([lookup_order], [[("lookup_order", {"number": 7})]])
    assert ask(made)["last_message"].text == "done"
    ((text, is_error),) = model.told()
    assert is_error and SECRET in text
    assert text.startswith("Failed to invoke Tool `lookup_order` with parameters {'number': 7}")


def test_unguarded_haystack_sends_what_a_tool_read_from_state_too() -> None:
    """The arguments in the leak include the values the Agent injected from its State."""

    def call_api(query: str, api_key: str) -> str:
        """Call the API."""
        raise ConnectionError("the API refused the call")

    api = Tool(
        name="call_api",
        description="Call the API.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}},
        function=call_api,
        inputs_from_state={"api_key": "api_key"},
    )
    schema = {"api_key": {"type": str}}
    made, model = agent([api], [[("call_api", {"query": "x"})]], state_schema=schema)
    ask(made, api_key="sk-live-secret")
    assert "sk-live-secret" in model.last_text()
    made, model = agent(guard([api]), [[("call_api", {"query": "x"})]], state_schema=schema)
    with capture_logs() as logs:
        ask(made, api_key="sk-live-secret")
    assert "sk-live-secret" not in model.last_text()
    (hidden,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert "sk-live-secret" not in repr(hidden["arguments"])  # what the model sent, only


# --- guard: the app's own tools, in place ---------------------------------------------


@pytest.mark.parametrize("run", [ask, aask])
def test_a_hidden_failure_is_answered_with_an_error_id_logged_once(run: Any) -> None:
    tools = guard([lookup_order], guarded_dispatcher("lookup_order"))
    made, model = agent(tools, [[("lookup_order", {"number": 7})]])
    with capture_logs() as logs:
        assert run(made)["last_message"].text == "done"
    ((text, is_error),) = model.told()
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1 and hidden[0]["error_id"] in text
    assert isinstance(hidden[0]["exc_info"], RuntimeError)
    assert is_error and text.startswith("The tool 'lookup_order' failed")
    assert SECRET not in text and "Failed to invoke" not in text


@pytest.mark.parametrize("run", [ask, aask])
def test_a_tool_errors_message_and_a_success_reach_the_model_as_written(run: Any) -> None:
    tools = guard([lookup_order])
    made, model = agent(
        tools, [[("lookup_order", {"number": 42}), ("lookup_order", {"number": 1})]]
    )
    run(made)
    assert model.told() == [
        ("There is no order 42. Ask the user to check the number.", True),
        ("Order 1: shipped", False),
    ]


@pytest.mark.parametrize("run", [ask, aask])
def test_an_async_tool_is_guarded_on_run_async(run: Any) -> None:
    tools = guard([alookup_order], guarded_dispatcher("alookup_order"))
    made, model = agent(
        tools, [[("alookup_order", {"number": 7}), ("alookup_order", {"number": 1})]]
    )
    if run is ask:
        # Haystack's own wiring error (an async-only tool on the sync run) passes as it is
        plain, plain_model = agent([alookup_order], [[("alookup_order", {"number": 1})]])
        ask(plain)
        ask(made)
        assert model.told()[1] == plain_model.told()[0]
        assert "has no sync `function`" in model.told()[1][0]
        return
    with capture_logs() as logs:
        aask(made)
    (hidden,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert model.told() == [
        (model.told()[0][0], True),
        ("Order 1: shipped", False),
    ]
    assert hidden["error_id"] in model.told()[0][0] and SECRET not in model.last_text()


def test_overrides_answer_by_the_tools_name() -> None:
    dispatcher = guarded_dispatcher(
        "lookup_order",
        overrides={"lookup_order": ToolPolicy(on_error="Orders are down; try later.")},
    )
    made, model = agent(guard([lookup_order], dispatcher), [[("lookup_order", {"number": 7})]])
    ask(made)
    assert model.told() == [("Orders are down; try later.", True)]


def test_bad_arguments_are_answered_by_toolguard_and_the_tool_does_not_run() -> None:
    runs: list[object] = []

    @tool
    def count(number: int) -> str:
        """Take a number."""
        runs.append(number)
        return f"got {number}"

    made, model = agent(guard([count]), [[("count", {"number": "many"}), ("count", {"nunber": 2})]])
    ask(made)
    (wrong_type, is_error), (unknown, also_error) = model.told()
    assert is_error and "'number'" in wrong_type and "many" in wrong_type
    assert also_error and "nunber" in unknown
    assert runs == []
    plain, plain_model = agent([count], [[("count", {"number": "many"})]])
    ask(plain)
    assert plain_model.told() == [("got many", False)] and runs == ["many"]  # Haystack's


def test_retries_apply_to_a_guarded_tool() -> None:
    attempts: list[int] = []

    @tool
    def flaky(query: str) -> str:
        """Fail once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    dispatcher = guarded_dispatcher("flaky", overrides={"flaky": ToolPolicy(retries=2)})
    made, model = agent(guard([flaky], dispatcher), [[("flaky", {"query": "x"})]])
    ask(made)
    assert model.told() == [("found x", False)] and len(attempts) == 2


def test_fail_raises_tool_call_failed_from_the_agent_with_the_cause() -> None:
    dispatcher = guarded_dispatcher(
        "lookup_order", overrides={"lookup_order": ToolPolicy(on_error=handlers.fail)}
    )
    made, _model = agent(guard([lookup_order], dispatcher), [[("lookup_order", {"number": 7})]])
    with pytest.raises(ToolCallFailed) as raised:
        ask(made)
    assert raised.value.tool == "lookup_order" and isinstance(raised.value.__cause__, RuntimeError)


class Handoff(ControlFlow):
    """The app's own signal: hand the conversation over."""


@pytest.mark.parametrize("run", [ask, aask])
def test_control_flow_passes_out_of_the_agent_untouched(run: Any) -> None:
    """Unguarded, Haystack turns the signal into an error result for the model; guarded,
    it is control flow: no handler sees it, it ends the run as raised."""

    @tool
    def escalate(reason: str) -> str:
        """Hand over to a human."""
        raise Handoff(reason)

    made, _model = agent(guard([escalate]), [[("escalate", {"reason": "angry"})]])
    with capture_logs() as logs, pytest.raises(Handoff, match="angry"):
        run(made)
    assert logs == []
    plain, plain_model = agent([escalate], [[("escalate", {"reason": "angry"})]])
    ask(plain)
    assert plain_model.told()[0][1] and "angry" in plain_model.told()[0][0]


def test_raise_on_tool_invocation_failure_raises_toolguards_answer() -> None:
    """The Agent's own setting still raises, with the answer the model would have read."""
    made, _model = agent(
        guard([lookup_order]),
        [[("lookup_order", {"number": 7})]],
        raise_on_tool_invocation_failure=True,
    )
    with pytest.raises(ToolInvocationError) as raised:
        ask(made)
    assert "error id" in str(raised.value) and SECRET not in str(raised.value)
    assert raised.value.__cause__ is None and raised.value.tool_name == "lookup_order"


def test_a_guarded_error_cancels_the_exit_condition_as_haystack_does() -> None:
    tools = guard([lookup_order])
    made, _model = agent(
        tools, [[("lookup_order", {"number": 7})]], exit_conditions=["lookup_order"]
    )
    result = ask(made)
    assert result["exit_reason"] == "text" and result["last_message"].text == "done"
    made, _model = agent(
        tools, [[("lookup_order", {"number": 1})]], exit_conditions=["lookup_order"]
    )
    assert ask(made)["exit_reason"] == "lookup_order"


def test_return_direct_cannot_apply_and_is_refused() -> None:
    dispatcher = guarded_dispatcher("lookup_order", overrides={"*": ToolPolicy(return_direct=True)})
    with pytest.raises(ToolDefinitionError, match="exit_conditions"):
        guard([lookup_order], dispatcher)


# --- the tool's own settings, state and life cycle ----------------------------------------


@component
class Bumper:
    """Count the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.warm_ups = 0

    def warm_up(self) -> None:
        self.warm_ups += 1

    @component.output_types(text=str)
    def run(self, step: int) -> dict[str, Any]:
        self.calls += step
        return {"text": f"call {self.calls}"}


@pytest.mark.parametrize("run", [ask, aask])
def test_a_component_tool_keeps_its_component_state_and_warm_up(run: Any) -> None:
    bumper = Bumper()
    bump = ComponentTool(component=bumper, name="bump", outputs_to_string={"source": "text"})
    (guarded,) = guard([bump])
    assert isinstance(guarded, GuardedComponentTool) and guarded.guarded_tool is bump
    assert guarded.tool_spec == bump.tool_spec
    made, model = agent([guarded], [[("bump", {"step": 2})], [("bump", {"step": 3})]])
    run(made)
    assert model.told() == [("call 2", False), ("call 5", False)]
    assert bumper.calls == 5 and bumper.warm_ups >= 1


def test_state_is_injected_and_outputs_reach_the_state_as_unguarded() -> None:
    def note(text: str, state: State) -> dict[str, Any]:
        """Note something."""
        seen = state.get("notes") or []
        return {"notes": [f"{text} after {len(seen)}"]}

    noting = Tool(
        name="note",
        description="Note something.",
        parameters={
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
        function=note,
        outputs_to_state={"notes": {"source": "notes"}},
    )
    schema = {"notes": {"type": list[str]}}
    steps: list[Step] = [[("note", {"text": "a"})], [("note", {"text": "b"})]]
    plain, _ = agent([noting], steps, state_schema=schema)
    guarded, _ = agent(guard([noting]), steps, state_schema=schema)
    assert ask(guarded)["notes"] == ask(plain)["notes"] == ["a after 0", "b after 1"]


def test_a_toolset_gives_its_tools_guarded() -> None:
    guarded = guard([Toolset([lookup_order, alookup_order])])
    assert [type(t) for t in guarded] == [GuardedTool, GuardedTool]
    assert [t.name for t in guarded] == ["lookup_order", "alookup_order"]


def test_a_guarded_tool_serialises_as_the_tool_it_guards() -> None:
    (guarded,) = guard([lookup_order])
    assert guarded.to_dict() == lookup_order.to_dict()


def test_guarded_tools_stay_as_they_are() -> None:
    guarded = guard([lookup_order])
    served = as_haystack_tools(Dispatcher([search]))
    assert guard([*guarded, *served]) == [*guarded, *served]


# --- bad input at the entry points -------------------------------------------------------


def test_entry_points_say_what_they_take() -> None:
    with pytest.raises(TypeError, match="list of Haystack tools"):
        guard(lookup_order)  # type: ignore[arg-type]  # one tool, not a list
    with pytest.raises(TypeError, match=r"item 0 is function"):
        guard([_aorder])  # type: ignore[list-item]  # a function: make it a Tool first
    made, _ = agent([lookup_order], [])
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher, got Agent"):
        guard([lookup_order], made)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher"):
        as_haystack_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only with dispatcher"):
        as_haystack_tool("search")
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_haystack_tool("missing", dispatcher=Dispatcher([search]))


# --- as_haystack_tool: toolguard's own tools ----------------------------------------------


def test_toolguard_tools_declare_their_schema_as_haystack_parameters() -> None:
    made = as_haystack_tool(search)
    assert isinstance(made, ToolguardHaystackTool) and made.name == "search"
    assert made.description.startswith("Search the catalogue")
    assert made.parameters == search.parameters


@pytest.mark.parametrize("run", [ask, aask])
def test_toolguard_tools_answer_in_the_agent(run: Any) -> None:
    tools = as_haystack_tools(Dispatcher([search, asearch]))
    made, model = agent(
        tools,
        [
            [
                ("search", {"query": "hat", "limit": 2}),
                ("asearch", {"query": "cap"}),
                ("search", {"query": "boom"}),
                ("search", {"query": "hat", "limit": "x"}),
            ]
        ],
    )
    with capture_logs() as logs:
        run(made)
    ok, async_ok, hidden, invalid = model.told()
    assert ok == ('["hat 0", "hat 1"]', False) and async_ok == ("found cap", False)
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert hidden[1] and event["error_id"] in hidden[0] and SECRET not in hidden[0]
    assert invalid[1] and "limit" in invalid[0]


def test_a_toolguard_tool_serialises_its_spec_and_refuses_to_load() -> None:
    made = as_haystack_tool(search)
    data = made.to_dict()
    assert data["data"] == {
        "name": "search",
        "description": made.description,
        "parameters": search.parameters,
    }
    with pytest.raises(TypeError, match="as_haystack_tool"):
        ToolguardHaystackTool.from_dict(data)


def test_return_direct_on_a_toolguard_tool_is_refused() -> None:
    @guard_tool(return_direct=True)
    def finish(answer: str) -> str:
        """Finish.

        Args:
            answer: The answer.
        """
        return answer

    with pytest.raises(ToolDefinitionError, match="return_direct"):
        as_haystack_tool(finish)
