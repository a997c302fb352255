"""The application's own mistakes at the entry points: said at once, with the line to
write instead (``toolguard._misuse``, and ``@staticmethod``/``@classmethod`` above
``@tool`` in ``toolguard._tool``).

Before, each failed later and elsewhere: ``'Tool' object is not iterable``, ``'dict'
object has no attribute 'name'``, or a static method called "an instance method".
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import Any

import pytest
from anthropic.types import ToolUseBlock
from openai.types.chat import ChatCompletionMessageToolCall
from openai.types.responses import ResponseFunctionToolCall

from toolguard import Dispatcher, InvalidOption, ToolCall, ToolDefinitionError, tool
from toolguard.formats import anthropic, openai


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


AGENT = Dispatcher([add])
CALL = ToolCall(name="add", arguments={"a": 1, "b": 2}, id="call_1")


@pytest.mark.parametrize(
    ("tools", "says"),
    [
        (add, "got one tool: write Dispatcher([add])"),
        (None, "got None; an agent whose tools all run elsewhere is Dispatcher([], "),
        ("add", "got a str ('add'): pass the tool objects"),
        ({"add": add}, "got a mapping: pass its values, Dispatcher(list(tools.values()))"),
        (AGENT, "got a Dispatcher: its tools are Dispatcher(list(agent.tools.values()), "),
        (42, "got int"),
    ],
    ids=["one tool", "None", "str", "dict", "Dispatcher", "int"],
)
def test_dispatcher_of_something_not_a_list_of_tools_says_what_to_write(
    tools: Any, says: str
) -> None:
    with pytest.raises(InvalidOption, match=re.escape(says)) as caught:
        Dispatcher(tools)
    assert str(caught.value).startswith("Dispatcher() takes a list of tools, ")
    assert isinstance(caught.value, TypeError)  # what a misuse of a signature raises


def test_a_round_of_one_toolcall_says_to_use_a_list_or_dispatch() -> None:
    with pytest.raises(TypeError, match=r"run\(\[call\]\), or dispatch\(call\)"):
        AGENT.run(CALL)  # type: ignore[arg-type]  # the misuse under test
    with pytest.raises(TypeError, match=r"arun\(\[call\]\), or adispatch\(call\)"):
        asyncio.run(AGENT.arun(CALL))  # type: ignore[arg-type]  # the misuse under test
    assert AGENT.run([CALL]).results[0].content == "3"  # the right way still works


def _openai_call() -> ChatCompletionMessageToolCall:
    return ChatCompletionMessageToolCall.model_validate(
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
    )


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"name": "add", "arguments": {"a": 1}}, "got a dict: a call is ToolCall(name=..."),
        (
            {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}},
            "got an OpenAI tool call (a dict): toolguard.formats.openai.parse_calls(response)",
        ),
        (
            {"type": "tool_use", "id": "t1", "name": "add", "input": {}},
            "got an Anthropic tool_use block (a dict): toolguard.formats.anthropic.parse_calls",
        ),
        (_openai_call(), "ToolCall(name=call.function.name, arguments=call.function.arguments"),
        (
            ToolUseBlock(id="t1", type="tool_use", name="add", input={}),
            "got the Anthropic SDK's ToolUseBlock: toolguard.formats.anthropic.parse_calls",
        ),
        (
            ResponseFunctionToolCall(
                type="function_call", call_id="c1", name="add", arguments="{}"
            ),
            "toolguard.formats.openai.parse_response_calls(response)",
        ),
        ([CALL], "got a list of calls: a round is run(calls)"),
        ("add", "got str: build one as ToolCall(name=..., arguments=..., id=...)"),
    ],
    ids=[
        "dict",
        "openai dict",
        "anthropic dict",
        "openai",
        "anthropic",
        "responses",
        "list",
        "str",
    ],
)
def test_dispatch_of_a_providers_own_call_names_the_parser(value: Any, says: str) -> None:
    with pytest.raises(TypeError, match=re.escape(says)) as caught:
        AGENT.dispatch(value)
    assert str(caught.value).startswith("dispatch() takes one toolguard.ToolCall; ")
    with pytest.raises(TypeError, match=r"^adispatch\(\) takes one toolguard.ToolCall; "):
        asyncio.run(AGENT.adispatch(value))


def test_a_round_with_a_providers_call_in_it_names_the_item_and_the_parser() -> None:
    with pytest.raises(TypeError, match=r"its item 1 is not one: got the OpenAI SDK's"):
        AGENT.run([CALL, _openai_call()])  # type: ignore[list-item]  # the misuse under test


def test_the_parsers_the_messages_name_read_those_shapes() -> None:
    """What the messages advise works: the parsers take the provider's responses."""
    response = {"choices": [{"message": {"tool_calls": [_openai_call().model_dump()]}}]}
    assert [c.name for c in openai.parse_calls(response)] == ["add"]
    message = {"content": [{"type": "tool_use", "id": "t1", "name": "add", "input": {}}]}
    assert [c.name for c in anthropic.parse_calls(message)] == ["add"]


def test_staticmethod_above_tool_says_to_put_tool_above_it() -> None:
    class Shop:
        @staticmethod
        @tool
        def price(item: str) -> int:
            """Price an item."""
            return 3

    with pytest.raises(ToolDefinitionError, match=r"put @tool above @staticmethod"):
        Dispatcher([Shop.price])


def test_classmethod_above_tool_says_to_put_tool_above_it() -> None:
    """On 3.11 and 3.12 it happened to work (classmethod chained the tool's __get__);
    3.13 removed that, and the tool was decorated again, its policy lost."""

    class Shop:
        @classmethod
        @tool
        def catalogue(cls, section: str) -> str:
            """List a section."""
            return section

    with pytest.raises(ToolDefinitionError, match=r"put @tool above @classmethod"):
        Dispatcher([Shop.catalogue])


def test_an_unbound_instance_method_still_says_to_bind_it_and_names_the_other_cases() -> None:
    class Shop:
        @tool
        def buy(self, item: str) -> str:
            """Buy an item."""
            return item

    with pytest.raises(ToolDefinitionError, match=r"Dispatcher\(\[obj.buy\]\)") as caught:
        Dispatcher([Shop.buy])
    assert "put @tool above @staticmethod or @classmethod" in str(caught.value)
    assert Dispatcher([Shop().buy]).dispatch(ToolCall(name="buy", arguments={"item": "x"}))


# --- a session and a scope: the same answers as the dispatcher's --------------------
#
# Before, a session's dispatch of a provider's dict said "'dict' object has no attribute
# 'name'", a scope's unknown_tool of one name listed its letters as the tools ("did you
# mean 'a'? Available tools: a, d, d"), and an int step was taken by a memory session
# (where it met the session's own numbering of unnamed steps) and refused by a Redis
# store only at its first count.

OPENAI_DICT = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}


def test_a_session_says_what_the_dispatcher_says_of_a_providers_call() -> None:
    session = AGENT.session()
    with pytest.raises(
        TypeError, match=r"^dispatch\(\) takes one toolguard.ToolCall; got an OpenAI"
    ):
        session.dispatch(OPENAI_DICT)  # type: ignore[arg-type]  # the misuse under test
    with pytest.raises(TypeError, match=r"^adispatch\(\) takes one toolguard.ToolCall; got an Op"):
        asyncio.run(session.adispatch(OPENAI_DICT))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"run\(\[call\]\), or dispatch\(call\)"):
        session.run(CALL)  # type: ignore[arg-type]  # the misuse under test
    with pytest.raises(
        TypeError, match=r"^arun\(\) takes a list of toolguard.ToolCall; its item 0"
    ):
        asyncio.run(session.arun([OPENAI_DICT]))  # type: ignore[list-item]
    assert session.dispatch(CALL).content == "3"  # the right way still works


@pytest.mark.parametrize(
    "answer",
    [
        lambda: AGENT.handle_error(OPENAI_DICT, ValueError("x")),  # type: ignore[arg-type]
        lambda: AGENT.handle_result(OPENAI_DICT, 1),  # type: ignore[arg-type]
        lambda: AGENT.session().admit(OPENAI_DICT),  # type: ignore[arg-type]
        lambda: AGENT.scope().quiet(OPENAI_DICT),  # type: ignore[arg-type]
        lambda: AGENT.scope().succeeded(OPENAI_DICT, 1),  # type: ignore[arg-type]
        lambda: AGENT.scope().failed(OPENAI_DICT, ValueError("x")),  # type: ignore[arg-type]
        lambda: AGENT.scope().unknown_tool(OPENAI_DICT, ["add"]),  # type: ignore[arg-type]
        lambda: AGENT.scope().aborted(OPENAI_DICT, ValueError("x"), event="e"),  # type: ignore[arg-type]
        lambda: asyncio.run(AGENT.ahandle_error(OPENAI_DICT, ValueError("x"))),  # type: ignore[arg-type]
    ],
    ids=["handle_error", "handle_result", "admit", "quiet", "succeeded", "failed",
         "unknown_tool", "aborted", "ahandle_error"],
)  # fmt: skip
def test_a_tool_that_ran_elsewhere_is_answered_only_for_a_toolcall(answer: Any) -> None:
    with pytest.raises(TypeError, match=r"^the call must be a toolguard.ToolCall; got an OpenAI"):
        answer()


class _Call(ToolCall):
    """A subclass of ToolCall is one."""


def test_a_subclass_of_toolcall_is_a_call() -> None:
    call = _Call(name="other", arguments={}, id="c1")
    assert AGENT.scope().quiet(call) is True
    assert AGENT.handle_result(call, "done").content == "done"


@pytest.mark.parametrize("error", ["it failed", {"error": "x"}, None], ids=["str", "dict", "None"])
def test_a_failure_is_answered_only_for_an_exception(error: Any) -> None:
    said = r"^the error must be the exception the tool raised \(a BaseException\), got "
    answers: list[Callable[[], object]] = [
        lambda: AGENT.handle_error(CALL, error),
        lambda: AGENT.scope().failed(CALL, error),
        lambda: AGENT.session().handle_error(CALL, error),
        lambda: asyncio.run(AGENT.scope().afailed(CALL, error)),
    ]
    for answer in answers:
        with pytest.raises(TypeError, match=said + type(error).__name__):
            answer()


def test_unknown_tool_takes_the_names_not_one_name() -> None:
    unknown = ToolCall(name="ad", arguments={}, id="c1")
    for available in ("add", b"add", None, 3):
        with pytest.raises(TypeError, match=r"^unknown_tool\(\) takes the names of the tools"):
            AGENT.scope().unknown_tool(unknown, available)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^unknown_tool\(\) takes the names of the tools"):
            asyncio.run(AGENT.scope().aunknown_tool(unknown, available))  # type: ignore[arg-type]
    answer = AGENT.scope().unknown_tool(unknown, {"add": add}.keys())
    assert "did you mean 'add'?" in answer.content


def test_invalid_arguments_takes_a_validation_error_and_policy_a_name() -> None:
    with pytest.raises(TypeError, match=r"^invalid_arguments\(\) takes the framework's pydantic"):
        AGENT.scope().invalid_arguments(CALL, ValueError("x"), {})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^policy\(\) takes a tool's name \(a str\), got int"):
        AGENT.scope().policy(3)  # type: ignore[arg-type]  # the misuse under test


@pytest.mark.parametrize("step", [1, 3.5, b"m1", ["m1"]], ids=["int", "float", "bytes", "list"])
@pytest.mark.parametrize("store", ["memory", "redis"])
def test_a_step_is_named_by_a_str_in_every_store(
    step: Any, store: str, request: pytest.FixtureRequest
) -> None:
    from toolguard.stores import RedisStore

    where = None
    if store == "redis":
        where = RedisStore.from_url(request.getfixturevalue("redis_server").url, agent="steps")
    session = AGENT.session(store=where)
    said = r"^step= takes a str naming the model step \(the model message's id\), or None"
    for use in (
        lambda: session.scope(step=step),
        lambda: session.dispatch(CALL, step=step),
        lambda: session.admit(CALL, step=step),
        lambda: session.handle_error(CALL, ValueError("x"), step=step),
        lambda: asyncio.run(session.adispatch(CALL, step=step)),
    ):
        with pytest.raises(InvalidOption, match=said):
            use()
    assert session.dispatch(CALL, step="m1").content == "3"  # a str still names it
