"""A raw OpenAI Chat Completions agent loop guarded by toolguard, offline.

The model is scripted: each turn is a ``ChatCompletion`` built from the openai SDK's
own types, so the loop below is exactly what runs against the real API. To talk to
OpenAI, replace ``ScriptedClient()`` with ``openai.OpenAI()``.

The three toolguard calls: ``tools()`` (declare), ``parse_calls()`` (tool calls in),
``messages()`` (results out).

Run from the root of a clone (it needs the openai SDK, which no toolguard extra
installs on its own; openai-agents and the test extra bring it)::

    python3 -m venv .venv && .venv/bin/pip install -e . openai
    .venv/bin/python examples/openai_loop.py
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Annotated, Any

import attrs
import structlog
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
)
from openai.types.chat.chat_completion import Choice
from openai.types.chat.chat_completion_message_function_tool_call import Function

from toolguard import Dispatcher, Injected, tool
from toolguard.formats import openai as tg_openai


@attrs.frozen
class User:
    id: str


@tool
def order_status(order_id: int, user: Annotated[User, Injected]) -> dict[str, Any]:
    """Look up one of the signed-in user's orders.

    Args:
        order_id: The order number, as printed on the receipt.
    """
    return {"order_id": order_id, "status": "shipped", "owner": user.id}


@tool
def refund(order_id: int) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
    """
    raise ConnectionError("payments-db: password authentication failed for user 'svc'")


# --- the scripted model ------------------------------------------------------------------


def _turn(message: ChatCompletionMessage, finish: Any) -> ChatCompletion:
    return ChatCompletion(
        id="chatcmpl-scripted",
        object="chat.completion",
        created=1700000000,
        model="gpt-4o",
        choices=[Choice(index=0, finish_reason=finish, message=message)],
    )


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> Any:
    return ChatCompletionMessageFunctionToolCall(
        id=call_id, type="function", function=Function(name=name, arguments=json.dumps(arguments))
    )


class ScriptedCompletions:
    """Stands in for ``client.chat.completions``: replays prepared turns."""

    def __init__(self) -> None:
        self._turns: Iterator[ChatCompletion] = iter(
            [
                _turn(
                    ChatCompletionMessage(
                        role="assistant",
                        tool_calls=[
                            _call("call_status", "order_status", {"order_id": 42}),
                            _call("call_refund", "refund", {"order_id": 42}),
                        ],
                    ),
                    "tool_calls",
                ),
                _turn(
                    ChatCompletionMessage(
                        role="assistant",
                        content="Order 42 has shipped. The refund did not go through; "
                        "please contact support and quote the error id above.",
                    ),
                    "stop",
                ),
            ]
        )

    def create(self, **request: Any) -> ChatCompletion:
        assert request["tools"], "the tools are declared on every request"
        return next(self._turns)


class ScriptedClient:
    def __init__(self) -> None:
        self.chat = type("Chat", (), {"completions": ScriptedCompletions()})()


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
    if message.get("tool_calls"):
        for call in message["tool_calls"]:
            function = call["function"]
            print(f"{role:>9}: calls {function['name']}({function['arguments']}) [{call['id']}]")
    elif role == "tool":
        print(f"{role:>9}: [{message['tool_call_id']}] {message['content']}")
    else:
        print(f"{role:>9}: {message['content']}")


def main() -> None:
    structlog.configure(processors=[_log_to_stderr])
    client = ScriptedClient()
    dispatcher = Dispatcher([order_status, refund])
    tools = tg_openai.tools(dispatcher)  # declare (strict=True for strict schemas)
    signed_in = User(id="u-7")

    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Where is my order 42? It is late, so please refund it."}
    ]
    for _ in range(5):
        response = client.chat.completions.create(model="gpt-4o", messages=messages, tools=tools)
        message = response.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        calls = tg_openai.parse_calls(message)  # tool calls in
        if not calls:
            break
        round_ = dispatcher.run(calls, context=signed_in)
        messages.extend(tg_openai.messages(round_))  # results out, one per call
        if round_.stop:
            break

    for message in messages:
        show(message)
    text = json.dumps(messages)
    assert "password" not in text, "the hidden cause never reaches the model"
    assert messages[3]["content"].startswith("Error: ")
    dispatcher.close()


if __name__ == "__main__":
    main()
