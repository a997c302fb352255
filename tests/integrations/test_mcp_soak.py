"""``benchmarks/soak_mcp.py --quick`` (issue 12): mixed calls over a real stdio server.

Every request answered with the kind of answer its tool must get, no secret on
the wire, the server's threads bounded and its memory flat. The verdict is
checked, never a rate (the full 100,000-call run is not part of the suite).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_soak_answers_every_call_with_threads_and_memory_bounded() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "soak_mcp.py"), "--quick"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    report = {
        key.strip(): value.strip()
        for key, _, value in (
            line.partition(":") for line in done.stdout.splitlines() if line[:1] != " "
        )
    }
    assert report["unanswered"] == "0"
    assert report["wrong kind"] == "0"
    assert report["secret leaks"] == "0"
    assert report["verdict"] == "every check held"
