"""toolguard in DBOS workflows, on DBOS itself (SQLite, no server).

The issue's "done when", on DBOS: a workflow whose tool raises a secret-bearing
exception completes; the model sees the generic message quoting an id; the cause is
logged exactly once with that id, across a recovery of the workflow (the process dies
after the tool's step; the next launch runs the workflow again, its steps answering from
the journal); ``operation_outputs`` holds no secret; a ``ToolError`` reaches the model
with its text after one attempt; a transient failure is retried by DBOS per the compiled
step options and never by toolguard as well.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS, SetWorkflowID

from tests.integrations._dbos_workflows import (
    CRASH,
    Crash,
    agent,
    ascripted,
    ascripted_round,
    in_place,
    scripted,
    scripted_round,
    unguarded,
)
from tests.integrations._engines import dbos_launched, dbos_restarted, journal, steps
from tests.integrations._orders import ATTEMPTS, SECRET
from toolguard import EngineRetry, ToolCallFailed
from toolguard.integrations.dbos import step_options

Logs = list[dict[str, Any]]


@pytest.fixture
def launched(tmp_path: Path) -> Iterator[Path]:
    """DBOS on a SQLite file of this test's own; the journal's path."""
    ATTEMPTS.clear()
    CRASH["after_tools"] = False
    with dbos_launched(tmp_path):
        yield tmp_path / "dbos.sqlite"
    ATTEMPTS.clear()


def hidden(logs: Logs) -> Logs:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


def play(script: list[list[Any]]) -> list[dict[str, Any]]:
    told: list[dict[str, Any]] = DBOS.start_workflow(scripted, script).get_result()
    return told


def test_the_journal_reader_finds_the_secret_an_unguarded_step_leaves(launched: Path) -> None:
    """The positive control: without toolguard, DBOS pickles the step's exception (and
    its message) into operation_outputs, where ``journal`` finds it."""
    assert DBOS.start_workflow(unguarded).get_result() == "ValueError"
    assert SECRET in journal(launched)


# --- done when -------------------------------------------------------------------------------


def test_a_secret_bearing_failure_is_told_by_id_logged_once_across_a_recovery(
    launched: Path, logs: Logs
) -> None:
    workflow_id = f"wf-{uuid.uuid4()}"
    script = [["lookup", {"order": 13}], ["down", {}], ["down", {}], ["down", {}]]
    CRASH["after_tools"] = True
    with SetWorkflowID(workflow_id), pytest.raises(Crash):
        DBOS.start_workflow(scripted, script).get_result()
    assert DBOS.get_workflow_status(workflow_id).status == "PENDING"  # type: ignore[union-attr]
    first = list(hidden(logs))
    opened = [event for event in logs if event["event"] == "breaker_opened"]
    assert [event["error_type"] for event in first] == ["ValueError", "OSError", "OSError"]
    assert len(opened) == 1
    attempts = dict(ATTEMPTS)

    CRASH["after_tools"] = False
    dbos_restarted(launched.parent)  # the process died; the next launch recovers it
    told: list[dict[str, Any]] = DBOS.retrieve_workflow(workflow_id).get_result()
    assert attempts == ATTEMPTS  # every step answered from the journal
    assert hidden(logs) == first and len(opened) == 1  # nothing logged again
    [secret, down_1, down_2, refused] = told
    assert secret["error_kind"] == "hidden" and secret["error_id"] in secret["content"]
    assert secret["error_id"] == first[0]["error_id"]
    assert [down_1["error_kind"], down_2["error_kind"]] == ["hidden", "hidden"]
    assert refused["error_kind"] == "unavailable"  # the breaker, decided again the same
    assert SECRET not in journal(launched)
    # the journal: the tools' steps; the time the breaker read when it opened and when
    # it refused; its event, logged once in a step of its own (the hidden causes were
    # logged in the tools' steps)
    assert steps(launched, workflow_id) == [
        "toolguard.lookup",
        "toolguard.down",
        "toolguard.down",
        "toolguard.now",  # the breaker opens
        "toolguard.log",  # breaker_opened
        "toolguard.now",  # the third call: refused while open
    ]


def test_a_tool_error_reaches_the_model_with_its_text_after_one_attempt(
    launched: Path, logs: Logs
) -> None:
    assert step_options(agent, "cancel")["max_attempts"] == 3  # DBOS would retry it
    [told, cancelled] = play([["lookup", {"order": 42}], ["cancel", {"order": 7}]])
    assert told["content"] == "There is no order 42. Ask the user to check the number."
    assert cancelled["content"] == "Order 7 has shipped; it cannot be cancelled."
    assert [told["error_kind"], cancelled["error_kind"]] == ["visible", "visible"]
    assert ATTEMPTS == {"lookup": 1, "cancel": 1}  # a ToolError is an answer: one attempt
    assert hidden(logs) == []
    assert [event for event in logs if event["event"] == "tool_retry"] == []


def test_a_transient_failure_is_retried_by_dbos_per_the_compiled_step_options(
    launched: Path, logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    options = step_options(agent, "flaky")
    assert (options["max_attempts"], options["interval_seconds"], options["backoff_rate"]) == (
        3,
        0.01,
        2.0,
    )
    dbos_log = logging.getLogger("dbos")
    dbos_log.addHandler(caplog.handler)
    try:
        [told] = play([["flaky", {}]])
    finally:
        dbos_log.removeHandler(caplog.handler)
    assert told["content"] == "connected" and ATTEMPTS["flaky"] == 3
    retried = [r for r in caplog.records if "automatically retried" in r.getMessage()]
    assert len(retried) == 2  # DBOS's own log of each failed attempt: type and id only
    for record in retried:
        assert record.exc_info and isinstance(record.exc_info[1], EngineRetry)
        assert SECRET not in str(record.exc_info[1])
    assert [event["retried_by"] for event in logs if event["event"] == "tool_retry"] == [
        "engine",
        "engine",
    ]
    assert SECRET not in journal(launched)


def test_a_failure_on_the_last_attempt_is_answered_in_the_step_and_logged_once(
    launched: Path, logs: Logs
) -> None:
    [told] = play([["unreachable", {}]])
    assert told["error_kind"] == "hidden" and ATTEMPTS["unreachable"] == 2
    [event] = hidden(logs)
    assert event["error_id"] == told["error_id"] and event["error_type"] == "ConnectionError"
    assert SECRET not in journal(launched)


# --- async workflows, timeouts, failing the invocation, steps guarded in place -------------


async def test_an_async_workflow_its_timeouts_and_its_breaker(launched: Path, logs: Logs) -> None:
    """In an async workflow the time and the log events are recorded from a thread of
    their own (DBOS's sync run_step): the same journal as a sync workflow's."""
    down = ["down", {}]
    script = [["lookup", {"order": 13}], ["slow", {}], down, down, down]
    handle = await DBOS.start_workflow_async(ascripted, script)
    secret, slow, *downs = await handle.get_result()
    assert secret["error_kind"] == "hidden" and secret["error_id"] in secret["content"]
    assert slow["error_kind"] == "timeout" and "did not finish within 0.2 s" in slow["content"]
    assert [answer["error_kind"] for answer in downs] == ["hidden", "hidden", "unavailable"]
    assert ATTEMPTS["slow"] == 1 and ATTEMPTS["down"] == 2
    assert [event["error_type"] for event in hidden(logs)] == ["ValueError", "OSError", "OSError"]
    assert len([event for event in logs if event["event"] == "breaker_opened"]) == 1
    assert steps(launched, handle.workflow_id)[-3:] == [
        "toolguard.now",
        "toolguard.log",
        "toolguard.now",
    ]
    assert SECRET not in journal(launched)


def test_a_handler_that_fails_the_invocation_fails_the_workflow(launched: Path) -> None:
    with pytest.raises(ToolCallFailed) as failed:
        play([["fatal", {}]])
    assert failed.value.tool == "fatal"
    assert SECRET not in journal(launched)


def test_a_guarded_step_crosses_only_its_answer(launched: Path, logs: Logs) -> None:
    declined = DBOS.start_workflow(in_place, 500).get_result()
    assert declined["error_kind"] == "hidden" and declined["error_id"] in declined["content"]
    [event] = hidden(logs)  # logged in the step, not again in the workflow
    assert (event["error_id"], event["error_type"]) == (declined["error_id"], "PermissionError")
    assert ATTEMPTS["charge_card"] == 1  # answered: never retried
    assert DBOS.start_workflow(in_place, 5).get_result()["content"] == "charged 5"
    assert SECRET not in journal(launched)


def test_an_unknown_tool_is_answered_in_the_workflow(launched: Path) -> None:
    [told] = play([["serch", {"q": "x"}]])
    assert told["error_kind"] == "unknown_tool" and "lookup" in told["content"]


async def test_rounds_in_sync_and_async_workflows(launched: Path) -> None:
    told = DBOS.start_workflow(scripted_round, [7, 42, 13]).get_result()
    assert [answer["error_kind"] for answer in told] == [None, "visible", "hidden"]
    handle = await DBOS.start_workflow_async(ascripted_round, [7, 42])
    told = await handle.get_result()
    assert [answer["error_kind"] for answer in told] == [None, "visible", "unknown_tool"]
    assert SECRET not in journal(launched)
