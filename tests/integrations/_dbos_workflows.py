"""Workflows and tools for the DBOS tests: registered with DBOS when imported (DBOS
requires its functions before launch), and kept across the tests' launches."""

from __future__ import annotations

import asyncio
from typing import Any

from dbos import DBOS

from tests.integrations._orders import (
    SECRET,
    attempted,
    down,
    fatal,
    find_order,
    flaky_connection,
)
from tests.integrations._orders import told as _answer
from toolguard import Breaker, Dispatcher, Retry, ToolCall, ToolError, ToolPolicy, tool
from toolguard.integrations.dbos import DBOSTools, guard_step, should_retry

CRASH: dict[str, bool] = {"after_tools": False}


class Crash(BaseException):
    """The process dies: the workflow stays pending, to be recovered on the next launch."""


@tool
def lookup(order: int) -> str:
    """Find an order."""
    return find_order(order)


FAST = Retry(attempts=3, initial=0.01, jitter=0)


@tool(retries=FAST)
def cancel(order: int) -> str:
    """Retried on a transient failure; a ToolError is an answer, never retried."""
    attempted("cancel")
    raise ToolError(f"Order {order} has shipped; it cannot be cancelled.")


@tool(retries=FAST)
def flaky() -> str:
    """Fails twice, then works."""
    return flaky_connection("flaky")


@tool(retries=Retry(attempts=2, initial=0.01, jitter=0))
def unreachable() -> str:
    """Fails every attempt."""
    attempted("unreachable")
    raise ConnectionError(f"connection refused by 10.0.0.7 ({SECRET})")


@tool(timeout=0.2, retries=None)
async def slow() -> str:
    """Overruns its timeout."""
    attempted("slow")
    await asyncio.sleep(30)
    return "too late"


agent = Dispatcher(
    [lookup, cancel, flaky, unreachable, slow, fatal, down],
    overrides={"down": ToolPolicy(breaker=Breaker(failures=2, cooldown=3600))},
)
tools = DBOSTools(agent)


@DBOS.workflow()
def scripted(script: list[list[Any]]) -> list[dict[str, Any]]:
    """Plays ``script`` (``[name, arguments]`` per call) as a model would; dies after
    the calls while ``CRASH["after_tools"]`` is set."""
    told = []
    for number, (name, arguments) in enumerate(script):
        call = ToolCall(name=name, arguments=arguments, id=f"call-{number}")
        told.append(_answer(tools.call(call)))
    if CRASH["after_tools"]:
        raise Crash
    return told


@DBOS.workflow()
async def ascripted(script: list[list[Any]]) -> list[dict[str, Any]]:
    """``scripted``, in an async workflow."""
    told = []
    for number, (name, arguments) in enumerate(script):
        call = ToolCall(name=name, arguments=arguments, id=f"call-{number}")
        told.append(_answer(await tools.acall(call)))
    return told


# --- a function that is itself a step, answered in place in workflow code -----------------

external = Dispatcher([], external_tools=["charge_card"])


@DBOS.step(retries_allowed=True, max_attempts=2, should_retry=should_retry)
@guard_step(external)
def charge_card(amount: int) -> str:
    """Charges a card."""
    attempted("charge_card")
    if amount > 100:
        raise PermissionError(f"card 4111-1111 declined by issuer ({SECRET})")
    return f"charged {amount}"


@DBOS.workflow()
def in_place(amount: int) -> dict[str, Any]:
    """Calls ``charge_card`` as a step and answers its failure in workflow code, as a
    framework's in-place guard does."""
    call = ToolCall(name="charge_card", arguments={"amount": amount}, id="c1")
    try:
        return {"content": charge_card(amount), "error_kind": None, "error_id": None}
    except Exception as error:
        return _answer(external.session().handle_error(call, error))


@DBOS.step()
def leaky() -> str:
    """A step with no toolguard around it."""
    raise ValueError(f"orders table unreachable ({SECRET})")


@DBOS.workflow()
def unguarded() -> str:
    """Runs ``leaky``; what DBOS kept of its failure is in the journal."""
    try:
        return leaky()
    except ValueError as error:
        return type(error).__name__


@DBOS.workflow()
def scripted_round(orders: list[int]) -> list[dict[str, Any]]:
    """One round of calls, in a sync workflow."""
    calls = [ToolCall(name="lookup", arguments={"order": o}, id=f"c{o}") for o in orders]
    return [_answer(result) for result in tools.run(calls).results]


@DBOS.workflow()
async def ascripted_round(orders: list[int]) -> list[dict[str, Any]]:
    """One round of calls, in an async workflow; and a tool no one has."""
    calls = [ToolCall(name="lookup", arguments={"order": o}, id=f"c{o}") for o in orders]
    round_ = await tools.arun([*calls, ToolCall(name="serch", id="c0")])
    return [_answer(result) for result in round_.results]
