"""Pydantic AI's ``DBOSDurability`` beside ``ToolguardCapability``.

Run from the root of a clone (offline: DBOS on SQLite, Pydantic AI's ``FunctionModel``)::

    .venv/bin/pip install -e ".[pydantic-ai,dbos]"
    .venv/bin/python examples/pydantic_ai_dbos.py

Each tool is a DBOS step (as Pydantic AI asks of function tools), guarded inside the
step (``guard_step``: answered there, a retry handed to DBOS), with the step options its
policy compiles to (``step_options``). The capability answers what crossed, in the
workflow.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from dbos import DBOS, DBOSConfig
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.models.function import AgentInfo, FunctionModel

from toolguard import Dispatcher, Retry, ToolError, ToolPolicy
from toolguard.integrations.dbos import guard_step, step_options
from toolguard.integrations.pydantic_ai import ToolguardCapability

SECRET = "db-password=hunter2"
ATTEMPTS: dict[str, int] = {}

guard = Dispatcher(
    [],
    external_tools=["lookup_order", "check_stock"],
    overrides={"check_stock": ToolPolicy(retries=Retry(attempts=3, initial=0.1))},
)


@DBOS.step(**step_options(guard, "lookup_order"))
@guard_step(guard)
async def lookup_order(order: int) -> str:
    """Find an order by its number."""
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")
    return f"order {order}: shipped"


@DBOS.step(**step_options(guard, "check_stock"))
@guard_step(guard)
async def check_stock(item: str) -> str:
    """How many of an item are in stock."""
    ATTEMPTS[item] = ATTEMPTS.get(item, 0) + 1
    if ATTEMPTS[item] < 3:
        raise ConnectionError(f"warehouse API reset the connection ({SECRET})")
    return f"{item}: 12 in stock"


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
    tools=[lookup_order, check_stock],
    capabilities=[DBOSDurability(), ToolguardCapability(guard)],
)


@DBOS.workflow()
async def support_workflow(question: str) -> str:
    return (await support.run(question)).output


async def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "dbos.sqlite"
        config: DBOSConfig = {
            "name": "toolguard-example",
            "system_database_url": f"sqlite:///{database}",
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            handle = await DBOS.start_workflow_async(support_workflow, "Where are my orders?")
            print(await handle.get_result())
        finally:
            DBOS.destroy()
    print(f"check_stock ran {ATTEMPTS['kettle']} times: DBOS retried the step, toolguard did not")


if __name__ == "__main__":
    asyncio.run(main())
