"""Every script in examples/ runs offline and exits 0."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).parent.parent / "examples").glob("*.py"))


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
