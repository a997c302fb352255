"""The in-place rows: each framework's own tool call, unguarded and guarded by its one
documented line, in the same run, interleaved (issue 27's overhead table).

Each framework's rows live in ``benchmarks/inplace_<framework>.py`` as ``SUITE``: a
:class:`~_peers.Suite` whose namespace builds the framework's own agent or server twice
(with and without toolguard) and whose benches pair ``<key>_guarded`` with
``<key>_unguarded`` (``vs=``) on success and on failure (the failure's unguarded side
is the framework's own error handling). A framework that is not installed is skipped,
as a peer is.
"""

from __future__ import annotations

import importlib

from _peers import Suite

FRAMEWORKS = (
    "langchain",
    "openai_agents",
    "pydantic_ai",
    "mcp",
    "fastmcp",
    "google_adk",
    "crewai",
    "llama_index",
    "strands",
)


def inplace_suites() -> tuple[Suite, ...]:
    """Every framework's in-place suite that has been written, in table order."""
    found = []
    for name in FRAMEWORKS:
        try:
            module = importlib.import_module(f"inplace_{name}")
        except ModuleNotFoundError as missing:
            if missing.name == f"inplace_{name}":
                continue  # not written yet
            raise
        found.append(module.SUITE)
    return tuple(found)
