"""An existing Microsoft Agent Framework app, its tools guarded by toolguard with one
added line.

Offline: the model is a chat client built as Agent Framework builds its own (its
``BaseChatClient`` under its function-invoking and chat-middleware layers), playing a
script. Run from the root of a clone::

    python3 -m venv .venv && .venv/bin/pip install -e ".[agent-framework]"
    .venv/bin/python examples/agent_framework_app.py

The app is written as for plain Agent Framework: ``@tool`` functions, an ``Agent``, an
``AgentSession`` per user. Without the marked line, Agent Framework tells the model
``Error: Function failed.`` for every failure (a message written for the model is lost)
and keeps the exception's text, a database password here, on the result. The script:
the model looks up two orders at once, one whose backend leaks a secret (hidden: the
model gets toolguard's message with an error id, the cause is logged once under that
id) and one that does not exist (a ``ToolError``, sent as written); then it answers.
"""

import asyncio
from collections.abc import Awaitable, Sequence
from typing import Any

import structlog
from agent_framework import (
    Agent,
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    tool,
)

from toolguard import Dispatcher, ToolError
from toolguard.integrations.agent_framework import ToolguardMiddleware


@tool
def order_status(order_id: int) -> str:
    """Look up an order."""
    if order_id == 7:
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
    raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")


class ScriptedClient(FunctionInvocationLayer[Any], ChatMiddlewareLayer[Any], BaseChatClient[Any]):
    """The app's LLM, played offline: two function calls at once, then the answer."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[Message]] = []

    def _inner_get_response(
        self, *, messages: Sequence[Message], stream: bool, options: Any, **kwargs: Any
    ) -> Awaitable[ChatResponse]:
        self.seen.append(list(messages))

        async def respond() -> ChatResponse:
            if len(self.seen) == 1:
                calls = [
                    Content.from_function_call(
                        call_id=f"c{n}", name="order_status", arguments={"order_id": n}
                    )
                    for n in (7, 99)
                ]
                return ChatResponse(messages=[Message(role="assistant", contents=calls)])
            answer = "Sorry, I could not find your orders."
            return ChatResponse(messages=[Message(role="assistant", contents=[answer])])

        return respond()


async def main() -> None:
    dispatcher = Dispatcher([], external_tools=["order_status"])
    client = ScriptedClient()
    agent = Agent(
        client,
        tools=[order_status],
        middleware=[ToolguardMiddleware(dispatcher)],  # the one line toolguard adds
    )
    with structlog.testing.capture_logs() as logs:
        response = await agent.run("Where are my orders?", session=AgentSession())
    hidden, visible = (
        content for content in client.seen[-1][-1].contents if content.type == "function_result"
    )
    assert "s3cret" not in str(hidden.result) and "error id" in str(hidden.result)
    assert visible.result == "There is no order 99. Ask the user to check the number."
    (event,) = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["error_id"] in str(hidden.result)
    print("the model was told:", str(hidden.result)[:160], "...")
    print("and:", visible.result)
    print("the log has the cause, under error id", event["error_id"])
    print("answer:", response.text)


if __name__ == "__main__":
    asyncio.run(main())
