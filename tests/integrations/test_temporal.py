"""toolguard in Temporal workflows, on Temporal's own time-skipping test server.

The issue's "done when", on Temporal, with the default sandboxed runner: a workflow whose
tool raises a secret-bearing exception completes; the model sees the generic message
quoting an id; the cause is logged exactly once with that id, across a replay of the
recorded history; the persisted history holds no secret; a ``ToolError`` reaches the
model with its text after one attempt; a transient failure is retried by Temporal per
the compiled policy and never by toolguard as well.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.api.failure.v1 import Failure
from temporalio.client import WorkflowFailureError, WorkflowHandle, WorkflowHistory
from temporalio.exceptions import ApplicationError, CancelledError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from tests.integrations import _recorder
from tests.integrations._engines import temporal_environment
from tests.integrations._orders import ATTEMPTS, SECRET
from tests.integrations._temporal_workflows import (
    InPlaceAgent,
    RoundAgent,
    ScriptedAgent,
    UnguardedAgent,
    UnguardedAnswered,
    agent,
    charge_card,
    leaky_card,
)
from toolguard.integrations.temporal import PASSTHROUGH, ToolguardPlugin

Logs = list[dict[str, Any]]


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    async with temporal_environment() as environment:
        yield environment


@pytest.fixture(autouse=True)
def _fresh_counts() -> Iterator[None]:
    ATTEMPTS.clear()
    yield
    ATTEMPTS.clear()


@contextlib.asynccontextmanager
async def worker(environment: WorkflowEnvironment, queue: str) -> AsyncIterator[Worker]:
    """A worker as a user writes one: the default (sandboxed) runner, one plugin."""
    async with Worker(
        environment.client,
        task_queue=queue,
        workflows=[ScriptedAgent, InPlaceAgent, UnguardedAgent, UnguardedAnswered, RoundAgent],
        activities=[charge_card, leaky_card],
        plugins=[ToolguardPlugin(agent)],
    ) as running:
        yield running


async def play(
    environment: WorkflowEnvironment, script: list[list[Any]]
) -> tuple[list[dict[str, Any]], WorkflowHandle[Any, Any]]:
    queue = f"agent-{uuid.uuid4()}"
    async with worker(environment, queue):
        handle = await environment.client.start_workflow(
            ScriptedAgent.run, script, id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        told: list[dict[str, Any]] = await handle.result()
    return told, handle


def events(history: WorkflowHistory, kind: int) -> list[Any]:
    return [event for event in history.events if event.event_type == kind]


def hidden(logs: Logs) -> Logs:
    return [event for event in logs if event["event"] == "tool_error_hidden"]


async def replay(history: WorkflowHistory) -> None:
    """Replay ``history`` as a worker would after a restart: a nondeterminism fails it."""
    replayer = Replayer(
        workflows=[ScriptedAgent, InPlaceAgent, UnguardedAnswered], plugins=[ToolguardPlugin()]
    )
    await replayer.replay_workflow(history)


# --- the default sandbox, no passthrough by the user --------------------------------------


def test_the_plugin_keeps_the_default_sandboxed_runner_and_passes_toolguard_through() -> None:
    config: Any = {"workflow_runner": SandboxedWorkflowRunner()}
    runner = ToolguardPlugin().configure_worker(config)["workflow_runner"]
    assert isinstance(runner, SandboxedWorkflowRunner)
    assert set(PASSTHROUGH) <= runner.restrictions.passthrough_modules
    assert "toolguard" in PASSTHROUGH


async def test_a_workflow_that_makes_and_uses_toolguard_runs_in_the_sandbox_without_plugin(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    """No plugin, no passthrough: toolguard is re-imported in the sandbox and makes a
    dispatcher, a named session with a breaker, and answers in workflow code."""
    from tests.integrations._temporal_sandboxed import MadeInTheWorkflow

    queue = f"sandboxed-{uuid.uuid4()}"
    async with Worker(temporal.client, task_queue=queue, workflows=[MadeInTheWorkflow]):
        told = await temporal.client.execute_workflow(
            MadeInTheWorkflow.run,
            id=f"wf-{uuid.uuid4()}",
            task_queue=queue,
            execution_timeout=timedelta(seconds=60),
        )
    assert [answer["kind"] for answer in told] == [None, "hidden", "unavailable", "unknown_tool"]
    assert told[0]["content"] == "3"
    assert [event["error_type"] for event in hidden(logs)] == ["ValueError"]


async def test_the_history_reader_finds_the_secret_an_unguarded_activity_leaves(
    temporal: WorkflowEnvironment,
) -> None:
    """The positive control: without toolguard, Temporal keeps the activity's exception
    message in the history, where the tests below look for the secret."""
    queue = f"agent-{uuid.uuid4()}"
    async with worker(temporal, queue):
        handle = await temporal.client.start_workflow(
            UnguardedAgent.run, 500, id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        assert await handle.result() == "ApplicationError"
        assert SECRET in (await handle.fetch_history()).to_json()


# --- done when -------------------------------------------------------------------------------


async def test_a_secret_bearing_failure_is_told_by_id_logged_once_across_a_replay(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    told, handle = await play(temporal, [["call", "lookup", {"order": 13}]])
    [answer] = told
    assert answer["is_error"] and answer["error_kind"] == "hidden"
    assert answer["error_id"] in answer["content"] and SECRET not in answer["content"]
    [event] = hidden(logs)
    assert (event["error_id"], event["error_type"], event["tool"]) == (
        answer["error_id"],
        "ValueError",
        "lookup",
    )
    history = await handle.fetch_history()
    assert SECRET not in history.to_json()
    [completed] = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED)
    persisted = completed.activity_task_completed_event_attributes.result.payloads[0].data
    assert answer["error_id"].encode() in persisted and b"ValueError" in persisted

    await replay(history)
    assert len(hidden(logs)) == 1  # nothing logged again on replay
    first = _recorder.ANSWERS[(handle.id, False)]
    assert _recorder.ANSWERS[(handle.id, True)] == first == told  # the same answer


async def test_a_tool_error_reaches_the_model_with_its_text_after_one_attempt(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    script = [["call", "lookup", {"order": 42}], ["call", "cancel", {"order": 7}]]
    told, handle = await play(temporal, script)
    assert told[0]["content"] == "There is no order 42. Ask the user to check the number."
    assert told[1]["content"] == "Order 7 has shipped; it cannot be cancelled."
    assert [(a["error_kind"], a["error_id"]) for a in told] == [("visible", None)] * 2
    assert ATTEMPTS == {"lookup": 1, "cancel": 1}
    history = await handle.fetch_history()
    # cancel has retries=2: Temporal would retry it, but a ToolError is an answer
    scheduled = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    assert scheduled[1].activity_task_scheduled_event_attributes.retry_policy.maximum_attempts == 3
    started = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    assert [event.activity_task_started_event_attributes.attempt for event in started] == [1, 1]
    assert events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED) == []
    assert hidden(logs) == []
    assert [event for event in logs if event["event"] == "tool_retry"] == []


async def test_a_transient_failure_is_retried_by_temporal_per_the_compiled_policy(
    temporal: WorkflowEnvironment, logs: Logs, caplog: pytest.LogCaptureFixture
) -> None:
    told, handle = await play(temporal, [["call", "flaky", {}]])
    assert told[0]["content"] == "connected" and not told[0]["is_error"]
    history = await handle.fetch_history()
    [scheduled] = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    policy = scheduled.activity_task_scheduled_event_attributes.retry_policy
    assert policy.maximum_attempts == 3  # retries=2: the first attempt and two more
    assert policy.initial_interval.ToTimedelta() == timedelta(seconds=0.5)
    assert policy.backoff_coefficient == 2.0
    assert "ToolError" in policy.non_retryable_error_types
    [started] = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED)
    attempts = started.activity_task_started_event_attributes.attempt
    assert attempts == 3 == ATTEMPTS["flaky"]  # one run of the tool per engine attempt
    assert SECRET not in history.to_json()
    # each failed attempt, as the worker logged it and sent it to Temporal (the server
    # keeps the last one with the next attempt): the type and the error id, nothing else
    sent = [r.exc_info[1] for r in caplog.records if r.exc_info and r.exc_info[1]]
    retried = [event for event in logs if event["event"] == "tool_retry"]
    assert [event["retried_by"] for event in retried] == ["engine", "engine"]
    assert len(sent) == 2
    for error, event in zip(sent, retried, strict=True):
        assert isinstance(error, ApplicationError) and error.type == "ConnectionError"
        assert not error.non_retryable and error.__cause__ is None
        assert event["error_id"] in error.message
        failure = Failure()
        await temporal.client.data_converter.encode_failure(error, failure)
        assert SECRET not in str(failure) and "10.0.0.7" not in str(failure)


async def test_a_failure_on_the_last_attempt_is_answered_there_and_logged_once(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    told, handle = await play(temporal, [["call", "unreachable", {}]])
    assert told[0]["error_kind"] == "hidden" and ATTEMPTS["unreachable"] == 2
    [event] = hidden(logs)
    assert event["error_id"] == told[0]["error_id"] and event["error_type"] == "ConnectionError"
    history = await handle.fetch_history()
    assert events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED) == []  # it answered
    assert SECRET not in history.to_json()


# --- the workflow side: root causes, sessions, replays --------------------------------------


async def test_an_engine_timeout_is_answered_in_the_workflow_as_a_timeout(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    told, handle = await play(temporal, [["call", "slow", {}]])
    assert told[0]["error_kind"] == "timeout"
    assert told[0]["content"].startswith("The tool 'slow' did not finish in time")
    assert ATTEMPTS["slow"] == 1  # retries=None compiled to one attempt
    history = await handle.fetch_history()
    [scheduled] = events(history, EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
    attributes = scheduled.activity_task_scheduled_event_attributes
    assert attributes.start_to_close_timeout.ToTimedelta() == timedelta(seconds=1)
    await replay(history)


async def test_a_breaker_is_kept_in_workflow_state_on_temporals_clock(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    down: list[Any] = ["call", "down", {}]
    script: list[list[Any]] = [down, down, down, ["sleep", 61], down]
    told, handle = await play(temporal, script)
    kinds = [answer["error_kind"] for answer in told]
    assert kinds == ["hidden", "hidden", "unavailable", "hidden"]
    assert ATTEMPTS["down"] == 3  # refused while open, tried again after the cool-down
    assert len(hidden(logs)) == 3
    opened = [event["failures"] for event in logs if event["event"] == "breaker_opened"]
    assert opened == [2, 3]  # logged in the workflow: opened, then again after its trial
    await replay(await handle.fetch_history())
    assert _recorder.ANSWERS[(handle.id, True)] == told
    assert len(hidden(logs)) == 3
    assert [event["failures"] for event in logs if event["event"] == "breaker_opened"] == opened


async def test_an_unknown_tool_is_answered_in_the_workflow(temporal: WorkflowEnvironment) -> None:
    told, _ = await play(temporal, [["call", "serch", {"q": "x"}]])
    assert told[0]["error_kind"] == "unknown_tool" and "search" not in told[0]["content"]
    assert "lookup" in told[0]["content"]


async def test_a_handler_that_fails_the_invocation_fails_the_workflow_not_its_task(
    temporal: WorkflowEnvironment,
) -> None:
    with pytest.raises(WorkflowFailureError) as failed:
        await play(temporal, [["call", "fatal", {}]])
    cause = failed.value.cause
    assert isinstance(cause, ApplicationError) and cause.type == "ToolCallFailed"


async def test_cancelling_the_workflow_passes_through_untouched(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    queue = f"agent-{uuid.uuid4()}"
    async with worker(temporal, queue):
        handle = await temporal.client.start_workflow(
            ScriptedAgent.run, [["call", "hang", {}]], id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        while not ATTEMPTS.get("hang"):
            await temporal.sleep(timedelta(milliseconds=100))
        await handle.cancel()
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
    assert isinstance(failed.value.cause, CancelledError)
    assert hidden(logs) == []


# --- an activity that is itself a tool, answered in place in workflow code ---------------


async def in_place(environment: WorkflowEnvironment, amount: int) -> dict[str, Any]:
    queue = f"agent-{uuid.uuid4()}"
    async with worker(environment, queue):
        handle = await environment.client.start_workflow(
            InPlaceAgent.run, amount, id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        answer: dict[str, Any] = await handle.result()
        assert SECRET not in (await handle.fetch_history()).to_json()
    return answer


async def test_a_guarded_activity_crosses_only_its_answer(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    declined = await in_place(temporal, 500)
    assert declined["error_kind"] == "hidden" and declined["error_id"] in declined["content"]
    [event] = hidden(logs)  # logged where it happened, not again in the workflow
    assert (event["error_id"], event["error_type"]) == (declined["error_id"], "PermissionError")
    assert ATTEMPTS["charge_card"] == 1  # answered: never retried
    visible = await in_place(temporal, -5)
    assert (visible["content"], visible["error_kind"]) == (
        "The amount must be positive.",
        "visible",
    )
    assert (await in_place(temporal, 5))["content"] == "charged 5"


async def run_workflow(
    environment: WorkflowEnvironment, run: Any, argument: Any
) -> tuple[Any, WorkflowHandle[Any, Any]]:
    queue = f"agent-{uuid.uuid4()}"
    async with worker(environment, queue):
        handle = await environment.client.start_workflow(
            run, argument, id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        return await handle.result(), handle


async def test_an_unguarded_activitys_failure_is_answered_by_its_root_cause(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    """Not ActivityError: the type the activity raised, which a handler can name."""
    answer, handle = await run_workflow(temporal, UnguardedAnswered.run, 500)
    assert answer["content"] == "The card was declined." and answer["error_kind"] == "hidden"
    [event] = hidden(logs)  # logged in the workflow, by its root cause
    assert (event["error_type"], event["error_id"]) == ("PermissionError", answer["error_id"])
    await replay(await handle.fetch_history())
    assert hidden(logs) == [event]  # not again on replay


async def test_a_round_runs_its_calls_at_once_and_assembles_as_run_does(
    temporal: WorkflowEnvironment,
) -> None:
    told, _ = await run_workflow(temporal, RoundAgent.run, [7, 42, 13])
    assert [answer["error_kind"] for answer in told] == [None, "visible", "hidden"]
    assert told[0]["content"] == "order 7: shipped"
