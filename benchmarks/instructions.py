"""Instructions per call, counted by callgrind: the steady number where timing is noisy.

    python benchmarks/instructions.py [--calls N] [CASE ...]

Each case runs in a fresh interpreter under ``valgrind --tool=callgrind`` twice: once
making ``BASE`` counted calls, once ``BASE + N``. The difference divided by ``N`` is
the cost of one call, with start-up, teardown and first-call work cancelled out.
Counts are repeatable for the same interpreter, inputs and environment (the hash
seed is fixed), whatever else the machine is doing.

The child builds its case and warms it up (``WARM`` calls) with callgrind's
instrumentation off (``--instr-atstart=no``: a 10,000-tool dispatcher would take
most of an hour to build instrumented), then waits; the parent switches it on
(``callgrind_control -i on``) and lets the child go on; the child's
``os.getppid()`` then zeroes the counters (``--zero-before=getppid``) just before
the counted calls, so neither the setup nor the wait is in the count. As in ``compare.py``, what the
setup built is collected and frozen (``gc.freeze()``) first: a 10,000-tool
dispatcher's pending full collection is not billed to the calls.

The ``floor`` case is what any guard must do at least: a prebuilt pydantic-core
validator over the arguments, the call, and a ``try/except`` around both.

A CASE is one of the cases below, or the key of any of ``compare.py``'s rows, its own
(``dispatch_hidden_json``, ``unknown_many_new``, ...) or a peer's and a framework's
guarded in place (``inplace_langchain_ok_guarded``, ...): then the child builds that
row's suite exactly as ``compare.py`` does (its namespace, its ``around`` context
entered for the whole run, its check) and counts its statement; an async row's
calls are awaited in one coroutine, so the event loop's own start is not counted.
The issue-16 comparisons are printed as pairs.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WARM = 200  # uncounted calls before counting (caches, first-use work)
BASE = 200  # counted calls of the shorter of the two runs

# cases defined here (the first is every ratio's floor)
OWN_CASES = (
    "floor",
    "dispatch_dict",
    "dispatch_dict_general",
    "dispatch_json",
    "dispatch_retry_unused",
    "session_breaker",
    "hidden_failure",
    "tool_error",
    "invalid_arguments",
    "unknown_tool",
    "dispatch_dict_telemetry",
    "hidden_failure_telemetry",
)
# compare.py's rows, counted as compare.py runs them: (yardstick, case) pairs
PAIRS = (
    ("adispatch_async", "arun_one"),
    ("floor_logged_json", "dispatch_hidden_json"),
    ("floor_logged_console", "dispatch_hidden_console"),
    ("unknown_few_new", "unknown_many_new"),
    ("unknown_few_repeated", "unknown_many_repeated"),
    ("floor_large_100k_fail", "dispatch_large_100k_fail"),
    ("floor_large_1m_fail", "dispatch_large_1m_fail"),
)
CASES = OWN_CASES + tuple(key for pair in PAIRS for key in pair)


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

    if case == "dispatch_dict_general":  # the plan that decides nothing in advance
        from toolguard.runner import _plan as _plans

        _plans.plan_for = lambda is_async, resolved: _plans.GENERAL
    d = Dispatcher([tool(add), tool(add_async), tool(boom), tool(refuse)])
    retrying = Dispatcher([tool(add, retries=Retry(attempts=3))])
    session = Dispatcher([tool(add, breaker=Breaker())]).session()

    def call(name: str, args: Any) -> ToolCall:
        return ToolCall(name=name, arguments=args, id="call-1")

    dict_call, json_call = call("add", arguments), call("add", '{"a": 1, "b": 2}')
    boom_call, refuse_call = call("boom", arguments), call("refuse", arguments)
    bad_call, unknown_call = call("add", {"a": "x"}), call("ad", arguments)
    if case.endswith("_telemetry"):  # telemetry on: the SDK, its spans exported to a no-op
        _telemetry_on()
    return {
        "dispatch_dict_telemetry": lambda: d.dispatch(dict_call),
        "hidden_failure_telemetry": lambda: d.dispatch(boom_call),
        "floor": floor,
        "dispatch_dict": lambda: d.dispatch(dict_call),
        "dispatch_dict_general": lambda: d.dispatch(dict_call),
        "dispatch_json": lambda: d.dispatch(json_call),
        "dispatch_retry_unused": lambda: retrying.dispatch(dict_call),
        "session_breaker": lambda: session.dispatch(dict_call),
        "hidden_failure": lambda: d.dispatch(boom_call),
        "tool_error": lambda: d.dispatch(refuse_call),
        "invalid_arguments": lambda: d.dispatch(bad_call),
        "unknown_tool": lambda: d.dispatch(unknown_call),
    }


def _row(case: str) -> Callable[[int], None]:
    """compare.py's row ``case``: a function making n calls, set up as compare.py does."""
    sys.path[:0] = [str(HERE)]
    import compare

    compare.configure_process()
    mode = compare.FULL
    if case.startswith("unknown_few_"):
        # the few-tools rows never touch the large dispatcher: do not build 10,000 tools
        mode = dataclasses.replace(mode, many_tools=compare.FEW_TOOLS)
    for suite in (*compare.toolguard_suites(mode), *compare.peer_suites()):
        for bench in suite.benches:
            if bench.key == case:
                break
        else:
            continue
        break
    else:
        raise SystemExit(f"no case or compare.py row {case!r}")
    harness = compare.Harness(mode)
    ns = suite.setup(harness.run_async)
    harness.check(bench, ns)
    compare._around(bench, ns).__enter__()  # for the whole run: never left
    timed = compare._compile(bench, ns)

    def run(n: int) -> None:
        harness.batch(timed, bench, n)

    return run


def child(case: str, calls: int, rendezvous: Path) -> None:
    if case in OWN_CASES:
        thunk = _cases(case)[case]

        def run(n: int) -> None:
            for _ in range(n):
                thunk()

    else:
        run = _row(case)
    run(WARM)
    # as compare.py does: what setup built is long-lived, kept out of every collection;
    # else the one full collection it is owed lands in one of the two runs, not both
    gc.collect()
    gc.freeze()
    # wait, uninstrumented, for the parent to switch the instrumentation on
    (rendezvous / "ready").write_text(str(os.getpid()))
    go = rendezvous / "go"
    while not go.exists():
        time.sleep(0.001)
    os.getppid()  # --zero-before=getppid: the count starts here
    run(calls)


def count(case: str, calls: int) -> int:
    """Instructions of ``calls`` calls of ``case`` (and the child's teardown)."""
    with tempfile.TemporaryDirectory(prefix="toolguard-callgrind-") as where:
        rendezvous = Path(where)
        command = [
            "valgrind",
            "--tool=callgrind",
            "--instr-atstart=no",
            "--zero-before=getppid",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            case,
            str(calls),
            str(rendezvous),
        ]
        # a fixed hash seed: dict and set layouts (and so instruction counts) repeat exactly
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        errors = rendezvous / "stderr"
        with errors.open("w") as sink:
            process = subprocess.Popen(
                command, stdout=subprocess.DEVNULL, stderr=sink, env=env, cwd=ROOT
            )
            ready = rendezvous / "ready"
            while not ready.exists() or not ready.read_text():
                if process.poll() is not None:
                    break
                time.sleep(0.2)
            else:
                subprocess.run(
                    ["callgrind_control", "--instr=on", ready.read_text()],
                    capture_output=True,
                    check=True,
                )
                (rendezvous / "go").touch()
            process.wait()
        stderr = errors.read_text()
    found = re.search(r"Collected : (\d+)", stderr)
    if process.returncode != 0 or found is None:
        raise SystemExit(f"{case}: callgrind failed:\n{stderr[-2000:]}")
    return int(found.group(1))


def per_call(case: str, calls: int) -> float:
    """Instructions of one call: the two runs (in parallel: counts ignore the load)."""
    with ThreadPoolExecutor(max_workers=2) as pool:
        short = pool.submit(count, case, BASE)
        long = pool.submit(count, case, BASE + calls)
        return (long.result() - short.result()) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("cases", nargs="*", metavar="CASE", help=f"of: {', '.join(CASES)}")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--child", nargs=3, metavar=("CASE", "N", "DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child[0], int(args.child[1]), Path(args.child[2]))
        return
    for tool in ("valgrind", "callgrind_control"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is not installed (Debian: apt install valgrind)")
    results: dict[str, float] = {}
    for case in args.cases or CASES:
        results[case] = per_call(case, args.calls)
        print(f"  {case}: {results[case]:,.0f}", file=sys.stderr, flush=True)
    floor = results.get("floor")
    print(f"{'case':<28} {'instructions':>13} {'x floor':>8}")
    for case, value in results.items():
        ratio = f"{value / floor:.2f}x" if floor and case in OWN_CASES else ""
        print(f"{case:<28} {value:>13,.0f} {ratio:>8}")
    pairs = [(a, b) for a, b in PAIRS if a in results and b in results]
    if pairs:
        print(f"\n{'case / its yardstick':<52} {'ratio':>8}")
        for a, b in pairs:
            print(f"{b + ' / ' + a:<52} {results[b] / results[a]:>7.2f}x")


if __name__ == "__main__":
    main()
