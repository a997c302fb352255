"""An existing AG2 app, its tools guarded by toolguard with one added line.

Offline: the model is AG2's own test model (``ag2.testing.TestConfig``) playing a
script. Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[ag2]"
    .venv/bin/python examples/ag2_app.py

The app is written as for plain AG2: a function tool and an ``Agent``. Without the
marked line, AG2 tells the model the whole traceback of a tool that raises: here, a
database password. The script: the model looks up an order that does not exist
(a ``ToolError``, sent as written), then one whose backend leaks a secret (hidden:
the model gets toolguard's message with an error id, the cause is logged once under
that id), then answers; in a second question of the same conversation the
order fails again, which opens the tool's breaker (toolguard counts per AG2
conversation), and the next call is answered without running the tool.
"""

import asyncio
import json

import structlog
from ag2 import Agent
from ag2.events import ToolCallEvent, ToolResultsEvent
from ag2.testing import TestConfig, TrackingConfig

from toolguard import Breaker, Dispatcher, ToolError
from toolguard.integrations.ag2 import guard

RUNS: list[int] = []


def order_status(order_id: int) -> str:
    """Look up an order."""
    RUNS.append(order_id)
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


def lookup(order_id: int) -> ToolCallEvent:
    return ToolCallEvent("order_status", arguments=json.dumps({"order_id": order_id}))


def told(config: TrackingConfig) -> list[str]:
    """Every tool result the model was sent, in order."""
    return [
        str(getattr(part, "content", part))
        for (event,), _ in config.mock.call_args_list
        if isinstance(event, ToolResultsEvent)
        for result in event.results
        for part in result.result.parts
    ]


async def conversation(agent: Agent) -> str:
    reply = await agent.ask("Where is my order?")
    again = await reply.ask("Try order 7 once more, please.")
    return f"{reply.body} / {again.body}"


def main() -> None:
    config = TrackingConfig(
        TestConfig(
            lookup(99),
            lookup(7),
            "Sorry, I could not find your order.",
            lookup(7),
            lookup(7),
            "The order system is down; please try later.",
            raise_tool_errors=False,
        )
    )
    dispatcher = Dispatcher([], external_tools=["order_status"], breaker=Breaker(failures=2))
    agent = Agent(
        "support",
        config=config,
        tools=[order_status],
        middleware=[guard(dispatcher)],  # the one line toolguard adds
    )
    with structlog.testing.capture_logs() as logs:
        answers = asyncio.run(conversation(agent))
    visible, hidden, again, unavailable = told(config)
    assert "s3cret" not in hidden and "Traceback" not in hidden and "error id" in hidden
    assert visible == "There is no order 99. Ask the user to check the number."
    assert "error id" in again and "unavailable" in unavailable
    assert RUNS == [99, 7, 7]  # the breaker opened after two failures: not run again
    event, later = [e for e in logs if e["event"] == "tool_error_hidden"]  # once each
    assert event["error_id"] in hidden and later["error_id"] in again
    print("the model was told:", hidden[:160], "...")
    print("the log has the cause, under error id", event["error_id"])
    print("then:", unavailable[:120], "...")
    print("answers:", answers)


if __name__ == "__main__":
    main()
