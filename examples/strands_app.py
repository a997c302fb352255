"""An existing Strands Agents app, guarded by toolguard with one added line.

The app is written the Strands way: ``@tool`` functions (one asking for Strands'
``ToolContext``) and an ``Agent``. The line marked ``# toolguard`` is all that
changes: without it, Strands sends the model ``Error: ConnectionError - ...`` with
the database URL and its password. With it, the model is told a generic message
with an error id, the cause is logged once with that id (Strands' own traceback
log of it is dropped), and the ``ToolError`` the author wrote for the model arrives
as written.

Offline: a scripted ``strands.models.Model`` stands in for Bedrock (Strands' own
extension point for model providers). Strands needs an environment of its own (it pins
``mcp<2.2``, which the mcp extra excludes); from the root of a clone::

    python3 -m venv .venv-strands && .venv-strands/bin/pip install -e ".[strands]"
    .venv-strands/bin/python examples/strands_app.py
"""

# example-environment: strands

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator
from typing import Any

from strands import Agent, tool
from strands.models.model import Model
from strands.types.tools import ToolContext
from structlog.testing import capture_logs

from toolguard import ToolError
from toolguard.integrations.strands import ToolguardHooks

# --- the app's tools, as they were ---------------------------------------------------


@tool(context=True)
def order_status(order_id: int, tool_context: ToolContext) -> str:
    """Look an order up.

    Args:
        order_id: The order number.
    """
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 7:
        raise ConnectionError("pg://shop:hunter2@db.internal refused the connection")
    tool_context.agent.state.set("last_order", order_id)
    return f"order {order_id}: shipped"


# --- a scripted model standing in for Bedrock -------------------------------------------


class ScriptedModel(Model):
    def __init__(self, script: list[list[dict[str, Any]]]) -> None:
        self.script = script
        self.seen: list[str] = []

    def update_config(self, **model_config: Any) -> None:
        pass

    def get_config(self) -> Any:
        return {}

    async def structured_output(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        raise NotImplementedError
        yield

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        for block in messages[-1]["content"]:
            if "toolResult" in block:
                texts = "".join(c.get("text", "") for c in block["toolResult"]["content"])
                self.seen.append(f"{block['toolResult']['status']}: {texts}")
        blocks = self.script.pop(0)
        yield {"messageStart": {"role": "assistant"}}
        for block in blocks:
            if "toolUse" in block:
                used = block["toolUse"]
                start = {"toolUse": {"name": used["name"], "toolUseId": used["toolUseId"]}}
                yield {"contentBlockStart": {"start": start}}
                yield {
                    "contentBlockDelta": {
                        "delta": {"toolUse": {"input": json.dumps(used["input"])}}
                    }
                }
            else:
                yield {"contentBlockDelta": {"delta": {"text": block["text"]}}}
            yield {"contentBlockStop": {}}
        stop = "tool_use" if any("toolUse" in b for b in blocks) else "end_turn"
        yield {"messageStop": {"stopReason": stop}}


def lookup(order_id: int) -> dict[str, Any]:
    return {
        "toolUse": {
            "name": "order_status",
            "toolUseId": f"t{order_id}",
            "input": {"order_id": order_id},
        }
    }


model = ScriptedModel(
    [
        [lookup(7), lookup(42), lookup(3)],
        [{"text": "Order 3 has shipped; I could not check the others."}],
    ]
)
agent = Agent(
    model=model,
    tools=[order_status],
    callback_handler=None,
    hooks=[ToolguardHooks()],  # toolguard: the one added line
)


async def main() -> None:
    with capture_logs() as logs:
        result = await agent.invoke_async("Where are my orders?")
    print("The model was told:")
    for line in model.seen:
        print("  ", line)
    [hidden] = [e for e in logs if e["event"] == "tool_error_hidden"]
    print(f"Logged once, for the operator: error id {hidden['error_id']}: {hidden['exc_info']!r}")
    print("Final answer:", str(result).strip())
    assert not any("hunter2" in line for line in model.seen)
    assert any(hidden["error_id"] in line for line in model.seen)
    assert any("There is no order 42" in line for line in model.seen)
    assert agent.state.get("last_order") == 3


if __name__ == "__main__":
    asyncio.run(main())
