"""Shared fixtures: every test starts from toolguard's and structlog's defaults."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import pytest
import structlog
from structlog.testing import capture_logs

import toolguard


@pytest.fixture(autouse=True)
def _fresh_defaults() -> Iterator[None]:
    """Undo any ``configure()`` a test made, before and after it."""
    toolguard.reset_defaults()
    yield
    toolguard.reset_defaults()
    structlog.reset_defaults()


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every structlog event emitted during the test, as dicts."""
    with capture_logs() as captured:
        # structlog types the entries as its EventDict (a MutableMapping); each is a
        # dict, copied from the bound context of the default context_class (dict).
        yield cast("list[dict[str, Any]]", captured)
