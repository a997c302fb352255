"""toolguard.formats.openai against the OpenAI SDK's own types (Chat Completions and
the Responses API).

Pins: the declarations (plain and strict), parsing the documented example replies
(SDK objects and their dict forms), the ``role: "tool"`` messages and
``function_call_output`` items with the error prefix, images, and a scripted
round trip where a hidden cause never reaches a produced byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionMessageParam,
    ChatCompletionToolMessageParam,
    ChatCompletionToolUnionParam,
    ChatCompletionUserMessageParam,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_custom_tool_call import (
    ChatCompletionMessageCustomToolCall,
    Custom,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseFunctionToolCall,
    ResponseInputItemParam,
    ResponseOutputMessage,
    ResponseOutputText,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput

from tests.formats._conforms import conforms
from tests.formats._tools import (
    ALICE,
    ORDER_CONTENT,
    ORDER_SCHEMA,
    SECRET,
    SPOOF,
    assert_nothing_leaks,
    check_round,
    get_current_weather,
    shop,
)
from toolguard import (
    Dispatcher,
    Image,
    Text,
    ToolCall,
    ToolDefinitionError,
    ToolResult,
    tool,
)
from toolguard.formats import openai as fmt

WEATHER_PARAMETERS = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "description": "The city and state, e.g. San Francisco, CA",
        },
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"], "default": "fahrenheit"},
    },
    "required": ["location"],
    "additionalProperties": False,
}

# The API reference's function-calling example reply ("Create chat completion").
DOCUMENTED_COMPLETION: dict[str, Any] = {
    "id": "chatcmpl-abc123",
    "object": "chat.completion",
    "created": 1699896916,
    "model": "gpt-4o-mini",
    "choices": [
        {
            "index": 0,
            "message": {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc123",
                        "type": "function",
                        "function": {
                            "name": "get_current_weather",
                            "arguments": '{\n"location": "Boston, MA"\n}',
                        },
                    }
                ],
            },
            "logprobs": None,
            "finish_reason": "tool_calls",
        }
    ],
    "usage": {
        "prompt_tokens": 82,
        "completion_tokens": 17,
        "total_tokens": 99,
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
}
DOCUMENTED_CALL = ToolCall(
    name="get_current_weather", arguments='{\n"location": "Boston, MA"\n}', id="call_abc123"
)

# The function-calling guide's Responses API output items.
DOCUMENTED_RESPONSE: dict[str, Any] = {
    "id": "resp_abc123",
    "object": "response",
    "created_at": 1741294021,
    "model": "gpt-4.1-2025-04-14",
    "output": [
        {
            "type": "function_call",
            "id": "fc_12345xyz",
            "call_id": "call_12345xyz",
            "name": "get_weather",
            "arguments": '{"location":"Paris, France"}',
        }
    ],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


# --- declare ---------------------------------------------------------------------------


def test_chat_tools_declare_each_tool_as_a_function() -> None:
    declared = fmt.tools([get_current_weather])
    assert declared == [
        {
            "type": "function",
            "function": {
                "name": "get_current_weather",
                "description": "Get the current weather in a given location.",
                "parameters": WEATHER_PARAMETERS,
            },
        }
    ]
    conforms(ChatCompletionFunctionToolParam, declared[0])
    conforms(ChatCompletionToolUnionParam, declared[0])


def test_responses_tools_declare_flat_functions_with_the_strict_key() -> None:
    declared = fmt.responses_tools(Dispatcher([get_current_weather]))
    assert declared == [
        {
            "type": "function",
            "name": "get_current_weather",
            "description": "Get the current weather in a given location.",
            "parameters": WEATHER_PARAMETERS,
            "strict": False,
        }
    ]
    conforms(FunctionToolParam, declared[0])


STRICT_WEATHER = {
    "type": "object",
    "properties": {
        "location": {
            "type": "string",
            "description": "The city and state, e.g. San Francisco, CA",
        },
        "unit": {
            "anyOf": [{"type": "string", "enum": ["celsius", "fahrenheit"]}, {"type": "null"}],
            "default": "fahrenheit",
        },
    },
    "required": ["location", "unit"],
    "additionalProperties": False,
}


def test_strict_declarations_require_every_key_and_say_strict() -> None:
    chat = fmt.tools([get_current_weather], strict=True)
    assert chat[0]["function"]["parameters"] == STRICT_WEATHER
    assert chat[0]["function"]["strict"] is True
    conforms(ChatCompletionFunctionToolParam, chat[0])
    responses = fmt.responses_tools([get_current_weather], strict=True)
    assert responses[0]["parameters"] == STRICT_WEATHER
    assert responses[0]["strict"] is True
    conforms(FunctionToolParam, responses[0])
    assert get_current_weather.parameters == WEATHER_PARAMETERS  # unchanged


def test_strict_declaration_of_a_tool_that_cannot_be_strict_is_an_error() -> None:
    @tool
    def tag(item: str, **labels: str) -> str:
        return item

    with pytest.raises(ToolDefinitionError, match=r"^tool 'tag' cannot be declared with strict"):
        fmt.tools([tag], strict=True)
    assert fmt.tools([tag])[0]["function"]["parameters"]["additionalProperties"] is True


def test_declarations_are_copies_the_caller_may_change() -> None:
    declared = fmt.tools([get_current_weather])
    declared[0]["function"]["parameters"]["properties"].clear()
    assert get_current_weather.parameters == WEATHER_PARAMETERS


def test_injected_arguments_are_absent_and_docstring_descriptions_present() -> None:
    dispatcher = shop()
    assert fmt.tools(dispatcher)[0]["function"]["parameters"] == ORDER_SCHEMA
    assert fmt.responses_tools(dispatcher)[0]["parameters"] == ORDER_SCHEMA
    strict = fmt.tools(dispatcher, strict=True)[0]["function"]["parameters"]
    assert set(strict["properties"]) == {"order_id"}
    assert fmt.tools(dispatcher)[1]["function"] == {
        "name": "refund",
        "description": "Refund an order.",
        "parameters": {
            "type": "object",
            "properties": {
                "order_id": {"type": "integer", "description": "The order to refund."},
                "reason": {"type": "string", "description": "Why, in a few words.", "default": ""},
            },
            "required": ["order_id"],
            "additionalProperties": False,
        },
    }


# --- parse -----------------------------------------------------------------------------


def test_the_documented_chat_completion_parses_in_every_form() -> None:
    completion = ChatCompletion.model_validate(DOCUMENTED_COMPLETION)
    message = completion.choices[0].message
    forms = [
        completion,
        message,
        message.tool_calls,
        completion.model_dump(),
        DOCUMENTED_COMPLETION,
        DOCUMENTED_COMPLETION["choices"][0]["message"],
    ]
    for form in forms:
        assert fmt.parse_calls(form) == [DOCUMENTED_CALL]


def test_a_reply_without_tool_calls_parses_to_no_calls() -> None:
    message = ChatCompletionMessage(role="assistant", content="It is sunny.")
    assert fmt.parse_calls(message) == []
    assert fmt.parse_calls({"role": "assistant", "content": "It is sunny."}) == []
    assert fmt.parse_calls({"id": "x", "choices": []}) == []


def test_custom_tool_calls_are_left_to_the_application() -> None:
    message = ChatCompletionMessage(
        role="assistant",
        tool_calls=[
            ChatCompletionMessageCustomToolCall(
                id="call_custom", type="custom", custom=Custom(name="grammar", input="x")
            ),
            ChatCompletionMessageFunctionToolCall(
                id="call_fn", type="function", function=Function(name="f", arguments="{}")
            ),
        ],
    )
    assert fmt.parse_calls(message) == [ToolCall(name="f", arguments="{}", id="call_fn")]


def test_parse_calls_refuses_what_is_not_a_chat_completion() -> None:
    with pytest.raises(TypeError) as caught:
        fmt.parse_calls({"output": []})
    assert str(caught.value) == (
        "openai.parse_calls takes a ChatCompletion, its message or its tool_calls, got dict"
    )


def test_the_documented_responses_output_parses_in_every_form() -> None:
    response = Response.model_validate(DOCUMENTED_RESPONSE)
    expected = [
        ToolCall(name="get_weather", arguments='{"location":"Paris, France"}', id="call_12345xyz")
    ]
    for form in (response, response.output, DOCUMENTED_RESPONSE, response.model_dump()):
        assert fmt.parse_response_calls(form) == expected


def test_responses_items_that_are_not_function_calls_are_skipped() -> None:
    message = ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text="Hi", annotations=[])],
    )
    assert fmt.parse_response_calls([message]) == []
    with pytest.raises(TypeError, match="takes a Response or its output items, got str"):
        fmt.parse_response_calls("nope")


# --- reply -----------------------------------------------------------------------------

OK = ToolResult(call_id="call_1", name="a", content="42")
FAILED = ToolResult(call_id="call_2", name="b", content="There is no order 7.", is_error=True)
PNG = Image(data="iVBORw0KGgo=", media_type="image/png")
PICTURE = ToolResult(call_id="call_3", name="chart", content=(Text(text="The chart:"), PNG))


def test_messages_answer_each_call_and_prefix_failures() -> None:
    replies = fmt.messages([OK, FAILED])
    assert replies == [
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {"role": "tool", "tool_call_id": "call_2", "content": "Error: There is no order 7."},
    ]
    for reply in replies:
        conforms(ChatCompletionToolMessageParam, reply)
        conforms(ChatCompletionMessageParam, reply)


@pytest.mark.parametrize(
    ("prefix", "content"),
    [("TOOL FAILED: ", "TOOL FAILED: There is no order 7."), ("", "There is no order 7.")],
)
def test_the_error_prefix_is_configurable(prefix: str, content: str) -> None:
    assert fmt.messages(FAILED, error_prefix=prefix)[0]["content"] == content
    assert fmt.response_items(FAILED, error_prefix=prefix)[0]["output"] == content


def test_images_go_in_a_user_message_after_the_tool_messages() -> None:
    replies = fmt.messages([PICTURE, OK])
    assert replies == [
        {
            "role": "tool",
            "tool_call_id": "call_3",
            "content": [
                {"type": "text", "text": "The chart:"},
                {"type": "text", "text": "[image/png image, attached in the next message]"},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "42"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Image from tool call call_3 (chart):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
            ],
        },
    ]
    conforms(ChatCompletionToolMessageParam, replies[0])
    conforms(ChatCompletionUserMessageParam, replies[2])
    without = fmt.messages(PICTURE, image_message=False)
    assert without == [
        {
            "role": "tool",
            "tool_call_id": "call_3",
            "content": [
                {"type": "text", "text": "The chart:"},
                {"type": "text", "text": "[image/png image, not sent]"},
            ],
        }
    ]


def test_a_failed_result_made_of_blocks_gets_the_prefix_in_its_first_text() -> None:
    failed_picture = ToolResult(call_id="c", name="chart", content=(PNG,), is_error=True)
    assert fmt.messages(failed_picture, image_message=False)[0]["content"] == [
        {"type": "text", "text": "Error:"},
        {"type": "text", "text": "[image/png image, not sent]"},
    ]


def test_response_items_answer_each_call_with_text_or_input_parts() -> None:
    items = fmt.response_items([OK, FAILED, PICTURE])
    assert items == [
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "Error: There is no order 7.",
        },
        {
            "type": "function_call_output",
            "call_id": "call_3",
            "output": [
                {"type": "input_text", "text": "The chart:"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ],
        },
    ]
    for item in items:
        conforms(FunctionCallOutput, item)
        conforms(ResponseInputItemParam, item)


def test_a_result_without_a_call_id_cannot_be_sent() -> None:
    orphan = ToolResult(call_id=None, name="a", content="42")
    for reply in (fmt.messages, fmt.response_items):
        with pytest.raises(ValueError, match=r"^the result of tool 'a' has no call id, and OpenAI"):
            reply(orphan)


# --- round trips with a scripted model ---------------------------------------------------


def _scripted_completion(*calls: tuple[str, str, str]) -> ChatCompletion:
    """A model turn calling tools in parallel, built from the SDK's own types."""
    return ChatCompletion(
        id="chatcmpl-scripted",
        object="chat.completion",
        created=1700000000,
        model="gpt-4o",
        choices=[
            Choice(
                index=0,
                finish_reason="tool_calls",
                message=ChatCompletionMessage(
                    role="assistant",
                    tool_calls=[
                        ChatCompletionMessageFunctionToolCall(
                            id=call_id,
                            type="function",
                            function=Function(name=name, arguments=arguments),
                        )
                        for call_id, name, arguments in calls
                    ],
                ),
            )
        ],
    )


def _hidden_cause_logged(logs: list[dict[str, Any]], error_id: str | None) -> None:
    events = [event for event in logs if event.get("error_id") == error_id]
    assert len(events) == 1
    assert SECRET in str(events[0]["exc_info"])


def test_round_trip_chat_completions(logs: list[dict[str, Any]]) -> None:
    dispatcher = shop()
    declared = fmt.tools(dispatcher)
    completion = _scripted_completion(
        ("call_order", "order_status", '{"order_id": 42}'),
        ("call_refund", "refund", '{"order_id": 42, "reason": "late"}'),
    )
    calls = fmt.parse_calls(completion)
    round_ = dispatcher.run(calls, context=ALICE)
    check_round(round_)
    replies = fmt.messages(round_)
    failed = round_.results[1]
    assert replies == [
        {"role": "tool", "tool_call_id": "call_order", "content": ORDER_CONTENT},
        {"role": "tool", "tool_call_id": "call_refund", "content": f"Error: {failed.content}"},
    ]
    assignment = completion.choices[0].message.model_dump(mode="json", exclude_none=True)
    for message in (assignment, *replies):
        conforms(ChatCompletionMessageParam, message)
    for declaration in declared:
        conforms(ChatCompletionToolUnionParam, declaration)
    assert_nothing_leaks(declared, replies)
    _hidden_cause_logged(logs, failed.error_id)


def test_round_trip_responses_api(logs: list[dict[str, Any]]) -> None:
    dispatcher = shop()
    declared = fmt.responses_tools(dispatcher)
    response = Response(
        id="resp_scripted",
        object="response",
        created_at=1700000000,
        model="gpt-4.1",
        parallel_tool_calls=True,
        tool_choice="auto",
        tools=[],
        output=[
            ResponseFunctionToolCall(
                type="function_call",
                id="fc_1",
                call_id="call_order",
                name="order_status",
                arguments='{"order_id": 42}',
            ),
            ResponseFunctionToolCall(
                type="function_call",
                id="fc_2",
                call_id="call_refund",
                name="refund",
                arguments='{"order_id": 42}',
            ),
        ],
    )
    round_ = dispatcher.run(fmt.parse_response_calls(response), context=ALICE)
    check_round(round_)
    items = fmt.response_items(round_)
    failed = round_.results[1]
    assert items == [
        {"type": "function_call_output", "call_id": "call_order", "output": ORDER_CONTENT},
        {
            "type": "function_call_output",
            "call_id": "call_refund",
            "output": f"Error: {failed.content}",
        },
    ]
    for item in items:
        conforms(ResponseInputItemParam, item)
    for declaration in declared:
        conforms(FunctionToolParam, declaration)
    assert_nothing_leaks(declared, items)
    _hidden_cause_logged(logs, failed.error_id)


def test_a_model_that_spoofs_an_injected_argument_is_refused() -> None:
    dispatcher = shop()
    completion = _scripted_completion(
        ("call_spoof", "order_status", '{"order_id": 42, "user": {"id": "admin"}}')
    )
    round_ = dispatcher.run(fmt.parse_calls(completion), context=ALICE)
    assert fmt.messages(round_) == [
        {
            "role": "tool",
            "tool_call_id": "call_spoof",
            "content": f"Error: Invalid arguments for tool 'order_status':\n- {SPOOF}",
        }
    ]


def test_every_call_gets_one_answer_in_order_even_unknown_and_invalid_ones() -> None:
    dispatcher = shop()
    completion = _scripted_completion(
        ("c1", "no_such_tool", "{}"),
        ("c2", "order_status", "{not json"),
        ("c3", "order_status", '{"order_id": 1}'),
    )
    replies = fmt.messages(dispatcher.run(fmt.parse_calls(completion), context=ALICE))
    assert [reply["tool_call_id"] for reply in replies] == ["c1", "c2", "c3"]
    assert replies[0]["content"].startswith("Error: There is no tool named 'no_such_tool'")
    assert replies[1]["content"].startswith("Error: Invalid arguments for tool 'order_status'")
    assert not replies[2]["content"].startswith("Error: ")


def test_a_strict_model_sending_null_for_a_default_gets_the_default() -> None:
    completion = _scripted_completion(
        ("c1", "get_current_weather", '{"location": "Boston, MA", "unit": null}')
    )
    round_ = Dispatcher([get_current_weather]).run(fmt.parse_calls(completion))
    assert fmt.messages(round_) == [
        {"role": "tool", "tool_call_id": "c1", "content": "22 degrees fahrenheit in Boston, MA"}
    ]
