"""Every script in examples/ runs offline and exits 0.

An example for a framework that cannot share this environment says so in a line of
its own, ``# example-environment: crewai`` (the module it needs): it runs where that
module is installed (its own environment, ``.ci/extras``) and is left out elsewhere.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

MARKER = "# example-environment: "


def _runs_here(script: Path) -> bool:
    """False for an example marked for another environment whose module is missing."""
    for line in script.read_text(encoding="utf-8").splitlines():
        if line.startswith(MARKER):
            try:
                return importlib.util.find_spec(line.removeprefix(MARKER).strip()) is not None
            except ModuleNotFoundError:  # "google.adk" without even "google"
                return False
    return True


EXAMPLES = sorted(
    path for path in (Path(__file__).parent.parent / "examples").glob("*.py") if _runs_here(path)
)


def test_there_are_examples() -> None:
    assert EXAMPLES


@pytest.mark.parametrize("script", EXAMPLES, ids=lambda p: p.name)
def test_example_runs(script: Path) -> None:
    env = {**os.environ, "PYTHONWARNINGS": "error::DeprecationWarning:toolguard"}
    completed = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=script.parent.parent,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stdout.strip(), "an example should show what it does"
