"""The README's two commands: CI runs the test command; the demo command works."""

from __future__ import annotations

import functools
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
README = (ROOT / "README.md").read_text()


def _commands() -> list[str]:
    return re.findall(r"```bash\n#[^\n]*\n([^\n]+)\n```", README)


def test_the_readme_has_a_demo_command_and_a_test_command() -> None:
    demo, tests = _commands()[:2]
    assert demo.endswith("toolguard demo")
    assert "pytest" in tests and "ruff check" in tests and "mypy --strict toolguard" in tests


def test_ci_runs_exactly_the_readme_test_command() -> None:
    tests = _commands()[1]
    script = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in script


def _model_lines(text: str) -> list[str]:
    """What the demo shows as sent to the model (indented under 'model sees:')."""
    return [line for line in text.splitlines() if line.startswith("      ")]


def _log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  log |")]


TOOLGUARD = Path(sys.executable).parent / "toolguard"


@functools.cache
def _demo() -> str:
    completed = subprocess.run(
        [str(TOOLGUARD), "demo"], capture_output=True, text=True, timeout=60, check=True
    )
    return completed.stdout


def test_the_demo_shows_every_outcome() -> None:
    """Both runs show every outcome; they differ only in the hidden failure."""
    out = _demo()
    tools, rest = out.split("=== run 1 of 2: the 'development' preset ===\n")
    # each tool's code is shown, so a reader sees which message came from a ToolError
    assert "    def order_status(order_id: int) -> str:\n" in tools
    assert '            raise ToolError(f"There is no order {order_id}.' in tools
    assert "    @tool(return_direct=True)\n" in tools
    development, rest = rest.split("=== run 2 of 2: the 'production' preset ===\n")
    production, compared = rest.split("=== the two runs compared: what the model saw")
    for run in (development, production):
        # the model's arguments, as it sent them, before each call; no one poses as the user
        assert '  model calls refund with {"order": "42"}  (call_4)\n' in run
        assert "user says" not in run
        assert "      shipped\n" in run  # success
        assert "      There is no order 9. Ask the user to check the number.\n" in run  # ToolError
        assert "      - 'order_id': missing required argument (an integer)\n" in run  # bad args
        assert "the loop stops: hand_off_to_human asked to return directly" in run
        [event] = [line for line in _log_lines(run) if "tool_error_hidden" in line]
        match = re.search(r"error_id=([0-9a-f]{8})", event)
        assert match is not None  # the hidden failure is logged once, with its id...
        header = f"  tool refund [error, error id {match.group(1)} (its cause is in the log above)]"
        assert run.index(event) < run.index(header)  # ...before the result quoting that id
        assert any("hunter2" in line for line in _log_lines(run))  # the cause is in the log...
        assert not any("hunter2" in line or "postgres" in line for line in _model_lines(run))
        frames = [line for line in _log_lines(run) if line.lstrip(" log|").startswith("File ")]
        assert frames  # the traceback shows the tool's own frames, and only those
        assert all("_demo.py" in frame and "in refund" in frame for frame in frames), frames
    assert re.search(
        r"\[debug\s*\] tool_error_hidden .*handler=send_exception_message", development
    )
    assert "      refund ledger unavailable\n" in development  # the exception's own message
    ids = re.findall(r"failed \(error id ([0-9a-f]{8})\)\. The details are hidden", production)
    assert len(ids) == 1  # production's generic message...
    assert re.search(rf"\[warning\s*\] tool_error_hidden .*error_id={ids[0]}", production)
    assert "refund ledger unavailable" not in "\n".join(_model_lines(production))
    assert "    development: refund ledger unavailable\n" in compared
    generic = (
        f"    production:  The tool 'refund' failed (error id {ids[0]}). The details are hidden"
        " from you. Do not retry the same call; try another approach, or tell the user and"
        " quote the error id.\n"
    )
    assert generic in compared  # nothing is cut mid-message
    assert not any(line.endswith("...") for line in _model_lines(out))
    assert "on_error = generic_unless_visible(" in production
    assert 'quote the error id.")\n' in production  # the handler's message, in full
    assert "                 - 'order': unexpected argument" in compared  # every line


def _try_lines(out: str) -> list[str]:
    _, tail = out.split("\nTry (")
    return [line.strip() for line in tail.splitlines()[1:] if line.startswith("  ")]


@pytest.mark.parametrize("number", range(4))
def test_the_demos_try_lines_work_as_printed(number: int, tmp_path: Path) -> None:
    """Each command the demo closes with runs as printed (the program named as the demo
    was started, so no venv needs activating), from any directory, and exits 0."""
    lines = _try_lines(_demo())
    assert len(lines) == 4
    argv = shlex.split(lines[number])
    assert argv[0] == str(TOOLGUARD)  # started as .../bin/toolguard: printed so
    completed = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.strip()


def test_demo_help_says_what_the_demo_does() -> None:
    """`toolguard demo --help` describes the tour, not just its usage line."""
    completed = subprocess.run(
        [str(TOOLGUARD), "demo", "--help"], capture_output=True, text=True, timeout=60, check=True
    )
    assert "scripted agent conversation" in completed.stdout
    assert "toolguard._demo:agent" in completed.stdout


def test_every_install_line_names_the_toolguard_agents_distribution() -> None:
    """`toolguard` on PyPI is another project: no install line may name it."""
    files = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").rglob("*.md")]
    files += sorted((ROOT / "examples").rglob("*.py"))
    lines = [
        (path.name, line)
        for path in files
        for line in path.read_text().splitlines()
        if re.search(r"pip install\s", line)
    ]
    assert lines
    for name, line in lines:
        targets = re.findall(r"pip install\s+(?:-[a-z]+\s+)*(\"[^\"]+\"|\S+)", line)
        for target in targets:
            target = target.strip('"`')
            # a clone (".", "path/to/toolguard[extra]"), toolguard-agents, or another
            # package (the SDK an example needs): never the index's own "toolguard"
            assert not re.fullmatch(r"toolguard(\[[^\]]*\])?([<>=~!].*)?", target), (name, line)
