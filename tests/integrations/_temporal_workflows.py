"""Workflows and tools for the Temporal tests (a module of its own: Temporal's sandbox
re-imports a workflow's module for every run, so it imports only what the workflows do).

``ScriptedAgent`` plays a script of tool calls as a model would (one per step), through
``WorkflowTools``, and returns what the model was told. Each answer is also recorded
through ``_recorder`` (passed through the sandbox) so that a test can compare a replay's
answers with the first run's.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from tests.integrations._orders import (
    SECRET,
    attempted,
    down,
    fatal,
    find_order,
    flaky_connection,
)
from tests.integrations._orders import told as _answer
from toolguard import Breaker, Dispatcher, ToolCall, ToolError, ToolPolicy, tool
from toolguard.handlers import on
from toolguard.integrations.temporal import WorkflowTools, guard_activity

with workflow.unsafe.imports_passed_through():  # the module itself, not the sandbox's copy
    import tests.integrations._recorder as _recorder


@tool
def lookup(order: int) -> str:
    """Find an order."""
    return find_order(order)


@tool(retries=2)
def cancel(order: int) -> str:
    """Retried on a transient failure; a ToolError is an answer, never retried."""
    attempted("cancel")
    raise ToolError(f"Order {order} has shipped; it cannot be cancelled.")


@tool(retries=2)
def flaky() -> str:
    """Fails twice, then works."""
    return flaky_connection("flaky")


@tool(timeout=1, retries=None)
async def slow() -> str:
    """Overruns its timeout."""
    attempted("slow")
    await asyncio.sleep(30)
    return "too late"


@tool(retries=1)
def unreachable() -> str:
    """Fails every attempt."""
    attempted("unreachable")
    raise ConnectionError(f"connection refused by 10.0.0.7 ({SECRET})")


@tool(timeout=60)
async def hang() -> str:
    """Runs until cancelled."""
    attempted("hang")
    await asyncio.sleep(60)
    return "done"


agent = Dispatcher(
    [lookup, cancel, flaky, unreachable, slow, hang, fatal, down],
    overrides={"down": ToolPolicy(breaker=Breaker(failures=2, cooldown=60))},
)


@workflow.defn
class ScriptedAgent:
    """Plays ``script``: ``["call", name, arguments]`` or ``["sleep", seconds]``."""

    @workflow.run
    async def run(self, script: list[list[Any]]) -> list[dict[str, Any]]:
        tools = WorkflowTools(agent)
        told: list[dict[str, Any]] = []
        for number, step in enumerate(script):
            if step[0] == "sleep":
                await workflow.sleep(timedelta(seconds=step[1]))
                continue
            call = ToolCall(name=step[1], arguments=step[2], id=f"call-{number}")
            answer = _answer(await tools.call(call))
            _recorder.record(workflow.info().workflow_id, answer)
            told.append(answer)
        return told


# --- a tool that is its own activity (the Agents SDK's activity_as_tool, for one) ----------

external = Dispatcher(
    [],
    external_tools=["charge_card", "leaky_card"],
    overrides={"leaky_card": ToolPolicy(on_error=on(PermissionError, "The card was declined."))},
)


@activity.defn
@guard_activity(external)
async def charge_card(amount: int) -> str:
    """Charges a card."""
    attempted("charge_card")
    if amount > 100:
        raise PermissionError(f"card 4111-1111 declined by issuer ({SECRET})")
    if amount < 0:
        raise ToolError("The amount must be positive.")
    return f"charged {amount}"


@activity.defn
async def leaky_card(amount: int) -> str:
    """The same card, with no toolguard around it."""
    raise PermissionError(f"card 4111-1111 declined by issuer ({SECRET})")


@workflow.defn
class UnguardedAgent:
    """Calls ``leaky_card`` once; what Temporal kept of its failure is in the history."""

    @workflow.run
    async def run(self, amount: int) -> str:
        try:
            return await workflow.execute_activity(
                leaky_card,
                amount,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as error:
            return type(error.cause).__name__


@workflow.defn
class UnguardedAnswered:
    """Calls ``leaky_card`` (no toolguard where it runs) and answers its failure in
    workflow code: classified by its root cause, the type the activity raised."""

    @workflow.run
    async def run(self, amount: int) -> dict[str, Any]:
        call = ToolCall(name="leaky_card", id="c1")
        try:
            await workflow.execute_activity(
                leaky_card,
                amount,
                start_to_close_timeout=timedelta(seconds=10),
                retry_policy=RetryPolicy(maximum_attempts=1),
            )
        except ActivityError as error:
            return _answer(await external.session().ahandle_error(call, error))
        raise AssertionError("the card is always declined")  # pragma: no cover


@workflow.defn
class RoundAgent:
    """One round of calls at once, as a model asking for several in one step."""

    @workflow.run
    async def run(self, orders: list[int]) -> list[dict[str, Any]]:
        tools = WorkflowTools(agent)
        calls = [
            ToolCall(name="lookup", arguments={"order": order}, id=f"c{order}") for order in orders
        ]
        round_ = await tools.run(calls)
        return [_answer(result) for result in round_.results]


@workflow.defn
class InPlaceAgent:
    """Calls ``charge_card`` as an activity and answers its failure in workflow code, as
    a framework's in-place guard does (``handle_error`` on the ``ActivityError``)."""

    @workflow.run
    async def run(self, amount: int) -> dict[str, Any]:
        call = ToolCall(name="charge_card", arguments={"amount": amount}, id="c1")
        try:
            value = await workflow.execute_activity(
                charge_card, amount, start_to_close_timeout=timedelta(seconds=10)
            )
        except Exception as error:
            return _answer(await external.session().ahandle_error(call, error))
        return {"content": value, "error_id": None, "error_kind": None, "is_error": False}
