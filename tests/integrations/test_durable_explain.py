"""``toolguard explain --engine temporal|dbos``: what a tool's retries and timeout compile
to in a durable engine's options, beside where each setting came from."""

from __future__ import annotations

import json

import pytest

from toolguard import Dispatcher, Retry, tool
from toolguard.cli import main


@tool(retries=Retry(attempts=4, initial=2.0, max_delay=30.0), timeout=20)
def search(query: str) -> str:
    """Search."""
    return query


@tool
def lookup(order: int) -> str:
    """Find an order."""
    return str(order)


AGENT = Dispatcher([search, lookup])


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return captured.out


def _rows(out: str, tool: str) -> list[str]:
    compiled = out.split("compiled for ", 1)[1]
    section = compiled.split(f"tool {tool}\n", 1)[1].split("\n\n", 1)[0]
    return [" ".join(line.split()) for line in section.splitlines()]


def test_explain_shows_the_temporal_options_a_policy_compiles_to(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run(capsys, "explain", f"{__name__}:AGENT", "--engine", "temporal")
    search_rows = _rows(out, "search")
    assert "start_to_close_timeout 20 s timeout (tool)" in search_rows
    assert "retry_policy.maximum_attempts 4 retries (tool)" in search_rows
    assert "retry_policy.initial_interval 2 s retries (tool)" in search_rows
    assert "retry_policy.maximum_interval 30 s retries (tool)" in search_rows
    assert any(row.startswith("note jitter 0.5 s") for row in search_rows)
    lookup_rows = _rows(out, "lookup")
    assert "retry_policy.maximum_attempts 1 retries (builtin)" in lookup_rows
    assert any(row.startswith("start_to_close_timeout 300 s") for row in lookup_rows)


def test_explain_shows_the_dbos_step_options_as_json_too(
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = _run(capsys, "explain", f"{__name__}:AGENT", "--engine", "dbos", "--json")
    engine = json.loads(out)["engine"]
    assert engine["name"] == "dbos"
    rows = {row["option"]: (row["value"], row["from"]) for row in engine["tools"]["search"]}
    assert rows["max_attempts"] == ("4", "retries (tool)")
    assert rows["interval_seconds"] == ("2", "retries (tool)")
    assert rows["timeout (each attempt, in the step)"] == ("20 s", "timeout (tool)")
