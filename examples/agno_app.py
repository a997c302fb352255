"""An existing Agno app, its tools guarded by toolguard with one added line.

Offline: the model is a subclass of Agno's model base class playing a script. Run
from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[agno]"
    .venv/bin/python examples/agno_app.py

The app is written as for plain Agno: plain functions as tools and an ``Agent``.
Without the marked line, Agno tells the model the exception's text: here, a database
password. The script: the model looks up an order that does not exist (a
``ToolError``, sent as written), then an order whose backend leaks a secret (hidden:
the model gets toolguard's message with an error id, the cause is logged once under
that id), then answers. The same conversation asks again: the tool's breaker, opened
by the hidden failure, answers without running the tool.
"""

import json
import logging
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog
from agno.agent import Agent
from agno.models.base import Model
from agno.models.message import Message
from agno.models.response import ModelResponse

from toolguard import Breaker, Dispatcher, ToolError
from toolguard.integrations.agno import toolguard_hook


def order_status(order_id: int) -> str:
    """Look up an order.

    Args:
        order_id: The order's number.
    """
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


def _lookup(order_id: int) -> ModelResponse:
    arguments = json.dumps({"order_id": order_id})
    call = {"id": f"call-{order_id}", "type": "function"}
    call["function"] = {"name": "order_status", "arguments": arguments}
    return ModelResponse(role="assistant", tool_calls=[call])


@dataclass
class ScriptedModel(Model):
    """The app's LLM, played offline: each run looks orders up, then answers."""

    id: str = "scripted"
    seen: list[list[Message]] = field(default_factory=list)
    script: list[ModelResponse] = field(
        default_factory=lambda: [
            _lookup(99),  # the first run: a ToolError, then the leaky backend
            _lookup(7),
            ModelResponse(role="assistant", content="Sorry, I could not find it."),
            _lookup(7),  # the second run, in the same conversation
            ModelResponse(role="assistant", content="The order system is down."),
        ]
    )

    def invoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        self.seen.append(list(messages))
        return self.script.pop(0)

    async def ainvoke(self, messages: list[Message], *args: Any, **kwargs: Any) -> ModelResponse:
        return self.invoke(messages)

    def invoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> Iterator[ModelResponse]:
        yield self.invoke(messages)

    async def ainvoke_stream(
        self, messages: list[Message], *args: Any, **kwargs: Any
    ) -> AsyncIterator[ModelResponse]:
        yield self.invoke(messages)

    def _parse_provider_response(self, response: Any, **kwargs: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]

    def _parse_provider_response_delta(self, response: Any) -> ModelResponse:
        return response  # type: ignore[no-any-return]


def main() -> None:
    # Agno prints its own log line and traceback of each failure (with toolguard's
    # text, not the secret); off here so the output shows what the model was told
    logging.getLogger("agno").disabled = True
    dispatcher = Dispatcher([], external_tools=["order_status"], breaker=Breaker(failures=1))
    model = ScriptedModel()
    agent = Agent(
        model=model,
        tools=[order_status],
        tool_hooks=[toolguard_hook(dispatcher)],  # the one line toolguard adds
    )
    with structlog.testing.capture_logs() as logs:
        answer = agent.run("Where are my orders?", session_id="customer-1")
        again = agent.run("And now?", session_id="customer-1")
    visible, hidden = [m for m in model.seen[2] if m.role == "tool"]
    assert hidden.tool_call_error and "s3cret" not in str(hidden.content)
    assert visible.content == "There is no order 99. Ask the user to check the number."
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] in str(hidden.content) and event["call_id"] == "call-7"
    opened = [m for m in model.seen[-1] if m.role == "tool"][-1]
    assert "unavailable" in str(opened.content)
    print("the model was told:", str(hidden.content)[:160], "...")
    print("the log has the cause, under error id", event["error_id"])
    print("answer:", answer.content)
    print("asked again in the same conversation:", str(opened.content)[:120])
    print("answer:", again.content)


if __name__ == "__main__":
    main()
