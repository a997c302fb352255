"""A raw Anthropic Messages API agent loop guarded by toolguard, offline.

The model is scripted: each turn is a ``Message`` built from the anthropic SDK's own
types, so the loop below is exactly what runs against the real API. To talk to
Anthropic, replace ``ScriptedClient()`` with ``anthropic.Anthropic()``.

The three toolguard calls: ``tools()`` (declare), ``parse_calls()`` (tool_use blocks
in), ``message()`` (one user message of tool_result blocks, with ``is_error``).

Run from the root of a clone (it needs the anthropic SDK, which no toolguard extra
installs; the test extra does)::

    python3 -m venv .venv && .venv/bin/pip install -e . anthropic
    .venv/bin/python examples/anthropic_loop.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import attrs
import structlog
from anthropic.types import Message, TextBlock, ToolUseBlock, Usage

from toolguard import Dispatcher, Injected, ToolError, tool
from toolguard.formats import anthropic as tg_anthropic


@attrs.frozen
class User:
    id: str


@tool
def order_status(order_id: int, user: Annotated[User, Injected]) -> dict[str, Any]:
    """Look up one of the signed-in user's orders.

    Args:
        order_id: The order number, as printed on the receipt.
    """
    if order_id != 42:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return {"order_id": order_id, "status": "shipped", "owner": user.id}


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
    """
    raise ConnectionError("payments-db: password authentication failed for user 'svc'")


# --- the scripted model ------------------------------------------------------------------


def _turn(*content: Any, stop: Any) -> Message:
    return Message(
        id="msg_scripted",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        stop_reason=stop,
        usage=Usage(input_tokens=100, output_tokens=20),
        content=list(content),
    )


class ScriptedMessages:
    """Stands in for ``client.messages``: replays prepared turns."""

    def __init__(self) -> None:
        self._turns: Iterator[Message] = iter(
            [
                _turn(
                    TextBlock(type="text", text="Let me look at both orders and the refund."),
                    ToolUseBlock(
                        type="tool_use", id="toolu_1", name="order_status", input={"order_id": 42}
                    ),
                    ToolUseBlock(
                        type="tool_use", id="toolu_2", name="order_status", input={"order_id": 7}
                    ),
                    ToolUseBlock(
                        type="tool_use", id="toolu_3", name="refund", input={"order_id": 42}
                    ),
                    stop="tool_use",
                ),
                _turn(
                    TextBlock(
                        type="text",
                        text="Order 42 has shipped; I found no order 7. The refund failed, "
                        "so please contact support with the error id.",
                    ),
                    stop="end_turn",
                ),
            ]
        )

    def create(self, **request: Any) -> Message:
        assert request["tools"], "the tools are declared on every request"
        return next(self._turns)


class ScriptedClient:
    def __init__(self) -> None:
        self.messages = ScriptedMessages()


# --- the loop ------------------------------------------------------------------------------


def _log_to_stderr(logger: Any, method: str, event: dict[str, Any]) -> Any:
    """The application owns logging: here, one line per event on stderr."""
    cause = event.pop("exc_info", None)
    print(
        f"[log] {event['event']} error_id={event.get('error_id')} cause={cause!r}", file=sys.stderr
    )
    raise structlog.DropEvent


def show(message: dict[str, Any]) -> None:
    role = message["role"]
    if isinstance(message["content"], str):
        print(f"{role:>9}: {message['content']}")
        return
    for block in message["content"]:
        if block["type"] == "text":
            print(f"{role:>9}: {block['text']}")
        elif block["type"] == "tool_use":
            print(f"{role:>9}: calls {block['name']}({json.dumps(block['input'])}) [{block['id']}]")
        elif block["type"] == "tool_result":
            flag = " is_error" if block["is_error"] else ""
            print(f"{role:>9}: [{block['tool_use_id']}{flag}] {block.get('content', '')}")


def main() -> None:
    structlog.configure(processors=[_log_to_stderr])
    client = ScriptedClient()
    dispatcher = Dispatcher([order_status, refund])
    tools = tg_anthropic.tools(dispatcher)  # declare
    signed_in = User(id="u-7")

    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Where are my orders 42 and 7? Please refund 42."}
    ]
    for _ in range(5):
        response = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=1024, messages=messages, tools=tools
        )
        messages.append(
            {
                "role": "assistant",
                "content": [block.model_dump(exclude_none=True) for block in response.content],
            }
        )
        calls = tg_anthropic.parse_calls(response)  # tool_use blocks in
        if not calls:
            break
        round_ = dispatcher.run(calls, context=signed_in)
        messages.append(tg_anthropic.message(round_))  # one user message, one block per call
        if round_.stop:
            break

    for message in messages:
        show(message)
    assert "password" not in json.dumps(messages), "the hidden cause never reaches the model"
    assert [block["is_error"] for block in messages[2]["content"]] == [False, True, True]
    dispatcher.close()


if __name__ == "__main__":
    main()
