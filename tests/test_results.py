"""Return values become model content deterministically; values are frozen."""

from __future__ import annotations

import dataclasses
import datetime as dt
import enum
import math
import uuid
from decimal import Decimal
from typing import Any

import attrs
import pydantic
import pytest

from toolguard import Image, Output, Text, ToolCall, ToolResult
from toolguard.errors import ResultNotSerializable
from toolguard.guard._content import to_content


class Color(enum.Enum):
    RED = "red"


@dataclasses.dataclass
class Point:
    x: int
    y: int


@attrs.define
class Box:
    w: int
    tags: frozenset[str]


class Model(pydantic.BaseModel):
    when: dt.date
    color: Color


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("plain text", "plain text"),
        (3, "3"),
        (1.5, "1.5"),
        (True, "true"),
        (None, "null"),
        ({"b": 1, "a": [1, "x"]}, '{"b":1,"a":[1,"x"]}'),
        ("héllo", "héllo"),
        ({"k": "héllo"}, '{"k":"héllo"}'),
        (Color.RED, '"red"'),
        (dt.datetime(2026, 1, 2, 3, 4, 5), '"2026-01-02T03:04:05"'),
        (dt.timedelta(seconds=90), "90.0"),
        ({3, 1, 2}, "[1,2,3]"),
        (frozenset({"b", "a"}), '["a","b"]'),
        (Decimal("1.10"), '"1.10"'),
        (uuid.UUID(int=1), '"00000000-0000-0000-0000-000000000001"'),
        (Point(1, 2), '{"x":1,"y":2}'),
        (Box(w=1, tags=frozenset({"z", "y"})), '{"w":1,"tags":["y","z"]}'),
        (Model(when=dt.date(2026, 1, 2), color=Color.RED), '{"when":"2026-01-02","color":"red"}'),
        ((1, 2), "[1,2]"),
    ],
)
def test_return_values_serialise_to_deterministic_json(value: Any, content: str) -> None:
    assert to_content(value) == (content, None)


def test_content_blocks_pass_through_as_a_tuple() -> None:
    blocks = [Text(text="see image"), Image(data="aGVsbG8=", media_type="image/png")]
    assert to_content(blocks) == (tuple(blocks), None)
    assert to_content(Text(text="one")) == ((Text(text="one"),), None)


def test_output_separates_content_from_the_artifact() -> None:
    rows = [{"id": 1}]
    assert to_content(Output(content="1 row", artifact=rows)) == ("1 row", rows)


@pytest.mark.parametrize("value", [object(), math.nan, {"x": math.inf}, lambda: 1])
def test_anything_else_is_a_clear_error_not_a_repr(value: Any) -> None:
    with pytest.raises(ResultNotSerializable) as caught:
        to_content(value)
    assert "0x" not in str(caught.value)


def test_values_are_frozen_and_built_with_keywords() -> None:
    call = ToolCall(name="t", arguments={"a": 1}, id="1")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        call.name = "u"  # type: ignore[misc]
    with pytest.raises(TypeError):
        ToolCall("t")  # type: ignore[call-arg]  # positional, refused: the fields are kw-only


def test_result_text_joins_blocks() -> None:
    result = ToolResult(
        call_id="1",
        name="t",
        content=(Text(text="a"), Image(data="", media_type="image/png"), Text(text="b")),
    )
    assert result.text == "a\n[image image/png]\nb"


def test_the_fast_success_constructor_builds_the_same_result() -> None:
    from toolguard._values import _SUCCESS_DEFAULTS, success

    fast = success("c1", "add", "3", {"rows": 1})
    assert fast == ToolResult(call_id="c1", name="add", content="3", artifact={"rows": 1})
    assert repr(fast) == repr(
        ToolResult(call_id="c1", name="add", content="3", artifact={"rows": 1})
    )
    names = {field.name for field in attrs.fields(ToolResult)}
    assert names == {*_SUCCESS_DEFAULTS, "call_id", "name", "content", "artifact", "value"}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        fast.content = "4"  # type: ignore[misc]


def test_the_fast_error_constructor_builds_the_same_result() -> None:
    from toolguard._values import error_result

    fast = error_result("c1", "t", "oops", return_direct=False, error_id="ab", error_kind="hidden")
    built = ToolResult(
        call_id="c1", name="t", content="oops", is_error=True, error_id="ab", error_kind="hidden"
    )
    assert fast == built
    assert fast.__dict__.keys() == built.__dict__.keys()


def test_the_fast_round_constructor_builds_the_same_round() -> None:
    from toolguard._values import Round
    from toolguard.runner._rounds import _round

    plain = ToolResult(call_id="a", name="t", content="1")
    stops = ToolResult(call_id="b", name="t", content="2", return_direct=True)
    also = ToolResult(call_id="c", name="t", content="3", return_direct=True)
    assert _round((plain,), "any") == Round(results=(plain,))
    assert _round((plain, stops, also), "any") == Round(
        results=(plain, stops, also), stop=True, final=stops
    )
    assert _round((plain, stops), "all") == Round(results=(plain, stops))
    assert _round((), "any") == Round(results=())
    assert attrs.fields_dict(Round).keys() == {"results", "stop", "final"}
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        _round((plain,), "any").stop = True  # type: ignore[misc]


def test_a_result_keeps_what_the_tool_returned_and_says_when_content_was_cut() -> None:
    from toolguard import Dispatcher, ToolCall, tool

    rows = [{"id": i, "name": "x" * 50} for i in range(10)]

    @tool(max_result_chars=200)
    def listing() -> list[dict[str, object]]:
        return rows

    @tool
    def small() -> dict[str, int]:
        return {"n": 1}

    agent = Dispatcher([listing, small])
    long = agent.dispatch(ToolCall(name="listing", id="1"))
    assert long.truncated and long.value is rows  # the list itself, never sent
    assert repr(rows[0]) not in repr(long)
    short = agent.dispatch(ToolCall(name="small", id="2"))
    assert not short.truncated and short.value == {"n": 1}
    assert short == ToolResult(call_id="2", name="small", content='{"n":1}')  # value not compared
    failed = agent.dispatch(ToolCall(name="nope", id="3"))
    assert failed.value is None and not failed.truncated
    elsewhere = agent.handle_result(ToolCall(name="listing", id="4"), rows)
    assert elsewhere.value is rows and elsewhere.truncated
