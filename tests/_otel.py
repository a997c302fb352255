"""The real OpenTelemetry SDK, installed once per test process, with in-memory exporters.

OpenTelemetry's global tracer and meter providers can be set only once, so every
telemetry test shares these: :func:`install` returns them, cleared, and the
``telemetry`` fixture of each module turns toolguard's telemetry on for one test.
"""

from __future__ import annotations

from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

SPANS = InMemorySpanExporter()
METRICS = InMemoryMetricReader()
_installed = False


def install() -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """The SDK as the global providers (once), its span exporter cleared."""
    global _installed
    if not _installed:
        current = trace.get_tracer_provider()
        if isinstance(current, TracerProvider):  # someone installed the SDK first
            current.add_span_processor(SimpleSpanProcessor(SPANS))
        else:
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(SPANS))
            trace.set_tracer_provider(provider)
        metrics.set_meter_provider(MeterProvider(metric_readers=[METRICS]))
        _installed = True
    SPANS.clear()
    METRICS.get_metrics_data()  # cumulative: read now, so a test compares with this
    return SPANS, METRICS


def tool_spans() -> list[ReadableSpan]:
    """The finished spans toolguard made, in the order they ended."""
    return [
        span
        for span in SPANS.get_finished_spans()
        if span.instrumentation_scope is not None and span.instrumentation_scope.name == "toolguard"
    ]


def attributes(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def points(name: str) -> list[Any]:
    """The data points of the toolguard instrument ``name`` (cumulative since start)."""
    data = METRICS.get_metrics_data()
    found: list[Any] = []
    if data is None:
        return found
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            if scope.scope.name != "toolguard":
                continue
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(metric.data.data_points)
    return found


def counted(tool: str, outcome: str) -> int:
    """``toolguard.calls`` for one tool and outcome, so far."""
    return sum(
        int(point.value)
        for point in points("toolguard.calls")
        if dict(point.attributes) == {"gen_ai.tool.name": tool, "toolguard.outcome": outcome}
    )


def timed(tool: str) -> int:
    """How many calls of ``tool`` the duration histogram holds, so far."""
    return sum(
        int(point.count)
        for point in points("gen_ai.execute_tool.duration")
        if dict(point.attributes).get("gen_ai.tool.name") == tool
    )
