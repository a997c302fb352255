"""Every ```python block in README.md and docs/ runs, so documentation cannot drift.

Each page runs in a subprocess of its own (``tests/_docblocks.py``), offline, with a
timeout; each block in a fresh namespace unless the page declares a shared one. A
block that cannot run standalone carries a marker with its reason (see
CONTRIBUTING.md, "Code blocks in docs"); the marked blocks are counted and reported.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests._docblocks import MARKER, blocks

ROOT = Path(__file__).parent.parent
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])
TIMEOUT = 120


ENVIRONMENT = re.compile(r"^# example-environment: (\S+)$", re.M)


def _runs_here(text: str) -> bool:
    """False for a page whose blocks are marked ``# example-environment: MODULE`` (a
    framework that cannot share this environment) when that module is missing: the
    page runs in the framework's own environment (``.ci/extras``)."""
    for module in ENVIRONMENT.findall(text):
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except ModuleNotFoundError:  # "google.adk" without even "google"
            return False
    return True


def _with_blocks() -> list[Path]:
    return [page for page in PAGES if blocks(text := page.read_text()) and _runs_here(text)]


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


@pytest.mark.parametrize("page", _with_blocks(), ids=_name)
def test_every_python_block_of_the_page_runs(page: Path) -> None:
    """Each unmarked ```python block of the page runs to its end without raising."""
    completed = subprocess.run(
        [sys.executable, "-m", "tests._docblocks", str(page)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        cwd=ROOT,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads(completed.stdout.strip().rsplit("\n", 1)[-1])
    failed = [entry for entry in report if entry["status"] == "failed"]
    assert not failed, "\n\n".join(
        f"{_name(page)}:{entry['line']}:\n{entry['detail']}" for entry in failed
    )
    assert len(report) == len(blocks(page.read_text()))


def test_the_marked_blocks_are_counted_and_each_says_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Marked blocks are few and deliberate: each has a reason; the count is reported."""
    marked = [
        (page, line, marker)
        for page in PAGES
        for line, _, marker in blocks(page.read_text())
        if marker is not None
    ]
    total = sum(len(blocks(page.read_text())) for page in PAGES)
    for page, line, (kind, reason) in marked:
        assert reason.strip(), f"{_name(page)}:{line}: a {kind} marker needs a reason"
    with capsys.disabled():
        sys.stdout.write(f"\n[docs] {total} python blocks, {len(marked)} marked:\n")
        for page, line, (kind, reason) in marked:
            sys.stdout.write(f"[docs]   {_name(page)}:{line} {kind}: {reason}\n")
    assert total > 0


def test_a_marker_not_right_before_a_block_is_a_mistake() -> None:
    """A marker comment must sit on the line right before a fence, or it marks nothing."""
    for page in PAGES:
        lines = page.read_text().splitlines()
        for number, line in enumerate(lines):
            if MARKER.search(line):
                following = lines[number + 1] if number + 1 < len(lines) else ""
                assert following.startswith("```python"), (
                    f"{_name(page)}:{number + 1}: a marker must be followed by a ```python block"
                )


GUIDES = ("langchain", "langchain4j", "openai-agents", "pydantic-ai", "fastmcp")


@pytest.mark.parametrize("name", GUIDES)
def test_each_migration_guide_has_a_table_and_an_app_before_and_after(name: str) -> None:
    """docs/migrating/<framework>.md: old API -> toolguard, then a before and an after
    app; the after app is a python block, so the test above runs it."""
    text = (ROOT / "docs" / "migrating" / f"{name}.md").read_text()
    assert "| --- | --- |" in text
    before, after = text.split("\n## Before")[1].split("\n## After")
    assert "```" in before
    assert any(marker is None for _, _, marker in blocks(after))
