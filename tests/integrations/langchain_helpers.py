"""What the LangChain suites share: LangChain's own fake chat model playing a script,
a real ``create_agent`` run, and the checks on what reached the model and the log."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langchain.agents import create_agent
from langchain.agents.middleware import AgentMiddleware
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool

from toolguard.policy._precedence import BUILTIN_MESSAGE

Logs = list[dict[str, Any]]
SECRET = "db-password=hunter2"


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model; it accepts any tools and answers from its script."""

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        return self


def ai(*calls: tuple[str, dict[str, Any], str]) -> AIMessage:
    """An AIMessage that calls tools: ``(name, args, id)`` each."""
    return AIMessage(
        content="",
        tool_calls=[{"name": name, "args": args, "id": id_} for name, args, id_ in calls],
    )


def run(
    tools: Sequence[BaseTool],
    script: list[AIMessage],
    *,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    config: RunnableConfig | None = None,
    **agent_options: Any,
) -> tuple[list[AnyMessage], list[AIMessage]]:
    """Run a ``create_agent`` agent; return its final messages and the unused script."""
    answers: Iterator[AIMessage] = iter(script)
    agent = create_agent(
        ScriptedModel(messages=answers), tools=tools, middleware=middleware, **agent_options
    )
    state = agent.invoke({"messages": [HumanMessage("go")]}, config)
    return state["messages"], list(answers)


async def arun(
    tools: Sequence[BaseTool],
    script: list[AIMessage],
    *,
    middleware: Sequence[AgentMiddleware[Any, Any, Any]] = (),
    config: RunnableConfig | None = None,
    **agent_options: Any,
) -> tuple[list[AnyMessage], list[AIMessage]]:
    """Async :func:`run` (``ainvoke``)."""
    answers: Iterator[AIMessage] = iter(script)
    agent = create_agent(
        ScriptedModel(messages=answers), tools=tools, middleware=middleware, **agent_options
    )
    state = await agent.ainvoke({"messages": [HumanMessage("go")]}, config)
    return state["messages"], list(answers)


def tool_messages(messages: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    return {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}


def builtin_message(tool: str, error_id: str) -> str:
    return BUILTIN_MESSAGE.replace("{tool}", tool).replace("{error_id}", error_id)


def hidden_event(
    messages: Sequence[BaseMessage], logs: Logs, secret: str = SECRET
) -> dict[str, Any]:
    """Assert ``secret`` is in no message and in exactly one log event; return that event."""
    for message in messages:
        assert secret not in message.model_dump_json()
    carrying = [event for event in logs if secret in repr(event)]
    assert len(carrying) == 1, carrying
    return carrying[0]
