"""The Microsoft Agent Framework integration, driven through Agent Framework's own agent.

The model is a chat client made the way Agent Framework's own clients are made: its
public ``BaseChatClient`` under its ``FunctionInvocationLayer`` and
``ChatMiddlewareLayer`` (in the order of its OpenAI client), whose
``_inner_get_response`` (the method a client implements) plays a script: each step is
one assistant message of function calls (ids ``c0``, ``c1``...), then a last text
answer. Every list of messages it is sent is recorded. The agent, its function loop,
its middleware pipeline, its sessions and the tools' own ``invoke`` are Agent
Framework's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, cast

import pytest
from agent_framework import (
    Agent,
    AgentResponse,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ChatResponseUpdate,
    Content,
    FunctionInvocationConfiguration,
    FunctionInvocationContext,
    FunctionInvocationLayer,
    FunctionMiddleware,
    FunctionTool,
    Message,
    MiddlewareFailure,
    ResponseStream,
    tool,
)
from structlog.testing import capture_logs

from toolguard import Breaker, Dispatcher, ToolCallFailed, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.handlers import fail
from toolguard.integrations.agent_framework import (
    ToolguardFunctionTool,
    ToolguardMiddleware,
    as_agent_framework_tool,
    as_agent_framework_tools,
)

from ._served import SECRET, search

Step = Sequence[tuple[str, dict[str, Any]]]


class ScriptedClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """A chat client playing ``steps``: each a message of function calls, then ``"done"``."""

    def __init__(
        self,
        steps: Sequence[Step],
        *,
        function_invocation_configuration: FunctionInvocationConfiguration | None = None,
        middleware: Sequence[Any] | None = None,
    ) -> None:
        super().__init__(
            function_invocation_configuration=function_invocation_configuration,
            middleware=middleware,
        )
        self.steps = list(steps)
        self.seen: list[list[Message]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Awaitable[ChatResponse] | ResponseStream[ChatResponseUpdate, ChatResponse]:
        self.seen.append(list(messages))
        if self.steps:
            contents = [
                Content.from_function_call(call_id=f"c{i}", name=name, arguments=arguments)
                for i, (name, arguments) in enumerate(self.steps.pop(0))
            ]
        else:
            contents = [Content.from_text("done")]
        if stream:
            return ResponseStream(_updates(contents), finalizer=ChatResponse.from_updates)

        async def respond() -> ChatResponse:
            return ChatResponse(messages=[Message(role="assistant", contents=contents)])

        return respond()

    def results(self) -> list[Content]:
        """The function results in the last messages the model was sent."""
        return [
            content
            for message in self.seen[-1]
            for content in message.contents
            if content.type == "function_result"
        ]

    def told(self) -> list[str]:
        """What the model read of each function result in its last request."""
        return [str(content.result) for content in self.results()]


def finish(run: Awaitable[AgentResponse[Any]]) -> AgentResponse[Any]:
    """An agent's run, to its end, on a new event loop."""

    async def wait() -> AgentResponse[Any]:
        return await run

    return asyncio.run(wait())


async def _updates(contents: list[Content]) -> AsyncIterator[ChatResponseUpdate]:
    yield ChatResponseUpdate(role="assistant", contents=contents)


def run(
    tools: Sequence[Any],
    steps: Sequence[Step],
    *,
    middleware: Sequence[Any] = (),
    session: AgentSession | None = None,
    configuration: FunctionInvocationConfiguration | None = None,
) -> tuple[AgentResponse[Any], ScriptedClient]:
    client = ScriptedClient(steps, function_invocation_configuration=configuration)
    agent = Agent(client, tools=list(tools), middleware=list(middleware))
    response: AgentResponse[Any] = finish(agent.run("go", session=session))
    return response, client


@tool
def lookup_order(number: int) -> str:
    """Look an order up."""
    if number == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if number == 7:
        raise RuntimeError(f"orders db refused: {SECRET}")
    return f"Order {number}: shipped"


@tool
async def track(number: int) -> str:
    """Track an order (an async tool)."""
    await asyncio.sleep(0)
    if number == 7:
        raise RuntimeError(f"tracking refused: {SECRET}")
    return f"Order {number}: in transit"


_RANDOM = frozenset({"id", "message_id", "response_id", "created_at"})


def shape(value: Any) -> Any:
    """``value`` (a ``to_dict()``) without what Agent Framework makes afresh each run:
    occurrence and message ids, timestamps."""
    if isinstance(value, dict):
        return {k: shape(v) for k, v in value.items() if k not in _RANDOM}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return value


def guarded(*names: str, **options: Any) -> ToolguardMiddleware:
    return ToolguardMiddleware(Dispatcher([], external_tools=list(names), **options))


def hidden_events(logs: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


# --- what Agent Framework does by default (the docs' claim) ------------------------------


def test_unguarded_agent_framework_says_only_function_failed_and_keeps_the_text() -> None:
    """If this fails, Agent Framework changed its default: update
    docs/integrations/agent-framework.md. The model reads one fixed line for every
    failure (a ToolError's message for it is lost too, with no error id to quote), while
    the exception's text, secret and all, rides on the result's ``exception`` field."""
    response, client = run([lookup_order], [[("lookup_order", {"number": 7})]])
    assert response.text == "done"
    (result,) = client.results()
    assert result.result == "Error: Function failed."
    assert result.exception is not None and SECRET in result.exception
    _, client = run([lookup_order], [[("lookup_order", {"number": 42})]])
    assert client.told() == ["Error: Function failed."]


def test_unguarded_detailed_errors_send_the_exception_text_to_the_model() -> None:
    """If this fails, ``include_detailed_errors`` stopped sending the text: update the docs."""
    _, client = run(
        [lookup_order],
        [[("lookup_order", {"number": 7})]],
        configuration={"include_detailed_errors": True},
    )
    (told,) = client.told()
    assert told == f"Error: Function failed. Exception: orders db refused: {SECRET}"


def test_unguarded_exception_limit_is_shared_by_every_conversation() -> None:
    """If this fails, Agent Framework's ``max_invocation_exceptions`` stopped counting on
    the tool object across sessions: update the docs. One conversation's failure makes
    the tool refuse another conversation's call."""

    @tool(max_invocation_exceptions=1)
    def fragile(number: int) -> str:
        """Fail on 7."""
        if number == 7:
            raise RuntimeError("down")
        return f"ok {number}"

    run([fragile], [[("fragile", {"number": 7})]], session=AgentSession(session_id="alice"))
    assert fragile.invocation_exception_count == 1
    _, client = run(
        [fragile],
        [[("fragile", {"number": 1})]],
        session=AgentSession(session_id="bob"),
        configuration={"include_detailed_errors": True},
    )
    (told,) = client.told()
    assert "maximum exception limit" in told  # bob's call never ran


# --- ToolguardMiddleware: the app's own tools, in place -----------------------------------


@pytest.mark.parametrize("name", ["lookup_order", "track"])
def test_a_hidden_failure_is_answered_with_an_error_id_logged_once(name: str) -> None:
    with capture_logs() as logs:
        response, client = run(
            [lookup_order, track], [[(name, {"number": 7})]], middleware=[guarded(name)]
        )
    assert response.text == "done"
    (result,) = client.results()
    (event,) = hidden_events(logs)
    assert event["tool"] == name and event["call_id"] == "c0"
    assert event["error_id"] in str(result.result)
    assert result.result.startswith(f"The tool '{name}' failed")
    assert SECRET not in repr(result.to_dict()) and result.exception is None
    kept = [(c.result, c.exception) for m in response.messages for c in m.contents]
    assert SECRET not in repr(kept)  # nor anywhere in the run's messages, exception fields too
    assert isinstance(event["exc_info"], RuntimeError) and SECRET in str(event["exc_info"])


def test_a_tool_errors_message_arrives_as_written() -> None:
    with capture_logs() as logs:
        _, client = run(
            [lookup_order], [[("lookup_order", {"number": 42})]], middleware=[guarded()]
        )
    assert client.told() == ["There is no order 42. Ask the user to check the number."]
    assert not hidden_events(logs)


def test_a_success_is_agent_frameworks_own_result() -> None:
    plain, _plain_client = run([lookup_order, track], [[("lookup_order", {"number": 1})]])
    kept, kept_client = run(
        [lookup_order, track], [[("lookup_order", {"number": 1})]], middleware=[guarded()]
    )
    assert kept_client.told() == ["Order 1: shipped"]
    assert shape([m.to_dict() for m in kept.messages]) == shape(
        [m.to_dict() for m in plain.messages]
    )


def test_max_result_chars_cuts_the_text_of_a_success() -> None:
    class Loud(FunctionMiddleware):
        """An inner middleware answering at length: Agent Framework's contents, a str."""

        async def process(
            self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
        ) -> None:
            await call_next()
            if dict(cast("Mapping[str, Any]", context.arguments))["number"] == 1:
                context.result = [Content.from_text("y" * 500)]
            else:
                context.result = "x" * 500

    middleware = guarded("lookup_order", overrides={"*": ToolPolicy(max_result_chars=100)})
    _, client = run(
        [lookup_order],
        [[("lookup_order", {"number": 1}), ("lookup_order", {"number": 2})]],
        middleware=[middleware, Loud()],
    )
    contents, text = client.told()
    assert contents.startswith("y" * 50) and len(contents) < 200
    assert text.startswith("x" * 50) and len(text) < 200


def test_overrides_answer_by_the_tools_name() -> None:
    middleware = guarded(
        "lookup_order",
        overrides={"lookup_order": ToolPolicy(on_error="Orders are down; try later.")},
    )
    _, client = run([lookup_order], [[("lookup_order", {"number": 7})]], middleware=[middleware])
    assert client.told() == ["Orders are down; try later."]


def test_bad_arguments_get_toolguards_message_and_the_tool_does_not_run() -> None:
    ran: list[str] = []

    @tool
    def count(number: int) -> str:
        """Take a number."""
        ran.append("count")
        return f"got {number}"

    _, client = run([count], [[("count", {"number": "many"})]], middleware=[guarded()])
    (told,) = client.told()
    assert told.startswith("Invalid arguments for tool 'count'") and "'number'" in told
    assert ran == []


def test_a_json_schema_tools_bad_arguments_stay_agent_frameworks_answer() -> None:
    """A tool declared by a JSON schema dict (an MCP server's, say) has no input model:
    Agent Framework checks its arguments itself, and its answer passes as it was."""
    declared = FunctionTool(
        name="count",
        description="Take a number.",
        func=lambda number: f"got {number}",
        input_model={
            "type": "object",
            "properties": {"number": {"type": "integer"}},
            "required": ["number"],
        },
    )
    steps: list[Step] = [[("count", {"number": "many"})]]
    _, plain = run([declared], steps)
    with capture_logs() as logs:
        _, kept = run([declared], steps, middleware=[guarded()])
    assert kept.told() == plain.told() == ["Error: Argument parsing failed."]
    assert kept.results()[0].exception is not None and not hidden_events(logs)


def test_return_direct_ends_the_loop_with_the_tools_result() -> None:
    middleware = guarded("lookup_order", overrides={"lookup_order": ToolPolicy(return_direct=True)})
    response, client = run(
        [lookup_order], [[("lookup_order", {"number": 1})]], middleware=[middleware]
    )
    assert len(client.seen) == 1  # the model was not asked again
    last = response.messages[-1].contents[-1]
    assert last.type == "function_result" and last.result == "Order 1: shipped"


def test_return_direct_never_ends_the_loop_on_a_failure() -> None:
    middleware = guarded("lookup_order", overrides={"lookup_order": ToolPolicy(return_direct=True)})
    response, client = run(
        [lookup_order], [[("lookup_order", {"number": 7})]], middleware=[middleware]
    )
    assert response.text == "done" and len(client.seen) == 2


def test_return_direct_mode_all_is_refused() -> None:
    with pytest.raises(ValueError, match="return_direct_mode='any'"):
        ToolguardMiddleware(Dispatcher([], return_direct_mode="all"))


class Counter(FunctionTool):
    """A FunctionTool keeping its own state."""

    def __init__(self) -> None:
        super().__init__(name="bump", description="Count the calls.", func=self.bump)
        self.calls = 0

    def bump(self) -> str:
        self.calls += 1
        if self.calls == 2:
            raise RuntimeError(SECRET)
        return f"call {self.calls}"


def test_the_tool_object_keeps_its_state_and_its_own_counts() -> None:
    counter = Counter()
    run([counter], [[("bump", {})], [("bump", {})], [("bump", {})]], middleware=[guarded()])
    assert counter.calls == 3
    assert (counter.invocation_count, counter.invocation_exception_count) == (3, 1)


def test_retries_run_the_rest_of_the_chain_again() -> None:
    attempts: list[int] = []

    @tool
    def flaky(query: str) -> str:
        """Fail once."""
        attempts.append(1)
        if len(attempts) == 1:
            raise ConnectionError("reset")
        return f"found {query}"

    middleware = guarded("flaky", overrides={"flaky": ToolPolicy(retries=2)})
    _, client = run([flaky], [[("flaky", {"query": "x"})]], middleware=[middleware])
    assert client.told() == ["found x"] and len(attempts) == 2


def test_a_timeout_answers_the_call_at_its_deadline() -> None:
    @tool
    async def slow(query: str) -> str:
        """Never answers in time."""
        await asyncio.sleep(30)
        return query

    middleware = guarded("slow", overrides={"slow": ToolPolicy(timeout=0.05)})
    response, client = run([slow], [[("slow", {"query": "x"})]], middleware=[middleware])
    (told,) = client.told()
    assert response.text == "done" and "did not finish within 0.05 s" in told


def test_a_breaker_counts_per_agent_session() -> None:
    ran: list[int] = []

    @tool
    def down(number: int) -> str:
        """Always down."""
        ran.append(number)
        raise RuntimeError(SECRET)

    middleware = guarded("down", breaker=Breaker(failures=1))
    alice = AgentSession(session_id="alice")
    run(
        [down],
        [[("down", {"number": 1})], [("down", {"number": 2})]],
        middleware=[middleware],
        session=alice,
    )
    assert ran == [1]  # the second call in alice's conversation found the breaker open
    run(
        [down],
        [[("down", {"number": 3})]],
        middleware=[middleware],
        session=AgentSession(session_id="bob"),
    )
    assert ran == [1, 3]  # bob's conversation has its own breaker


def test_agent_frameworks_own_signals_pass_untouched() -> None:
    @tool
    def strict(number: int) -> str:
        """Abort the run."""
        raise MiddlewareFailure("policy check failed")

    client = ScriptedClient([[("strict", {"number": 1})]])
    agent = Agent(client, tools=[strict], middleware=[guarded()])
    with pytest.raises(MiddlewareFailure, match="policy check failed"):
        finish(agent.run("go"))


@pytest.mark.parametrize("served", [False, True], ids=["in place", "toolguard tool"])
def test_a_handler_that_fails_the_invocation_aborts_the_run(served: bool) -> None:
    """Agent Framework turns any exception out of a middleware or a tool into a result
    and goes on; ``ToolCallFailed`` aborts the run as its ``MiddlewareFailure``."""
    failing = ToolPolicy(on_error=fail)
    if served:
        dispatcher = Dispatcher([search], overrides={"search": failing})
        tools: list[Any] = as_agent_framework_tools(dispatcher)
        steps: list[Step] = [[("search", {"query": "boom"})]]
    else:
        dispatcher = Dispatcher([], external_tools=["lookup_order"], overrides={"*": failing})
        tools = [lookup_order]
        steps = [[("lookup_order", {"number": 7})]]
    agent = Agent(ScriptedClient(steps), tools=tools, middleware=[ToolguardMiddleware(dispatcher)])
    with pytest.raises(MiddlewareFailure) as raised:
        finish(agent.run("go"))
    assert isinstance(raised.value.__cause__, ToolCallFailed)
    assert raised.value.__cause__.call_id == "c0" and SECRET not in str(raised.value)


def test_an_inner_middlewares_failure_is_answered_and_its_result_kept() -> None:
    class Rewrite(FunctionMiddleware):
        async def process(
            self, context: FunctionInvocationContext, call_next: Callable[[], Awaitable[None]]
        ) -> None:
            await call_next()
            if dict(cast("Mapping[str, Any]", context.arguments))["number"] == 3:
                raise RuntimeError(SECRET)
            context.result = "rewritten"

    _, client = run(
        [lookup_order],
        [[("lookup_order", {"number": 1}), ("lookup_order", {"number": 3})]],
        middleware=[guarded(), Rewrite()],
    )
    first, second = client.told()
    assert first == "rewritten" and "error id" in second and SECRET not in second


def test_a_run_level_middleware_is_guarded() -> None:
    client = ScriptedClient([[("lookup_order", {"number": 7})]])
    agent = Agent(client, tools=[lookup_order])
    finish(agent.run("go", middleware=[guarded()]))
    (told,) = client.told()
    assert "error id" in told and SECRET not in told


def test_a_chat_clients_own_middleware_is_guarded_too() -> None:
    client = ScriptedClient([[("lookup_order", {"number": 7})]], middleware=[guarded()])
    finish(Agent(client, tools=[lookup_order]).run("go"))
    (told,) = client.told()
    assert "error id" in told and SECRET not in told


async def test_a_streaming_run_is_guarded_and_return_direct_ends_it() -> None:
    client = ScriptedClient([[("lookup_order", {"number": 7})], [("lookup_order", {"number": 1})]])
    middleware = guarded("lookup_order", overrides={"lookup_order": ToolPolicy(return_direct=True)})
    agent = Agent(client, tools=[lookup_order], middleware=[middleware])
    updates = [update async for update in agent.run("go", stream=True)]
    results = [c for u in updates for c in u.contents if c.type == "function_result"]
    assert "error id" in str(results[0].result) and SECRET not in str(results[0].result)
    assert results[-1].result == "Order 1: shipped" and len(client.seen) == 2


def test_bad_inputs_at_the_entry_points_are_clear() -> None:
    with pytest.raises(TypeError, match=r"ToolguardMiddleware\(dispatcher\) takes a toolguard"):
        ToolguardMiddleware([lookup_order])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="middleware=\\[ToolguardMiddleware"):
        ToolguardMiddleware(Agent(ScriptedClient([])))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="as_agent_framework_tools"):
        as_agent_framework_tools([search])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="only with dispatcher"):
        as_agent_framework_tool("search")
    with pytest.raises(TypeError, match="'lookup_order' is already an Agent Framework"):
        as_agent_framework_tool(lookup_order)
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_agent_framework_tool("lookup", dispatcher=Dispatcher([search]))


# --- as_agent_framework_tool: toolguard's own tools ------------------------------------------


def test_toolguard_tools_declare_toolguards_schema() -> None:
    made = as_agent_framework_tool(search)
    assert isinstance(made, ToolguardFunctionTool) and isinstance(made, FunctionTool)
    assert made.name == "search" and made.description.startswith("Search the catalogue")
    assert made.parameters()["properties"] == search.parameters["properties"]


def test_toolguard_tools_answer_in_the_loop() -> None:
    tools = as_agent_framework_tools(Dispatcher([search]))
    with capture_logs() as logs:
        _, client = run(
            tools,
            [
                [
                    ("search", {"query": "hat", "limit": 2}),
                    ("search", {"query": "boom"}),
                    ("search", {"query": "hat", "limit": "x"}),
                ]
            ],
        )
    ok, failed, bad = client.told()
    assert ok == '["hat 0", "hat 1"]'  # toolguard's value, as Agent Framework serialises it
    (event,) = hidden_events(logs)
    assert event["error_id"] in failed and SECRET not in failed
    assert bad.startswith("Invalid arguments for tool 'search'") and "'limit'" in bad


def test_toolguard_tools_answer_for_themselves_beside_the_middleware() -> None:
    dispatcher = Dispatcher([search])
    with capture_logs() as logs:
        _, client = run(
            as_agent_framework_tools(dispatcher),
            [[("search", {"query": "boom"})]],
            middleware=[ToolguardMiddleware(dispatcher)],
        )
    assert len(hidden_events(logs)) == 1 and "error id" in client.told()[0]


def test_return_direct_on_a_toolguard_tool_is_refused() -> None:
    @guard_tool(return_direct=True)
    def finish(answer: str) -> str:
        """Finish.

        Args:
            answer: The answer.
        """
        return answer

    with pytest.raises(ToolDefinitionError, match="MiddlewareTermination"):
        as_agent_framework_tool(finish)
