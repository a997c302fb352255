"""A Pydantic AI agent made durable by ``DBOSDurability``, guarded by toolguard: each
tool is a DBOS step (as Pydantic AI asks of function tools), guarded inside the step
(``guard_step``: answered there, a retry handed to DBOS), with the step options its
policy compiles to; ``ToolguardCapability`` beside the durability, in workflow code."""

from __future__ import annotations

from typing import Any

from dbos import DBOS
from pydantic_ai import (
    Agent,
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tests.integrations._orders import find_order, flaky_connection
from toolguard import Dispatcher, Retry, ToolPolicy
from toolguard.integrations.dbos import guard_step, step_options
from toolguard.integrations.pydantic_ai import ToolguardCapability

guard = Dispatcher(
    [],
    external_tools=["lookup", "reconnect"],
    overrides={"reconnect": ToolPolicy(retries=Retry(attempts=3, initial=0.01, jitter=0))},
)


@DBOS.step(**step_options(guard, "lookup"))
@guard_step(guard)
async def lookup(order: int) -> str:
    """Find an order."""
    return find_order(order)


@DBOS.step(**step_options(guard, "reconnect"))
@guard_step(guard)
async def reconnect() -> str:
    """Fails twice, then works."""
    return flaky_connection("reconnect")


PLAN: list[tuple[str, dict[str, Any]]] = [
    ("lookup", {"order": 13}),
    ("lookup", {"order": 42}),
    ("reconnect", {}),
]


def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """A scripted model: the plan's calls one per step, then what it was told."""
    parts = [part for message in messages for part in message.parts]
    told = [part for part in parts if isinstance(part, ToolReturnPart)]
    if len(told) < len(PLAN):
        name, arguments = PLAN[len(told)]
        call = ToolCallPart(tool_name=name, args=arguments, tool_call_id=f"call-{len(told)}")
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(content="\n".join(str(part.content) for part in told))])


support = Agent(
    FunctionModel(model),
    name="support_dbos",
    tools=[lookup, reconnect],
    capabilities=[DBOSDurability(), ToolguardCapability(guard)],
)


@DBOS.workflow()
async def support_workflow(question: str) -> str:
    result = await support.run(question)
    return result.output
