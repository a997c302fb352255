"""Rules of the test suite itself: what makes a test fail rather than skip."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).parent
SKIPS_ON_TOOLGUARD = re.compile(r"""importorskip\(\s*["']toolguard\b""")


def test_the_skip_pattern_finds_an_importorskip_of_toolguard() -> None:
    """The positive control for the test below."""
    assert SKIPS_ON_TOOLGUARD.search('formats = pytest.importorskip("toolguard.formats")')
    assert SKIPS_ON_TOOLGUARD.search("pytest.importorskip('toolguard')")
    assert not SKIPS_ON_TOOLGUARD.search('pytest.importorskip("toolguardian")')


def test_no_test_skips_when_a_toolguard_module_fails_to_import() -> None:
    """``pytest.importorskip`` on toolguard's own modules would turn a breakage into a
    skip: a test imports them, and fails when they are broken."""
    found = [
        f"{path.relative_to(TESTS.parent)}:{number}"
        for path in sorted(TESTS.rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if SKIPS_ON_TOOLGUARD.search(line) and path != Path(__file__)
    ]
    assert found == []
