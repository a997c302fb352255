"""A policy file names the store and its failure mode; ``explain`` and ``toolguard
explain`` show them; sessions made without ``store=`` use the file's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests._content import str_content
from tests._redis_server import RedisServer
from toolguard import Breaker, Dispatcher, PolicyFileError, Setting, ToolCall, load_policy, tool
from toolguard.cli import main
from toolguard.stores import MemoryStore, RedisStore


@tool(breaker=Breaker(failures=1, cooldown=60))
def fragile(x: int) -> int:
    """Fails every time."""
    raise OSError(f"disk {x} gone")


AGENT = Dispatcher([fragile])


def _setting(dispatcher: Dispatcher, name: str) -> Setting:
    found = dispatcher.explain("fragile")[name]
    assert isinstance(found, Setting)
    return found


def _policy(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "fleet.toml"
    path.write_text(f"version = 1\n[agent]\n{body}\n")
    return path


def test_the_store_defaults_to_memory_and_explain_says_so() -> None:
    store = _setting(AGENT, "store")
    assert (store.value, store.level) == ("memory", "builtin")
    assert _setting(AGENT, "store_unavailable").value == "fail-open"
    assert AGENT.session(id="x").store is None  # the in-process state, as before


def test_a_policy_file_sets_the_store_and_sessions_use_it(
    tmp_path: Path, redis_server: RedisServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLEET_REDIS", redis_server.url)
    path = _policy(tmp_path, 'store = "env:FLEET_REDIS"\nstore_unavailable = "fail-closed"')
    dispatcher = Dispatcher([fragile], policy=load_policy(path))
    store = _setting(dispatcher, "store")
    assert (store.value, store.source) == ("env:FLEET_REDIS", str(path))
    assert _setting(dispatcher, "store_unavailable").value == "fail-closed"
    session = dispatcher.session(id="conv-policy")
    assert isinstance(session.store, RedisStore) and session.store.on_unavailable == "fail-closed"
    session.dispatch(ToolCall(name="fragile", arguments={"x": 1}))
    # another dispatcher built from the same file (another process) sees the open breaker
    other = Dispatcher([fragile], policy=load_policy(path)).session(id="conv-policy")
    assert "unavailable" in str_content(
        other.dispatch(ToolCall(name="fragile", arguments={"x": 1}))
    )
    assert isinstance(dispatcher.session(store=MemoryStore()).store, type(None))  # code wins


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('store = "postgres://db"', 'expected "memory", a Redis URL'),
        ('store = "redis://:hunter2@cache:6379/0"', "does not belong in a policy"),
        ('store_unavailable = "fail-later"', "fail-open"),
    ],
)
def test_bad_store_settings_are_refused_at_load(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(PolicyFileError, match=message) as raised:
        load_policy(_policy(tmp_path, body))
    assert "hunter2" not in str(raised.value)


def test_toolguard_explain_prints_the_store_and_its_failure_mode(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _policy(tmp_path, 'store = "redis://cache:6379/0"')
    code = main(["explain", "tests.test_stores_policy:AGENT", "--policy", str(path)])
    out = capsys.readouterr().out
    rows = [re.sub(r" {2,}", " ", line.strip()) for line in out.splitlines()]
    assert code == 0
    assert f"store redis://cache:6379/0 agent {path}" in rows
    assert "store_unavailable fail-open builtin" in rows
