"""Policy files: the format, the presets, every mistake reported, the wheel ships them.

* Each preset loads and behaves as its comments say (a failing tool, the model-facing
  content, the log event).
* Every key of the format loads into the AgentPolicy it describes.
* A corpus of broken files (``tests/policy_corpus/``) pins each ``PolicyFileError``
  message, line and key; hypothesis checks that random documents and random
  mutations of the presets never raise anything else, and that the line finder
  finds every key.
* Precedence with files: a file override beats the decorator, the decorator beats
  the file's defaults, the file is the later word beside code, and ``explain`` says so.
* A built wheel, installed in a fresh virtual environment, loads every preset by name.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import re
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import toolguard.handlers
from toolguard import (
    AgentPolicy,
    Breaker,
    Dispatcher,
    Retry,
    ReturnDirect,
    Setting,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
    tool,
)
from toolguard.files._lines import KeyLines, format_path
from toolguard.files._load import (
    KEYS,
    PolicyFileError,
    Problem,
    load_policy,
    presets,
)
from toolguard.handlers import HandlerContext
from toolguard.policy._precedence import BUILTIN, BUILTIN_MESSAGE

ROOT = Path(__file__).parent.parent
CORPUS = Path(__file__).parent / "policy_corpus"
PRESETS = ("default", "development", "production", "strict")
SECRET = "postgres://admin:hunter2@db.internal/orders"


class Boom(Exception):
    """An unmarked failure: its message must be hidden unless a policy sends it."""


@tool
def lookup(query: str, api_key: str = "", dsn: str = "") -> str:
    """Look something up.

    Args:
        query: What to look up ("visible" and "long" behave specially).
        api_key: A credential the model should never have to send.
        dsn: A connection string.
    """
    if query == "visible":
        raise ToolError("Nothing matches 'visible'. Try other words.")
    if query == "long":
        return "x" * 20_000
    raise Boom(f"connection to {SECRET} refused")


def custom_handler(error: Exception, context: HandlerContext) -> str | None:
    """A custom handler a policy file names by import path."""
    return f"custom: {type(error).__name__} in {context.tool}" if isinstance(error, Boom) else None


def stops(result: ToolResult) -> bool:
    """A return_direct predicate a policy file names by import path."""
    return "stop" in result.text


def _call(query: str, **extra: str) -> ToolCall:
    return ToolCall(name="lookup", arguments={"query": query, **extra}, id="call_1")


def _write(tmp_path: Path, text: str, name: str = "policy.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _hidden_events(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


# --- the presets ----------------------------------------------------------------------


def test_the_presets_are_the_files_in_policies() -> None:
    shipped = presets()
    assert list(shipped) == sorted(PRESETS)
    assert sorted(path.stem for path in (ROOT / "policies").glob("*.toml")) == sorted(PRESETS)
    for name in PRESETS:
        assert load_policy(name).source == str(ROOT / "policies" / f"{name}.toml")


@pytest.mark.parametrize("name", PRESETS)
def test_each_preset_is_commented_to_teach_the_format(name: str) -> None:
    """The file opens with a comment naming the preset, and every key is explained."""
    lines = (ROOT / "policies" / f"{name}.toml").read_text().splitlines()
    assert lines[0].startswith(f'# The "{name}" preset: ')
    for index, line in enumerate(lines):
        if re.match(r"[A-Za-z_]+ = ", line):
            previous = next(p for p in reversed(lines[:index]) if p.strip())
            assert previous.startswith("#"), f"{name}.toml:{index + 1}: {line!r} has no comment"


def test_development_sends_the_exception_message_and_logs_at_debug(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher([lookup], policy=load_policy("development"))
    result = dispatcher.dispatch(_call("q"))
    assert result.is_error
    assert result.content == f"connection to {SECRET} refused"
    [event] = logs
    assert event["event"] == "tool_error_hidden"
    assert event["log_level"] == "debug"
    assert event["error_id"] == result.error_id
    assert event["handler"] == "send_exception_message"
    assert event["answered_by"] == "agent"
    assert isinstance(event["exc_info"], Boom)
    assert dispatcher.dispatch(_call("long")).content == "x" * 20_000  # never truncated


def test_production_sends_a_generic_message_with_the_error_id(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher([lookup], policy=load_policy("production"))
    result = dispatcher.dispatch(_call("q", api_key="sk-123", dsn=SECRET))
    assert result.is_error
    assert result.error_id is not None
    assert result.content == (
        f"The tool 'lookup' failed (error id {result.error_id}). The details are hidden from "
        "you. Do not retry the same call; try another approach, or tell the user and quote "
        "the error id."
    )
    [event] = logs
    assert event["event"] == "tool_error_hidden"
    assert event["log_level"] == "warning"
    assert event["error_id"] == result.error_id
    assert isinstance(event["exc_info"], Boom)
    assert str(event["exc_info"]) == f"connection to {SECRET} refused"
    assert event["arguments"] == {"query": "q", "api_key": "[redacted]", "dsn": "[redacted]"}


def test_production_passes_model_visible_messages_and_truncates_results(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher([lookup], policy=load_policy("production"))
    visible = dispatcher.dispatch(_call("visible"))
    assert visible.content == "Nothing matches 'visible'. Try other words."
    assert visible.error_id is None
    assert logs == []
    long = dispatcher.dispatch(_call("long"))
    assert long.content == "x" * 8000 + (
        "\n[toolguard: output truncated: showing the first 8000 of 20000 characters]"
    )


def test_strict_fails_the_invocation_unless_the_error_is_model_visible(
    logs: list[dict[str, Any]],
) -> None:
    dispatcher = Dispatcher([lookup], policy=load_policy("strict"))
    with pytest.raises(ToolCallFailed) as failed:
        dispatcher.dispatch(_call("q"))
    assert failed.value.tool == "lookup"
    assert isinstance(failed.value.__cause__, Boom)
    [event] = logs
    assert event["event"] == "tool_call_failed"
    assert event["log_level"] == "error"
    assert event["error_id"] == failed.value.error_id
    visible = dispatcher.dispatch(_call("visible"))
    assert visible.content == "Nothing matches 'visible'. Try other words."
    assert visible.is_error


def test_default_is_exactly_no_configuration(logs: list[dict[str, Any]]) -> None:
    policy = load_policy("default")
    assert policy == AgentPolicy(source=policy.source)
    with_file, without = Dispatcher([lookup], policy=policy), Dispatcher([lookup])
    assert with_file.explain("lookup") == without.explain("lookup")
    result = with_file.dispatch(_call("q"))
    assert result.content == BUILTIN_MESSAGE.replace("{tool}", "lookup").replace(
        "{error_id}", result.error_id or "?"
    )
    assert [e["log_level"] for e in _hidden_events(logs)] == ["warning"]


def test_the_default_presets_commented_values_are_the_builtin_ones(tmp_path: Path) -> None:
    """Uncommenting every ``# key = value`` line of default.toml changes no behaviour."""
    text = (ROOT / "policies" / "default.toml").read_text()
    names = {key.name for key in KEYS}
    seen: set[str] = set()
    lines = []
    for line in text.splitlines():
        match = re.match(r"# ([a-z_]+) = ", line)
        if match and match.group(1) in names and match.group(1) not in seen:
            seen.add(match.group(1))
            line = line[2:]
        lines.append(line)
    # every setting is shown, with its built-in value; telemetry has none of its own
    # (unset, an agent follows configure(telemetry=)): default.toml describes it
    assert seen == names - {"rules", "telemetry"}
    assert "`telemetry`" in text
    policy = load_policy(_write(tmp_path, "\n".join(lines)))
    defaults = policy.defaults
    for field in attrs.fields(ToolPolicy):
        if field.name != "on_error":  # on_invalid_call's built-in is a named handler
            assert getattr(defaults, field.name) == getattr(BUILTIN, field.name), field.name
    assert defaults.on_error.message == BUILTIN_MESSAGE  # type: ignore[union-attr]
    assert (policy.return_direct_mode, policy.max_workers) == ("any", 32)
    assert Dispatcher([lookup]).explain("lookup")["max_workers"] == Setting(32, "builtin")


# --- the format, key by key -----------------------------------------------------------

EVERY_KEY = """\
version = 1

[agent]
on_error = ["tests.test_files:custom_handler", "generic_unless_visible"]
message = "Sorry: {tool} failed ({error_id})."
return_direct = false
log_level = "ERROR"
redact = ["pin"]
max_result_chars = 500
timeout = 2.5
retries = { attempts = 4, on = ["ConnectionError", "tests.test_files.Boom"], initial = 0.1, \
max_delay = 1, jitter = 0, total = 5 }
breaker = { failures = 2, cooldown = 30 }
max_model_retries = 3
model_retries_exhausted = "stop"
return_direct_mode = "all"
max_workers = 4
on_invalid_call = ["tests.test_files:custom_handler", "Check the arguments."]

[[agent.rules]]
exception = "TimeoutError"
message = "Timed out; try later."

[[agent.rules]]
exception = ["KeyError", "tests.test_files:Boom"]
handler = "send_exception_message"

[tools."search_*"]
on_error = "fail_unless_visible"
return_direct = "tests.test_files:stops"

[tools.final_answer]
return_direct = "always"
max_result_chars = "unlimited"
timeout = "unlimited"
retries = 0
breaker = false
max_model_retries = "unlimited"
"""


def test_every_key_loads_into_the_policy_it_describes(tmp_path: Path) -> None:
    path = _write(tmp_path, EVERY_KEY)
    policy = load_policy(path)
    agent = policy.defaults
    assert agent.on_error.members()[0].name == "on(TimeoutError, 'Timed out; try later.')"  # type: ignore[union-attr]
    assert [member.name for member in agent.on_error.members()] == [  # type: ignore[union-attr]
        "on(TimeoutError, 'Timed out; try later.')",
        "on(KeyError, Boom, send_exception_message)",
        "tests.test_files.custom_handler",
        "generic_unless_visible('Sorry: {tool} failed ({error_id}).')",
    ]
    assert [member.name for member in agent.on_invalid_call.members()] == [  # type: ignore[union-attr]
        "tests.test_files.custom_handler",
        "'Check the arguments.'",
    ]
    assert agent.return_direct == ReturnDirect("never")
    assert agent.log_level == "error"
    assert agent.redact == ("pin",)
    assert agent.max_result_chars == 500
    assert agent.timeout == 2.5
    assert agent.retries == Retry(
        attempts=4, on=(ConnectionError, Boom), initial=0.1, max_delay=1.0, jitter=0.0, total=5.0
    )
    assert agent.breaker == Breaker(failures=2, cooldown=30.0)
    assert agent.max_model_retries == 3
    assert agent.model_retries_exhausted == "stop"
    assert (policy.return_direct_mode, policy.max_workers) == ("all", 4)
    assert policy.source == str(path)
    assert list(policy.overrides) == ["search_*", "final_answer"]
    search = policy.overrides["search_*"]
    assert search.on_error.name == "fail_unless_visible"
    assert search.return_direct.mode == "predicate"  # type: ignore[union-attr]
    assert search.return_direct.predicate is stops  # type: ignore[union-attr]
    final = policy.overrides["final_answer"]
    assert final.return_direct == ReturnDirect("always")
    assert (final.max_result_chars, final.timeout, final.retries, final.breaker) == (None,) * 4
    assert final.max_model_retries is None


def test_rules_come_before_on_error_and_a_custom_handler_answers(
    tmp_path: Path, logs: list[dict[str, Any]]
) -> None:
    path = _write(
        tmp_path,
        'version = 1\n[agent]\non_error = "tests.test_files:custom_handler"\n'
        '[[agent.rules]]\nexception = "ValueError"\nmessage = "Bad value ({error_id})."\n',
    )

    @tool
    def parse(text: str) -> int:
        """Parse a number."""
        if text == "boom":
            raise Boom("no")
        return int(text)

    dispatcher = Dispatcher([parse], policy=load_policy(path))
    bad = dispatcher.dispatch(ToolCall(name="parse", arguments={"text": "x"}, id="c1"))
    assert bad.content == f"Bad value ({bad.error_id})."
    boom = dispatcher.dispatch(ToolCall(name="parse", arguments={"text": "boom"}, id="c2"))
    assert boom.content == "custom: Boom in parse"
    assert [e["handler"] for e in _hidden_events(logs)] == [
        "on(ValueError, 'Bad value ({error_id}).')",
        "tests.test_files.custom_handler",
    ]


def test_a_message_alone_is_generic_unless_visible_with_that_text(tmp_path: Path) -> None:
    path = _write(tmp_path, 'version = 1\n[agent]\nmessage = "No luck ({error_id})."\n')
    dispatcher = Dispatcher([lookup], policy=load_policy(path))
    hidden = dispatcher.dispatch(_call("q"))
    assert hidden.content == f"No luck ({hidden.error_id})."
    assert dispatcher.dispatch(_call("visible")).text.startswith("Nothing matches")


def test_every_policy_field_has_a_key() -> None:
    """New ToolPolicy/AgentPolicy fields need an entry in files.KEYS."""
    policy_fields = {key.field for key in KEYS if key.into != "agent"}
    assert policy_fields == {field.name for field in attrs.fields(ToolPolicy)}
    round_fields = {key.field for key in KEYS if key.into == "agent"}
    others = {"defaults", "overrides", "source"}
    assert round_fields == {field.name for field in attrs.fields(AgentPolicy)} - others


# --- mistakes -------------------------------------------------------------------------


def _expectations(path: Path) -> list[str]:
    text = path.read_bytes().decode("latin-1")
    return [f"{path}:{line}" for line in re.findall(r"^# expect: (.*)$", text, re.MULTILINE)]


CORPUS_FILES = sorted(CORPUS.glob("*.toml"))


def test_the_corpus_has_at_least_thirty_broken_files() -> None:
    assert len(CORPUS_FILES) >= 30
    assert all(_expectations(path) for path in CORPUS_FILES)


@pytest.mark.parametrize("path", CORPUS_FILES, ids=[p.stem for p in CORPUS_FILES])
def test_each_broken_file_gives_its_expected_error(path: Path) -> None:
    with pytest.raises(PolicyFileError) as raised:
        load_policy(path)
    assert [str(problem) for problem in raised.value.problems] == _expectations(path)
    assert str(raised.value) == "\n".join(_expectations(path))
    assert raised.value.__cause__ is None  # no internal traceback chained in


def test_a_policy_file_error_names_file_line_key_and_message(tmp_path: Path) -> None:
    path = _write(tmp_path, 'version = 1\n\n[agent]\nlog_level = "loud"\n')
    with pytest.raises(PolicyFileError) as raised:
        load_policy(str(path))
    error = raised.value
    assert (error.file, error.line, error.key) == (str(path), 4, "agent.log_level")
    assert error.message == (
        'expected one of "debug", "info", "warning", "error", "critical", got the string \'loud\''
    )
    assert error.problems == (Problem(str(path), 4, "agent.log_level", error.message),)
    assert isinstance(error, ValueError)


def test_files_that_cannot_be_read_are_policy_file_errors(tmp_path: Path) -> None:
    missing = tmp_path / "missing.toml"
    with pytest.raises(PolicyFileError, match=r"missing\.toml: no such file$"):
        load_policy(missing)
    with pytest.raises(PolicyFileError, match=r": is a directory, not a file$"):
        load_policy(f"{tmp_path}/")
    with pytest.raises(TypeError, match="takes a preset name or a path"):
        load_policy(42)  # type: ignore[arg-type]


def test_an_unknown_preset_suggests_the_closest_and_a_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(PolicyFileError) as raised:
        load_policy("prodution")
    assert str(raised.value) == (
        "prodution: no preset named 'prodution' (did you mean 'production'?); "
        "presets: default, development, production, strict"
    )
    monkeypatch.chdir(tmp_path)
    _write(tmp_path, "version = 1\n", name="mine")
    with pytest.raises(PolicyFileError, match=r"to read the file 'mine', write \./mine$"):
        load_policy("mine")
    assert load_policy("./mine").source == "./mine"


def test_a_bom_and_crlf_line_endings_are_fine(tmp_path: Path) -> None:
    path = tmp_path / "windows.toml"
    path.write_bytes(b'\xef\xbb\xbfversion = 1\r\n\r\n[agent]\r\nlog_level = "x"\r\n')
    with pytest.raises(PolicyFileError) as raised:
        load_policy(path)
    assert (raised.value.line, raised.value.key) == (4, "agent.log_level")


@pytest.mark.parametrize(
    ("text", "path", "line"),
    [
        ('a = 1\n[b]\n"c.d" = 2\n', ("b", "c.d"), 3),
        ("x.y.z = 1\n", ("x", "y", "z"), 1),
        ("[[t.r]]\nk = 1\n[[t.r]]\nk = 2\n", ("t", "r", 1, "k"), 4),
        ("[[a]]\n[[a.b]]\n[[a]]\n[[a.b]]\nv = 1\n", ("a", 1, "b", 0, "v"), 5),
        ('s = """\n[fake]\nk = 1"""\nk = 2\n', ("k",), 4),
        ("s = '''a''''\nk = 2\n", ("k",), 2),
        ('s = "a\\"#" # c = 1\nc = 2\n', ("c",), 2),
        ("r = [\n  1,\n  [2,\n   3],\n]\n", ("r", 1, 1), 4),
        ("t = { a = { b = 1 } }\n", ("t", "a", "b"), 1),
        ('"\\u00e9" = 1\n', ("\u00e9",), 1),
        ("a = 1\n", ("a", "missing", 3), 1),
    ],
)
def test_the_line_finder_follows_toml_structure(
    text: str, path: tuple[str | int, ...], line: int
) -> None:
    tomllib.loads(text)  # each case is valid TOML
    assert KeyLines(text).line_of(path) == line


def test_key_paths_are_written_as_toml_writes_them() -> None:
    assert format_path(("tools", "search_*", "rules", 0, "exception")) == (
        'tools."search_*".rules[0].exception'
    )
    assert format_path(("a b", 'q"', "é")) == '"a b"."q\\""."é"'


@given(st.lists(st.text(), min_size=1, max_size=3))
def test_a_written_key_path_reads_back_as_the_same_keys(keys: list[str]) -> None:
    document: Any = tomllib.loads(format_path(tuple(keys)) + " = 1")
    for key in keys:
        document = document[key]
    assert document == 1


# --- properties: nothing but PolicyFileError, every key found --------------------------

_SAFE_CHARS = st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters=":")
_WORDS = (
    *(key.name for key in KEYS),
    "version", "agent", "tools", "exception", "handler", "attempts", "on", "failures",
    "cooldown", "search_*", "search_web", "[", "a.b", "",
)  # fmt: skip
_VALUES = (
    "send_exception_message", "fail", "fail_unless_visible", "generic_unless_visible",
    "always", "any", "all", "unlimited", "debug", "WARNING", "message", "stop",
    "TimeoutError", "KeyboardInterrupt", "os.path", "json.JSONDecodeError", "Boom",
    "toolguard.errors.ToolError", "toolguard.handlers:fail", "toolguard.policy._precedence:LEVELS",
    "tests.test_files:custom_handler", "tests.test_files:stops", "nope_nope:x",
    "{error_id} {tool} {errorid}", "   ", "search_[",
)  # fmt: skip
_scalars = st.one_of(
    st.booleans(),
    st.integers(-5, 10_000),
    st.integers(),
    st.floats(allow_nan=False),
    st.sampled_from(_VALUES),
    st.text(_SAFE_CHARS, max_size=12),
    st.dates(),
)
_keys = st.one_of(st.sampled_from(_WORDS), st.text(_SAFE_CHARS, max_size=8))
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=5)),
    max_leaves=16,
)
_known = st.sampled_from([key.name for key in KEYS])
_tables = st.dictionaries(_known | _known | _keys, _values, max_size=6)
_documents = st.fixed_dictionaries(
    {"version": st.integers(0, 9).flatmap(lambda n: _scalars if n == 0 else st.just(1))},
    optional={
        "agent": _tables | _tables | _values,
        "tools": st.dictionaries(_keys, _tables | _tables | _values, max_size=3) | _values,
    },
).flatmap(
    lambda doc: st.dictionaries(_keys, _values, max_size=1).map(lambda extra: {**extra, **doc})
)


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_string(key)


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, str):
        return _toml_string(value)
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(item) for item in value) + "]"
    pairs = ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items())
    return "{ " + pairs + " }" if pairs else "{}"


def _toml(document: dict[str, Any], *, headers: bool, prefix: tuple[str, ...] = ()) -> str:
    """A TOML text for ``document``: tables as [headers] and [[arrays]], or all inline."""
    lines: list[str] = []
    nested: list[tuple[str, Any]] = []
    for key, value in document.items():
        is_tables = isinstance(value, list) and value and all(isinstance(v, dict) for v in value)
        if headers and (isinstance(value, dict) or is_tables):
            nested.append((key, value))
        else:
            lines.append(f"{_toml_key(key)} = {_toml_value(value)}")
    for key, value in nested:
        path = (*prefix, key)
        header = ".".join(_toml_key(part) for part in path)
        for table in [value] if isinstance(value, dict) else value:
            lines.append(f"[{header}]" if isinstance(value, dict) else f"[[{header}]]")
            lines.append(_toml(table, headers=headers, prefix=path).rstrip("\n"))
    return "\n".join(line for line in lines if line) + "\n"


def _assert_only_policy_file_errors(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.toml"
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            load_policy(path)
        except PolicyFileError as error:
            last = text.count("\n") + 1
            for problem in error.problems:
                assert problem.file == str(path)
                assert problem.line is not None
                assert 1 <= problem.line <= last
                assert problem.message
                assert str(problem).startswith(f"{path}:{problem.line}: ")


_PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_PROPERTY
@given(document=_documents, headers=st.booleans())
def test_random_documents_raise_nothing_but_policy_file_error(
    document: dict[str, Any], headers: bool
) -> None:
    _assert_only_policy_file_errors(_toml(document, headers=headers))


_TOKENS = (
    "version = 1\n", "[agent]\n", "[[agent.rules]]\n", '[tools."s*"]\n', "on_error", " = ",
    '"fail"', "'", '"', "'''", '"""', "[", "]", "{", "}", ",", ".", "#", "\n", "\r\n", "\\",
    "=", "1", "true", "1979-05-27", "é", "\t", " ", "log_level", "exception", "message",
)  # fmt: skip


@_PROPERTY
@given(st.lists(st.sampled_from(_TOKENS), max_size=40).map("".join))
def test_random_text_raises_nothing_but_policy_file_error(text: str) -> None:
    _assert_only_policy_file_errors(text)


_edits = st.lists(
    st.tuples(
        st.sampled_from(["delete", "insert", "duplicate", "swap", "replace"]),
        st.floats(0, 1),
        st.floats(0, 1),
        st.sampled_from(_TOKENS + _VALUES + _WORDS),
    ),
    min_size=1,
    max_size=4,
)


def _mutate(text: str, edits: list[tuple[str, float, float, str]]) -> str:
    for kind, at, to, token in edits:
        lines = text.splitlines(keepends=True) or [""]
        start = int(at * len(text))
        end = min(len(text), start + int(to * 40))
        one, other = int(at * (len(lines) - 1)), int(to * (len(lines) - 1))
        if kind == "delete":
            text = text[:start] + text[end:]
        elif kind == "insert":
            text = text[:start] + token + text[start:]
        elif kind == "duplicate":
            text = "".join([*lines[: one + 1], lines[one], *lines[one + 1 :]])
        elif kind == "swap":
            lines[one], lines[other] = lines[other], lines[one]
            text = "".join(lines)
        else:
            words = re.findall(r"[A-Za-z_]+", text)
            if words:
                word = words[int(at * (len(words) - 1))]
                text = text.replace(word, token.replace(":", "."), 1)
    return text


@_PROPERTY
@given(name=st.sampled_from(PRESETS), edits=_edits)
def test_mutated_presets_raise_nothing_but_policy_file_error(
    name: str, edits: list[tuple[str, float, float, str]]
) -> None:
    _assert_only_policy_file_errors(
        _mutate((ROOT / "policies" / f"{name}.toml").read_text(), edits)
    )


def _paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    found = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            found += _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += _paths(item, (*prefix, index))
    return found


@_PROPERTY
@given(document=st.dictionaries(_keys, _values, max_size=5), headers=st.booleans())
def test_the_line_finder_finds_every_key_of_any_document(
    document: dict[str, Any], headers: bool
) -> None:
    text = _toml(document, headers=headers)
    assert tomllib.loads(text) == document
    lines = KeyLines(text)
    source = text.splitlines()
    for path in _paths(document):
        assert path in lines.lines, path
        last = path[-1]
        if isinstance(last, str):
            written = _toml_key(last)
            line = source[lines.lines[path] - 1]
            assert written in line, (path, line)


# --- precedence with files --------------------------------------------------------------


def _failing(**options: Any) -> Any:
    @tool(name="t", **options)
    def failing() -> str:
        """Fails."""
        raise Boom("the tool's own message")

    return failing


def test_a_file_override_beats_the_decorator(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    path = _write(
        tmp_path,
        'version = 1\n[tools.t]\non_error = "send_exception_message"\nlog_level = "error"\n',
    )
    dispatcher = Dispatcher([_failing(on_error="from the tool", log_level="info")],
                            policy=load_policy(path))  # fmt: skip
    assert dispatcher.dispatch(ToolCall(name="t", id="c1")).content == "the tool's own message"
    assert [e["log_level"] for e in _hidden_events(logs)] == ["error"]
    explained = dispatcher.explain("t")
    chain = explained["on_error"]
    assert isinstance(chain, tuple)
    assert [(s.value.name, s.level, s.source) for s in chain] == [
        ("send_exception_message", "override", f'{path}: tools."t"'),
        ("'from the tool'", "tool", None),
        ("generic_unless_visible(BUILTIN_MESSAGE)", "builtin", None),
    ]
    assert explained["log_level"] == Setting("error", "override")
    assert explained["log_level"].source == f'{path}: tools."t"'


def test_the_decorator_beats_the_files_defaults(tmp_path: Path, logs: list[dict[str, Any]]) -> None:
    path = _write(
        tmp_path, 'version = 1\n[agent]\non_error = "send_exception_message"\nlog_level = "debug"\n'
    )
    dispatcher = Dispatcher([_failing(on_error="from the tool", log_level="info")],
                            policy=load_policy(path))  # fmt: skip
    assert dispatcher.dispatch(ToolCall(name="t", id="c1")).content == "from the tool"
    assert [e["log_level"] for e in _hidden_events(logs)] == ["info"]
    explained = dispatcher.explain("t")
    chain = explained["on_error"]
    assert isinstance(chain, tuple)
    assert [(s.level, s.source) for s in chain] == [
        ("tool", None),
        ("agent", str(path)),
        ("builtin", None),
    ]
    assert explained["log_level"] == Setting("info", "tool")


def test_a_file_override_that_declines_lets_the_tool_answer(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'version = 1\n[[tools."*".rules]]\nexception = "KeyError"\nmessage = "file: key"\n',
    )
    dispatcher = Dispatcher([_failing(on_error="from the tool")], policy=load_policy(path))
    assert dispatcher.dispatch(ToolCall(name="t", id="c1")).content == "from the tool"


def test_the_file_is_the_later_word_beside_code_at_each_level(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        'version = 1\n[agent]\nmessage = "file says ({error_id})"\nlog_level = "error"\n'
        'return_direct_mode = "all"\n',
    )
    dispatcher = Dispatcher(
        [_failing()],
        policy=load_policy(path),
        on_error="code says",
        log_level="info",
        return_direct_mode="any",
    )
    result = dispatcher.dispatch(ToolCall(name="t", id="c1"))
    assert result.content == f"file says ({result.error_id})"
    explained = dispatcher.explain("t")
    chain = explained["on_error"]
    assert isinstance(chain, tuple)
    assert [(s.value.name, s.level, s.source) for s in chain[:2]] == [
        ("generic_unless_visible('file says ({error_id})')", "agent", str(path)),
        ("'code says'", "agent", None),
    ]
    assert explained["log_level"].source == str(path)  # type: ignore[union-attr]
    assert dispatcher.return_direct_mode == "all"


def test_among_file_overrides_an_exact_name_beats_a_glob_and_the_first_glob_wins(
    tmp_path: Path,
) -> None:
    path = _write(
        tmp_path,
        'version = 1\n[tools."t*"]\non_error = "first glob"\n'.replace(
            '"first glob"', '"tests.test_files:custom_handler"'
        )
        + '[tools."*"]\nmessage = "second glob"\n[tools.t]\nlog_level = "critical"\n',
    )
    dispatcher = Dispatcher([_failing()], policy=load_policy(path))
    explained = dispatcher.explain("t")
    chain = explained["on_error"]
    assert isinstance(chain, tuple)
    assert [s.source for s in chain[:2]] == [
        f'{path}: tools."t*"',
        f'{path}: tools."*"',
    ]
    assert explained["log_level"] == Setting("critical", "override")
    assert dispatcher.dispatch(ToolCall(name="t", id="c1")).content == "custom: Boom in t"


# --- the wheel ships the presets ------------------------------------------------------


def _run(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}
    return subprocess.run(
        [str(arg) for arg in args],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_a_built_wheel_loads_every_preset_by_name(tmp_path: Path) -> None:
    """Build a wheel, install it (no deps, no network) into a fresh venv, load presets."""
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    pip = (sys.executable, "-m", "pip")
    _run(*pip, "wheel", "--no-deps", "--no-build-isolation", "--no-index", "-q", "-w", wheels, ROOT)
    [wheel] = wheels.glob("toolguard_agents-*.whl")
    _run(sys.executable, "-m", "venv", "--without-pip", venv)
    python = venv / "bin" / "python"
    _run(*pip, "--python", python, "install", "--no-deps", "--no-index", "-q", wheel)
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])")
    # The dependencies come from this venv; toolguard itself only from the wheel.
    deps = Path(site.stdout.strip(), "_toolguard_test_deps.pth")
    deps.write_text(sysconfig.get_paths()["purelib"] + "\n")
    script = (
        "import json, toolguard, toolguard.files._load as f\n"
        "sources = {n: f.load_policy(n).source for n in " + repr(PRESETS) + "}\n"
        "print(json.dumps({'package': toolguard.__file__, 'sources': sources}))\n"
    )
    loaded = json.loads(_run(python, "-P", "-c", script, cwd=tmp_path).stdout)
    installed = deps.parent / "toolguard"
    assert loaded["package"] == str(installed / "__init__.py")
    for name in PRESETS:
        source = Path(loaded["sources"][name])
        assert source == installed / "_policies" / f"{name}.toml"
        assert source.read_text() == (ROOT / "policies" / f"{name}.toml").read_text()
    checked = _run(venv / "bin" / "toolguard", "check", *PRESETS, cwd=tmp_path)
    assert checked.stdout == "".join(f"{name}: ok\n" for name in PRESETS)


# --- the docs -------------------------------------------------------------------------


def test_the_docs_show_every_preset_verbatim_and_every_key() -> None:
    docs = (ROOT / "docs" / "policies.md").read_text()
    for name in PRESETS:
        preset = (ROOT / "policies" / f"{name}.toml").read_text().rstrip("\n")
        assert f"```toml\n{preset}\n```" in docs, name
    for key in KEYS:
        assert f"| `{key.name}` |" in docs, key.name


def test_check_reports_every_bad_item_of_a_handler_array(tmp_path: Path) -> None:
    """Every problem is listed, not only the first of a table's on_error array."""
    path = _write(tmp_path, 'version = 1\n[agent]\non_error = ["fial", 42, "fail"]\n')
    with pytest.raises(PolicyFileError) as raised:
        load_policy(path)
    assert [problem.key for problem in raised.value.problems] == [
        "agent.on_error[0]",
        "agent.on_error[1]",
    ]


def test_a_handler_string_means_the_same_in_a_file_as_in_code(tmp_path: Path) -> None:
    """A name is that handler, other text a fixed message that keeps visible messages."""
    path = _write(tmp_path, 'version = 1\n[agent]\non_error = ["Orders are offline.", "fail"]\n')
    [message, failing] = load_policy(path).defaults.on_error.members()  # type: ignore[union-attr]
    assert failing is toolguard.handlers.fail
    assert type(message) is type(toolguard.handlers.generic_unless_visible("x"))
