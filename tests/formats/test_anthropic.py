"""toolguard.formats.anthropic against the Anthropic SDK's own types.

Pins: the tool declarations, parsing ``tool_use`` blocks out of the documented
example reply (SDK objects and dicts), the one ``user`` message of ``tool_result``
blocks with ``is_error``, image blocks, and a scripted round trip where a hidden
cause never reaches a produced byte.
"""

from __future__ import annotations

from typing import Any

import pytest
from anthropic.types import (
    Message,
    MessageParam,
    ServerToolUseBlock,
    TextBlock,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlock,
    Usage,
)

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
from toolguard import Image, Text, ToolCall, ToolResult
from toolguard.formats import anthropic as fmt

# The tool-use guide's example reply (with the fields the Message type requires).
DOCUMENTED_MESSAGE: dict[str, Any] = {
    "id": "msg_01Aq9w938a90dw8q",
    "type": "message",
    "model": "claude-sonnet-4-5",
    "stop_reason": "tool_use",
    "stop_sequence": None,
    "role": "assistant",
    "content": [
        {"type": "text", "text": "I'll check the current weather in San Francisco for you."},
        {
            "type": "tool_use",
            "id": "toolu_01A09q90qw90lq917835lq9",
            "name": "get_weather",
            "input": {"location": "San Francisco, CA", "unit": "celsius"},
        },
    ],
    "usage": {"input_tokens": 380, "output_tokens": 78},
}
DOCUMENTED_CALL = ToolCall(
    name="get_weather",
    arguments={"location": "San Francisco, CA", "unit": "celsius"},
    id="toolu_01A09q90qw90lq917835lq9",
)


# --- declare ---------------------------------------------------------------------------


def test_tools_declare_name_description_and_input_schema() -> None:
    declared = fmt.tools([get_current_weather])
    assert declared == [
        {
            "name": "get_current_weather",
            "description": "Get the current weather in a given location.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "location": {
                        "type": "string",
                        "description": "The city and state, e.g. San Francisco, CA",
                    },
                    "unit": {
                        "type": "string",
                        "enum": ["celsius", "fahrenheit"],
                        "default": "fahrenheit",
                    },
                },
                "required": ["location"],
                "additionalProperties": False,
            },
        }
    ]
    conforms(ToolParam, declared[0])


def test_injected_arguments_are_absent_and_docstring_descriptions_present() -> None:
    declared = fmt.tools(shop())
    assert declared[0] == {
        "name": "order_status",
        "description": "Look up one of the user's orders.",
        "input_schema": ORDER_SCHEMA,
    }
    for declaration in declared:
        conforms(ToolParam, declaration)


# --- parse -----------------------------------------------------------------------------


def test_the_documented_reply_parses_in_every_form() -> None:
    message = Message.model_validate(DOCUMENTED_MESSAGE)
    forms = [
        message,
        message.content,
        message.model_dump(),
        DOCUMENTED_MESSAGE,
        DOCUMENTED_MESSAGE["content"],
        {"role": "assistant", "content": DOCUMENTED_MESSAGE["content"]},
    ]
    for form in forms:
        assert fmt.parse_calls(form) == [DOCUMENTED_CALL]


def test_text_replies_and_server_tools_give_no_calls() -> None:
    server = ServerToolUseBlock(
        type="server_tool_use", id="srvtoolu_1", name="web_search", input={"query": "x"}
    )
    assert fmt.parse_calls([TextBlock(type="text", text="Hi"), server]) == []
    assert fmt.parse_calls({"role": "assistant", "content": "Hi"}) == []


def test_parse_calls_refuses_what_is_not_a_message() -> None:
    with pytest.raises(TypeError) as caught:
        fmt.parse_calls({"choices": []})
    assert str(caught.value) == (
        "anthropic.parse_calls takes a Message, a message dict or its content blocks, got dict"
    )


# --- reply -----------------------------------------------------------------------------

OK = ToolResult(call_id="toolu_1", name="a", content="42")
FAILED = ToolResult(call_id="toolu_2", name="b", content="There is no order 7.", is_error=True)
EMPTY = ToolResult(call_id="toolu_3", name="c", content="")
PNG = Image(data="iVBORw0KGgo=", media_type="image/png")
BMP = Image(data="Qk0=", media_type="image/bmp")
PICTURE = ToolResult(call_id="toolu_4", name="chart", content=(Text(text="The chart:"), PNG, BMP))


def test_one_user_message_of_tool_results_with_is_error() -> None:
    reply = fmt.message([OK, FAILED, EMPTY])
    assert reply == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42", "is_error": False},
            {
                "type": "tool_result",
                "tool_use_id": "toolu_2",
                "content": "There is no order 7.",
                "is_error": True,
            },
            {"type": "tool_result", "tool_use_id": "toolu_3", "is_error": False},
        ],
    }
    conforms(MessageParam, reply)
    for block in fmt.tool_results([OK, FAILED, EMPTY]):
        conforms(ToolResultBlockParam, block)


def test_images_become_image_blocks_and_unsupported_types_a_placeholder() -> None:
    blocks = fmt.tool_results(PICTURE)
    assert blocks == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_4",
            "content": [
                {"type": "text", "text": "The chart:"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
                {"type": "text", "text": "[image/bmp image: not a type Anthropic accepts]"},
            ],
            "is_error": False,
        }
    ]
    conforms(ToolResultBlockParam, blocks[0])


def test_a_result_without_a_call_id_cannot_be_sent() -> None:
    with pytest.raises(ValueError, match=r"^the result of tool 'a' has no call id, and Anthropic"):
        fmt.message(ToolResult(call_id=None, name="a", content="42"))


# --- round trips with a scripted model ---------------------------------------------------


def _scripted(*calls: tuple[str, str, dict[str, Any]]) -> Message:
    """A model turn calling tools in parallel, built from the SDK's own types."""
    return Message(
        id="msg_scripted",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        stop_reason="tool_use",
        usage=Usage(input_tokens=10, output_tokens=20),
        content=[
            TextBlock(type="text", text="Let me check."),
            *(
                ToolUseBlock(type="tool_use", id=call_id, name=name, input=arguments)
                for call_id, name, arguments in calls
            ),
        ],
    )


def test_round_trip(logs: list[dict[str, Any]]) -> None:
    dispatcher = shop()
    declared = fmt.tools(dispatcher)
    response = _scripted(
        ("toolu_order", "order_status", {"order_id": 42}),
        ("toolu_refund", "refund", {"order_id": 42, "reason": "late"}),
    )
    round_ = dispatcher.run(fmt.parse_calls(response), context=ALICE)
    check_round(round_)
    reply = fmt.message(round_)
    failed = round_.results[1]
    assert reply == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_order",
                "content": ORDER_CONTENT,
                "is_error": False,
            },
            {
                "type": "tool_result",
                "tool_use_id": "toolu_refund",
                "content": failed.content,
                "is_error": True,
            },
        ],
    }
    conforms(MessageParam, reply)
    for declaration in declared:
        conforms(ToolParam, declaration)
    assert_nothing_leaks(declared, reply)
    events = [event for event in logs if event.get("error_id") == failed.error_id]
    assert len(events) == 1 and SECRET in str(events[0]["exc_info"])


def test_a_model_that_spoofs_an_injected_argument_is_refused() -> None:
    response = _scripted(("toolu_spoof", "order_status", {"order_id": 42, "user": {"id": "x"}}))
    round_ = shop().run(fmt.parse_calls(response), context=ALICE)
    assert fmt.message(round_)["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_spoof",
            "content": f"Invalid arguments for tool 'order_status':\n- {SPOOF}",
            "is_error": True,
        }
    ]


def test_every_call_gets_one_answer_in_order_even_unknown_ones() -> None:
    response = _scripted(
        ("t1", "no_such_tool", {}),
        ("t2", "order_status", {"order_id": "forty-two"}),
        ("t3", "order_status", {"order_id": 1}),
    )
    blocks = fmt.message(shop().run(fmt.parse_calls(response), context=ALICE))["content"]
    assert [(b["tool_use_id"], b["is_error"]) for b in blocks] == [
        ("t1", True),
        ("t2", True),
        ("t3", False),
    ]
