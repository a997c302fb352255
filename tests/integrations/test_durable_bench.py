"""``benchmarks/durable.py --quick`` still runs and reports every row (never a timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


def test_the_durable_benchmark_reports_every_row() -> None:
    done = subprocess.run(
        [sys.executable, "benchmarks/durable.py", "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for row in (
        "temporal activity (test server)",
        "dbos step (SQLite)",
        "durable.answer (where the tool runs)",
        "durable.settle (in the workflow)",
    ):
        assert any(line.startswith(row) for line in done.stdout.splitlines()), row
