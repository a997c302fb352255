"""The AG2 integration, driven through AG2's own ``Agent``.

The model is AG2's own offline test double, ``ag2.testing.TestConfig`` (a script of
turns: a ``ToolCallEvent`` is a call, a str the reply), wrapped in AG2's
``TrackingConfig``, which records the last event each model call was sent (the tool
results it read). ``raise_tool_errors=False`` makes it read a failed call as a real
provider does, instead of re-raising it. The agent, its tool executor, its tools'
hooks and its middleware chain are AG2's.
"""

from __future__ import annotations

import asyncio
import json
from typing import Annotated, Any

import pytest
from ag2 import Agent, Context
from ag2 import tool as ag2_tool
from ag2.events import (
    BaseEvent,
    TextInput,
    ToolCallEvent,
    ToolErrorEvent,
    ToolResultEvent,
    ToolResultsEvent,
)
from ag2.exceptions import HumanInputError
from ag2.middleware import ToolExecution, ToolResultType, approval_required
from ag2.testing import TestConfig, TrackingConfig
from structlog.testing import capture_logs

from toolguard import Breaker, Dispatcher, InjectedCallId, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.ag2 import (
    ToolguardAG2Tool,
    as_ag2_tool,
    as_ag2_tools,
    guard,
)

from ._served import SECRET, search


def call(name: str, call_id: str | None = None, **arguments: Any) -> ToolCallEvent:
    """One tool call of the model."""
    made = ToolCallEvent(name, arguments=json.dumps(arguments))
    if call_id is not None:
        made.id = call_id
    return made


def scripted(*turns: Any) -> TrackingConfig:
    """AG2's test model playing ``turns``, then ``"done"``; it reads failed calls as a
    provider does (``raise_tool_errors=False``)."""
    return TrackingConfig(TestConfig(*turns, "done", raise_tool_errors=False))


def told(config: TrackingConfig) -> list[tuple[str, bool]]:
    """Every tool result the model was sent, in order: ``(text, is_error)``."""
    seen: list[tuple[str, bool]] = []
    for args, _ in config.mock.call_args_list:
        event: BaseEvent = args[0]
        if isinstance(event, ToolResultsEvent):
            for result in event.results:
                text = "\n".join(p.content for p in result.result.parts if isinstance(p, TextInput))
                seen.append((text, isinstance(result, ToolErrorEvent)))
    return seen


def lookup_order(number: int) -> str:
    """Look an order up."""
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


async def alookup_order(number: int) -> str:
    """Look an order up, asynchronously."""
    await asyncio.sleep(0)
    return lookup_order(number)


def run(agent: Agent, text: str = "go") -> Any:
    return asyncio.run(agent.ask(text))


def dispatcher(**kwargs: Any) -> Dispatcher:
    return Dispatcher([], external_tools=["lookup_order", "alookup_order"], **kwargs)


# --- what AG2 does by default (the docs' claim) -----------------------------------------


def test_unguarded_ag2_sends_the_whole_traceback_to_the_model() -> None:
    """If this fails, AG2 stopped leaking: update docs/integrations/ag2.md."""
    config = scripted(call("lookup_order", number=7))
    agent = Agent("orders", config=config, tools=[lookup_order])
    assert run(agent).body == "done"
    ((text, is_error),) = told(config)
    assert is_error and text.startswith("Traceback (most recent call last):")
    assert SECRET in text and "RuntimeError" in text and "lookup_order" in text


# --- guard: the agent's own tools, in place ---------------------------------------------


@pytest.mark.parametrize("tool", [lookup_order, alookup_order])
def test_a_hidden_failure_never_reaches_the_model_and_is_logged_once(tool: Any) -> None:
    config = scripted(call(tool.__name__, number=7))
    agent = Agent("orders", config=config, tools=[tool], middleware=[guard(dispatcher())])
    with capture_logs() as logs:
        reply = run(agent)
    assert reply.body == "done"
    ((text, is_error),) = told(config)
    hidden = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert len(hidden) == 1 and is_error and hidden[0]["error_id"] in text
    assert hidden[0]["tool"] == tool.__name__
    assert "Traceback" not in text and "RuntimeError" not in text
    # nowhere in the conversation AG2 keeps (its history, the error it records)
    events = asyncio.run(reply.history.get_events())
    assert SECRET not in repr(events)
    (failed,) = [r for e in events if isinstance(e, ToolResultsEvent) for r in e.results]
    assert isinstance(failed, ToolErrorEvent) and isinstance(failed.error, ToolError)
    assert SECRET not in str(failed.error) and failed.error.__cause__ is None


@pytest.mark.parametrize("tool", [lookup_order, alookup_order])
def test_a_tool_errors_message_arrives_as_written(tool: Any) -> None:
    config = scripted(call(tool.__name__, number=42))
    agent = Agent("orders", config=config, tools=[tool], middleware=[guard(dispatcher())])
    with capture_logs() as logs:
        run(agent)
    assert told(config) == [("There is no order 42. Ask the user to check the number.", True)]
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


@pytest.mark.parametrize("tool", [lookup_order, alookup_order])
def test_a_success_is_ag2s_own_result_untouched(tool: Any) -> None:
    results: list[list[ToolResultType]] = []

    def outcomes(config: TrackingConfig) -> list[ToolResultType]:
        return [
            r
            for args, _ in config.mock.call_args_list
            if isinstance(args[0], ToolResultsEvent)
            for r in args[0].results
        ]

    for middleware in ((), (guard(dispatcher()),)):
        config = scripted(call(tool.__name__, call_id="c1", number=1))
        run(Agent("orders", config=config, tools=[tool], middleware=middleware))
        results.append(outcomes(config))
    assert results[0] == results[1]
    (result,) = results[1]
    assert type(result) is ToolResultEvent
    assert result.result.final is False and result.result.metadata == {}


def test_an_override_by_name_answers_for_the_tool() -> None:
    config = scripted(call("lookup_order", number=7), call("lookup_order", number=42))
    overrides = {"lookup_order": ToolPolicy(on_error="Orders are down; try later.")}
    agent = Agent(
        "orders",
        config=config,
        tools=[lookup_order],
        middleware=[guard(dispatcher(overrides=overrides))],
    )
    run(agent)
    # a fixed message keeps a ToolError's own: the override answers the hidden one
    assert told(config) == [
        ("Orders are down; try later.", True),
        ("There is no order 42. Ask the user to check the number.", True),
    ]


def test_bad_arguments_are_answered_naming_the_argument_and_the_tool_never_runs() -> None:
    runs: list[int] = []

    def count(number: int) -> str:
        """Take a number."""
        runs.append(number)
        return f"got {number}"

    config = scripted(call("count", number="many"))
    agent = Agent("n", config=config, tools=[count], middleware=[guard()])
    with capture_logs() as logs:
        run(agent)
    ((text, is_error),) = told(config)
    assert is_error and text.startswith("Invalid arguments for tool 'count':")
    assert "'number'" in text and "Traceback" not in text and runs == []
    assert not [e for e in logs if e["event"] == "tool_error_hidden"]


def test_a_validation_error_raised_by_the_body_is_a_hidden_failure() -> None:
    import pydantic

    def parse(text: str) -> str:
        """Parse a number."""
        return str(pydantic.TypeAdapter(int).validate_python(f"{text} {SECRET}"))

    config = scripted(call("parse", text="x"))
    with capture_logs() as logs:
        run(Agent("p", config=config, tools=[parse], middleware=[guard()]))
    ((text, is_error),) = told(config)
    assert is_error and SECRET not in text and "error id" in text
    assert len([e for e in logs if e["event"] == "tool_error_hidden"]) == 1


def test_return_direct_ends_the_turn_with_ag2s_own_final_result() -> None:
    config = scripted(call("lookup_order", number=3), "never sent")
    overrides = {"lookup_order": ToolPolicy(return_direct=True)}
    agent = Agent(
        "orders",
        config=config,
        tools=[lookup_order],
        middleware=[guard(dispatcher(overrides=overrides))],
    )
    reply = run(agent)
    assert reply.body == "Order 3: shipped"
    assert len(config.mock.call_args_list) == 1  # the model was not asked again


def test_a_failure_never_ends_the_turn_by_default() -> None:
    config = scripted(call("lookup_order", number=7))
    overrides = {"lookup_order": ToolPolicy(return_direct=True)}
    agent = Agent(
        "orders",
        config=config,
        tools=[lookup_order],
        middleware=[guard(dispatcher(overrides=overrides))],
    )
    assert run(agent).body == "done"


def test_return_direct_mode_all_cannot_apply_and_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="return_direct_mode='all'"):
        guard(Dispatcher([], return_direct_mode="all"))


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    def bump(self) -> str:
        """Count the calls."""
        self.calls += 1
        return f"call {self.calls}"


def test_the_tools_state_hooks_and_injection_are_kept() -> None:
    counter = Counter()
    hooked: list[str] = []

    async def hook(call_next: ToolExecution, event: ToolCallEvent, context: Context) -> Any:
        hooked.append(event.name)
        return await call_next(event, context)

    def whoami(context: Context) -> str:
        """Say who asks."""
        return f"asked by {context.variables['user']}"

    bump = ag2_tool(counter.bump, name="bump", middleware=[hook])
    config = scripted(call("bump"), call("bump"), call("whoami"))
    agent = Agent(
        "c", config=config, tools=[bump, whoami], middleware=[guard()], variables={"user": "ada"}
    )
    run(agent)
    assert counter.calls == 2 and hooked == ["bump", "bump"]
    assert told(config) == [("call 1", False), ("call 2", False), ("asked by ada", False)]


def test_a_hooks_own_error_result_is_kept_as_it_wrote_it() -> None:
    async def block(call_next: ToolExecution, event: ToolCallEvent, context: Context) -> Any:
        return ToolErrorEvent.from_call(event, PermissionError("blocked by policy"))

    results = []
    for middleware in ((), (guard(),)):
        config = scripted(call("lookup_order", number=1))
        tool = ag2_tool(lookup_order, middleware=[block])
        with capture_logs() as logs:
            run(Agent("o", config=config, tools=[tool], middleware=middleware))
        results.append(told(config))
        assert not [e for e in logs if e["event"] == "tool_error_hidden"]
    assert results[0] == results[1]
    assert "PermissionError: blocked by policy" in results[1][0][0]


def test_ag2s_own_signals_pass_untouched() -> None:
    """An approval no human can answer ends the turn with AG2's HumanInputError,
    guarded as unguarded: it is not the tool's failure."""
    raised = []
    for middleware in ((), (guard(),)):
        tool = ag2_tool(lookup_order, middleware=[approval_required()])
        config = scripted(call("lookup_order", number=1))
        with pytest.raises(HumanInputError) as caught:
            run(Agent("o", config=config, tools=[tool], middleware=middleware))
        raised.append(type(caught.value))
    assert raised[0] is raised[1]


def test_retries_apply_to_a_guarded_tool() -> None:
    attempts: list[int] = []

    def flaky(query: str) -> str:
        """Fail once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    guarded = Dispatcher([], external_tools=["flaky"], overrides={"flaky": ToolPolicy(retries=2)})
    config = scripted(call("flaky", query="x"))
    run(Agent("f", config=config, tools=[flaky], middleware=[guard(guarded)]))
    assert told(config) == [("found x", False)] and len(attempts) == 2


def test_a_breaker_counts_per_conversation() -> None:
    runs: list[int] = []

    def fragile(number: int) -> str:
        """Fail."""
        runs.append(number)
        raise RuntimeError(SECRET)

    guarded = Dispatcher([], external_tools=["fragile"], breaker=Breaker(failures=1))
    config = scripted(call("fragile", number=1), "first", call("fragile", number=2))
    agent = Agent("f", config=config, tools=[fragile], middleware=[guard(guarded)])

    async def conversation() -> None:
        reply = await agent.ask("go")
        assert reply.body == "first"
        await reply.ask("again")  # the same conversation: the breaker is open

    asyncio.run(conversation())
    (_first, second) = told(config)
    assert runs == [1] and "unavailable" in second[0] and second[1]
    # another conversation (a new stream) has its own breaker: the tool runs
    other = scripted(call("fragile", number=3))
    run(Agent("f", config=other, tools=[fragile], middleware=[guard(guarded)]))
    assert runs == [1, 3]


def test_unknown_tools_stay_ag2s_answer() -> None:
    results = []
    for middleware in ((), (guard(),)):
        config = scripted(call("lookpu", number=1))
        run(Agent("o", config=config, tools=[lookup_order], middleware=middleware))
        results.append(told(config))
    assert results[0] == results[1] and "not found" in results[1][0][0]


def test_entry_points_refuse_what_they_cannot_take() -> None:
    agent = Agent("o", tools=[lookup_order])
    with pytest.raises(TypeError, match=r"guard\(dispatcher\) takes a toolguard Dispatcher"):
        guard(agent)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"guard\(dispatcher\) takes a toolguard Dispatcher"):
        guard([lookup_order])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"as_ag2_tools\(dispatcher\)"):
        as_ag2_tools(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only with dispatcher"):
        as_ag2_tool("search")
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_ag2_tool(search, dispatcher=Dispatcher([]))


def test_the_factory_is_ag2s_own_and_says_what_it_is() -> None:
    made = guard(dispatcher())
    agent = Agent("o", tools=[lookup_order], middleware=[made])
    (described,) = agent.middleware
    assert described.middleware is made
    assert made.describe().kind == "ToolguardMiddleware"


# --- as_ag2_tool: toolguard's own tools -------------------------------------------------


def test_toolguard_tools_declare_their_schema_to_ag2() -> None:
    made = as_ag2_tool(search)
    assert isinstance(made, ToolguardAG2Tool) and made.name == "search"
    (schema,) = asyncio.run(made.schemas(Context(stream=None)))  # type: ignore[arg-type]
    assert schema.function.description.startswith("Search the catalogue")
    assert schema.function.parameters["properties"]["query"]["type"] == "string"
    assert schema.function.parameters["required"] == ["query"]


def test_toolguard_tools_answer_in_an_ag2_agent() -> None:
    config = scripted(
        call("search", query="hat", limit=2), call("search", query="boom"), call("search", limit=1)
    )
    agent = Agent("s", config=config, tools=as_ag2_tools(Dispatcher([search])))
    with capture_logs() as logs:
        run(agent)
    ok, hidden, bad = told(config)
    assert ok == ('["hat 0","hat 1"]', False)
    (logged,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert hidden[1] and logged["error_id"] in hidden[0] and SECRET not in hidden[0]
    assert bad[1] and "query" in bad[0]


def test_a_toolguard_tools_return_direct_ends_the_turn() -> None:
    @guard_tool(return_direct=True)
    async def finish(answer: str) -> str:
        """Finish."""
        return answer

    config = scripted(call("finish", answer="all done"), "never sent")
    reply = run(Agent("f", config=config, tools=[as_ag2_tool(finish)]))
    assert reply.body == "all done" and len(config.mock.call_args_list) == 1
    with pytest.raises(ToolDefinitionError, match="return_direct_mode='all'"):
        as_ag2_tools(Dispatcher([finish], return_direct_mode="all"))


@guard_tool
def echo(call_id: Annotated[str, InjectedCallId]) -> str:
    """Echo the call id."""
    return call_id


def test_a_toolguard_tool_gets_the_call_id_and_keeps_its_dispatcher_when_copied() -> None:
    guarded = Dispatcher([echo])
    (made,) = as_ag2_tools(guarded)
    copied = made.with_middleware()
    assert isinstance(copied, ToolguardAG2Tool) and copied.dispatcher is guarded
    config = scripted(call("echo", call_id="e7"))
    run(Agent("e", config=config, tools=[made]))
    assert told(config) == [("e7", False)]


def test_return_direct_keeps_a_data_result_as_ag2_serialises_it() -> None:
    def stock(sku: str) -> dict[str, Any]:
        """Count the stock."""
        return {"sku": sku, "left": 3}

    results = []
    for overrides in ({}, {"stock": ToolPolicy(return_direct=True)}):
        config = scripted(call("stock", sku="hat"), "never sent")
        guarded = Dispatcher([], external_tools=["stock"], overrides=overrides)
        results.append(run(Agent("s", config=config, tools=[stock], middleware=[guard(guarded)])))
    plain, stopped = results
    assert plain.body == "never sent"
    assert json.loads(stopped.body) == {"sku": "hat", "left": 3}


def test_a_timeout_applies_to_a_guarded_tool_and_is_answered() -> None:
    async def slow(query: str) -> str:
        """Take too long."""
        await asyncio.sleep(30)
        return query

    guarded = Dispatcher([], external_tools=["slow"], overrides={"slow": ToolPolicy(timeout=0.05)})
    config = scripted(call("slow", query="x"))
    run(Agent("s", config=config, tools=[slow], middleware=[guard(guarded)]))
    ((text, is_error),) = told(config)
    assert is_error and text.startswith("The tool 'slow' did not finish within 0.05 s")
