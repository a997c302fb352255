"""Profile toolguard's two hot paths: a successful dispatch and a hidden failure.

    python benchmarks/profile_hot_paths.py [--calls N] [--top N] [--pyinstrument]

Same tool, same structlog pipeline as ``compare.py`` (processors=[], ReturnLogger,
filtering at WARNING). cProfile's numbers are inflated by its own per-call hook (a
profiled dispatch is several times slower than an unprofiled one): read the shares
and the call counts per dispatch, not the absolute times. ``--pyinstrument`` prints a
sampled call tree instead, which distorts less.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from compare import configure_process  # benchmarks/ is sys.path[0]; it adds the checkout


def _paths() -> dict[str, Callable[[], Any]]:
    from toolguard import Dispatcher, ToolCall, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    dispatcher = Dispatcher([add, boom])
    ok = ToolCall(name="add", arguments={"a": 1, "b": 2}, id="call-1")
    failing = ToolCall(name="boom", arguments={"a": 1, "b": 2}, id="call-1")
    return {
        "success dispatch (dict arguments)": lambda: dispatcher.dispatch(ok),
        "hidden failure (logged)": lambda: dispatcher.dispatch(failing),
    }


def _unprofiled_us(fn: Callable[[], Any], calls: int) -> float:
    fn()
    start = time.perf_counter_ns()
    for _ in range(calls):
        fn()
    return (time.perf_counter_ns() - start) / calls / 1000


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--pyinstrument", action="store_true")
    options = parser.parse_args(argv)
    configure_process()
    for name, fn in _paths().items():
        plain = _unprofiled_us(fn, options.calls)
        print(f"=== {name}: {plain:.2f} µs per call unprofiled, {options.calls:,} calls ===")
        if options.pyinstrument:
            from pyinstrument import Profiler

            profiler = Profiler(interval=0.0001)
            profiler.start()
            for _ in range(options.calls):
                fn()
            profiler.stop()
            print(profiler.output_text(unicode=True, color=False, show_all=False))
            continue
        profile = cProfile.Profile()
        profile.enable()
        for _ in range(options.calls):
            fn()
        profile.disable()
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).strip_dirs()
        stats.sort_stats("tottime").print_stats(options.top)
        print(out.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main())
