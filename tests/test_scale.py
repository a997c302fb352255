"""What grows with the input stays bounded (issue 16): unknown tools among many,
large arguments in log events, tracebacks, a one-call round.

Costs are measured in ``benchmarks/``; these tests pin the behaviour that makes the
cost bounded (how many names are compared, how much is logged), never a time.
"""

from __future__ import annotations

import asyncio
import json
import random
import traceback
from typing import Any

import pydantic_core
import pytest

from tests._content import str_content
from toolguard import ControlFlow, Dispatcher, ToolCall, ToolCallFailed, ToolPolicy, tool
from toolguard._suggest import _SEEDS, CANDIDATES, Names

MANY = 10_000


def _names(count: int) -> list[str]:
    return [f"tool_{i:05d}" for i in range(count)]


def _many_tools(count: int) -> list[Any]:
    made = []
    for name in _names(count):

        @tool(name=name)
        def each() -> str:
            return "ok"

        made.append(each)
    return made


@pytest.fixture(scope="module")
def crowd() -> Dispatcher:
    return Dispatcher(_many_tools(MANY))


def test_an_unknown_name_among_many_tools_is_answered_briefly(crowd: Dispatcher) -> None:
    result = crowd.dispatch(ToolCall(name="tool_04242x", arguments={}, id="1"))
    message = str_content(result)
    assert result.is_error
    assert "did you mean 'tool_04242'?" in message
    assert f"(and {MANY - 20} more)" in message
    assert len(message) < 600  # twenty names and a count, not ten thousand names


def test_the_message_does_not_grow_with_the_number_of_tools(crowd: Dispatcher) -> None:
    few = Dispatcher(_many_tools(10))
    call = ToolCall(name="nothing_like_it", arguments={}, id="1")
    small = str_content(few.dispatch(call))
    large = str_content(crowd.dispatch(call))
    assert "tool_00009" in small and "more)" not in small
    assert len(large) - len(small) < 250  # ten more names and "(and N more)"


def test_a_suggestion_compares_a_bounded_number_of_names() -> None:
    names = Names([*_names(MANY // 2), "search_web", *_names(MANY)[MANY // 2 :]])
    for word in ("tool_04242x", "tool_", "xyz", "", "t" * 10_000, "tool_99999"):
        assert len(names._candidates(word)) <= _SEEDS * CANDIDATES
    assert names.did_you_mean("serch_web") == " (did you mean 'search_web'?)"
    assert names.did_you_mean("completely different") == ""


_WORDS = (
    "search", "web", "read", "write", "file", "send", "email", "user", "get", "create",
    "delete", "issue", "list", "update", "repo", "slack", "post", "message", "jira", "github",
    "calendar", "event", "db", "query", "table", "image", "resize", "pdf", "parse", "weather",
    "account", "invoice", "payment", "order", "customer", "ticket", "report", "metric", "alert",
    "deploy", "build", "test", "log", "trace", "span", "cache", "queue", "job", "task", "note",
    "doc", "sheet", "cell", "row", "column", "folder", "drive", "share", "link", "comment",
)  # fmt: skip


def _catalog(count: int) -> list[str]:
    """``count`` tool names as a large catalog has them: two or three words each."""
    draw, names = random.Random(16), set[str]()
    while len(names) < count:
        names.add("_".join(draw.sample(_WORDS, draw.choice((2, 3, 3)))))
    return sorted(names)


def test_among_thousands_of_tools_a_slip_is_matched_to_its_own_tool() -> None:
    """A letter dropped from one of 10,000 catalog names: the suggestion is that name
    in at least 80 of 100 cases (counting shared pieces, as before, managed 49)."""
    catalog = _catalog(MANY)
    names = Names(catalog)
    draw = random.Random(7)
    slips = []
    for own in draw.sample(catalog, 400):
        cut = draw.randrange(len(own))
        slip = own[:cut] + own[cut + 1 :]
        if slip not in catalog:
            slips.append((own, slip))
    matched = sum(names.did_you_mean(slip) == f" (did you mean {own!r}?)" for own, slip in slips)
    assert matched >= 0.8 * len(slips)


def test_a_suggestion_still_finds_a_typo_among_few_names() -> None:
    names = Names(["search_web", "read_file", "write_file", "send_email"])
    assert names.did_you_mean("serch_web") == " (did you mean 'search_web'?)"
    assert names.did_you_mean("write_fiel") == " (did you mean 'write_file'?)"
    assert Names([]).listing == "none"


# -- large arguments in the log ------------------------------------------------


@tool
def fails(text: str = "", items: list[str] | None = None, token: str = "") -> str:
    raise RuntimeError("db down")


def _hidden(logs: list[dict[str, Any]]) -> dict[str, Any]:
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    return event


def _logged_size(value: Any) -> int:
    return len(json.dumps(value))


def test_a_megabyte_argument_is_logged_bounded_and_marked(logs: list[dict[str, Any]]) -> None:
    text = "x" * 1_000_000
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments={"text": text}, id="1"))
    logged = _hidden(logs)["arguments"]["text"]
    assert logged.startswith("x" * 1_000)
    assert logged.endswith(" more characters cut]") and len(logged) < 2_100
    assert _logged_size(_hidden(logs)["arguments"]) < 2_200


def test_a_json_string_of_arguments_is_bounded_too(logs: list[dict[str, Any]]) -> None:
    raw = json.dumps({"token": "sk-1", "items": ["y" * 100] * 10_000})
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=raw, id="1"))
    logged = _hidden(logs)["arguments"]
    assert logged["token"] == "[redacted]"
    assert (
        logged["items"][-1].startswith("[toolguard: ") and "more items cut" in logged["items"][-1]
    )
    assert _logged_size(logged) < 3_000


def test_a_long_json_string_is_parsed_only_as_far_as_the_event_can_show(
    logs: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    parsed: list[int] = []
    real = pydantic_core.from_json

    def counting(data: str, **options: Any) -> Any:
        parsed.append(len(data))
        return real(data, **options)

    monkeypatch.setattr(pydantic_core, "from_json", counting)
    raw = json.dumps({"text": "q" * 1_000_000})
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=raw, id="1"))
    assert parsed == [6 * 2_000]  # the log's one parse; validation is pydantic's own
    logged = _hidden(logs)["arguments"]["text"]
    assert logged == "q" * (2_000 - len("text") - 8) + "...[toolguard: more characters cut]"


def test_a_prefix_that_the_bound_does_not_cut_is_marked_as_cut(
    logs: list[dict[str, Any]],
) -> None:
    # white space parses to nothing: the prefix ends before the event's bound is spent
    raw = '{"text": "a",' + " " * 20_000 + '"token": "sk-1", "items": ["b"]}'
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=raw, id="1"))
    assert _hidden(logs)["arguments"] == {
        "text": "a",
        "...": f"[toolguard: the rest of {len(raw)} characters of JSON cut]",
    }


def test_a_secret_in_a_cut_prefix_is_redacted_and_a_cut_key_is_not_shown(
    logs: list[dict[str, Any]],
) -> None:
    raw = '{"token": "' + "s" * 20_000 + '", "text": "sk-2"}'
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=raw, id="1"))
    shown = _hidden(logs)["arguments"]
    assert shown == {
        "token": "[redacted]",
        "...": f"[toolguard: the rest of {len(raw)} characters of JSON cut]",
    }
    # the prefix ends inside a key: the key's start is not shown as a key
    raw = '{"text": "a",' + " " * (12_000 - 16) + '"token": "sk-3"}'
    assert raw[:12_000].endswith('"to')
    logs.clear()
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=raw, id="1"))
    assert list(_hidden(logs)["arguments"]) == ["text", "..."]


def test_unbounded_arguments_are_parsed_whole(logs: list[dict[str, Any]]) -> None:
    raw = json.dumps({"text": "x", "items": ["y"] * 20_000})
    Dispatcher([fails], max_logged_arguments=None).dispatch(
        ToolCall(name="fails", arguments=raw, id="1")
    )
    assert _hidden(logs)["arguments"] == json.loads(raw)


def test_the_bound_is_a_policy_setting(logs: list[dict[str, Any]]) -> None:
    text = "z" * 50_000
    unbounded = Dispatcher([fails], max_logged_arguments=None)
    unbounded.dispatch(ToolCall(name="fails", arguments={"text": text}, id="1"))
    assert _hidden(logs)["arguments"]["text"] == text
    with pytest.raises(ValueError, match="at least 100"):
        ToolPolicy(max_logged_arguments=10)
    with pytest.raises(ValueError, match="log_frames"):
        ToolPolicy(log_frames="some")  # type: ignore[arg-type]


def test_short_arguments_are_logged_whole(logs: list[dict[str, Any]]) -> None:
    arguments = {"text": "short", "items": ["a", "b"]}
    Dispatcher([fails]).dispatch(ToolCall(name="fails", arguments=arguments, id="1"))
    assert _hidden(logs)["arguments"] == arguments


# -- tracebacks start at the tool ----------------------------------------------


def _first_frame(event: dict[str, Any]) -> str:
    error = event["exc_info"]
    return traceback.extract_tb(error.__traceback__)[0].name


@tool
async def afails() -> str:
    raise RuntimeError("db down")


@tool(timeout=5)
def timed_fails() -> str:
    raise RuntimeError("db down")


@tool(retries=1)
def retried_fails() -> str:
    raise ConnectionError("reset")


@pytest.mark.parametrize("tool_", [fails, timed_fails, retried_fails], ids=lambda t: t.name)
def test_a_logged_traceback_starts_at_the_tool(logs: list[dict[str, Any]], tool_: Any) -> None:
    Dispatcher([tool_]).dispatch(ToolCall(name=tool_.name, arguments={}, id="1"))
    assert _first_frame(_hidden(logs)) == tool_.__wrapped__.__name__


def test_an_async_tool_s_traceback_starts_at_the_tool(logs: list[dict[str, Any]]) -> None:
    asyncio.run(Dispatcher([afails]).adispatch(ToolCall(name="afails", arguments={}, id="1")))
    assert _first_frame(_hidden(logs)) == "afails"


def test_toolguard_s_frames_are_kept_when_asked(logs: list[dict[str, Any]]) -> None:
    everything = Dispatcher([fails], log_frames="all")
    everything.dispatch(ToolCall(name="fails", arguments={}, id="1"))
    frames = traceback.extract_tb(_hidden(logs)["exc_info"].__traceback__)
    assert "toolguard" in frames[0].filename and frames[-1].name == "fails"


# -- a round of one call -------------------------------------------------------


def test_a_one_call_round_runs_in_the_caller_s_task() -> None:
    seen: list[asyncio.Task[Any] | None] = []

    @tool
    async def where() -> str:
        seen.append(asyncio.current_task())
        return "here"

    async def main() -> asyncio.Task[Any] | None:
        round_ = await Dispatcher([where]).arun([ToolCall(name="where", arguments={}, id="1")])
        assert str_content(round_.results[0]) == "here"
        return asyncio.current_task()

    caller = asyncio.run(main())
    assert seen == [caller]


class _Handoff(ControlFlow):
    pass


@tool(on_error="fail")
async def _fails_the_invocation() -> str:
    raise RuntimeError("db down")


@tool
async def _hands_off() -> str:
    raise _Handoff


@tool(return_direct=True)
async def _final() -> str:
    return "the answer"


@pytest.mark.parametrize("session", [False, True], ids=["dispatcher", "session"])
async def test_a_one_call_round_answers_as_a_round_of_many_does(session: bool) -> None:
    agent = Dispatcher([_fails_the_invocation, _hands_off, _final])
    runs = agent.session() if session else agent

    def one(name: str) -> list[ToolCall]:
        return [ToolCall(name=name, arguments={}, id=name)]

    with pytest.raises(ToolCallFailed) as failed:
        await runs.arun(one("_fails_the_invocation"))
    assert failed.value.round is not None
    [answered] = failed.value.round.results
    assert answered.is_error and answered.error_id == failed.value.error_id
    with pytest.raises(_Handoff):
        await runs.arun(one("_hands_off"))
    stopped = await runs.arun(one("_final"))
    assert stopped.stop and stopped.final is stopped.results[0]
    assert str_content(stopped.final) == "the answer"
    # an iterable, not only a list; and an empty round
    assert [r.call_id for r in (await runs.arun(iter(one("_final")))).results] == ["_final"]
    assert (await runs.arun([])).results == ()


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ('["' + "x" * 20_000 + '"]', ["x" * (2_000 - 4) + "...[toolguard: more characters cut]"]),
        ('"' + "y" * 20_000 + '"', "y" * 2_000 + "...[toolguard: more characters cut]"),
        ("[1," + " " * 20_000 + "2]", [1, "[toolguard: the rest of 20005 characters of JSON cut]"]),
        ("7" * 20_000, "[unparsed, 20000 chars]"),  # beyond what pydantic-core parses
        ("not json" + "!" * 20_000, "[unparsed, 20008 chars]"),
    ],
    ids=["list", "string", "list-of-spaces", "number", "not-json"],
)
def test_whatever_a_long_json_string_holds_is_logged_bounded(
    logs: list[dict[str, Any]], raw: str, shown: Any
) -> None:
    # another library's tool, answered in place: its arguments are whatever was sent
    Dispatcher([fails]).handle_error(ToolCall(name="web", arguments=raw, id="1"), OSError("x"))
    assert _hidden(logs)["arguments"] == shown
