"""The README's two commands: CI runs the test command; the demo command works."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


def test_the_demo_shows_every_outcome() -> None:
    toolguard = Path(sys.executable).parent / "toolguard"
    completed = subprocess.run(
        [str(toolguard), "demo"], capture_output=True, text=True, timeout=60, check=True
    )
    out = completed.stdout
    assert "shipped" in out  # success
    assert "There is no order 9. Ask the user to check the number." in out  # ToolError
    ids = re.findall(r"error id ([0-9a-f]{8})\)\. The details", out)
    assert len(ids) == 1  # the hidden failure's generic message...
    assert re.search(rf"tool_error_hidden .*error_id={ids[0]}", out)  # ...and its log line
    assert "hunter2" in out.split("model sees")[2]  # the cause is in the log...
    model_lines = [line for line in out.splitlines() if line.startswith("      ")]
    assert not any("hunter2" in line for line in model_lines)  # ...never in what the model saw
    assert "missing required argument" in out
    assert "the loop stops: hand_off_to_human asked to return directly" in out
