"""An existing Semantic Kernel app, its functions guarded by toolguard with one added line.

The app is written the Semantic Kernel way: a plugin of ``@kernel_function`` methods on
a ``Kernel``, and a chat service's auto function calling. The line marked
``# toolguard`` is all that changes: without it, Semantic Kernel sends the model
``An error occurred while invoking the function orders-order_status: ...`` with the
database URL and its password. With it, the model is told a generic message with an
error id, the cause is logged once with that id, the ``ToolError`` the author wrote for
the model arrives as written, and a function whose policy says ``return_direct`` ends
the loop (Semantic Kernel's own ``terminate``).

Offline: a subclass of Semantic Kernel's ``ChatCompletionClientBase`` plays the model
(its public extension point for chat services). Semantic Kernel needs an environment of
its own (it pins ``mcp<2``, which the mcp extra excludes); from the root of a clone::

    python3 -m venv .venv-sk && .venv-sk/bin/pip install -e ".[semantic-kernel]"
    .venv-sk/bin/python examples/semantic_kernel_app.py
"""

# example-environment: semantic_kernel

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

import structlog
from semantic_kernel import Kernel
from semantic_kernel.connectors.ai.chat_completion_client_base import ChatCompletionClientBase
from semantic_kernel.connectors.ai.function_choice_behavior import FunctionChoiceBehavior
from semantic_kernel.connectors.ai.prompt_execution_settings import PromptExecutionSettings
from semantic_kernel.contents import (
    AuthorRole,
    ChatHistory,
    ChatMessageContent,
    FunctionCallContent,
    FunctionResultContent,
)
from semantic_kernel.functions import kernel_function

from toolguard import Dispatcher, ToolError, ToolPolicy
from toolguard.integrations.semantic_kernel import guard


class Orders:
    """The app's plugin, as it was before toolguard."""

    @kernel_function(description="Look up an order's status.")
    def order_status(self, order_id: int) -> str:
        if order_id == 7:
            raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")
        if order_id == 42:
            raise ToolError("There is no order 42. Ask the user to check the number.")
        return f"Order {order_id}: shipped"

    @kernel_function(description="Hand the conversation to a human.")
    async def escalate(self, reason: str) -> str:
        return f"A colleague will call you back about: {reason}"


class ScriptedChat(ChatCompletionClientBase):
    """Stands in for the app's LLM: three rounds of function calls, one at a time."""

    SUPPORTS_FUNCTION_CALLING: ClassVar[bool] = True
    script: ClassVar[list[tuple[str, dict[str, Any]]]] = [
        ("orders-order_status", {"order_id": 7}),
        ("orders-order_status", {"order_id": 42}),
        ("orders-escalate", {"reason": "order 7 is stuck"}),
    ]

    async def _inner_get_chat_message_contents(
        self, chat_history: ChatHistory, settings: PromptExecutionSettings
    ) -> list[ChatMessageContent]:
        told = [
            item
            for message in chat_history.messages
            for item in message.items
            if isinstance(item, FunctionResultContent)
        ]
        if told:
            print(f"  the model is told: {told[-1].result}")
        if len(told) == len(self.script):
            return [ChatMessageContent(role=AuthorRole.ASSISTANT, content="Sorry about that.")]
        name, arguments = self.script[len(told)]
        print(f"  the model calls {name}({arguments})")
        call = FunctionCallContent(id=f"c{len(told)}", name=name, arguments=arguments)
        return [ChatMessageContent(role=AuthorRole.ASSISTANT, items=[call])]


async def main() -> None:
    kernel = Kernel()
    kernel.add_service(ScriptedChat(ai_model_id="scripted"))
    kernel.add_plugin(Orders(), "orders")
    dispatcher = Dispatcher(
        [],
        external_tools=["orders-order_status", "orders-escalate"],
        overrides={"orders-escalate": ToolPolicy(return_direct=True)},
    )
    guard(kernel, dispatcher)  # toolguard: the one added line

    history = ChatHistory()
    history.add_user_message("Where is order 7?")
    settings = PromptExecutionSettings(function_choice_behavior=FunctionChoiceBehavior.Auto())
    chat = kernel.get_service(type=ChatCompletionClientBase)
    with structlog.testing.capture_logs() as logs:
        answer = await chat.get_chat_message_contents(history, settings, kernel=kernel)

    told = [
        str(item.result)
        for message in history.messages
        for item in message.items
        if isinstance(item, FunctionResultContent)
    ]
    hidden = [event for event in logs if event["event"] == "tool_error_hidden"]
    print(f"logged once for the application: {hidden[0]['error_id']} ({hidden[0]['error_type']})")
    final = [
        str(item.result) for item in answer[0].items if isinstance(item, FunctionResultContent)
    ]
    print(f"the loop ended on escalate (return_direct): {final}")
    assert "s3cret" not in repr(told) and hidden[0]["error_id"] in told[0]
    assert told[1] == "There is no order 42. Ask the user to check the number."
    assert len(hidden) == 1 and final == ["A colleague will call you back about: order 7 is stuck"]


if __name__ == "__main__":
    asyncio.run(main())
