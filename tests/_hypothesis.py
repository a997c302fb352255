"""Hypothesis profiles for toolguard's property tests (imported by the modules that use them).

Three profiles, applied to the property tests that import :data:`PROFILE`:

``ci`` (the default)
    Quick: 60 examples per property, no deadline (thread pools and event loops
    start up slowly on a loaded CI machine). Every ``pytest`` run uses it.
``dev``
    Quicker, for the fast subset a maintainer runs while working (CONTRIBUTING.md)::

        HYPOTHESIS_PROFILE=dev .venv/bin/python -m pytest -m "not slow"

    10 examples per property: each property still runs, with less search.
``thorough``
    On demand, before a release or after touching the failure path::

        HYPOTHESIS_PROFILE=thorough .venv/bin/pytest tests/test_leaks.py

The profile applies only to the tests decorated with :data:`PROFILE`, so other
modules' Hypothesis settings are left alone.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.register_profile(
    "dev",
    parent=settings.get_profile("ci"),
    max_examples=10,
)
settings.register_profile(
    "thorough",
    max_examples=3000,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
    print_blob=True,
)

PROFILE_NAME = os.environ.get("HYPOTHESIS_PROFILE", "ci")
PROFILE: settings = settings.get_profile(PROFILE_NAME)
"""The selected profile, as a decorator: ``@PROFILE`` above ``@given(...)``."""
