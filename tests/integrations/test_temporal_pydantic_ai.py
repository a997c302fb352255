"""Pydantic AI's ``TemporalDurability`` beside ``ToolguardCapability``, on Temporal's test
server, with Pydantic AI's plugin and toolguard's (the default sandboxed runner).

The tools are toolguard's (``as_pydantic_ai_tool``): each runs inside Pydantic AI's tool
activity, where toolguard answers its failure (the history keeps the answer, never the
hidden text) and hands a retry to Temporal (one attempt per activity, the retry policy
compiled from the tool's own); the capability runs in the workflow, on the workflow
runtime (the conversation's session in the run's state, replay-safe ids and logs).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from tests.integrations._engines import temporal_test_server
from tests.integrations._orders import ATTEMPTS, SECRET
from tests.integrations._temporal_pydantic_ai import SupportWorkflow, support
from toolguard.integrations.temporal import ToolguardPlugin

Logs = list[dict[str, Any]]


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    """The test server, its client with Pydantic AI's data converter (its plugin)."""
    environment = await WorkflowEnvironment.start_time_skipping(
        plugins=[PydanticAIPlugin()], test_server_existing_path=temporal_test_server()
    )
    async with environment:
        yield environment


async def test_the_capability_beside_temporal_durability(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    ATTEMPTS.clear()
    queue = f"support-{uuid.uuid4()}"
    plugins = [AgentPlugin(support), ToolguardPlugin()]
    async with Worker(
        temporal.client, task_queue=queue, workflows=[SupportWorkflow], plugins=plugins
    ):
        handle = await temporal.client.start_workflow(
            SupportWorkflow.run, "Where are my orders?", id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        secret, visible, retried = (await handle.result()).split("\n")
        history = await handle.fetch_history()
    [event] = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert event["error_type"] == "ValueError"  # logged in the tool's activity, once
    assert f"error id {event['error_id']}" in secret and SECRET not in secret
    assert visible == "There is no order 42. Ask the user to check the number."
    assert retried == "connected" and ATTEMPTS == {"lookup": 2, "reconnect": 3}
    assert SECRET not in history.to_json()
    replayer = Replayer(
        workflows=[SupportWorkflow],
        plugins=[PydanticAIPlugin(), AgentPlugin(support), ToolguardPlugin()],
    )
    await replayer.replay_workflow(history)
    assert len([event for event in logs if event["event"] == "tool_error_hidden"]) == 1
