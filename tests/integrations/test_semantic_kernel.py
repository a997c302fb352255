"""The Semantic Kernel integration, driven through Semantic Kernel's own function calling.

The model is a subclass of Semantic Kernel's public ``ChatCompletionClientBase`` (its
documented way to bring a chat service) playing a script: each step is one assistant
message of function calls (ids ``c0``, ``c1``... per step), then a text answer; every
chat history it is sent is recorded. The auto function invocation loop, the kernel,
its filters, its plugins and ``ChatCompletionAgent`` are Semantic Kernel's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from typing import Any, ClassVar

import pytest
from pydantic import Field
from semantic_kernel import Kernel
from semantic_kernel.agents import ChatCompletionAgent, ChatHistoryAgentThread
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
    StreamingChatMessageContent,
)
from semantic_kernel.exceptions import KernelInvokeException
from semantic_kernel.filters import FilterTypes, FunctionInvocationContext
from semantic_kernel.functions import FunctionResult, KernelArguments, kernel_function
from structlog.testing import capture_logs

from toolguard import Breaker, ControlFlow, Dispatcher, ToolCallFailed, ToolError, ToolPolicy
from toolguard import tool as guard_tool
from toolguard.errors import ToolDefinitionError
from toolguard.integrations.semantic_kernel import (
    ToolguardKernelFunction,
    as_kernel_function,
    as_kernel_functions,
    guard,
)

SECRET = "db-password=hunter2"

Step = Sequence[tuple[str, dict[str, Any] | str]]


class ScriptedChat(ChatCompletionClientBase):
    """A Semantic Kernel chat service playing ``steps``: each a message of function
    calls; when they run out, the text ``done``."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    steps: list[Step] = Field(default_factory=list)
    seen: list[list[ChatMessageContent]] = Field(default_factory=list)

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        self.seen.append(list(chat_history.messages))
        if not self.steps:
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, content="done")]
        calls = self.steps.pop(0)
        items: list[Any] = [
            FunctionCallContent(id=f"c{i}", name=name, arguments=arguments)
            for i, (name, arguments) in enumerate(calls)
        ]
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=items)]

    async def _inner_get_streaming_chat_message_contents(
        self,
        chat_history: ChatHistory,
        settings: PromptExecutionSettings,
        function_invoke_attempt: int = 0,
    ) -> AsyncGenerator[list[StreamingChatMessageContent], Any]:
        (message,) = await self._inner_get_chat_message_contents(chat_history, settings)
        yield [
            StreamingChatMessageContent(
                role=message.role,
                choice_index=0,
                items=message.items,  # type: ignore[arg-type]  # what a stream carries
                function_invoke_attempt=function_invoke_attempt,
            )
        ]


def settings() -> PromptExecutionSettings:
    return PromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())


def kernel_with(steps: Sequence[Step], *plugins: tuple[str, object]) -> tuple[Kernel, ScriptedChat]:
    kernel = Kernel()
    chat = ScriptedChat(ai_model_id="scripted", steps=list(steps))
    kernel.add_service(chat)
    for name, plugin in plugins:
        kernel.add_plugin(plugin, name)
    return kernel, chat


async def chat_once(
    kernel: Kernel, chat: ScriptedChat, history: ChatHistory | None = None
) -> tuple[list[ChatMessageContent], ChatHistory]:
    history = history if history is not None else ChatHistory()
    history.add_user_message("go")
    answer = await chat.get_chat_message_contents(history, settings(), kernel=kernel)
    return answer, history


def results(history: ChatHistory) -> list[FunctionResultContent]:
    """Every function result the model was sent, in order."""
    return [
        item
        for message in history.messages
        for item in message.items
        if isinstance(item, FunctionResultContent)
    ]


def texts(history: ChatHistory) -> list[str]:
    return [str(item.result) for item in results(history)]


def by_id(history: ChatHistory) -> dict[str, str]:
    """The function results by call id (parallel calls finish in any order)."""
    return {str(item.id): str(item.result) for item in results(history)}


def returned(answer: list[ChatMessageContent]) -> list[str]:
    """The function results a terminated loop returns as its answer."""
    return [
        str(item.result)
        for message in answer
        for item in message.items
        if isinstance(item, FunctionResultContent)
    ]


class Orders:
    """A plugin keeping state on itself, with a sync and an async function."""

    def __init__(self) -> None:
        self.calls = 0

    @kernel_function(description="Look up an order.")
    def lookup_order(self, number: int) -> str:
        self.calls += 1
        if number == 7:
            raise RuntimeError(f"connection refused: {SECRET}")
        if number == 42:
            raise ToolError("There is no order 42. Ask the user to check the number.")
        return f"Order {number}: shipped"

    @kernel_function(description="Cancel an order.")
    async def cancel_order(self, number: int) -> str:
        await asyncio.sleep(0)
        self.calls += 1
        if number == 7:
            raise RuntimeError(f"cancel failed: {SECRET}")
        return f"Order {number}: cancelled"


LOOKUP = "orders-lookup_order"
CANCEL = "orders-cancel_order"


def orders_dispatcher(**kwargs: Any) -> Dispatcher:
    return Dispatcher([], external_tools=[LOOKUP, CANCEL], **kwargs)


# --- what Semantic Kernel does on its own --------------------------------------------------


async def test_unguarded_semantic_kernel_sends_the_exception_text_to_the_model() -> None:
    """The default leak the docs show: if Semantic Kernel stops sending the exception's
    text, this fails, and the docs' claim must change."""
    kernel, chat = kernel_with([[(LOOKUP, {"number": 7})]], ("orders", Orders()))
    _, history = await chat_once(kernel, chat)
    assert texts(history) == [
        f"An error occurred while invoking the function {LOOKUP}: connection refused: {SECRET}"
    ]


# --- guarded in place -----------------------------------------------------------------------


@pytest.mark.parametrize("name", [LOOKUP, CANCEL])
async def test_a_hidden_failure_never_reaches_the_model_and_is_logged_once(name: str) -> None:
    kernel, chat = kernel_with([[(name, {"number": 7})]], ("orders", Orders()))
    guard(kernel, orders_dispatcher())
    with capture_logs() as logs:
        answer, history = await chat_once(kernel, chat)
    (text,) = texts(history)
    assert SECRET not in repr(chat.seen) and SECRET not in text
    hidden = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert len(hidden) == 1
    assert hidden[0]["error_id"] in text and hidden[0]["tool"] == name
    assert SECRET in str(hidden[0]["exc_info"])  # the application still has it
    assert str(answer[0]) == "done"  # the loop went on: the model answered
    (item,) = results(history)
    assert item.id == "c0" and isinstance(item.inner_content, FunctionResult)


async def test_a_tool_errors_message_arrives_as_written_and_a_success_untouched() -> None:
    plugin = Orders()
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 42}), (LOOKUP, {"number": 1}), (CANCEL, {"number": 2})]],
        ("orders", plugin),
    )
    guard(kernel, orders_dispatcher())
    with capture_logs() as logs:
        _, history = await chat_once(kernel, chat)
    assert by_id(history) == {
        "c0": "There is no order 42. Ask the user to check the number.",
        "c1": "Order 1: shipped",
        "c2": "Order 2: cancelled",
    }
    assert not [event for event in logs if event["event"] == "tool_error_hidden"]
    success = next(item for item in results(history) if item.id == "c1").inner_content
    assert isinstance(success, FunctionResult)  # Semantic Kernel's own result, as it made it
    assert set(success.metadata) == {"arguments", "used_arguments"}
    assert plugin.calls == 3  # the plugin's state is its own; each function ran once


async def test_a_streamed_chat_is_guarded_and_stops_alike() -> None:
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 7})], [(CANCEL, {"number": 3})], [(LOOKUP, {"number": 1})]],
        ("orders", Orders()),
    )
    guard(kernel, orders_dispatcher(overrides={CANCEL: ToolPolicy(return_direct=True)}))
    history = ChatHistory()
    history.add_user_message("go")
    with capture_logs() as logs:
        streamed = [
            chunk
            async for chunk in chat.get_streaming_chat_message_contents(
                history, settings(), kernel=kernel
            )
        ]
    failed, cancelled = texts(history)
    assert SECRET not in failed
    (hidden,) = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert hidden["error_id"] in failed and cancelled == "Order 3: cancelled"
    assert len(chat.seen) == 2 and chat.steps  # terminate: the model was not asked again
    assert streamed


async def test_overrides_by_name_and_by_plugin_glob() -> None:
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 7}), (CANCEL, {"number": 7})]], ("orders", Orders())
    )
    dispatcher = orders_dispatcher(
        overrides={
            LOOKUP: ToolPolicy(on_error="The order service is down."),
            "orders-*": ToolPolicy(on_error="Orders are unavailable ({tool})."),
        }
    )
    guard(kernel, dispatcher)
    _, history = await chat_once(kernel, chat)
    assert by_id(history) == {
        "c0": "The order service is down.",
        "c1": f"Orders are unavailable ({CANCEL}).",
    }


async def test_bad_arguments_are_answered_naming_the_argument_and_the_tool_does_not_run() -> None:
    plugin = Orders()
    kernel, chat = kernel_with([[(LOOKUP, {"number": "many"})]], ("orders", plugin))
    guard(kernel, orders_dispatcher())
    with capture_logs() as logs:
        _, history = await chat_once(kernel, chat)
    (text,) = texts(history)
    assert text.startswith(f"Invalid arguments for tool '{LOOKUP}'") and "'number'" in text
    assert plugin.calls == 0
    assert not [event for event in logs if event["event"] == "tool_error_hidden"]


async def test_retries_apply_to_a_guarded_function() -> None:
    attempts: list[int] = []

    class Flaky:
        @kernel_function
        def flaky(self) -> str:
            """Fail once."""
            attempts.append(1)
            if len(attempts) == 1:
                raise ConnectionError("blip")
            return "ok"

    kernel, chat = kernel_with([[("net-flaky", {})]], ("net", Flaky()))
    guard(
        kernel,
        Dispatcher([], external_tools=["net-flaky"], overrides={"net-*": ToolPolicy(retries=1)}),
    )
    _, history = await chat_once(kernel, chat)
    assert texts(history) == ["ok"] and len(attempts) == 2


class Slow:
    @kernel_function
    def slow(self) -> str:
        """Take long, blocking."""
        return "done slowly"

    @kernel_function
    async def aslow(self) -> str:
        """Take long."""
        await asyncio.sleep(5)
        return "done slowly"


async def test_a_timeout_answers_an_async_function() -> None:
    kernel, chat = kernel_with([[("s-aslow", {})]], ("s", Slow()))
    guard(
        kernel,
        Dispatcher([], external_tools=["s-aslow"], overrides={"s-aslow": ToolPolicy(timeout=0.05)}),
    )
    _, history = await chat_once(kernel, chat)
    assert texts(history) == [
        "The tool 's-aslow' did not finish within 0.05 s. It may work if you try again "
        "later, or with a smaller request."
    ]


async def test_a_timeout_for_a_sync_function_is_refused_never_ignored() -> None:
    kernel, _ = kernel_with([], ("s", Slow()))
    with pytest.raises(ToolDefinitionError, match="timeout for 's-slow' cannot apply"):
        guard(kernel, Dispatcher([], overrides={"s-*": ToolPolicy(timeout=1)}))
    # a function added after guard(): refused when the model calls it, as Semantic Kernel
    # answers a wiring error (its text, not the function's, and the function does not run)
    kernel, chat = kernel_with([[("s-slow", {})]])
    guard(kernel, Dispatcher([], overrides={"s-*": ToolPolicy(timeout=1)}))
    kernel.add_plugin(Slow(), "s")
    _, history = await chat_once(kernel, chat)
    assert "timeout for 's-slow' cannot apply" in texts(history)[0]


async def test_return_direct_is_semantic_kernels_terminate() -> None:
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 1})], [(LOOKUP, {"number": 2})]], ("orders", Orders())
    )
    guard(kernel, orders_dispatcher(overrides={LOOKUP: ToolPolicy(return_direct=True)}))
    answer, history = await chat_once(kernel, chat)
    assert returned(answer) == ["Order 1: shipped"]
    assert len(chat.seen) == 1 and chat.steps  # the model was not asked again
    assert texts(history) == ["Order 1: shipped"]


async def test_return_direct_never_stops_on_a_failure_by_default() -> None:
    kernel, chat = kernel_with([[(LOOKUP, {"number": 7})]], ("orders", Orders()))
    guard(kernel, orders_dispatcher(overrides={LOOKUP: ToolPolicy(return_direct=True)}))
    answer, _ = await chat_once(kernel, chat)
    assert str(answer[0]) == "done"


@pytest.mark.parametrize(("mode", "stops"), [("any", True), ("all", False)])
async def test_a_round_stops_by_the_dispatchers_return_direct_mode(mode: str, stops: bool) -> None:
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 1}), (CANCEL, {"number": 2})]], ("orders", Orders())
    )
    dispatcher = orders_dispatcher(
        overrides={LOOKUP: ToolPolicy(return_direct=True)}, return_direct_mode=mode
    )
    guard(kernel, dispatcher)
    answer, history = await chat_once(kernel, chat)
    assert len(texts(history)) == 2  # every call has its result either way
    assert (str(answer[0]) != "done") is stops


async def test_a_round_where_every_call_asks_stops_under_all() -> None:
    kernel, chat = kernel_with(
        [[(LOOKUP, {"number": 1}), (CANCEL, {"number": 2})]], ("orders", Orders())
    )
    dispatcher = orders_dispatcher(
        overrides={"orders-*": ToolPolicy(return_direct=True)}, return_direct_mode="all"
    )
    guard(kernel, dispatcher)
    answer, _ = await chat_once(kernel, chat)
    assert len(chat.seen) == 1 and str(answer[0]) != "done"


@pytest.mark.parametrize("name", [LOOKUP, "tools-search"])
async def test_a_handlers_fail_reaches_the_application(name: str) -> None:
    """Semantic Kernel answers every exception of a function itself: a ToolCallFailed (a
    handler chose to fail the invocation) is raised again above its handler."""
    kernel, chat = kernel_with([[(name, {"number": 7} if name == LOOKUP else {"query": "secret"})]])
    kernel.add_plugin(Orders(), "orders")
    dispatcher = Dispatcher(
        [search], external_tools=[LOOKUP], overrides={"*": ToolPolicy(on_error="fail")}
    )
    guard(kernel, dispatcher, plugin="tools")
    history = ChatHistory()
    with pytest.raises(ToolCallFailed) as raised:
        await chat_once(kernel, chat, history)
    assert raised.value.tool == name.removeprefix("tools-") and raised.value.call_id == "c0"
    assert not results(history)  # no answer was made up for the model


class Handoff(ControlFlow):
    """An application's own signal."""


async def test_control_flow_reaches_the_application() -> None:
    class Desk:
        @kernel_function
        def transfer(self) -> str:
            """Hand over to a human."""
            raise Handoff("to billing")

    kernel, chat = kernel_with([[("desk-transfer", {})]], ("desk", Desk()))
    guard(kernel, Dispatcher([], external_tools=["desk-transfer"]))
    with pytest.raises(Handoff):
        await chat_once(kernel, chat)


async def test_the_call_is_the_models_not_the_applications_arguments() -> None:
    kernel, chat = kernel_with([[(LOOKUP, {"number": 7})]], ("orders", Orders()))
    guard(kernel, orders_dispatcher())
    history = ChatHistory()
    history.add_user_message("go")
    with capture_logs() as logs:
        await chat.get_chat_message_contents(
            history, settings(), kernel=kernel, arguments=KernelArguments(api_key="k-123")
        )
    (hidden,) = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert hidden["arguments"] == {"number": 7}


async def test_a_chat_history_is_one_conversation_for_breakers() -> None:
    plugin = Orders()
    kernel, chat = kernel_with([], ("orders", plugin))
    guard(kernel, orders_dispatcher(breaker=Breaker(failures=1)))
    history = ChatHistory()
    chat.steps.append([(LOOKUP, {"number": 7})])
    await chat_once(kernel, chat, history)  # one model step, then "done"
    assert plugin.calls == 1
    chat.steps.append([(LOOKUP, {"number": 7})])
    await chat_once(kernel, chat, history)  # the same conversation: the breaker is open
    assert plugin.calls == 1 and "unavailable" in texts(history)[-1]
    chat.steps.append([(LOOKUP, {"number": 7})])
    await chat_once(kernel, chat, ChatHistory())  # another conversation: it runs
    assert plugin.calls == 2


async def test_a_chat_completion_agent_is_guarded_through_its_kernel() -> None:
    kernel, chat = kernel_with([[(LOOKUP, {"number": 7})]], ("orders", Orders()))
    guard(kernel, orders_dispatcher())
    agent = ChatCompletionAgent(kernel=kernel, name="clerk", instructions="Help.")
    thread = ChatHistoryAgentThread()
    with capture_logs() as logs:
        response = await agent.get_response(messages="where is order 7?", thread=thread)
    assert str(response.content) == "done"
    sent = [
        str(item.result)
        for m in chat.seen[-1]
        for item in m.items
        if isinstance(item, FunctionResultContent)
    ]
    (text,) = sent
    assert SECRET not in text
    hidden = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert len(hidden) == 1 and hidden[0]["error_id"] in text


async def test_an_agent_given_plugins_is_guarded_through_the_kernel_it_made() -> None:
    chat = ScriptedChat(ai_model_id="scripted", steps=[[("Orders-lookup_order", {"number": 7})]])
    agent = ChatCompletionAgent(service=chat, plugins=[Orders()], name="clerk")
    guard(agent.kernel, Dispatcher([], external_tools=["Orders-lookup_order"]))
    response = await agent.get_response(messages="where is order 7?")
    sent = [
        str(item.result)
        for message in chat.seen[-1]
        for item in message.items
        if isinstance(item, FunctionResultContent)
    ]
    assert str(response.content) == "done"
    assert len(sent) == 1 and SECRET not in sent[0] and "error id" in sent[0]


async def test_the_applications_own_invoke_is_not_a_model_call() -> None:
    kernel, _ = kernel_with([], ("orders", Orders()))
    guard(kernel, orders_dispatcher())
    with pytest.raises(KernelInvokeException) as raised:
        await kernel.invoke(plugin_name="orders", function_name="lookup_order", number=7)
    assert isinstance(raised.value.__cause__, RuntimeError)  # as Semantic Kernel raises it
    ok = await kernel.invoke(plugin_name="orders", function_name="lookup_order", number=3)
    assert ok is not None and ok.value == "Order 3: shipped"


async def test_the_kernels_other_filters_still_run_around_the_guarded_function() -> None:
    seen: list[str] = []
    kernel, chat = kernel_with([[(LOOKUP, {"number": 7})]], ("orders", Orders()))

    @kernel.filter(FilterTypes.FUNCTION_INVOCATION)
    async def watch(context: FunctionInvocationContext, next: Any) -> None:
        await next(context)
        seen.append(str(context.result))

    guard(kernel, orders_dispatcher())
    _, history = await chat_once(kernel, chat)
    assert seen == texts(history) and SECRET not in seen[0]


# --- entry points ----------------------------------------------------------------------------


def test_guard_checks_what_it_is_given() -> None:
    kernel = Kernel()
    with pytest.raises(TypeError, match="takes a semantic_kernel Kernel, got list"):
        guard([], orders_dispatcher())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher, got Kernel"):
        guard(kernel, kernel)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="takes a plugin name"):
        guard(kernel, orders_dispatcher(), plugin="")
    assert guard(kernel) is kernel  # no dispatcher: the global defaults
    with pytest.raises(ToolDefinitionError, match="already guarded"):
        guard(kernel, orders_dispatcher())


# --- toolguard tools as kernel functions ------------------------------------------------------


@guard_tool
def search(query: str, limit: int = 3) -> str:
    """Search the catalogue.

    Args:
        query: What to look for.
        limit: How many results.
    """
    if query == "secret":
        raise RuntimeError(f"index down: {SECRET}")
    return f"{limit} results for {query}"


@guard_tool(return_direct=True)
def finish(answer: str) -> str:
    """Give the final answer.

    Args:
        answer: The answer.
    """
    return f"FINAL: {answer}"


async def test_toolguard_tools_run_as_kernel_functions() -> None:
    kernel, chat = kernel_with(
        [
            [
                ("tools-search", {"query": "hats"}),
                ("tools-search", {"query": "hats", "limit": "many"}),
                ("tools-search", {"query": "secret"}),
            ]
        ]
    )
    kernel.add_functions("tools", [*as_kernel_functions(Dispatcher([search]))])
    with capture_logs() as logs:
        _, history = await chat_once(kernel, chat)
    ok, invalid, hidden = (by_id(history)[f"c{i}"] for i in range(3))
    assert ok == "3 results for hats"
    assert invalid.startswith("Invalid arguments for tool 'search'") and "'limit'" in invalid
    assert SECRET not in hidden
    events = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert len(events) == 1 and events[0]["error_id"] in hidden


def test_toolguard_tools_declare_their_schema() -> None:
    function = as_kernel_function(search)
    assert isinstance(function, ToolguardKernelFunction)
    schema = {p.name: (p.is_required, p.schema_data or {}) for p in function.parameters}
    assert schema["query"][0] is True and schema["query"][1]["type"] == "string"
    assert schema["limit"][0] is False and schema["limit"][1]["type"] == "integer"
    assert function.description == search.description


async def test_a_toolguard_tools_return_direct_joins_through_guard() -> None:
    kernel, chat = kernel_with([[("tools-finish", {"answer": "42"})], [("tools-finish", {})]])
    guard(kernel, Dispatcher([finish, search]), plugin="tools")
    answer, _ = await chat_once(kernel, chat)
    assert returned(answer) == ["FINAL: 42"]
    assert len(chat.seen) == 1


def test_return_direct_without_the_filters_is_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="guard\\(kernel, dispatcher, plugin="):
        as_kernel_function(finish)
    with pytest.raises(ToolDefinitionError, match="guard\\(kernel, dispatcher, plugin="):
        as_kernel_functions(Dispatcher([search, finish]))


def test_the_toolguard_entry_points_check_what_they_are_given() -> None:
    with pytest.raises(TypeError, match="takes a toolguard Dispatcher, got list"):
        as_kernel_functions([search])  # type: ignore[arg-type]
    with pytest.raises(ToolDefinitionError, match="not one of this dispatcher's tools"):
        as_kernel_function("nope", dispatcher=Dispatcher([search]))
    with pytest.raises(TypeError, match="takes a tool name only with dispatcher"):
        as_kernel_function("search")


async def test_a_toolguard_function_invoked_by_the_application() -> None:
    kernel = Kernel()
    kernel.add_function("tools", as_kernel_function(search))
    result = await kernel.invoke(
        plugin_name="tools", function_name="search", arguments=KernelArguments(query="caps")
    )
    assert result is not None and result.value == "3 results for caps"
