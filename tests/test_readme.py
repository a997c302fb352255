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


def _model_lines(text: str) -> list[str]:
    """What the demo shows as sent to the model (indented under 'model sees:')."""
    return [line for line in text.splitlines() if line.startswith("      ")]


def _log_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("  log |")]


def test_the_demo_shows_every_outcome() -> None:
    """Both runs show every outcome; they differ only in the hidden failure."""
    toolguard = Path(sys.executable).parent / "toolguard"
    completed = subprocess.run(
        [str(toolguard), "demo"], capture_output=True, text=True, timeout=60, check=True
    )
    out = completed.stdout
    _, rest = out.split("=== run 1 of 2: the 'development' preset ===\n")
    development, rest = rest.split("=== run 2 of 2: the 'production' preset ===\n")
    production, compared = rest.split("=== the two runs compared: what the model saw")
    for run in (development, production):
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
    assert re.search(
        r"\[debug\s*\] tool_error_hidden .*handler=send_exception_message", development
    )
    assert "      refund ledger unavailable\n" in development  # the exception's own message
    ids = re.findall(r"failed \(error id ([0-9a-f]{8})\)\. The details are hidden", production)
    assert len(ids) == 1  # production's generic message...
    assert re.search(rf"\[warning\s*\] tool_error_hidden .*error_id={ids[0]}", production)
    assert "refund ledger unavailable" not in "\n".join(_model_lines(production))
    assert "    development: refund ledger unavailable\n" in compared
    assert f"    production:  The tool 'refund' failed (error id {ids[0]})." in compared
