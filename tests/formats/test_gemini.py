"""toolguard.formats.gemini against the google-genai SDK's own types.

Pins: the function declarations (``parameters_json_schema``), parsing
``functionCall`` parts out of the documented REST reply and SDK objects (with and
without ids), ``function_response`` parts with ``{"output": ...}`` or
``{"error": ...}``, images as inline bytes, and a scripted round trip where a hidden
cause never reaches a produced byte.
"""

from __future__ import annotations

import base64
from typing import Annotated, Any, Literal

import pytest
from google.genai import types as gt

from tests.formats._conforms import conforms, model_round_trip
from tests.formats._tools import (
    ALICE,
    ORDER_CONTENT,
    ORDER_SCHEMA,
    SECRET,
    SPOOF,
    assert_nothing_leaks,
    check_round,
    shop,
)
from toolguard import Image, Text, ToolCall, ToolDefinitionError, ToolResult, tool
from toolguard.formats import gemini as fmt


@tool
def set_light_values(
    brightness: Annotated[int, "Light level from 0 to 100. Zero is off and 100 is full brightness"],
    color_temp: Annotated[
        Literal["daylight", "cool", "warm"],
        "Color temperature of the light fixture, which can be `daylight`, `cool` or `warm`.",
    ],
) -> dict[str, Any]:
    """Sets the brightness and color temperature of a light."""
    return {"brightness": brightness, "colorTemperature": color_temp}


# The function-calling guide's REST reply for set_light_values.
DOCUMENTED_RESPONSE: dict[str, Any] = {
    "candidates": [
        {
            "content": {
                "parts": [
                    {
                        "functionCall": {
                            "name": "set_light_values",
                            "args": {"color_temp": "warm", "brightness": 25},
                        }
                    }
                ],
                "role": "model",
            },
            "finishReason": "STOP",
            "index": 0,
        }
    ],
}
DOCUMENTED_CALL = ToolCall(
    name="set_light_values", arguments={"color_temp": "warm", "brightness": 25}, id=None
)


# --- declare ---------------------------------------------------------------------------


def test_function_declarations_carry_the_json_schema() -> None:
    declared = fmt.function_declarations([set_light_values])
    assert declared == [
        {
            "name": "set_light_values",
            "description": "Sets the brightness and color temperature of a light.",
            "parameters_json_schema": {
                "type": "object",
                "properties": {
                    "brightness": {
                        "type": "integer",
                        "description": "Light level from 0 to 100. Zero is off and 100 is full "
                        "brightness",
                    },
                    "color_temp": {
                        "type": "string",
                        "enum": ["daylight", "cool", "warm"],
                        "description": "Color temperature of the light fixture, which can be "
                        "`daylight`, `cool` or `warm`.",
                    },
                },
                "required": ["brightness", "color_temp"],
                "additionalProperties": False,
            },
        }
    ]
    conforms(gt.FunctionDeclarationDict, declared[0])
    model_round_trip(gt.FunctionDeclaration, declared[0], by_alias=False)


def test_tools_hold_every_declaration_in_one_tool_for_the_config() -> None:
    declared = fmt.tools(shop())
    assert declared == [{"function_declarations": fmt.function_declarations(shop())}]
    assert declared[0]["function_declarations"][0] == {
        "name": "order_status",
        "description": "Look up one of the user's orders.",
        "parameters_json_schema": ORDER_SCHEMA,
    }
    conforms(gt.ToolDict, declared[0])
    model_round_trip(gt.Tool, declared[0], by_alias=False)
    config = gt.GenerateContentConfig.model_validate({"tools": declared})
    assert config.tools is not None


def test_a_name_gemini_refuses_is_an_error_naming_the_tool() -> None:
    @tool(name="3d-render")
    def render() -> str:
        return ""

    with pytest.raises(ToolDefinitionError) as caught:
        fmt.tools([render])
    assert str(caught.value) == (
        "tool '3d-render': Gemini function names start with a letter or an underscore; "
        "rename it with @tool(name=...)"
    )


# --- parse -----------------------------------------------------------------------------


def test_the_documented_reply_parses_in_every_form() -> None:
    response = gt.GenerateContentResponse.model_validate(DOCUMENTED_RESPONSE)
    assert response.candidates is not None and response.candidates[0].content is not None
    content = response.candidates[0].content
    forms = [
        response,
        content,
        content.parts,
        response.model_dump(),
        DOCUMENTED_RESPONSE,
        DOCUMENTED_RESPONSE["candidates"][0]["content"],
    ]
    for form in forms:
        assert fmt.parse_calls(form) == [DOCUMENTED_CALL]


def test_calls_keep_their_ids_and_other_parts_are_skipped() -> None:
    content = gt.Content(
        role="model",
        parts=[
            gt.Part(text="Turning it on."),
            gt.Part(function_call=gt.FunctionCall(id="fc-1", name="a", args={"x": 1})),
            gt.Part(function_call=gt.FunctionCall(id="fc-2", name="b")),
        ],
    )
    assert fmt.parse_calls(content) == [
        ToolCall(name="a", arguments={"x": 1}, id="fc-1"),
        ToolCall(name="b", arguments=None, id="fc-2"),
    ]
    assert fmt.parse_calls(gt.GenerateContentResponse(candidates=[])) == []


def test_parse_calls_refuses_what_is_not_a_gemini_reply() -> None:
    with pytest.raises(TypeError) as caught:
        fmt.parse_calls({"choices": []})
    assert str(caught.value) == (
        "gemini.parse_calls takes a GenerateContentResponse, a Content or its parts, got dict"
    )


# --- reply -----------------------------------------------------------------------------

OK = ToolResult(call_id="fc-1", name="a", content="42")
FAILED = ToolResult(call_id="fc-2", name="b", content="There is no order 7.", is_error=True)
NO_ID = ToolResult(call_id=None, name="c", content="done")
PNG_BYTES = b"\x89PNG\r\n\x1a\n"
PNG = Image(data=base64.b64encode(PNG_BYTES).decode(), media_type="image/png")
PICTURE = ToolResult(call_id="fc-3", name="chart", content=(Text(text="The chart:"), PNG))


def test_function_responses_carry_output_or_error() -> None:
    parts = fmt.parts([OK, FAILED, NO_ID])
    assert parts == [
        {"function_response": {"id": "fc-1", "name": "a", "response": {"output": "42"}}},
        {
            "function_response": {
                "id": "fc-2",
                "name": "b",
                "response": {"error": "There is no order 7."},
            }
        },
        {"function_response": {"name": "c", "response": {"output": "done"}}},
    ]
    for part in parts:
        conforms(gt.PartDict, part)
        model_round_trip(gt.Part, part, by_alias=False)
    content = fmt.content([OK])
    assert content == {"role": "user", "parts": fmt.parts([OK])}
    conforms(gt.ContentDict, content)
    model_round_trip(gt.Content, content, by_alias=False)


def test_images_go_in_the_function_response_parts_as_bytes() -> None:
    parts = fmt.parts(PICTURE)
    assert parts == [
        {
            "function_response": {
                "id": "fc-3",
                "name": "chart",
                "response": {"output": "The chart:"},
                "parts": [{"inline_data": {"mime_type": "image/png", "data": PNG_BYTES}}],
            }
        }
    ]
    conforms(gt.PartDict, parts[0], mode="python")
    part = model_round_trip(gt.Part, parts[0], by_alias=False)
    assert part.function_response.parts[0].inline_data.data == PNG_BYTES


# --- round trips with a scripted model ---------------------------------------------------


def _scripted(*calls: tuple[str, str, dict[str, Any]]) -> gt.GenerateContentResponse:
    """A model turn calling functions in parallel, built from the SDK's own types."""
    return gt.GenerateContentResponse(
        candidates=[
            gt.Candidate(
                index=0,
                finish_reason=gt.FinishReason.STOP,
                content=gt.Content(
                    role="model",
                    parts=[
                        gt.Part(function_call=gt.FunctionCall(id=call_id, name=name, args=args))
                        for call_id, name, args in calls
                    ],
                ),
            )
        ]
    )


def test_round_trip(logs: list[dict[str, Any]]) -> None:
    dispatcher = shop()
    declared = fmt.tools(dispatcher)
    response = _scripted(
        ("fc-order", "order_status", {"order_id": 42}),
        ("fc-refund", "refund", {"order_id": 42, "reason": "late"}),
    )
    round_ = dispatcher.run(fmt.parse_calls(response), context=ALICE)
    check_round(round_)
    reply = fmt.content(round_)
    failed = round_.results[1]
    assert reply == {
        "role": "user",
        "parts": [
            {
                "function_response": {
                    "id": "fc-order",
                    "name": "order_status",
                    "response": {"output": ORDER_CONTENT},
                }
            },
            {
                "function_response": {
                    "id": "fc-refund",
                    "name": "refund",
                    "response": {"error": failed.content},
                }
            },
        ],
    }
    conforms(gt.ContentDict, reply)
    model_round_trip(gt.Content, reply, by_alias=False)
    for declaration in declared:
        model_round_trip(gt.Tool, declaration, by_alias=False)
    assert_nothing_leaks(declared, reply)
    events = [event for event in logs if event.get("error_id") == failed.error_id]
    assert len(events) == 1 and SECRET in str(events[0]["exc_info"])


def test_a_model_that_spoofs_an_injected_argument_is_refused() -> None:
    response = _scripted(("fc-s", "order_status", {"order_id": 42, "user": {"id": "admin"}}))
    round_ = shop().run(fmt.parse_calls(response), context=ALICE)
    assert fmt.parts(round_) == [
        {
            "function_response": {
                "id": "fc-s",
                "name": "order_status",
                "response": {"error": f"Invalid arguments for tool 'order_status':\n- {SPOOF}"},
            }
        }
    ]


def test_every_call_gets_one_answer_in_order_even_unknown_ones() -> None:
    response = _scripted(("a", "no_such_tool", {}), ("b", "order_status", {"order_id": 1}))
    parts = fmt.parts(shop().run(fmt.parse_calls(response), context=ALICE))
    assert [
        (p["function_response"]["id"], list(p["function_response"]["response"])) for p in parts
    ] == [
        ("a", ["error"]),
        ("b", ["output"]),
    ]
