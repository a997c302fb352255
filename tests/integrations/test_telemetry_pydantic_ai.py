"""toolguard's spans nest under Pydantic AI's own OpenTelemetry spans.

A real ``Agent.run`` with Pydantic AI's instrumentation on (its spans go to the same
SDK tracer provider, with ``include_content=True``: it records tool arguments,
results and exception text on its spans), driven by its offline ``FunctionModel``,
inside an outer application span. Each of toolguard's ``execute_tool`` spans is a
child of Pydantic AI's ``execute_tool`` span for the same call, which is under the
agent run, under the application's span; the error id is the same on the span, in
the log and in what the model was sent; the secret is in no exported span at all,
Pydantic AI's included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from pydantic_ai import Agent, ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.capabilities import Instrumentation
from pydantic_ai.messages import ModelRequest
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.instrumented import InstrumentationSettings

import toolguard
from toolguard import Dispatcher, ToolError
from toolguard.integrations.pydantic_ai import as_pydantic_ai_tools

from .._otel import SPANS, attributes, install, tool_spans

SECRET = "db-password=hunter2"
Logs = list[dict[str, Any]]


@pytest.fixture
def telemetry() -> Iterator[None]:
    install()
    toolguard.configure(telemetry=True)
    yield
    toolguard.reset_defaults()


@toolguard.tool
def charge(card: str) -> str:
    """Charge a card."""
    raise RuntimeError(f"payment backend refused: {SECRET}")


@toolguard.tool
def find_order(order_id: int) -> str:
    """Find an order."""
    if order_id == 42:
        raise ToolError(f"There is no order {order_id}. Ask the user to check it.")
    return f"order {order_id}: shipped"


def script() -> FunctionModel:
    steps: list[list[Any]] = [
        [
            ToolCallPart("charge", {"card": "4242"}, tool_call_id="call_charge"),
            ToolCallPart("find_order", {"order_id": 7}, tool_call_id="call_order"),
        ],
        [TextPart("done")],
    ]

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=steps.pop(0))

    return FunctionModel(answer)


def by_id(spans: list[ReadableSpan]) -> dict[int, ReadableSpan]:
    return {span.context.span_id: span for span in spans if span.context is not None}


@pytest.mark.usefixtures("telemetry")
async def test_toolguard_spans_nest_under_pydantic_ais_tool_spans(logs: Logs) -> None:
    guard = Dispatcher([charge, find_order])
    instrument = InstrumentationSettings(
        tracer_provider=trace.get_tracer_provider(), include_content=True
    )
    agent = Agent(
        script(),
        tools=as_pydantic_ai_tools(guard),
        capabilities=[Instrumentation(settings=instrument)],
    )
    with trace.get_tracer("app").start_as_current_span("handle request") as request:
        result = await agent.run("charge my card and find order 7")
    assert result.output == "done"

    everything = list(SPANS.get_finished_spans())
    spans = by_id(everything)
    ours = {attributes(span)["gen_ai.tool.call.id"]: span for span in tool_spans()}
    assert sorted(ours) == ["call_charge", "call_order"]
    for call_id, span in ours.items():
        assert span.parent is not None
        parent = spans[span.parent.span_id]
        # Pydantic AI's own span for the same call
        assert parent.instrumentation_scope is not None
        assert parent.instrumentation_scope.name != "toolguard"
        assert attributes(parent)["gen_ai.operation.name"] == "execute_tool"
        assert attributes(parent)["gen_ai.tool.call.id"] == call_id
        # ... and up the chain, the application's span: one trace
        chain = [parent]
        while chain[-1].parent is not None:
            chain.append(spans[chain[-1].parent.span_id])
        assert chain[-1].context is not None
        assert chain[-1].context.span_id == request.get_span_context().span_id
        assert span.context is not None
        assert span.context.trace_id == request.get_span_context().trace_id

    assert attributes(ours["call_order"])["toolguard.outcome"] == "ok"
    hidden = attributes(ours["call_charge"])
    assert hidden["toolguard.outcome"] == "hidden_error"
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    [sent] = [
        part
        for message in result.all_messages()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_call_id == "call_charge"
    ]
    assert event["error_id"] == hidden["toolguard.error_id"]
    assert hidden["toolguard.error_id"] in str(sent.content)
    charged = ours["call_charge"].context
    assert charged is not None
    assert event["span_id"] == format(charged.span_id, "016x")

    # the framework records content on its spans; the hidden cause is in none of them
    for span in everything:
        assert SECRET not in span.to_json(), span.name
