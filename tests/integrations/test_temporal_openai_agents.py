"""The OpenAI Agents SDK's Temporal integration, guarded in place (its own environment:
.ci/extras). The tool is an activity guarded where it runs; the SDK's tool in the
workflow is guarded in place and reads the ActivityError through to the answer."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.integrations._engines import temporal_test_server
from tests.integrations._orders import ATTEMPTS, SECRET
from tests.integrations._temporal_openai_agents import (
    SupportWorkflow,
    lookup_order,
)
from toolguard.integrations.temporal import ToolguardPlugin

Logs = list[dict[str, Any]]


def _model() -> TestModel:
    """The model's turns: two tool calls, then an answer."""
    return TestModel.returning_responses(
        [
            ResponseBuilders.tool_call(json.dumps({"order": 13}), "lookup_order", call_id="c1"),
            ResponseBuilders.tool_call(json.dumps({"order": 42}), "lookup_order", call_id="c2"),
            ResponseBuilders.output_message("Done."),
        ]
    )


@pytest.fixture
async def temporal() -> AsyncIterator[WorkflowEnvironment]:
    plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(_model()),
    )
    environment = await WorkflowEnvironment.start_time_skipping(
        plugins=[plugin], test_server_existing_path=temporal_test_server()
    )
    async with environment:
        yield environment


async def test_the_agents_sdks_temporal_integration_guarded_in_place(
    temporal: WorkflowEnvironment, logs: Logs
) -> None:
    ATTEMPTS.clear()
    queue = f"support-{uuid.uuid4()}"
    async with Worker(
        temporal.client,
        task_queue=queue,
        workflows=[SupportWorkflow],
        activities=[lookup_order],
        plugins=[ToolguardPlugin()],
    ):
        handle = await temporal.client.start_workflow(
            SupportWorkflow.run, "Where is my order?", id=f"wf-{uuid.uuid4()}", task_queue=queue
        )
        secret, visible = await handle.result()
        history = await handle.fetch_history()
    [event] = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert event["error_type"] == "ValueError"  # logged in the activity, once
    assert f"error id {event['error_id']}" in secret and SECRET not in secret
    assert visible == "There is no order 42. Ask the user to check the number."
    assert ATTEMPTS == {"lookup_order": 2}  # each answered where it ran: never retried
    assert SECRET not in history.to_json()
