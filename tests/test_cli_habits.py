"""What users expect of any command: ``--version``, a suggestion for a misspelt command
or option, a preset to start a file from, and a server that says what it serves."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import toolguard
from toolguard.cli import main
from toolguard.files._load import load_policy, presets

TOOLGUARD = str(Path(sys.executable).parent / "toolguard")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_version_names_the_version_and_the_distribution() -> None:
    done = subprocess.run([TOOLGUARD, "--version"], capture_output=True, text=True)
    assert done.returncode == 0
    version = importlib.metadata.version("toolguard-agents")
    assert done.stdout == f"toolguard {version} (the distribution toolguard-agents)\n"
    assert version == toolguard.__version__


@pytest.mark.parametrize(
    ("argv", "usage", "hint"),
    [
        (["explian", "x:y"], "usage: toolguard ", "(did you mean 'explain'?)"),
        (["explain", "x:y", "--jsno"], "usage: toolguard explain ", "(did you mean '--json'?)"),
        (["schema", "x:y", "--format", "opnai"], "usage: toolguard schema", "'openai'?)"),
        (["explain", "x:y", "--tol", "a"], "usage: toolguard explain", "(did you mean '--tool'?)"),
        (["policy", "shwo", "x"], "usage: toolguard policy ", "(did you mean 'show'?)"),
    ],
)
def test_a_misspelt_command_option_or_choice_gets_a_suggestion(
    capsys: pytest.CaptureFixture[str], argv: list[str], usage: str, hint: str
) -> None:
    code, out, err = _run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(usage) and hint in err


def test_an_option_of_another_command_is_not_suggested(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "check", "production", "--jsn")
    assert code == 2
    assert "unrecognized arguments: --jsn" in err and "did you mean" not in err


def test_policy_list_names_each_preset_with_what_it_is_for(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = _run(capsys, "policy", "list")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == list(presets())
    assert "production" in lines[2] and lines[2].endswith("nothing else.")
    assert lines[-1] == "Print one to start a file from: toolguard policy show NAME > agent.toml"


def test_policy_show_prints_a_preset_that_loads_as_a_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, _ = _run(capsys, "policy", "show", "production")
    assert code == 0
    assert out == presets()["production"].read_text(encoding="utf-8")
    (tmp_path / "agent.toml").write_text(out, encoding="utf-8")
    started = load_policy(tmp_path / "agent.toml")
    assert repr(started.defaults) == repr(load_policy("production").defaults)  # handlers by name
    code, out, err = _run(capsys, "policy", "show", "prodution")
    assert (code, out) == (2, "")
    assert err == (
        "toolguard policy: no preset named 'prodution' (did you mean 'production'?); "
        "presets: default, development, production, strict\n"
    )


def test_serve_mcp_says_on_stderr_what_it_serves_and_that_it_waits(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import toolguard.integrations.mcp as mcp  # the test extra installs the MCP SDK

    served: list[Any] = []

    def serve(argv: list[str]) -> int:
        served.append(argv)
        return 0

    monkeypatch.setattr(mcp, "main", serve)
    code, out, err = _run(capsys, "serve-mcp", "tests.test_cli:AGENT", "--name", "shop")
    assert (code, out) == (0, "")  # stdout is the protocol's
    assert err == (
        "toolguard serve-mcp: serving 2 tools (search_web, final_answer) from "
        "tests.test_cli:AGENT as the MCP server 'shop' over stdio; waiting for a client on "
        "stdin (Ctrl-C stops)\n"
    )
    assert served == [["tests.test_cli:AGENT", "--name", "shop"]]
