"""toolguard.formats.mcp against the MCP SDK's own types (wire form, camelCase).

Pins: the Tool definitions of a ``tools/list`` result, parsing a ``tools/call``
request (the spec's example, SDK objects, the params alone), ``CallToolResult``
with ``isError`` and ``structuredContent``, image content, and a scripted round
trip where a hidden cause never reaches a produced byte.
"""

from __future__ import annotations

from typing import Annotated, Any

import mcp.types as mt
import pytest
from mcp.types.jsonrpc import JSONRPCRequest, JSONRPCResponse

from tests.formats._conforms import model_round_trip
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
from toolguard import Dispatcher, Image, Text, ToolCall, ToolResult, tool
from toolguard.formats import mcp as fmt


@tool
def get_weather(location: Annotated[str, "City name or zip code"]) -> dict[str, Any]:
    """Get current weather information for a location."""
    return {"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65}


# The specification's tools/call example request.
DOCUMENTED_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 2,
    "method": "tools/call",
    "params": {"name": "get_weather", "arguments": {"location": "New York"}},
}
DOCUMENTED_CALL = ToolCall(name="get_weather", arguments={"location": "New York"}, id="2")


# --- declare ---------------------------------------------------------------------------


def test_tools_are_mcp_tool_definitions() -> None:
    declared = fmt.tools([get_weather])
    assert declared == [
        {
            "name": "get_weather",
            "description": "Get current weather information for a location.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "City name or zip code"}
                },
                "required": ["location"],
                "additionalProperties": False,
            },
        }
    ]
    model_round_trip(mt.Tool, declared[0], by_alias=True)
    model_round_trip(mt.ListToolsResult, {"tools": declared}, by_alias=True)


def test_injected_arguments_are_absent_and_docstring_descriptions_present() -> None:
    assert fmt.tools(shop())[0] == {
        "name": "order_status",
        "description": "Look up one of the user's orders.",
        "inputSchema": ORDER_SCHEMA,
    }


# --- parse -----------------------------------------------------------------------------


def test_the_documented_request_parses_in_every_form() -> None:
    envelope = JSONRPCRequest.model_validate(DOCUMENTED_REQUEST)
    request = mt.CallToolRequest.model_validate(
        {"method": envelope.method, "params": envelope.params}
    )
    assert fmt.parse_call(DOCUMENTED_REQUEST) == DOCUMENTED_CALL
    assert fmt.parse_call(envelope) == DOCUMENTED_CALL
    assert fmt.parse_call(request, call_id="2") == DOCUMENTED_CALL
    assert fmt.parse_call(request.params, call_id="2") == DOCUMENTED_CALL
    assert fmt.parse_call(DOCUMENTED_REQUEST["params"]) == ToolCall(
        name="get_weather", arguments={"location": "New York"}, id=None
    )
    assert fmt.parse_call(DOCUMENTED_REQUEST, call_id="mine").id == "mine"


def test_a_request_that_is_not_tools_call_is_refused() -> None:
    with pytest.raises(ValueError) as caught:
        fmt.parse_call({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert str(caught.value) == "mcp.parse_call answers 'tools/call' requests, got 'tools/list'"
    with pytest.raises(TypeError, match=r"^mcp.parse_call takes a tools/call request"):
        fmt.parse_call({"params": {"arguments": {}}})


# --- reply -----------------------------------------------------------------------------


def test_a_tool_that_returns_a_json_object_gets_structured_content() -> None:
    result = Dispatcher([get_weather]).dispatch(fmt.parse_call(DOCUMENTED_REQUEST))
    answer = fmt.call_result(result)
    assert answer == {
        "content": [
            {
                "type": "text",
                "text": '{"temperature":22.5,"conditions":"Partly cloudy","humidity":65}',
            }
        ],
        "structuredContent": {"temperature": 22.5, "conditions": "Partly cloudy", "humidity": 65},
        "isError": False,
    }
    model_round_trip(mt.CallToolResult, answer, by_alias=True)


def test_failures_are_results_with_is_error_and_no_structured_content() -> None:
    failed = ToolResult(call_id="1", name="a", content='{"looks": "like json"}', is_error=True)
    answer = fmt.call_result(failed)
    assert answer == {
        "content": [{"type": "text", "text": '{"looks": "like json"}'}],
        "isError": True,
    }
    model_round_trip(mt.CallToolResult, answer, by_alias=True)


@pytest.mark.parametrize("content", ["42", "[1, 2]", "plain text", "{not json"])
def test_only_a_json_object_is_structured(content: str) -> None:
    answer = fmt.call_result(ToolResult(call_id="1", name="a", content=content))
    assert answer == {"content": [{"type": "text", "text": content}], "isError": False}


def test_images_are_image_content() -> None:
    picture = ToolResult(
        call_id="1",
        name="chart",
        content=(Text(text="The chart:"), Image(data="iVBORw0KGgo=", media_type="image/png")),
    )
    answer = fmt.call_result(picture)
    assert answer == {
        "content": [
            {"type": "text", "text": "The chart:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ],
        "isError": False,
    }
    model_round_trip(mt.CallToolResult, answer, by_alias=True)


# --- round trip with a scripted client -------------------------------------------------


def test_round_trip(logs: list[dict[str, Any]]) -> None:
    dispatcher = shop()
    declared = fmt.tools(dispatcher)
    requests = [
        JSONRPCRequest(
            jsonrpc="2.0",
            id=7,
            method="tools/call",
            params={"name": "order_status", "arguments": {"order_id": 42}},
        ),
        JSONRPCRequest(
            jsonrpc="2.0",
            id=8,
            method="tools/call",
            params={"name": "refund", "arguments": {"order_id": 42, "reason": "late"}},
        ),
    ]
    round_ = dispatcher.run([fmt.parse_call(request) for request in requests], context=ALICE)
    check_round(round_)
    assert [result.call_id for result in round_.results] == ["7", "8"]
    responses: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": request.id, "result": fmt.call_result(result)}
        for request, result in zip(requests, round_.results, strict=True)
    ]
    failed = round_.results[1]
    assert [response["result"] for response in responses] == [
        {
            "content": [{"type": "text", "text": ORDER_CONTENT}],
            "structuredContent": {"order_id": 42, "status": "shipped", "owner": "u-7"},
            "isError": False,
        },
        {"content": [{"type": "text", "text": failed.content}], "isError": True},
    ]
    for response in responses:
        JSONRPCResponse.model_validate(response)
        model_round_trip(mt.CallToolResult, response["result"], by_alias=True)
    model_round_trip(mt.ListToolsResult, {"tools": declared}, by_alias=True)
    assert_nothing_leaks(declared, responses)
    events = [event for event in logs if event.get("error_id") == failed.error_id]
    assert len(events) == 1 and SECRET in str(events[0]["exc_info"])


def test_a_client_that_spoofs_an_injected_argument_is_refused() -> None:
    request = {
        "jsonrpc": "2.0",
        "id": 9,
        "method": "tools/call",
        "params": {"name": "order_status", "arguments": {"order_id": 42, "call_id": "fake"}},
    }
    answer = fmt.call_result(shop().dispatch(fmt.parse_call(request), context=ALICE))
    assert answer == {
        "content": [
            {
                "type": "text",
                "text": "Invalid arguments for tool 'order_status':\n"
                "- 'call_id': set by the application; it cannot be sent",
            }
        ],
        "isError": True,
    }
    assert SPOOF.replace("'user'", "'call_id'") in answer["content"][0]["text"]
