"""A Pydantic AI agent made durable by ``TemporalDurability``, guarded by toolguard: the
tools are toolguard's (answered inside their activities), their activity options
compiled from their policies, ``ToolguardCapability`` beside the durability."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

from tests.integrations._orders import find_order, flaky_connection
from toolguard import Dispatcher, tool
from toolguard.integrations.pydantic_ai import ToolguardCapability, as_pydantic_ai_tool
from toolguard.integrations.temporal import activity_options


@tool
def lookup(order: int) -> str:
    """Find an order."""
    return find_order(order)


@tool(retries=2)
def reconnect() -> str:
    """Fails twice, then works."""
    return flaky_connection("reconnect")


guard = Dispatcher([lookup, reconnect])

PLAN: list[tuple[str, dict[str, Any]]] = [
    ("lookup", {"order": 13}),
    ("lookup", {"order": 42}),
    ("reconnect", {}),
]


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: the plan's calls one per step, then what it was told."""
    told = [
        part for message in messages for part in message.parts if isinstance(part, ToolReturnPart)
    ]
    if len(told) < len(PLAN):
        name, arguments = PLAN[len(told)]
        call = ToolCallPart(tool_name=name, args=arguments, tool_call_id=f"call-{len(told)}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(content="\n".join(str(part.content) for part in told))])


durability = TemporalDurability(
    activity_config=ActivityConfig(
        start_to_close_timeout=timedelta(seconds=30), retry_policy=RetryPolicy(maximum_attempts=1)
    )
)
support = Agent(
    FunctionModel(model),
    name="support",
    tools=[
        as_pydantic_ai_tool(
            name, dispatcher=guard, metadata={"temporal": activity_options(guard, name)}
        )
        for name in guard.tools
    ],
    capabilities=[durability, ToolguardCapability(guard)],
)


@workflow.defn
class SupportWorkflow:
    @workflow.run
    async def run(self, question: str) -> str:
        result = await support.run(question)
        return result.output
