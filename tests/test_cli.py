"""The ``toolguard`` command: outputs and exit codes (0 ok, 1 problems, 2 usage).

``check`` prints ``file:line: key: message`` per problem; ``explain`` prints each
tool's settings with value, level and source (a table, or ``--json``); ``schema``
prints a provider's declarations; a bad ``MODULE:ATTR`` is a usage error naming
what to write instead.
"""

from __future__ import annotations

import importlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from toolguard import Dispatcher, ToolCall, ToolError, ToolPolicy, tool
from toolguard.cli import FORMATS, main
from toolguard.handlers import on
from toolguard.targets import TargetError, load_target

ROOT = Path(__file__).parent.parent
BROKEN = ROOT / "tests" / "policy_corpus" / "several_problems_in_order.toml"


@tool(on_error=on(KeyError, "No such key."), log_level="info")
def search_web(query: str) -> str:
    """Search the web.

    Args:
        query: Words to look for.
    """
    raise ToolError("no results")


@tool(return_direct=True)
def final_answer(text: str) -> str:
    """Give the final answer.

    Args:
        text: The answer.
    """
    return text


AGENT = Dispatcher([search_web, final_answer], max_workers=3)
TOOLS = [search_web, final_answer]
NOT_TOOLS = {"a": 1}
EMPTY: list[Any] = []


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _rows(out: str) -> list[str]:
    """The table's lines with column padding collapsed to one space."""
    return [re.sub(r" {2,}", " ", line.strip()) for line in out.splitlines()]


# --- check ----------------------------------------------------------------------------


def test_check_accepts_good_files_and_presets(capsys: pytest.CaptureFixture[str]) -> None:
    good = ROOT / "policies" / "production.toml"
    assert _run(capsys, "check", str(good), "strict") == (0, f"{good}: ok\nstrict: ok\n", "")


def test_check_prints_every_problem_and_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check", str(BROKEN), "default")
    assert code == 1
    assert out.splitlines() == [
        f"{BROKEN}:4: agent.on_error: unknown handler 'fial' (did you mean 'fail'?); allowed: "
        "a handler name (send_exception_message, fail, fail_unless_visible, "
        "generic_unless_visible, always), an import path 'module:function', or a fixed "
        "message (a sentence for the model)",
        f'{BROKEN}:5: agent.log_level: expected one of "debug", "info", "warning", "error", '
        "\"critical\", got the string 'loud'",
        f'{BROKEN}:8: tools."admin_*".return_direct_mode: return_direct_mode applies to the '
        "whole agent; set it in [agent]",
        f'{BROKEN}:9: tools."admin_*".max_result_chars: expected an integer >= 100, or '
        '"unlimited", got the integer 5',
        "default: ok",
    ]
    assert err == "toolguard check: problems in 1 of 2 files\n"


def test_check_reports_unreadable_and_invalid_files(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "bad.toml").write_text("version = 1\n[agent\n")
    code, out, _ = _run(capsys, "check", str(tmp_path / "nope.toml"), str(tmp_path / "bad.toml"))
    assert code == 1
    assert out == (
        f"{tmp_path}/nope.toml: no such file\n"
        f"{tmp_path}/bad.toml:2: invalid TOML: Expected ']' at the end of a table declaration "
        "(column 7)\n"
    )


@pytest.mark.parametrize(
    ("url", "where"),
    [
        ("redis://cache:6379/0?password=hunter2", "its query parameter 'password'"),
        ("rediss://cache:6380/0?ssl_password=hunter2", "its query parameter 'ssl_password'"),
        ("redis://:hunter2@cache:6379/0", "in its user info"),
        ("unix:///run/redis.sock?db=0&Password=hunter2", "its query parameter 'Password'"),
    ],
)
def test_check_refuses_a_store_url_holding_a_password_anywhere(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str, where: str
) -> None:
    """redis-py passes every query parameter to the connection: ``?password=`` is one.
    Refused, explain (which prints the store) never gets to show it."""
    policy = tmp_path / "agent.toml"
    policy.write_text(f'version = 1\n[agent]\nstore = "{url}"\n', encoding="utf-8")
    code, out, _ = _run(capsys, "check", str(policy))
    assert code == 1
    assert f"{policy}:3: agent.store: store: a URL with a password ({where})" in out
    assert "hunter2" not in out
    code, out, _ = _run(capsys, "explain", "tests.test_cli:AGENT", "--policy", str(policy))
    assert code == 1 and "hunter2" not in out


def test_check_accepts_a_store_url_without_a_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "agent.toml"
    policy.write_text(
        'version = 1\n[agent]\nstore = "rediss://cache:6380/0?socket_timeout=2"\n',
        encoding="utf-8",
    )
    assert _run(capsys, "check", str(policy))[0] == 0


def test_check_without_files_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "check")
    assert (code, out) == (2, "")
    assert "the following arguments are required: FILE" in err


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys)
    assert (code, out) == (2, "")
    assert err.startswith("usage: toolguard")
    assert _run(capsys, "--help")[0] == 0


# --- explain ---------------------------------------------------------------------------


def test_explain_prints_value_level_and_source_per_setting(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, err = _run(capsys, "explain", "tests.test_cli:AGENT", "--tool", "search_web")
    assert (code, err) == (0, "")
    rows = _rows(out)
    assert rows[:5] == [
        "round settings: return_direct_mode = any, max_workers = 3, max_abandoned = 4",
        "",
        "tool search_web",
        "setting value level source",
        "on_error 1. on(KeyError, 'No such key.') tool",
    ]
    assert "2. generic_unless_visible(BUILTIN_MESSAGE) builtin" in rows
    assert "log_level info tool" in rows
    assert "return_direct never builtin" in rows
    assert "max_result_chars unlimited builtin" in rows
    assert not any(row.startswith("tool final_answer") for row in rows)


def test_explain_with_a_policy_names_the_file_as_the_source(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    policy = tmp_path / "ops.toml"
    policy.write_text(
        'version = 1\n[agent]\nlog_level = "error"\n[tools."search_*"]\n'
        'on_error = "fail_unless_visible"\n'
    )
    code, out, _ = _run(capsys, "explain", "tests.test_cli:TOOLS", "--policy", str(policy))
    assert code == 0
    rows = _rows(out)
    search = rows[rows.index("tool search_web") :]
    assert search[2] == f'on_error 1. fail_unless_visible override {policy}: tools."search_*"'
    assert search[3] == "2. on(KeyError, 'No such key.') tool"
    assert "log_level info tool" in search  # the decorator beats the file's defaults
    final = rows[rows.index("tool final_answer") :]
    assert f"log_level error agent {policy}" in final
    assert "return_direct on_success tool" in final


def test_explain_json_is_for_machines(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "explain", "tests.test_cli:AGENT", "--json", "--policy", "strict")
    assert code == 0
    data = json.loads(out)
    assert (data["return_direct_mode"], data["max_workers"]) == ("any", 3)
    assert list(data["tools"]) == ["search_web", "final_answer"]
    search = data["tools"]["search_web"]
    strict = str(ROOT / "policies" / "strict.toml")
    assert search["on_error"] == [
        {"handler": "on(KeyError, 'No such key.')", "level": "tool", "source": None},
        {"handler": "fail_unless_visible", "level": "agent", "source": strict},
        {"handler": "generic_unless_visible(BUILTIN_MESSAGE)", "level": "builtin", "source": None},
    ]
    assert search["log_level"] == {"value": "info", "level": "tool", "source": None}
    assert search["redact"]["value"][:2] == ["password", "passwd"]
    assert data["tools"]["final_answer"]["return_direct"] == {
        "value": "on_success",
        "level": "tool",
        "source": None,
    }
    assert set(search) == set(AGENT.explain("search_web"))


def test_explain_with_a_broken_policy_prints_its_problems_and_exits_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "explain", "tests.test_cli:AGENT", "--policy", str(BROKEN))
    assert code == 1
    assert out.splitlines()[0].startswith(f"{BROKEN}:4: agent.on_error: unknown handler 'fial'")
    assert len(out.splitlines()) == 4


def test_explain_of_an_unknown_tool_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "explain", "tests.test_cli:AGENT", "--tool", "serch_web")
    assert (code, out) == (2, "")
    assert err == (
        "toolguard explain: 'tests.test_cli:AGENT' has no tool named 'serch_web' "
        "(did you mean 'search_web'?); tools: search_web, final_answer\n"
    )


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("tests.test_cli", "'tests.test_cli' is not MODULE:ATTR; write MODULE:ATTR, e.g. "
         "myapp.agent:dispatcher"),
        ("tests.test_cli:", "'tests.test_cli:' is not MODULE:ATTR; write MODULE:ATTR, e.g. "
         "myapp.agent:dispatcher"),
        ("no_such_module_anywhere:agent", "no module named 'no_such_module_anywhere' (looked "
         "in the current directory and on sys.path; run from the directory that contains it, "
         "or set PYTHONPATH)"),
        ("tests.test_cli:AGNET", "'tests.test_cli' has no attribute 'AGNET' (did you mean "
         "'AGENT'?)"),
        ("tests.test_cli:AGENT.tols", "'tests.test_cli:AGENT' has no attribute 'tols' (did you "
         "mean 'tools'?)"),
        ("tests.test_cli:AGENT.zzz", "'tests.test_cli:AGENT' has no attribute 'zzz'"),
        ("tests.test_cli:NOT_TOOLS", "'tests.test_cli:NOT_TOOLS' is a dict, not a Dispatcher, "
         "a list or tuple of tools, or a @tool function"),
        ("tests.test_cli:EMPTY", "'tests.test_cli:EMPTY' is an empty list: no tools to load"),
        ("tests.policy_corpus._broken_module:x", "importing 'tests.policy_corpus._broken_module' "
         "raised RuntimeError: this module fails on import (python -c 'import "
         "tests.policy_corpus._broken_module' shows the traceback)"),
    ],
)  # fmt: skip
def test_a_bad_module_attr_is_a_usage_error_saying_what_to_write(
    capsys: pytest.CaptureFixture[str], target: str, message: str
) -> None:
    for command in (["explain", target], ["schema", target, "--format", "openai"]):
        code, out, err = _run(capsys, *command)
        assert (code, out) == (2, "")
        assert err == f"toolguard {command[0]}: {message}\n"
    with pytest.raises(TargetError) as raised:
        load_target(target)
    assert str(raised.value) == message


def test_targets_import_from_the_current_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cwd_agent_for_test.py").write_text(
        "from toolguard import tool\n\n@tool\ndef ping() -> str:\n"
        '    """Answer pong."""\n    return "pong"\n\ntools = (ping,)\n'
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "cwd_agent_for_test", raising=False)
    path_before = list(sys.path)
    dispatcher = load_target("cwd_agent_for_test:tools")
    assert list(dispatcher.tools) == ["ping"]
    assert sys.path == path_before  # the directory is importable only while importing
    assert load_target("cwd_agent_for_test:ping").tools.keys() == {"ping"}  # one @tool
    assert load_target("tests.test_cli:AGENT") is AGENT  # a Dispatcher, as it is
    sys.modules.pop("cwd_agent_for_test", None)


def test_a_target_with_a_bad_tool_list_names_the_problem() -> None:
    with pytest.raises(TargetError, match=r"two tools are named 'search_web'"):
        load_target("tests.test_cli:DUPLICATES")


DUPLICATES = [search_web, search_web]


# --- schema ---------------------------------------------------------------------------


@pytest.mark.parametrize("provider", FORMATS)
def test_schema_prints_the_formats_declarations(
    capsys: pytest.CaptureFixture[str], provider: str
) -> None:
    code, out, err = _run(capsys, "schema", "tests.test_cli:TOOLS", "--format", provider)
    assert (code, err) == (0, "")
    module = importlib.import_module(f"toolguard.formats.{provider}")
    assert json.loads(out) == json.loads(
        json.dumps(module.tools(load_target("tests.test_cli:TOOLS")))
    )
    assert "search_web" in out
    assert "final_answer" in out


def test_schema_of_a_format_that_is_not_installed_exits_1(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "toolguard.formats.gemini", None)
    code, out, err = _run(capsys, "schema", "tests.test_cli:TOOLS", "--format", "gemini")
    assert (code, out) == (1, "")
    assert err == "toolguard schema: the gemini format is not available in this version\n"


def test_schema_needs_a_known_format(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "schema", "tests.test_cli:TOOLS", "--format", "cohere")
    assert (code, out) == (2, "")
    assert "invalid choice: 'cohere'" in err


# --- the console script ------------------------------------------------------------------


def test_the_console_script_exits_with_the_same_codes(tmp_path: Path) -> None:
    toolguard = str(Path(sys.executable).parent / "toolguard")
    ok = subprocess.run([toolguard, "check", "production"], capture_output=True, text=True)
    assert (ok.returncode, ok.stdout) == (0, "production: ok\n")
    bad = subprocess.run([toolguard, "check", str(BROKEN)], capture_output=True, text=True)
    assert bad.returncode == 1
    assert len(bad.stdout.splitlines()) == 4
    usage = subprocess.run(
        [toolguard, "explain", "nope_nope:x"], capture_output=True, text=True, cwd=tmp_path
    )
    assert usage.returncode == 2
    assert usage.stderr.startswith("toolguard explain: no module named 'nope_nope'")


def test_serve_mcp_hands_the_target_to_the_mcp_server(capsys: pytest.CaptureFixture[str]) -> None:
    """A bad target is refused before any server starts, as every command refuses one."""
    code, out, err = _run(capsys, "serve-mcp", "nope_nope_mcp:x")
    assert (code, out) == (2, "")
    assert err.startswith("toolguard serve-mcp: no module named 'nope_nope_mcp'")


def test_demo_piped_into_a_reader_that_leaves_early_exits_quietly() -> None:
    class ClosedPipe(io.StringIO):
        def write(self, text: str) -> int:
            if self.tell() > 200:  # the reader (`| head`) has gone
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(text)

    out = ClosedPipe()
    assert main(["demo"], out=out) == 0
    assert out.getvalue().startswith("toolguard demo:")


# --- what in-place users inspect ---------------------------------------------------------

GUARDED_ELSEWHERE = Dispatcher(
    [search_web],
    external_tools=["get_weather"],
    overrides={"get_weather": ToolPolicy(timeout=5)},
)


def test_explain_shows_the_tools_a_dispatcher_guards_elsewhere(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """An in-place guard's tools are its external_tools: explain is for them too."""
    code, out, _ = _run(capsys, "explain", "tests.test_cli:GUARDED_ELSEWHERE")
    assert code == 0
    assert "tool search_web" in out
    assert "tool get_weather (runs elsewhere: external_tools)" in out
    code, out, _ = _run(
        capsys, "explain", "tests.test_cli:GUARDED_ELSEWHERE", "--tool", "get_weather", "--json"
    )
    assert code == 0
    explained = json.loads(out)
    assert explained["external_tools"] == ["get_weather"]
    assert list(explained["tools"]) == ["get_weather"]
    assert explained["tools"]["get_weather"]["timeout"]["level"] == "override"
    code, _, err = _run(
        capsys, "explain", "tests.test_cli:GUARDED_ELSEWHERE", "--tool", "get_wether"
    )
    assert code == 2
    assert "(did you mean 'get_weather'?)" in err and "guarded elsewhere: get_weather" in err


def test_check_and_explain_import_the_applications_classes_from_where_they_run(
    tmp_path: Path,
) -> None:
    """A policy naming the application's own exception class: ``check`` failed where
    ``explain`` and ``schema`` found it (the console script's path starts elsewhere)."""
    (tmp_path / "cwd_errors_for_test.py").write_text("class DBError(Exception):\n    pass\n")
    (tmp_path / "cwd_agent_for_check.py").write_text(
        "from toolguard import tool\n\n@tool\ndef ping() -> str:\n"
        '    """Answer pong."""\n    return "pong"\n\ntools = [ping]\n'
    )
    (tmp_path / "agent.toml").write_text(
        'version = 1\n[[agent.rules]]\nexception = "cwd_errors_for_test.DBError"\n'
        'message = "The database is busy."\n'
    )
    toolguard = str(Path(sys.executable).parent / "toolguard")
    checked = subprocess.run(
        [toolguard, "check", "agent.toml"], capture_output=True, text=True, cwd=tmp_path
    )
    assert (checked.returncode, checked.stdout) == (0, "agent.toml: ok\n"), checked.stdout
    explained = subprocess.run(
        [toolguard, "explain", "cwd_agent_for_check:tools", "--policy", "agent.toml"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert explained.returncode == 0, explained.stdout + explained.stderr
    assert "on(DBError, 'The database is busy.')" in explained.stdout


def test_a_handler_text_is_never_cut_inside_a_placeholder(
    capsys: pytest.CaptureFixture[str], logs: list[dict[str, Any]]
) -> None:
    text = "The search is unavailable (ref {error_id}); try later."
    handler = on(ToolError, text)
    assert handler.name == "on(ToolError, 'The search is unavailable (ref ...')"
    assert "{err" not in on(ToolError, "x" * 34 + " {tool} " + "y" * 20).name
    agent = Dispatcher([search_web], on_error=handler)
    agent.dispatch(ToolCall(name="search_web", arguments={"query": "q"}))
    assert logs[0]["handler"] == handler.name  # the log event's field, the same name


def test_the_explain_sample_in_policies_md_is_what_the_command_prints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's example, built as it describes, printed by the command as it is."""
    page = (ROOT / "docs" / "policies.md").read_text(encoding="utf-8")
    command = "toolguard explain myapp.agent:agent --policy deploy/agent.toml --tool search_web"
    sample = page.split(f"`{command}` prints:\n\n```\n", 1)[1].split("```\n", 1)[0]
    policy = page.split("`deploy/agent.toml`:\n\n```toml\n", 1)[1].split("```\n", 1)[0]
    package = tmp_path / "sample_app_for_policies_md"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "agent.py").write_text(
        "from toolguard import Dispatcher, tool\n"
        "from toolguard.handlers import on\n\n\n"
        '@tool(on_error=on(KeyError, "no such key"), retries=2)\n'
        'def search_web(query: str) -> str:\n    """Search the web."""\n    return query\n\n\n'
        '@tool\ndef final(text: str) -> str:\n    """Answer."""\n    return text\n\n\n'
        'agent = Dispatcher([search_web, final], log_level="info")\n'
    )
    (tmp_path / "deploy").mkdir()
    (tmp_path / "deploy" / "agent.toml").write_text(policy)
    monkeypatch.chdir(tmp_path)
    target = "sample_app_for_policies_md.agent:agent"
    code, out, err = _run(capsys, *command.replace("myapp.agent:agent", target).split()[1:])
    assert (code, err) == (0, "")
    assert out == sample
