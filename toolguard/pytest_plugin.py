"""pytest plugin: fixtures for testing code that uses toolguard.

Installed with toolguard (the ``pytest11`` entry point), or loaded explicitly with
``pytest -p toolguard.pytest_plugin``. Fixtures:

``toolguard_events``
    toolguard's log events during the test, as dicts
    (:func:`toolguard.testing.capture_events`).
``toolguard_defaults``
    toolguard's global defaults reset before and after the test; the fixture's value
    is :func:`toolguard.configure`, to set some for this test only.

toolguard itself is imported only when a fixture is used, so that loading the plugin
(before coverage measurement starts) costs nothing and measures nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

__all__ = ["toolguard_defaults", "toolguard_events"]


@pytest.fixture
def toolguard_events() -> Iterator[list[dict[str, Any]]]:
    """toolguard's structlog events during the test, as dicts (with ``log_level``)."""
    from toolguard.testing import capture_events

    with capture_events() as events:
        yield events


@pytest.fixture
def toolguard_defaults() -> Iterator[Callable[..., None]]:
    """Reset ``toolguard.configure()`` around the test; yields ``configure``."""
    from toolguard import configure, reset_defaults

    reset_defaults()
    try:
        yield configure
    finally:
        reset_defaults()
