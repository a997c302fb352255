"""An existing CrewAI crew, its tools guarded by toolguard with one added line.

Offline: the model is a ``BaseLLM`` subclass playing a script of tool calls, CrewAI's
way to bring a custom model. CrewAI needs an environment of its own (it pins
``openai<3`` and ``mcp<2``, which the other extras exclude); from the root of a clone::

    python3 -m venv .venv-crewai && .venv-crewai/bin/pip install -e ".[crewai]"
    .venv-crewai/bin/python examples/crewai_app.py

The app is written as for plain CrewAI: ``@tool`` functions (one with
``result_as_answer=True``), an ``Agent``, a ``Task``, a ``Crew``. The one line
toolguard adds is marked below. Without it, CrewAI sends the model
``Error executing tool: {e}``: here, a database password.

The script: the agent looks up an order whose backend leaks a secret (hidden: the
model gets toolguard's message with an error id, the cause is logged once under that
id, and CrewAI records the failure in ``TaskOutput.tool_failures``), an order that does
not exist (a ``ToolError``, sent as written), then calls the ``result_as_answer`` tool,
whose success is the task's answer.
"""

# example-environment: crewai

from __future__ import annotations

import json
import os
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")  # no telemetry from an offline example
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")

import structlog
from crewai import Agent, Crew, CrewOutput, Task
from crewai.llms.base_llm import BaseLLM
from crewai.tools import tool
from pydantic import PrivateAttr

from toolguard import Dispatcher, ToolError
from toolguard.integrations.crewai import guard

SECRET = "postgres://admin:s3cret@10.0.0.7"


# --- the app, as written for CrewAI -----------------------------------------------------


@tool("order_status")
def order_status(order_id: int) -> str:
    """Look up the status of an order."""
    if order_id == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order_id == 7:
        raise ConnectionError(f"orders-db at {SECRET} refused the connection")
    return f"Order {order_id} has shipped."


@tool("reply", result_as_answer=True)
def reply(text: str) -> str:
    """Send the final reply to the user."""
    return f"Reply sent: {text}"


dispatcher = Dispatcher([], external_tools=["order_status", "reply"])
tools = guard([order_status, reply], dispatcher)  # <- the one line toolguard adds


# --- the model: a script, offline -------------------------------------------------------


class ScriptedLLM(BaseLLM):
    """Answers each call with the next step of a script; keeps what it was sent."""

    _script: list[Any] = PrivateAttr(default_factory=list)
    _seen: list[str] = PrivateAttr(default_factory=list)

    def call(self, messages: Any, tools: Any = None, *args: Any, **kwargs: Any) -> Any:
        for message in messages if isinstance(messages, list) else []:
            if isinstance(message, dict) and message.get("role") == "tool":
                self._seen.append(str(message["content"]))
        step = self._script.pop(0) if self._script else "(the model answers itself)"
        if isinstance(step, str):
            return step
        return [
            {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(step)
        ]

    def supports_function_calling(self) -> bool:
        return True


def main() -> None:
    llm = ScriptedLLM(model="scripted")
    llm._script = [
        [("order_status", json.dumps({"order_id": 7})), ("order_status", '{"order_id": 42}')],
        [("reply", json.dumps({"text": "Order 7 is delayed by an outage; 42 does not exist."}))],
    ]
    agent = Agent(
        role="support", goal="answer customers", backstory="a clerk", llm=llm, tools=tools
    )
    task = Task(description="Where are orders 7 and 42?", expected_output="a reply", agent=agent)
    with structlog.testing.capture_logs() as logs:
        output = Crew(agents=[agent], tasks=[task]).kickoff()
    assert isinstance(output, CrewOutput)

    print("What the model was told:")
    for text in dict.fromkeys(llm._seen):
        print("  -", text)
    (hidden,) = [event for event in logs if event["event"] == "tool_error_hidden"]
    print(f"Logged once, for the operator: error id {hidden['error_id']}: {hidden['exc_info']!r}")
    failures = output.tasks_output[0].tool_failures
    print("CrewAI's record of the failures:", [f.failure.message[:40] + "..." for f in failures])
    print("The task's answer (result_as_answer):", output.raw)

    assert not any(SECRET in text for text in llm._seen)
    assert any(hidden["error_id"] in text for text in llm._seen)
    assert "There is no order 42. Ask the user to check the number." in llm._seen
    assert output.raw.startswith("Reply sent:")


if __name__ == "__main__":
    main()
