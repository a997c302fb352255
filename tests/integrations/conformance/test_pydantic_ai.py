"""Conformance driver: Pydantic AI, guarded in place by its one line, and the adapter.

* The table (``_table.SCENARIOS``) and Pydantic AI's own scenarios of issue 27, each
  played twice on Pydantic AI's run loop with ``FunctionModel``: without and with
  ``capabilities=[ToolguardCapability(dispatcher)]``; the runs must be identical
  except the answer the scenario means to change. What cannot apply is in
  :data:`NOT_APPLICABLE`, with why (and in docs/integrations/pydantic-ai.md).
* One tool three ways, for what the table does not cover: ``native`` (Pydantic AI's own
  ``Tool`` on the plain function, the reference), ``in_place`` (Pydantic AI's ``Tool``
  on the toolguard ``@tool`` of it, under the capability: a toolguard tool is accepted
  by the framework's own decorator) and ``adapter`` (``as_pydantic_ai_tool``): the same
  tool definition, injected ``RunContext`` and returns (``ToolReturn``,
  ``BinaryContent``...), and toolguard's answers on failure.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from pydantic_ai import (
    Agent,
    AgentRunResult,
    BinaryContent,
    ModelMessage,
    ModelResponse,
    ModelRetry,
    RunContext,
    TextPart,
    Tool,
    ToolCallPart,
    ToolDefinition,
    ToolReturn,
    ToolReturnPart,
)
from pydantic_ai.messages import ERROR_OUTCOMES, ModelRequest, RetryPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel
from pydantic_ai.usage import UsageLimits

import toolguard
from toolguard import Dispatcher, RetryWithFeedback, ToolError
from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tool
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ._table import (
    BY_NAME,
    Counter,
    Observation,
    Scenario,
    answered_bad_arguments,
    answered_hidden,
    answered_visible,
    conforms,
    played,
)

Way = Literal["native", "in_place", "adapter"]
WAYS: tuple[Way, ...] = ("native", "in_place", "adapter")
TOOLGUARD_WAYS: tuple[Way, ...] = ("in_place", "adapter")


@dataclass
class Deps:
    user: str


class Address(BaseModel):
    street: str
    city: str = "Oslo"


SEEN: list[dict[str, Any]] = []


def _record(ctx: RunContext[Deps]) -> None:
    SEEN.append(
        {
            "deps": ctx.deps,
            "tool_call_id": ctx.tool_call_id,
            "tool_name": ctx.tool_name,
            "retry": ctx.retry,
            "run_step": ctx.run_step,
            "type": type(ctx),
        }
    )


def search(ctx: RunContext[Deps], query: str, limit: int = 3) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results to return.
    """
    _record(ctx)
    if query == "secret":
        raise RuntimeError("index at postgres://admin:hunter2@db refused")
    if query == "missing":
        raise ToolError("Nothing matches; ask the user for another word.")
    if query == "vague":
        raise RetryWithFeedback("Use a more specific query.")
    if query == "pydantic-retry":
        raise ModelRetry("Pydantic AI's own retry.")
    return f"{ctx.deps.user}: {limit} results for {query}"


def tag(names: list[str], colour: Literal["red", "blue"] | None = None) -> dict[str, Any]:
    """Tag items."""
    return {"tagged": names, "colour": colour}


def ship(address: Address, express: bool = False) -> str:
    """Ship to an address."""
    return f"shipping to {address.street}, {address.city} (express={express})"


def label(order_id: int) -> ToolReturn:
    """A shipping label."""
    return ToolReturn(
        return_value=f"label for {order_id}",
        content=["the label:", BinaryContent(data=b"PNG", media_type="image/png")],
        metadata={"order_id": order_id},
    )


def photo(name: str) -> list[Any]:
    """A photo."""
    return [f"photo of {name}", BinaryContent(data=b"JPG", media_type="image/jpeg")]


FUNCTIONS: dict[str, Callable[..., Any]] = {
    f.__name__: f for f in (search, tag, ship, label, photo)
}


def made(way: Way, function: Callable[..., Any]) -> tuple[Tool[Any], list[ToolguardCapability]]:
    """The tool built ``way``, and the capabilities the agent gets with it."""
    if way == "native":
        return Tool(function), []
    guarded = toolguard.tool(function)
    guard = Dispatcher([guarded])
    capabilities = [ToolguardCapability(guard)]
    if way == "in_place":
        return Tool(guarded), capabilities
    return as_pydantic_ai_tool(guarded, dispatcher=guard), capabilities


class Script:
    __name__ = "script"  # FunctionModel names its model after the function

    def __init__(self, *steps: list[Any]) -> None:
        self.steps = list(steps)
        self.definitions: list[ToolDefinition] = []
        self.seen: list[list[ModelMessage]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.definitions = list(info.function_tools)
        self.seen.append(list(messages))
        return ModelResponse(parts=self.steps.pop(0))


async def run(way: Way, name: str, model: Any, **options: Any) -> AgentRunResult[Any]:
    tool, capabilities = made(way, FUNCTIONS[name])
    agent = Agent(model, deps_type=Deps, tools=[tool], capabilities=capabilities, **options)
    return await agent.run("go", deps=Deps("ann"))


def returned(result: AgentRunResult[Any]) -> list[ToolReturnPart]:
    return [
        part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def without_toolguard(metadata: Any) -> Any:
    """A return's metadata less toolguard's own decision (never sent to the model)."""
    if isinstance(metadata, dict):
        rest = {k: v for k, v in metadata.items() if k != "toolguard"}
        return rest or None
    return metadata


def shown(definition: ToolDefinition) -> dict[str, Any]:
    """What the model is told about a tool."""
    return {
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters_json_schema,
        "strict": definition.strict,
        "kind": definition.kind,
        "sequential": definition.sequential,
    }


# --- what the model sees ---------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
async def test_the_model_sees_the_same_tool_definition_three_ways(name: str) -> None:
    seen: dict[Way, dict[str, Any]] = {}
    for way in WAYS:
        script = Script([TextPart("ok")])
        await run(way, name, FunctionModel(script))
        [definition] = script.definitions
        seen[way] = shown(definition)
    assert seen["in_place"] == seen["native"]
    assert seen["adapter"] == seen["native"]
    assert "ctx" not in str(seen["native"]["parameters"])


# --- what the tool is given, and what comes back on success ---------------------------------------


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
async def test_test_model_calls_give_the_same_returns_three_ways(name: str) -> None:
    """``TestModel`` makes arguments from the schema and calls the tool; the returns
    (content, outcome, metadata) and the run's output are the same."""
    outcomes: dict[Way, Any] = {}
    for way in WAYS:
        SEEN.clear()
        result = await run(way, name, TestModel(seed=3))
        outcomes[way] = (
            [
                (p.tool_name, p.content, p.outcome, without_toolguard(p.metadata))
                for p in returned(result)
            ],
            result.output,
            list(SEEN),
        )
    assert outcomes["in_place"] == outcomes["native"]
    assert outcomes["adapter"] == outcomes["native"]


async def test_the_run_context_injected_is_the_same_three_ways() -> None:
    contexts: dict[Way, list[dict[str, Any]]] = {}
    for way in WAYS:
        SEEN.clear()
        script = Script(
            [ToolCallPart("search", {"query": "hats", "limit": 2}, tool_call_id="c1")],
            [TextPart("ok")],
        )
        await run(way, "search", FunctionModel(script))
        contexts[way] = list(SEEN)
    assert contexts["native"] == [
        {
            "deps": Deps("ann"),
            "tool_call_id": "c1",
            "tool_name": "search",
            "retry": 0,
            "run_step": 1,
            "type": RunContext,
        }
    ]
    assert contexts["in_place"] == contexts["native"]
    assert contexts["adapter"] == contexts["native"]


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("search", {"query": "hats"}),
        ("tag", {"names": ["a", "b"], "colour": "red"}),
        ("ship", {"address": {"street": "Main St 1"}, "express": True}),
        ("label", {"order_id": 7}),
        ("photo", {"name": "cat"}),
    ],
)
async def test_a_success_is_returned_as_pydantic_ai_returns_it_three_ways(
    name: str, arguments: dict[str, Any]
) -> None:
    answers: dict[Way, Any] = {}
    for way in WAYS:
        script = Script([ToolCallPart(name, arguments, tool_call_id="c1")], [TextPart("ok")])
        await run(way, name, FunctionModel(script))
        request = script.seen[-1][-1]
        assert isinstance(request, ModelRequest)
        answers[way] = [
            (
                type(part).__name__,
                getattr(part, "content", None),
                getattr(part, "outcome", None),
                without_toolguard(getattr(part, "metadata", None)),
                part.model_response_str() if isinstance(part, ToolReturnPart) else None,
            )
            for part in request.parts
        ]
    assert answers["in_place"] == answers["native"]
    assert answers["adapter"] == answers["native"]


# --- failures: toolguard's policy ---------------------------------------------------------------


def answer_of(script: Script) -> ToolReturnPart:
    request = script.seen[-1][-1]
    assert isinstance(request, ModelRequest)
    [part] = [p for p in request.parts if isinstance(p, ToolReturnPart)]
    return part


async def test_a_hidden_failure_of_an_adapter_tool_is_toolguards_answer(
    logs: list[dict[str, Any]],
) -> None:
    """(In place, the table's ``hidden_failure`` plays it against the unguarded run.)"""
    script = Script(
        [ToolCallPart("search", {"query": "secret"}, tool_call_id="c1")], [TextPart("ok")]
    )
    result = await run("adapter", "search", FunctionModel(script))
    [event] = [e for e in logs if "hunter2" in repr(e)]
    part = answer_of(script)
    message = BUILTIN_MESSAGE.replace("{tool}", "search")
    assert (part.outcome, part.content) == (
        "failed",
        message.replace("{error_id}", event["error_id"]),
    )
    assert "hunter2" not in str(result.all_messages())


@pytest.mark.parametrize(
    ("query", "outcome", "content"),
    [
        ("missing", "failed", "Nothing matches; ask the user for another word."),
        ("vague", "retried", "Use a more specific query."),
        ("pydantic-retry", "retried", "Pydantic AI's own retry."),
    ],
)
async def test_model_visible_failures_are_the_same_answer_both_toolguard_ways(
    query: str, outcome: str, content: str
) -> None:
    for way in TOOLGUARD_WAYS:
        script = Script(
            [ToolCallPart("search", {"query": query}, tool_call_id="c1")], [TextPart("ok")]
        )
        await run(way, "search", FunctionModel(script))
        part = answer_of(script)
        assert (part.outcome, part.content) == (outcome, content), way


async def test_pydantic_ais_own_model_retry_is_the_same_three_ways() -> None:
    answers: dict[Way, tuple[str, Any]] = {}
    for way in WAYS:
        script = Script(
            [ToolCallPart("search", {"query": "pydantic-retry"}, tool_call_id="c1")],
            [TextPart("ok")],
        )
        await run(way, "search", FunctionModel(script))
        part = answer_of(script)
        answers[way] = (part.outcome, part.content)
    assert answers["in_place"] == answers["native"] == answers["adapter"]


async def test_agent_tool_and_tool_plain_accept_a_toolguard_tool() -> None:
    """Pydantic AI's decorators take a ``@tool`` as they take the plain function."""
    definitions: dict[str, list[dict[str, Any]]] = {}
    for kind in ("plain", "toolguard"):
        script = Script(
            [ToolCallPart("search", {"query": "hats"}, tool_call_id="c1")], [TextPart("ok")]
        )
        agent = Agent(FunctionModel(script), deps_type=Deps)
        wrap: Callable[[Callable[..., Any]], Any] = (
            (lambda f: f) if kind == "plain" else toolguard.tool
        )
        agent.tool(wrap(search))
        agent.tool_plain(wrap(tag))
        result = await agent.run("go", deps=Deps("ann"))
        definitions[kind] = [shown(d) for d in script.definitions]
        assert returned(result)[0].content == "ann: 3 results for hats"
    assert definitions["toolguard"] == definitions["plain"]


# --- the conformance table, played on Pydantic AI's own run loop ---------------------------------
#
# Every scenario of conformance/_table.py runs unguarded and guarded (the documented one
# line: ``capabilities=[ToolguardCapability(dispatcher)]``) on FunctionModel; the runs must
# be equal except where the scenario says toolguard answers. Then Pydantic AI's bugs of
# issue 27.

NOT_APPLICABLE: dict[str, str] = {
    "unknown_tool": "Pydantic AI resolves a tool name before any capability hook runs (its "
    "ToolManager answers an unknown one with its own retry, listing the tools); no public "
    "hook sees the call, so toolguard cannot answer it (guarded and not: Pydantic AI's answer)",
}


def _scripted(calls: Sequence[tuple[str, dict[str, Any]]], *, again: bool = False) -> FunctionModel:
    """A model that sends ``calls`` in its first response (every response, ``again``),
    then says "done"."""

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if again or len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(tool_name=name, args=args, tool_call_id=f"c{i}-{len(messages)}")
                    for i, (name, args) in enumerate(calls)
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(respond)


def _tools(scenario: Scenario, runs: dict[str, int], counter: Counter) -> list[Tool[Any]]:
    if scenario.name == "state":

        def bump() -> str:
            """Count."""
            return counter.bump()

        # sequential: the two calls' texts follow the order they ran in, which Pydantic
        # AI does not fix for parallel calls (the scenario is about the state, not order)
        return [Tool(bump, sequential=True)]

    def counted(body: Callable[..., Any]) -> Callable[..., Any]:
        def run_body(*args: Any, **kwargs: Any) -> Any:
            runs[body.__name__] = runs.get(body.__name__, 0) + 1
            return body(*args, **kwargs)

        functools.update_wrapper(run_body, body)
        return run_body

    return [Tool(counted(body)) for body in scenario.tools]


async def observe_run(
    tools: list[Tool[Any]],
    model: FunctionModel,
    capabilities: list[Any],
    **options: Any,
) -> Observation:
    seen = Observation()
    agent = Agent(model, tools=tools, capabilities=capabilities)
    try:
        result = await agent.run("go", **options)
    except Exception as error:
        seen.raised = type(error).__name__
        return seen
    shape: list[tuple[str, Any, Any]] = []
    for message in result.all_messages():
        for part in getattr(message, "parts", []):
            if isinstance(part, ToolReturnPart):
                seen.model_saw.append(
                    (part.model_response_str(wrap_if_error=False), part.outcome in ERROR_OUTCOMES)
                )
                shape.append((type(part).__name__, part.outcome, part.metadata))
            elif isinstance(part, RetryPromptPart):
                seen.model_saw.append((str(part.content), True))
                shape.append((type(part).__name__, None, None))
    seen.shape = shape
    seen.final = result.output
    return seen


@pytest.mark.parametrize("name", played(NOT_APPLICABLE))
async def test_every_scenario_conforms(name: str, logs: list[dict[str, Any]]) -> None:
    scenario = BY_NAME[name]
    observed = []
    for capabilities in ([], [ToolguardCapability(Dispatcher([]))]):
        logs.clear()
        runs: dict[str, int] = {}
        counter = Counter()
        tools = _tools(scenario, runs, counter)
        seen = await observe_run(tools, _scripted(scenario.calls), capabilities)
        seen.runs, seen.state = runs, counter.calls
        observed.append(seen)
    unguarded, guarded = observed
    conforms(scenario, unguarded, guarded)
    if scenario.name == "hidden_failure":
        answered_hidden(guarded, logs)
    elif scenario.name == "visible_failure":
        answered_visible(guarded)
    elif scenario.name == "bad_arguments":  # toolguard's words, not pydantic's error list
        answered_bad_arguments(guarded)
        assert guarded.model_saw[-1][0].startswith("Invalid arguments for tool 'count'")


# --- Pydantic AI's bugs of issue 27, each failing on the guard before the port ----------------


def always_retry(query: str) -> str:
    """Ask the model to try again, every time."""
    raise ModelRetry("Try a different query.")


def count_number(number: int) -> str:
    """Take a number."""
    return f"got {number}"


async def _both(
    tools: Callable[[], list[Tool[Any]]], model: FunctionModel, **options: Any
) -> tuple[Observation, Observation]:
    """The same run without the capability and with it (fresh tools each)."""
    unguarded = await observe_run(tools(), model, [], **options)
    guarded = await observe_run(tools(), model, [ToolguardCapability(Dispatcher([]))], **options)
    return unguarded, guarded


@pytest.mark.parametrize(
    ("body", "arguments"),
    [(always_retry, {"query": "x"}), (count_number, {"number": "many"})],
    ids=["the_tool_asks_again", "the_model_sends_bad_arguments"],
)
async def test_a_tool_out_of_retries_ends_the_run_as_unguarded(
    body: Callable[..., str], arguments: dict[str, Any]
) -> None:
    """Pydantic AI ends the run when a tool has used up its retries. toolguard answered
    that error before, and the model kept calling until the request limit; its answer to
    bad arguments is the ModelRetry Pydantic AI counts, so that budget holds too."""
    unguarded, guarded = await _both(
        lambda: [Tool(body, max_retries=1)],
        _scripted([(body.__name__, arguments)], again=True),
        usage_limits=UsageLimits(request_limit=8),
    )
    assert unguarded.raised == "UnexpectedModelBehavior"
    assert guarded.raised == unguarded.raised


async def test_the_capability_uses_the_async_session_api(redis_server: Any) -> None:
    from toolguard.stores import RedisStore

    store = RedisStore.from_url(redis_server.url, asyncio=True)
    dispatcher = Dispatcher([])
    session = dispatcher.session(id="pydantic-ai-conformance", store=store)
    capability = ToolguardCapability(dispatcher, session=lambda ctx: session)
    seen = await observe_run(
        [Tool(lookup_text)], _scripted([("lookup_text", {"query": "hats"})]), [capability]
    )
    assert seen.raised is None
    assert seen.model_saw == [("found hats", False)]


def lookup_text(query: str) -> str:
    """Look something up."""
    return f"found {query}"


# --- a tool's own args_validator ----------------------------------------------------------------


async def test_a_tools_own_args_validator_retry_passes_as_its_author_wrote_it() -> None:
    def only_even(ctx: RunContext[Any], number: int) -> None:
        if number % 2:
            raise ModelRetry("Send an even number.")

    unguarded, guarded = await _both(
        lambda: [Tool(count_number, args_validator=only_even)],
        _scripted([("count_number", {"number": 3})]),
    )
    assert unguarded.model_saw == [("Send an even number.", True)]
    assert guarded == unguarded
