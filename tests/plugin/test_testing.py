"""toolguard.testing: the helpers users test their own agents with."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pydantic
import pytest
import structlog

import toolguard
from toolguard import Dispatcher, Round, Text, ToolCall, ToolCallFailed, ToolResult, formats, tool
from toolguard.handlers import fail
from toolguard.testing import (
    ScriptedModel,
    anthropic_response,
    assert_logged_once,
    assert_not_leaked,
    capture_events,
    openai_response,
)

SECRET = "pw-3f9a1c7e"


@tool
def lookup(order: int) -> str:
    """Look an order up."""
    if order == 13:
        raise ConnectionError(f"db login with {SECRET} refused")
    return f"order {order} shipped"


# --- capture_events ---------------------------------------------------------------------


def test_capture_events_keeps_only_toolguards_events() -> None:
    other = structlog.get_logger("someone.else")
    with capture_events() as events:
        other.info("not toolguard's")
        structlog.get_logger().warning("nameless")
        result = Dispatcher([lookup]).dispatch(
            ToolCall(name="lookup", arguments={"order": 13}, id="c1")
        )
    [event] = events
    assert event["event"] == "tool_error_hidden"
    assert event["log_level"] == "warning"
    assert event["error_id"] == result.error_id
    assert isinstance(event["exc_info"], ConnectionError)


def test_capture_events_restores_structlogs_configuration() -> None:
    before = structlog.get_config()
    with capture_events():
        assert structlog.get_config()["logger_factory"] is not before["logger_factory"]
    assert structlog.get_config() == before


def test_capture_events_sees_events_from_other_threads() -> None:
    with capture_events() as events, Dispatcher([lookup]) as agent:
        agent.run([ToolCall(name="lookup", arguments={"order": 13}, id=str(n)) for n in range(4)])
    assert sorted(e["call_id"] for e in events) == ["0", "1", "2", "3"]


# --- assert_logged_once --------------------------------------------------------------


def test_assert_logged_once_takes_an_id_a_result_or_a_failure() -> None:
    with capture_events() as events:
        result = Dispatcher([lookup]).dispatch(ToolCall(name="lookup", arguments={"order": 13}))
        with pytest.raises(ToolCallFailed) as failed:
            Dispatcher([lookup], on_error=fail).dispatch(
                ToolCall(name="lookup", arguments={"order": 13})
            )
    assert assert_logged_once(events, result)["event"] == "tool_error_hidden"
    assert assert_logged_once(events, str(result.error_id))["tool"] == "lookup"
    assert assert_logged_once(events, failed.value)["event"] == "tool_call_failed"


def test_assert_logged_once_fails_for_none_twice_or_a_result_that_hid_nothing() -> None:
    event = {"event": "tool_error_hidden", "error_id": "abc"}
    with pytest.raises(AssertionError, match="logged 0 times"):
        assert_logged_once([], "abc")
    with pytest.raises(AssertionError, match="logged 2 times"):
        assert_logged_once([event, event], "abc")
    ok = ToolResult(call_id="1", name="lookup", content="fine")
    with pytest.raises(AssertionError, match="hid nothing"):
        assert_logged_once([event], ok)
    with pytest.raises(TypeError):
        assert_logged_once([event], "")


def test_assert_logged_once_on_no_events_at_all_says_how_events_are_captured() -> None:
    with pytest.raises(AssertionError, match="No toolguard event was captured") as caught:
        assert_logged_once([], "abc")
    assert "capture_events()" in str(caught.value)
    assert "cache_logger_on_first_use" in str(caught.value)


# --- assert_not_leaked --------------------------------------------------------------------


class Reply(pydantic.BaseModel):
    content: str


@dataclasses.dataclass
class Note:
    text: str


@pytest.mark.parametrize(
    "value",
    [
        ToolResult(call_id="1", name="t", content=f"oops {SECRET}"),
        ToolResult(call_id="1", name="t", content=(Text(text="a"), Text(text=SECRET))),
        Round(results=(ToolResult(call_id="1", name="t", content=SECRET),)),
        {"role": "tool", "content": f"x {SECRET}"},
        [{"content": [{"type": "text", "text": SECRET}]}],
        {SECRET: "a key"},
        Reply(content=SECRET),
        Note(text=SECRET),
        SECRET,
        SECRET.encode(),
        frozenset({SECRET}),
        {"nested": json.dumps({"quoted": f'say "{SECRET}"'})},
        object.__new__(type("Opaque", (), {"__repr__": lambda self: f"Opaque({SECRET})"})),
    ],
    ids=lambda v: type(v).__name__,
)
def test_assert_not_leaked_finds_the_secret_wherever_it_would_be_sent(value: Any) -> None:
    with pytest.raises(AssertionError, match="the secret leaked at") as caught:
        assert_not_leaked(value, SECRET)
    assert SECRET not in str(caught.value)  # the failure message masks it


@pytest.mark.parametrize("position", [1, 2, 4])
def test_assert_not_leaked_looks_inside_every_object_of_a_list_or_dict(position: int) -> None:
    """Each pydantic object is dumped to a temporary dict; a dump freed before the next is
    made may get the same address, which must not make the next object look seen."""
    replies = [Reply(content=f"reply {index}") for index in range(5)]
    replies[position] = Reply(content=f"reply with {SECRET}")
    with pytest.raises(AssertionError, match=rf"at \[{position}\]"):
        assert_not_leaked(replies, SECRET)
    with pytest.raises(AssertionError, match=rf"at \['r{position}'\]"):
        assert_not_leaked({f"r{index}": reply for index, reply in enumerate(replies)}, SECRET)
    with pytest.raises(AssertionError, match="the secret leaked"):
        assert_not_leaked(tuple(replies), SECRET)


def test_assert_not_leaked_finds_a_json_escaped_secret() -> None:
    secret = 'p"ss\\wörd'
    message = {"content": json.dumps({"error": f"bad {secret}"})}
    with pytest.raises(AssertionError, match=r"\['content'\]"):
        assert_not_leaked(message, secret)


def test_assert_not_leaked_passes_clean_values_and_ignores_the_artifact() -> None:
    result = ToolResult(call_id="1", name="t", content="all good", artifact={"token": SECRET})
    assert_not_leaked(result, SECRET)
    assert_not_leaked(Round(results=(result,), stop=True, final=result), SECRET)
    assert_not_leaked([{"a": 1, "b": None, "c": 2.5}], SECRET)
    cycle: list[Any] = ["fine"]
    cycle.append(cycle)
    assert_not_leaked(cycle, SECRET)
    with pytest.raises(ValueError, match="non-empty"):
        assert_not_leaked("x", "")


def test_assert_not_leaked_on_a_real_hidden_failure() -> None:
    result = Dispatcher([lookup]).dispatch(
        ToolCall(name="lookup", arguments={"order": 13}, id="c1")
    )
    assert_not_leaked(result, SECRET)
    assert_not_leaked(formats.openai.messages([result]), SECRET)
    assert_not_leaked(formats.anthropic.message([result]), SECRET)


# --- the scripted model ----------------------------------------------------------------


def test_openai_response_is_chat_completions_shaped() -> None:
    response = openai_response(
        [("lookup", {"order": 42}), ToolCall(name="lookup", arguments='{"order": 7', id="x")]
    )
    [choice] = response["choices"]
    assert choice["finish_reason"] == "tool_calls"
    first, second = choice["message"]["tool_calls"]
    assert first == {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"order": 42}'},
    }
    assert second["id"] == "x"
    assert second["function"]["arguments"] == '{"order": 7'  # malformed, as given
    assert (
        openai_response([("lookup", None)])["choices"][0]["message"]["tool_calls"][0]["function"][
            "arguments"
        ]
        == "{}"
    )
    final = openai_response(content="Done.")
    assert final["choices"][0]["finish_reason"] == "stop"
    assert "tool_calls" not in final["choices"][0]["message"]


def test_anthropic_response_is_messages_shaped() -> None:
    response = anthropic_response([("lookup", '{"order": 42}'), ("lookup", "{bad")], text="Hm.")
    text, first, second = response["content"]
    assert text == {"type": "text", "text": "Hm."}
    assert first == {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"order": 42}}
    assert second["input"] == "{bad"
    assert anthropic_response([("lookup", None)])["content"][0]["input"] == {}
    assert anthropic_response([("lookup", "[1]")])["content"][0]["input"] == "[1]"
    assert response["stop_reason"] == "tool_use"
    assert anthropic_response(text="Bye.")["stop_reason"] == "end_turn"


def test_responses_round_trip_through_the_provider_parsers() -> None:
    calls = [("lookup", {"order": 42}), ("lookup", {"order": 13})]
    for parsed in (
        formats.openai.parse_calls(openai_response(calls)),
        formats.anthropic.parse_calls(anthropic_response(calls)),
    ):
        assert [c.name for c in parsed] == ["lookup", "lookup"]
        results = Dispatcher([lookup]).run(parsed).results
        assert results[0].content == "order 42 shipped"
        assert results[1].is_error


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_scripted_agent_loop_runs_offline(provider: Any) -> None:
    model = ScriptedModel(
        [
            [("lookup", {"order": 42}), ("lookup", {"order": 13})],
            [("lookup", {"order": 7})],
            "Order 42 and 7 shipped; 13 could not be checked.",
        ],
        provider=provider,
    )
    agent = Dispatcher([lookup])
    history: list[Any] = [{"role": "user", "content": "Where are my orders?"}]
    client_create = model.chat.completions.create if provider == "openai" else model.messages.create
    with capture_events() as events:
        for _ in range(10):
            reply = client_create(messages=list(history))
            if provider == "openai":
                calls = formats.openai.parse_calls(reply)
                history.append(reply["choices"][0]["message"])
            else:
                calls = formats.anthropic.parse_calls(reply)
                history.append({"role": "assistant", "content": reply["content"]})
            if not calls:
                break
            round_ = agent.run(calls)
            if provider == "openai":
                history.extend(formats.openai.messages(round_))
            else:
                history.append(formats.anthropic.message(round_))
    model.assert_finished()
    assert len(model.requests) == 3
    assert_not_leaked(history, SECRET)
    [event] = events
    ids = [c["id"] for c in model.requests[2]["messages"][1].get("tool_calls", [])] or [
        b["id"] for b in model.requests[2]["messages"][1]["content"]
    ]
    assert ids == (["call_1", "call_2"] if provider == "openai" else ["toolu_1", "toolu_2"])
    assert event["call_id"] == ids[1]


def test_the_scripted_model_says_when_the_loop_ran_too_long_or_stopped_early() -> None:
    model = ScriptedModel(["Hello."])
    assert model.remaining == 1
    with pytest.raises(AssertionError, match="still has 1 of 1"):
        model.assert_finished()
    assert model()["choices"][0]["message"]["content"] == "Hello."
    model.assert_finished()
    with pytest.raises(AssertionError, match="did not stop"):
        model.create()
    with pytest.raises(TypeError, match="a scripted tool call"):
        ScriptedModel([[42]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="provider"):
        ScriptedModel([], provider="gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_scripted_model_answers_with_the_sdks_own_objects_when_asked(
    provider: Any,
) -> None:
    """The real client returns objects (``response.choices[0]``), not dicts: a loop
    written for one is tested with ``sdk=True``."""
    from anthropic.types import Message
    from openai.types.chat import ChatCompletion

    from toolguard.formats import anthropic, openai

    model = ScriptedModel([[("lookup", {"order": 13})], "Done."], provider=provider, sdk=True)
    first = model.create(messages=[])
    if provider == "openai":
        assert isinstance(first, ChatCompletion)
        assert first.choices[0].message.tool_calls is not None
        assert [c.name for c in openai.parse_calls(first)] == ["lookup"]
        assert model.create(messages=[]).choices[0].message.content == "Done."
    else:
        assert isinstance(first, Message)
        assert [c.name for c in anthropic.parse_calls(first)] == ["lookup"]
        assert model.create(messages=[]).content[0].text == "Done."
    model.assert_finished()
    assert isinstance(ScriptedModel(["x"], provider=provider).create(), dict)  # the default


def test_the_scripted_model_says_what_to_install_for_sdk_objects(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "anthropic.types", None)  # as if not installed
    with pytest.raises(ValueError, match=r"pip install anthropic \(or leave sdk=False"):
        ScriptedModel(["x"], provider="anthropic", sdk=True)


def test_configure_is_untouched_by_the_helpers() -> None:
    toolguard.configure(on_error="global")
    with capture_events():
        pass
    assert toolguard.get_config().on_error is not toolguard.UNSET
