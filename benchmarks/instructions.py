"""Instructions per call, counted by callgrind: the steady number where timing is noisy.

    python benchmarks/instructions.py [--calls N] [CASE ...]

Each case runs in a fresh interpreter under ``valgrind --tool=callgrind`` twice: once
with a warm-up of ``WARM`` calls, once with the warm-up plus ``N`` more. The
difference divided by ``N`` is the cost of one call, with start-up, imports and
first-call work cancelled out. Counts are repeatable for the same interpreter,
inputs and environment (the hash seed is fixed), whatever else the machine is doing.

The ``floor`` case is what any guard must do at least: a prebuilt pydantic-core
validator over the arguments, the call, and a ``try/except`` around both.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WARM = 200

CASES = (
    "floor",
    "dispatch_dict",
    "dispatch_dict_general",
    "dispatch_json",
    "dispatch_retry_unused",
    "session_breaker",
    "adispatch_async",
    "arun_one",
    "hidden_failure",
    "tool_error",
    "invalid_arguments",
    "unknown_tool",
    "dispatch_dict_telemetry",
    "adispatch_async_telemetry",
    "hidden_failure_telemetry",
)


def _cases(case: str) -> dict[str, Callable[[], Any]]:
    """Each case as a thunk doing one call (built in the child, outside the count)."""
    sys.path.insert(0, str(ROOT))
    import logging

    import pydantic
    import structlog
    from typing_extensions import TypedDict

    from toolguard import Breaker, Dispatcher, Retry, ToolCall, ToolError, tool

    structlog.configure(
        processors=[],
        logger_factory=structlog.ReturnLoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def boom(a: int, b: int) -> int:
        """Fails."""
        raise ValueError("database down")

    def refuse(a: int, b: int) -> int:
        """Refuses."""
        raise ToolError("There is no order 42.")

    class AddArguments(TypedDict):
        a: int
        b: int

    validate = pydantic.TypeAdapter(AddArguments).validator.validate_python
    arguments = {"a": 1, "b": 2}

    def floor() -> Any:
        try:
            kwargs = validate(arguments)
            value = add(**kwargs)
        except Exception as error:
            return error
        return value

    if case.endswith("_telemetry"):  # telemetry on: the SDK, its spans exported to a no-op
        _telemetry_on()
    if case == "dispatch_dict_general":  # the plan that decides nothing in advance
        from toolguard import _runner

        _runner.plan_for = lambda is_async, resolved: _runner.GENERAL
    d = Dispatcher([tool(add), tool(add_async), tool(boom), tool(refuse)])
    retrying = Dispatcher([tool(add, retries=Retry(attempts=3))])
    session = Dispatcher([tool(add, breaker=Breaker())]).session()
    loop = asyncio.new_event_loop()

    def call(name: str, args: Any) -> ToolCall:
        return ToolCall(name=name, arguments=args, id="call-1")

    dict_call, json_call = call("add", arguments), call("add", '{"a": 1, "b": 2}')
    async_call = call("add_async", arguments)
    boom_call, refuse_call = call("boom", arguments), call("refuse", arguments)
    bad_call, unknown_call = call("add", {"a": "x"}), call("ad", arguments)
    one = [async_call]
    return {
        "dispatch_dict_telemetry": lambda: d.dispatch(dict_call),
        "adispatch_async_telemetry": lambda: loop.run_until_complete(d.adispatch(async_call)),
        "hidden_failure_telemetry": lambda: d.dispatch(boom_call),
        "floor": floor,
        "dispatch_dict": lambda: d.dispatch(dict_call),
        "dispatch_dict_general": lambda: d.dispatch(dict_call),
        "dispatch_json": lambda: d.dispatch(json_call),
        "dispatch_retry_unused": lambda: retrying.dispatch(dict_call),
        "session_breaker": lambda: session.dispatch(dict_call),
        "adispatch_async": lambda: loop.run_until_complete(d.adispatch(async_call)),
        "arun_one": lambda: loop.run_until_complete(d.arun(one)),
        "hidden_failure": lambda: d.dispatch(boom_call),
        "tool_error": lambda: d.dispatch(refuse_call),
        "invalid_arguments": lambda: d.dispatch(bad_call),
        "unknown_tool": lambda: d.dispatch(unknown_call),
    }


def _telemetry_on() -> None:
    """``configure(telemetry=True)`` under the OpenTelemetry SDK: every span is
    recorded and handed to an exporter that does nothing (synchronously, so no
    background thread is counted), and every measurement is aggregated."""
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import (
        SimpleSpanProcessor,
        SpanExporter,
        SpanExportResult,
    )

    import toolguard

    class NoOp(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(NoOp()))
    trace.set_tracer_provider(provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[InMemoryMetricReader()]))
    toolguard.configure(telemetry=True)


def child(case: str, calls: int) -> None:
    thunk = _cases(case)[case]
    for _ in range(calls):
        thunk()


def count(case: str, calls: int) -> int:
    """Instructions of a whole child run of ``calls`` calls."""
    command = [
        "valgrind",
        "--tool=callgrind",
        "--callgrind-out-file=/dev/null",
        sys.executable,
        __file__,
        "--child",
        case,
        str(calls),
    ]
    # a fixed hash seed: dict and set layouts (and so instruction counts) repeat exactly
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=False, env=env)
    found = re.search(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"{case}: callgrind failed:\n{done.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"of: {', '.join(CASES)}")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", nargs=2, metavar=("CASE", "N"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]))
        return
    unknown = sorted(set(args.cases) - set(CASES))
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}; cases: {', '.join(CASES)}")
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt install valgrind)")
    results: dict[str, float] = {}
    for case in args.cases or CASES:
        warm = count(case, WARM)
        full = count(case, WARM + args.calls)
        results[case] = (full - warm) / args.calls
    floor = results.get("floor")
    print(f"{'case':<24} {'instructions':>13} {'x floor':>8}")
    for case, per_call in results.items():
        ratio = f"{per_call / floor:.2f}x" if floor else ""
        print(f"{case:<24} {per_call:>13,.0f} {ratio:>8}")


if __name__ == "__main__":
    main()
