"""The conformance drivers of the frameworks that cannot share the main environment:
each runs in its framework's own (.ci/extras, which fails when the framework is
missing), and is left out of collection where that framework is not installed, as
their test modules are (tests/conftest.py), never skipped."""

from __future__ import annotations

from tests.conftest import _installed

OWN_ENVIRONMENTS: dict[str, str] = {
    "test_crewai.py": "crewai",
    "test_google_adk.py": "google.adk",
    "test_strands.py": "strands",
    "test_semantic_kernel.py": "semantic_kernel",
    "test_dspy.py": "dspy",
}

collect_ignore = [path for path, module in OWN_ENVIRONMENTS.items() if not _installed(module)]
