"""The OpenAI Agents SDK's own Temporal integration (``temporalio.openai_agents``),
guarded: the tool is a Temporal activity guarded where it runs (``guard_activity``),
made a tool by the SDK's ``activity_as_tool`` with its policy's compiled options, and
guarded in place in the workflow (``openai_agents.guard``), which reads what crossed.
Its own environment (.ci/extras): the SDK's Temporal integration pins openai-agents<0.23.
"""

from __future__ import annotations

from typing import Any

from temporalio import activity, workflow
from temporalio.openai_agents.workflow import activity_as_tool

from tests.integrations._orders import find_order
from toolguard import Dispatcher
from toolguard.integrations.temporal import activity_options, guard_activity

with workflow.unsafe.imports_passed_through():
    from agents import Agent, Runner

    from toolguard.integrations.openai_agents import guard


orders = Dispatcher([], external_tools=["lookup_order"])


@activity.defn
@guard_activity(orders)
async def lookup_order(order: int) -> str:
    """Find an order by its number."""
    return find_order(order, "lookup_order")


@workflow.defn
class SupportWorkflow:
    """Runs the agent; returns what the model was told by each tool call."""

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
        told: list[Any] = [
            item.output for item in result.new_items if item.type == "tool_call_output_item"
        ]
        return [str(output) for output in told]
