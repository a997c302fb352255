"""An offline model for the Agents SDK tests: a ``agents.models.interface.Model``
answering from a script of tool calls and messages.

The SDK's ``Runner`` is real (its loop, tool execution, approvals, guardrails,
``tool_use_behavior``, run items); only the model is scripted, through the SDK's own
``Model`` interface, so the tests run on every SDK version toolguard supports (the
SDK's own ``agents.testing`` is not in all of them). Every request the model gets is
kept (``inputs``), to check what the model was told. ``run`` turns tracing off.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from agents import Agent, RunConfig, Runner, RunResult, Tool, ToolCallOutputItem, Usage
from agents.items import ModelResponse, TResponseOutputItem, TResponseStreamEvent
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

NO_TRACING = RunConfig(tracing_disabled=True)

Step = list[TResponseOutputItem]


def call(name: str, arguments: dict[str, Any] | str, call_id: str) -> ResponseFunctionToolCall:
    """A function call the model makes (``arguments`` as it sends them: JSON text)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ResponseFunctionToolCall(
        type="function_call", name=name, arguments=raw, call_id=call_id, id=f"fc_{call_id}"
    )


def say(text: str) -> Step:
    """A step where the model answers with a message (the run ends there)."""
    return [
        ResponseOutputMessage(
            id="msg_1",
            type="message",
            role="assistant",
            status="completed",
            content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
        )
    ]


class ScriptModel(Model):
    """Answers each request with the next step of ``script``; records the requests."""

    def __init__(self, script: Sequence[Step]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []
        self.offered: list[list[str]] = []  # the names of the tools each request offered

    @property
    def remaining_steps(self) -> int:
        return len(self.script)

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.inputs.append(kwargs.get("input", args[1] if len(args) > 1 else None))
        tools = kwargs.get("tools", args[3] if len(args) > 3 else [])
        self.offered.append([getattr(tool, "name", type(tool).__name__) for tool in tools])
        if not self.script:
            raise AssertionError("the model was asked once more than the script says")
        output = self.script.pop(0)
        return ModelResponse(
            output=list(output),
            usage=Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2),
            response_id=f"resp_{len(self.inputs)}",
        )

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[TResponseStreamEvent]:
        raise NotImplementedError("these tests do not stream")

    def sent(self) -> str:
        """Everything the model was given, over the whole run, as text."""
        return json.dumps(self.inputs, default=str)


def agent_with(
    tools: Sequence[Tool], script: Sequence[Step], **options: Any
) -> tuple[Agent[Any], ScriptModel]:
    model = ScriptModel(script)
    return Agent(name="assistant", model=model, tools=list(tools), **options), model


async def run(
    tools: Sequence[Tool], script: Sequence[Step], **options: Any
) -> tuple[RunResult, ScriptModel]:
    """A real ``Runner.run``; returns its result and the model (requests, unused steps)."""
    context = options.pop("context", None)
    agent, model = agent_with(tools, script, **options)
    result = await Runner.run(agent, "go", context=context, run_config=NO_TRACING)
    return result, model


def outputs(result: RunResult) -> dict[str, ToolCallOutputItem]:
    """Each call's output item, by call id."""
    return {
        str(item.call_id): item for item in result.new_items if isinstance(item, ToolCallOutputItem)
    }
