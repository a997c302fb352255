"""A workflow that makes and uses toolguard in its own code, in Temporal's default
sandbox with nothing passed through by anyone (no plugin): toolguard re-imported there,
as a workflow module that imports it does."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

import toolguard
import toolguard.integrations.temporal
from toolguard import Breaker, ToolCall


@toolguard.tool
def add(a: int, b: int) -> int:
    return a + b


@toolguard.tool
def broken() -> None:
    raise ValueError("db-password=hunter2")


@workflow.defn
class MadeInTheWorkflow:
    @workflow.run
    async def run(self) -> list[dict[str, Any]]:
        agent = toolguard.Dispatcher([add, broken], breaker=Breaker(failures=1))
        session = agent.session(id="conversation-1")
        told = []
        for call in (
            ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1"),
            ToolCall(name="broken", id="c2"),
            ToolCall(name="broken", id="c3"),
            ToolCall(name="nope", id="c4"),
        ):
            result = await session.adispatch(call)
            told.append({"content": result.text, "kind": result.error_kind})
        return told
