"""Per-call cost of a guarded tool call: toolguard against a bare call and its peers.

    python benchmarks/compare.py [--quick] [--json PATH] [--markdown PATH]

One process, one run: every case times the same trivial tool, ``add(a: int, b: int)
-> int``. A case is a statement compiled into a tight loop (like ``timeit``) and run
in batches sized to take about 20 ms each (1.5 ms with ``--quick``). Every case is
sized first, then the batches are interleaved (batch 1 of every case, batch 2 of
every case, ...) so that a burst of load on a shared machine hits all cases alike.
The table gives the median, min and max over the batches of the per-call wall time
(``perf_counter_ns``), and the median per-call process CPU time (``process_time_ns``;
it does not count time spent descheduled, so it is steadier on a busy machine).
Async cases are timed inside the coroutine, on one event loop that lives for the
whole run. GC stays enabled during batches (a path that makes cyclic garbage pays
for it), everything built before timing is frozen out of the collector
(``gc.freeze()``) so one framework's heap does not slow another's collections, and
``gc.collect()`` runs before every batch.

Logging is configured so that it costs what an application that keeps warnings
would pay for the event itself and nothing for output: structlog (toolguard) with
``processors=[]``, a ``ReturnLogger`` and a filtering bound logger at WARNING, so
toolguard's hidden-cause warning is built, bound and passed through the (empty)
pipeline, then dropped; the standard library (the peers) with a ``NullHandler`` on
the root logger at WARNING, so ERROR and WARNING records are built and dropped.

Peers that are not installed are reported as skipped. Nothing here fails on a
timing; ``--quick`` is for CI (a few seconds) so that the script never rots.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.metadata
import importlib.util
import itertools
import json
import logging
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
import warnings
from collections.abc import Awaitable, Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# Measure the checkout this script lives in, even when another copy is installed.
sys.path[:0] = [str(ROOT), str(HERE)]

from _peers import ARGS, ARGS_JSON, BAD_ARGS, Bench, Namespace, RunAsync, Suite, peer_suites  # noqa: E402

STRUCTLOG_PIPELINE = (
    "structlog.configure(processors=[], logger_factory=structlog.ReturnLoggerFactory(), "
    "wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING), "
    "cache_logger_on_first_use=True)"
)
STDLIB_LOGGING = "logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])"
GC_POLICY = "enabled during batches; gc.freeze() after setup; gc.collect() before each batch"


@dataclass(frozen=True)
class Mode:
    name: str
    batch_ns: int  # target duration of one batch
    batches: int
    round_batches: int
    import_runs: int
    # the fresh interpreters run one at a time; quick: *while* the rest runs (two
    # cores: one for them, one for this process); full: alone, before the rest
    imports_in_background: bool
    leak_dispatches: int
    memory_tools: int


FULL = Mode("full", 20_000_000, 21, 15, 7, False, 100_000, 1000)
QUICK = Mode("quick", 1_500_000, 3, 3, 1, True, 10_000, 50)


@dataclass
class Row:
    """One line of the table (and of the JSON)."""

    key: str
    label: str
    group: str
    unit: str = "µs"
    median_us: float | None = None
    min_us: float | None = None
    max_us: float | None = None
    cpu_median_us: float | None = None  # process CPU time: immune to being descheduled
    batches: int = 0
    calls_per_batch: int = 0
    ratio_to_bare: float | None = None
    vs: str | None = None
    ratio_to_toolguard: float | None = None
    ratio_to_toolguard_cpu: float | None = None
    ideal_us: float | None = None
    ratio_to_ideal: float | None = None
    skipped: str | None = None
    note: str = ""


# --- the process's configuration ------------------------------------------------------------


def configure_process() -> None:
    """Logging, structlog and warnings for the whole benchmark process (see the docstring)."""
    # Peers may warn about their own deprecations at import or first use; this is a
    # script, and a warning printed mid-table is noise. Only the peers' modules.
    for module in (
        r"langchain_core(\..*)?",
        r"agents(\..*)?",
        r"mcp(\..*)?",
        r"pydantic_ai(\..*)?",
    ):
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=module)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning, module=module)
        warnings.filterwarnings("ignore", category=FutureWarning, module=module)
    # Before any peer is imported: MCPServer() calls logging.basicConfig(), a no-op
    # once the root logger has a handler.
    logging.basicConfig(level=logging.WARNING, handlers=[logging.NullHandler()])
    os.environ.setdefault("LANGCHAIN_TRACING_V2", "false")
    import structlog

    structlog.configure(
        processors=[],
        logger_factory=structlog.ReturnLoggerFactory(),
        wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING),
        cache_logger_on_first_use=True,
    )


# --- toolguard's own cases --------------------------------------------------------------------


def _passthrough(
    wrapped: Callable[..., Any], instance: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
) -> Any:
    return wrapped(*args, **kwargs)


def _toolguard_setup(run: RunAsync) -> Namespace:
    import pydantic
    import structlog.testing
    import wrapt
    from typing_extensions import TypedDict

    from toolguard import Breaker, Dispatcher, Retry, ToolCall, ToolError, tool

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ToolError("There is no order 42. Ask the user to check the number.")

    class AddArguments(TypedDict):
        a: int
        b: int

    validate = pydantic.TypeAdapter(AddArguments).validator.validate_python

    def floor(call: Any) -> Any:
        """What any guard must do at least: a prebuilt validator, the call, a try."""
        try:
            kwargs = validate(call.arguments)
            value = add(**kwargs)
        except Exception as error:
            return error
        return value

    tg_add = tool(add)
    dispatcher = Dispatcher([tg_add, tool(add_async), tool(boom), tool(refuse)])
    # the same tool with resilience configured but unused on the success path
    retrying = Dispatcher([tool(add, retries=Retry(attempts=3))])
    session = Dispatcher([tool(add, breaker=Breaker())]).session()

    def call(name: str, arguments: Any) -> Any:
        return ToolCall(name=name, arguments=arguments, id="call-1")

    def events(thunk: Callable[[], Any]) -> int:
        """How many structlog events one call emits (checks: success logs nothing)."""
        with structlog.testing.capture_logs() as logs:
            thunk()
        return len(logs)

    return {
        "add": add,
        "floor": floor,
        "wrapped_add": wrapt.FunctionWrapper(add, _passthrough),
        "tg_add": tg_add,
        "d": dispatcher,
        "d_retry": retrying,
        "session": session,
        "events": events,
        "ToolCall": ToolCall,
        "tg_args": ARGS,
        "tg_dict": call("add", ARGS),
        "tg_json": call("add", ARGS_JSON),
        "tg_async_dict": call("add_async", ARGS),
        "tg_async_json": call("add_async", ARGS_JSON),
        "tg_boom": call("boom", ARGS),
        "tg_refuse": call("refuse", ARGS),
        "tg_bad": call("add", BAD_ARGS),
        "tg_unknown": call("ad", ARGS),
    }


TOOLGUARD = Suite(
    group="toolguard",
    module="toolguard",
    versions=("toolguard", "wrapt", "pydantic", "pydantic-core", "structlog", "attrs"),
    description="Dispatcher.dispatch / adispatch of @tool functions",
    benches=(
        Bench(key="bare_call", label="bare call add(1, 2)", stmt="add(1, 2)",
              check="add(1, 2) == 3"),
        Bench(key="wrapt_passthrough", label="plain wrapt.FunctionWrapper, pass-through",
              stmt="wrapped_add(1, 2)", check="wrapped_add(1, 2) == 3"),
        Bench(key="tool_direct", label="@tool function called directly",
              stmt="tg_add(1, 2)", check="tg_add(1, 2) == 3"),
        Bench(key="toolcall_construction", label="ToolCall(...) construction",
              stmt="ToolCall(name='add', arguments=tg_args, id='call-1')",
              note="the input of every dispatch; not in the rows below"),
        Bench(key="floor", label="floor: prebuilt validator + call + try/except",
              stmt="floor(tg_dict)", check="floor(tg_dict) == 3",
              note="the least any guard does; the success path's yardstick"),
        Bench(key="dispatch_dict", label="dispatch, dict arguments", stmt="d.dispatch(tg_dict)",
              check="d.dispatch(tg_dict).content == '3' "
                    "and events(lambda: d.dispatch(tg_dict)) == 0"),
        Bench(key="dispatch_retry_unused", label="dispatch, retry policy configured (unused)",
              stmt="d_retry.dispatch(tg_dict)", check="d_retry.dispatch(tg_dict).content == '3'",
              note="issue 5: no more than dispatch, dict arguments"),
        Bench(key="session_dispatch", label="session.dispatch, circuit breaker configured",
              stmt="session.dispatch(tg_dict)", check="session.dispatch(tg_dict).content == '3'",
              note="issue 5: at most 1 µs over dispatch, dict arguments"),
        Bench(key="dispatch_json", label="dispatch, JSON string arguments",
              stmt="d.dispatch(tg_json)", check="d.dispatch(tg_json).content == '3'"),
        Bench(key="adispatch_async", label="adispatch, async tool, dict arguments",
              stmt="await d.adispatch(tg_async_dict)", is_async=True,
              check="(await d.adispatch(tg_async_dict)).content == '3'"),
        Bench(key="adispatch_async_json", label="adispatch, async tool, JSON string",
              stmt="await d.adispatch(tg_async_json)", is_async=True,
              check="(await d.adispatch(tg_async_json)).content == '3'"),
        Bench(key="dispatch_hidden_failure", label="dispatch, hidden failure (logged)",
              stmt="d.dispatch(tg_boom)",
              check="(r := d.dispatch(tg_boom)).is_error and r.error_id is not None "
                    "and events(lambda: d.dispatch(tg_boom)) == 1",
              note="warning event through the empty structlog pipeline"),
        Bench(key="dispatch_tool_error", label="dispatch, model-visible ToolError",
              stmt="d.dispatch(tg_refuse)",
              check="(r := d.dispatch(tg_refuse)).is_error and r.error_id is None "
                    "and events(lambda: d.dispatch(tg_refuse)) == 0"),
        Bench(key="dispatch_validation_error", label="dispatch, invalid arguments",
              stmt="d.dispatch(tg_bad)", check="d.dispatch(tg_bad).is_error"),
        Bench(key="dispatch_unknown_tool", label="dispatch, unknown tool",
              stmt="d.dispatch(tg_unknown)", check="d.dispatch(tg_unknown).is_error"),
    ),
    setup=_toolguard_setup,
)  # fmt: skip

ROUND_SLEEP_S = 0.01
ASYNC_ROUND = 100
SYNC_ROUND = 16


def _rounds_setup(run: RunAsync) -> Namespace:
    from toolguard import Dispatcher, ToolCall, tool

    @tool
    async def nap(i: int) -> int:
        """Sleep 10 ms (async)."""
        await asyncio.sleep(ROUND_SLEEP_S)
        return i

    @tool
    def snooze(i: int) -> int:
        """Sleep 10 ms (sync)."""
        time.sleep(ROUND_SLEEP_S)
        return i

    def calls(name: str, count: int) -> list[Any]:
        return [ToolCall(name=name, arguments={"i": i}, id=f"call-{i}") for i in range(count)]

    return {
        "d_async": Dispatcher([nap]),
        "d_sync": Dispatcher([snooze], max_workers=SYNC_ROUND),
        "nap_calls": calls("nap", ASYNC_ROUND),
        "snooze_calls": calls("snooze", SYNC_ROUND),
    }


ROUNDS = Suite(
    group="rounds",
    module="toolguard",
    benches=(
        Bench(key="round_async_100", label=f"arun: {ASYNC_ROUND} async calls x 10 ms sleep",
              stmt="await d_async.arun(nap_calls)", is_async=True, unit="ms", repeat_n=1,
              ideal_us=ROUND_SLEEP_S * 1e6,
              check="[r.content for r in (await d_async.arun(nap_calls)).results] "
                    "== [str(i) for i in range(len(nap_calls))]"),
        Bench(key="round_sync_16", label=f"run: {SYNC_ROUND} sync calls x 10 ms, 16 threads",
              stmt="d_sync.run(snooze_calls)", unit="ms", repeat_n=1,
              ideal_us=ROUND_SLEEP_S * 1e6,
              check="[r.content for r in d_sync.run(snooze_calls).results] "
                    "== [str(i) for i in range(len(snooze_calls))]"),
    ),
    setup=_rounds_setup,
)  # fmt: skip

IMPORTS: tuple[tuple[str, str, str, str | None], ...] = (
    # key, statement, module that must exist, toolguard key to compare with
    ("import_toolguard", "import toolguard", "toolguard", None),
    ("import_langchain", "from langchain_core.tools import tool", "langchain_core",
     "import_toolguard"),
    ("import_agents", "import agents", "agents", "import_toolguard"),
    ("import_pydantic_ai", "import pydantic_ai", "pydantic_ai", "import_toolguard"),
    ("import_mcp", "import mcp", "mcp", "import_toolguard"),
)  # fmt: skip


# --- the harness ------------------------------------------------------------------------------

_SYNC_TEMPLATE = """
def _bench(_n, _timer, _cpu, _ns):
{locals}
    _it = _repeat(None, _n)
    _c0 = _cpu()
    _t0 = _timer()
    for _ in _it:
        {stmt}
    _t1 = _timer()
    return _t1 - _t0, _cpu() - _c0
"""

_ASYNC_TEMPLATE = _SYNC_TEMPLATE.replace("def _bench", "async def _bench", 1)


def _compile(bench: Bench, ns: Namespace) -> Callable[[int], Any]:
    """A function running ``bench.stmt`` n times, its names bound as fast locals."""
    names = [name for name in ns if name.isidentifier()]
    local_lines = "\n".join(f"    {name} = _ns[{name!r}]" for name in names) or "    pass"
    template = _ASYNC_TEMPLATE if bench.is_async else _SYNC_TEMPLATE
    source = template.format(locals=local_lines, stmt=bench.stmt)
    scope: dict[str, Any] = {"_repeat": itertools.repeat}
    exec(compile(source, f"<bench {bench.key}>", "exec"), scope)
    inner = scope["_bench"]

    def timed(n: int) -> Any:
        return inner(n, time.perf_counter_ns, time.process_time_ns, ns)

    return timed


@dataclass
class Timed:
    """A case ready to time: its compiled loop, calls per batch, and the samples so far."""

    bench: Bench
    run: Callable[[int], Any]
    n: int
    batches: int
    per_call_us: list[float] = field(default_factory=list)
    cpu_per_call_us: list[float] = field(default_factory=list)


class Harness:
    """Runs batches; owns the one event loop every async case runs on."""

    def __init__(self, mode: Mode) -> None:
        self.mode = mode
        self.runner = asyncio.Runner()

    def run_async(self, awaitable: Awaitable[Any]) -> Any:
        async def wrap() -> Any:
            return await awaitable

        return self.runner.run(wrap())

    def check(self, bench: Bench, ns: Namespace) -> None:
        if bench.check is None:
            return
        if bench.is_async:
            scope: dict[str, Any] = {}
            exec(f"async def _check(_ns):\n    return ({bench.check})", dict(ns), scope)
            ok = self.runner.run(scope["_check"](ns))
        else:
            ok = eval(bench.check, dict(ns))
        if not ok:
            raise AssertionError(f"{bench.key}: check failed: {bench.check}")

    def batch(self, timed: Callable[[int], Any], bench: Bench, n: int) -> tuple[int, int]:
        """One batch of n calls: (wall ns, CPU ns of the whole process)."""
        elapsed = timed(n)
        if bench.is_async:
            elapsed = self.runner.run(elapsed)
        wall, cpu = elapsed
        return int(wall), int(cpu)

    def calibrate(self, timed: Callable[[int], Any], bench: Bench) -> int:
        """Calls per batch so that one batch takes about ``mode.batch_ns``."""
        target = self.mode.batch_ns
        n = 1
        while True:
            elapsed = max(self.batch(timed, bench, n)[0], 1)
            if elapsed >= target // 4 or n >= 10**8:
                return max(1, round(n * target / elapsed))
            n = max(n * 2, min(n * 100, int(n * target / 2 / elapsed)))

    def prepare(self, bench: Bench, ns: Namespace) -> Timed:
        """Compile, size and warm one case up."""
        timed = _compile(bench, ns)
        if bench.repeat_n is not None:
            n = bench.repeat_n
            batches = self.mode.round_batches
        else:
            n = self.calibrate(timed, bench)
            batches = self.mode.batches
        self.batch(timed, bench, n)  # warm-up at the final size (thread pools, caches)
        return Timed(bench, timed, n, batches)

    def sample(self, case: Timed) -> None:
        gc.collect()
        wall, cpu = self.batch(case.run, case.bench, case.n)
        case.per_call_us.append(wall / case.n / 1000)
        case.cpu_per_call_us.append(cpu / case.n / 1000)

    def close(self) -> None:
        self.runner.close()


def _installed(module: str | None) -> bool:
    if module is None:
        return True
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def run_suites(harness: Harness, suites: Sequence[Suite], echo: Callable[[str], None]) -> list[Row]:
    """Set every suite up and check its cases, then time them all, interleaved.

    toolguard's own failures propagate; a peer that is missing, or whose setup or
    check fails (its API moved), becomes rows with a skip reason.
    """
    rows: list[Row] = []
    prepared: list[tuple[Bench, Namespace, Row]] = []
    for suite in suites:
        suite_rows = [
            Row(key=b.key, label=b.label, group=suite.group, unit=b.unit, vs=b.vs,
                ideal_us=b.ideal_us, note=b.note, skipped=b.skip)
            for b in suite.benches
        ]  # fmt: skip
        rows.extend(suite_rows)
        if not _installed(suite.module):
            for row in suite_rows:
                row.skipped = "skipped (not installed)"
            continue
        own = suite.group in ("toolguard", "rounds")
        try:
            ns = suite.setup(harness.run_async)
            for bench, row in zip(suite.benches, suite_rows, strict=True):
                if bench.skip is None:
                    harness.check(bench, ns)
                    prepared.append((bench, ns, row))
        except Exception as error:
            if own:
                raise
            # A peer whose API moved: say so in the table, do not fail CI on it.
            echo(f"warning: {suite.group}: setup failed: {error!r}")
            for row in suite_rows:
                if row.skipped is None:
                    row.skipped = f"skipped (setup failed: {type(error).__name__}: {error})"
            prepared = [p for p in prepared if p[2] not in suite_rows]
    gc.collect()
    gc.freeze()  # what setup built is long-lived: keep it out of every collection
    try:
        _time_interleaved(harness, prepared, echo)
    finally:
        gc.unfreeze()
    return rows


def _failed(row: Row, error: Exception, echo: Callable[[str], None]) -> None:
    if row.group in ("toolguard", "rounds"):
        raise error
    echo(f"warning: {row.key}: {error!r}")
    row.skipped = f"skipped (failed: {type(error).__name__}: {error})"


def _time_interleaved(
    harness: Harness, prepared: list[tuple[Bench, Namespace, Row]], echo: Callable[[str], None]
) -> None:
    """Size every case, then take batch 1 of each, batch 2 of each, ...

    On a shared, noisy machine a burst of load then hits every case alike instead
    of whichever case happened to be running, so the ratios hold up.
    """
    echo(f"  sizing {len(prepared)} cases ...")
    cases: list[tuple[Timed, Row]] = []
    for bench, ns, row in prepared:
        try:
            cases.append((harness.prepare(bench, ns), row))
        except Exception as error:
            _failed(row, error, echo)
    rounds = max((case.batches for case, _ in cases), default=0)
    echo(f"  timing: {rounds} interleaved batches of each case ...")
    for index in range(rounds):
        for case, row in cases:
            if index >= case.batches or row.skipped is not None:
                continue
            try:
                harness.sample(case)
            except Exception as error:
                _failed(row, error, echo)
    for case, row in cases:
        if row.skipped is not None:
            continue
        row.median_us = statistics.median(case.per_call_us)
        row.min_us = min(case.per_call_us)
        row.max_us = max(case.per_call_us)
        row.cpu_median_us = statistics.median(case.cpu_per_call_us)
        row.batches = len(case.per_call_us)
        row.calls_per_batch = case.n


# --- import time ------------------------------------------------------------------------------


class ImportFailed(Exception):
    """The interpreter exited non-zero; the message is the last line of its stderr."""


def _interpreter(statement: str) -> tuple[int, int | None]:
    """Run ``python -c statement``: (wall ns, the child's user+system CPU ns, if known)."""
    with tempfile.TemporaryFile() as errors:
        start = time.perf_counter_ns()
        child = subprocess.Popen(
            [sys.executable, "-c", statement], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=errors
        )
        cpu: int | None = None
        if hasattr(os, "wait4"):
            _, status, usage = os.wait4(child.pid, 0)
            child.returncode = os.waitstatus_to_exitcode(status)
            cpu = int((usage.ru_utime + usage.ru_stime) * 1e9)
        else:  # pragma: no cover - no per-child rusage
            child.wait()
        wall = time.perf_counter_ns() - start
        if child.returncode != 0:
            errors.seek(0)
            tail = errors.read().decode(errors="replace").strip().splitlines()[-1:] or ["?"]
            raise ImportFailed(tail[0])
    return wall, cpu


def measure_imports(mode: Mode, echo: Callable[[str], None]) -> tuple[list[Row], float]:
    """Wall time of ``python -c "import x"`` minus ``python -c "pass"``, interleaved runs.

    The child's CPU time (``wait4``), minus that of ``pass``, goes in the cpu column.
    Returns the rows and the interpreter's own start-up time (seconds, median).
    """
    rows = {
        key: Row(key=key, label=f"import: {stmt}", group="imports", unit="ms", vs=vs)
        for key, stmt, _, vs in IMPORTS
    }
    active = []
    for key, stmt, module, _ in IMPORTS:
        if _installed(module):
            active.append((key, stmt))
        else:
            rows[key].skipped = "skipped (not installed)"
    where = "in the background" if mode.imports_in_background else "alone"
    echo(f"  timing imports ({mode.import_runs} run(s) each, {where}) ...")
    jobs = [("", "pass"), *active]
    samples: dict[str, list[tuple[int, int | None]]] = {key: [] for key, _ in jobs}
    for _ in range(mode.import_runs):
        for key, stmt in jobs:
            if key and rows[key].skipped is not None:
                continue
            try:
                samples[key].append(_interpreter(stmt))
            except ImportFailed as error:
                if not key:
                    raise
                rows[key].skipped = f"skipped (import failed: {error})"
    startup = statistics.median(wall for wall, _ in samples[""])
    startup_cpu = [cpu for _, cpu in samples[""] if cpu is not None]
    for key, values in samples.items():
        row = rows.get(key)
        if row is None or row.skipped is not None or not values:
            continue
        net = [(wall - startup) / 1000 for wall, _ in values]
        row.median_us = statistics.median(net)
        row.min_us = min(net)
        row.max_us = max(net)
        cpus = [cpu for _, cpu in values if cpu is not None]
        if cpus and startup_cpu:
            row.cpu_median_us = (statistics.median(cpus) - statistics.median(startup_cpu)) / 1000
        row.batches = len(net)
        row.calls_per_batch = 1
    return list(rows.values()), startup / 1e9


# --- memory -----------------------------------------------------------------------------------


def _make_add() -> Callable[[int, int], int]:
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def _traced() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


def measure_memory(mode: Mode) -> dict[str, Any]:
    """Bytes per decorated tool, per plain wrapt wrapper, and per Dispatcher of N tools."""
    import wrapt

    from toolguard import Dispatcher, tool

    count = mode.memory_tools
    Dispatcher([tool(name="warm_up")(_make_add())])  # first-use caches are not per tool
    # time first, untraced: what N tools cost at import time
    functions = [_make_add() for _ in range(count)]
    gc.collect()
    start_ns = time.perf_counter_ns()
    timed_tools = [tool(name=f"add_{i}")(fn) for i, fn in enumerate(functions)]
    decorated_ns = time.perf_counter_ns()
    Dispatcher(timed_tools)
    dispatcher_ns = time.perf_counter_ns()
    del timed_tools

    functions = [_make_add() for _ in range(count)]
    tracemalloc.start()
    try:
        start = _traced()
        plain = [wrapt.FunctionWrapper(fn, _passthrough) for fn in functions]
        after_plain = _traced()
        tools = [tool(name=f"add_{i}")(fn) for i, fn in enumerate(functions)]
        after_tools = _traced()
        dispatcher = Dispatcher(tools)
        after_dispatcher = _traced()
    finally:
        tracemalloc.stop()
    del plain, dispatcher
    return {
        "tools": count,
        "bytes_per_wrapt_wrapper": (after_plain - start) / count,
        "bytes_per_tool": (after_tools - after_plain) / count,
        "bytes_per_dispatcher": after_dispatcher - after_tools,
        "dispatcher_bytes_per_tool": (after_dispatcher - after_tools) / count,
        "decoration_us_per_tool": (decorated_ns - start_ns) / count / 1000,
        "dispatcher_construction_us_per_tool": (dispatcher_ns - decorated_ns) / count / 1000,
    }


def measure_leak(mode: Mode, echo: Callable[[str], None]) -> dict[str, Any]:
    """Traced memory before and after N dispatches, success and failure mixed."""
    from toolguard import Dispatcher, ToolCall, ToolError, tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def boom(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ValueError("database down")

    @tool
    def refuse(a: int, b: int) -> int:
        """Add two integers (refuses)."""
        raise ToolError("There is no order 42.") from KeyError(42)

    dispatcher = Dispatcher([add, boom, refuse])
    mix = [
        ToolCall(name="add", arguments=ARGS, id="1"),
        ToolCall(name="add", arguments=ARGS_JSON, id="2"),
        ToolCall(name="boom", arguments=ARGS, id="3"),
        ToolCall(name="refuse", arguments=ARGS_JSON, id="4"),
        ToolCall(name="add", arguments=BAD_ARGS, id="5"),
        ToolCall(name="ad", arguments=ARGS, id="6"),
    ]
    total = mode.leak_dispatches
    half = total // 2
    echo(f"  leak check ({total:,} dispatches under tracemalloc) ...")
    calls = itertools.cycle(mix)

    def dispatch(n: int) -> None:
        for call in itertools.islice(calls, n):
            dispatcher.dispatch(call)

    dispatch(len(mix) * 50)  # warm-up outside tracing
    tracemalloc.start()
    try:
        dispatch(len(mix) * 20)  # and under tracing (first-use allocations)
        before = _traced()
        dispatch(half)
        middle = _traced()
        dispatch(total - half)
        after = _traced()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return {
        "dispatches": total,
        "mix": "dict ok, JSON ok, hidden failure (logged), ToolError from a cause (logged), "
        "invalid arguments, unknown tool",
        "traced_before_bytes": before,
        "traced_after_bytes": after,
        "growth_bytes": after - before,
        "growth_first_half_bytes": middle - before,
        "growth_second_half_bytes": after - middle,
        "peak_bytes": peak,
    }


# --- targets from the issue -------------------------------------------------------------------


def _median(rows: dict[str, Row], key: str, cpu: bool = False) -> float | None:
    row = rows.get(key)
    if row is None:
        return None
    return row.cpu_median_us if cpu else row.median_us


def _ratio(rows: dict[str, Row], top: str, bottom: str, cpu: bool = False) -> float | None:
    a, b = _median(rows, top, cpu), _median(rows, bottom, cpu)
    return None if a is None or b is None or b == 0 else a / b


def evaluate_targets(rows: dict[str, Row]) -> list[dict[str, Any]]:
    """The issue's targets, judged on wall-time medians; CPU-time medians beside them."""

    def us(key: str) -> Callable[[bool], float | None]:
        return lambda cpu: _median(rows, key, cpu)

    def ratio(top: str, bottom: str) -> Callable[[bool], float | None]:
        return lambda cpu: _ratio(rows, top, bottom, cpu)

    def extra(top: str, bottom: str) -> Callable[[bool], float | None]:
        def get(cpu: bool) -> float | None:
            high, low = _median(rows, top, cpu), _median(rows, bottom, cpu)
            return None if high is None or low is None else high - low

        return get

    def scaled(key: str, factor: float, wall_only: bool = False) -> Callable[[bool], float | None]:
        def get(cpu: bool) -> float | None:
            value = None if cpu and wall_only else _median(rows, key, cpu)
            return None if value is None else value * factor

        return get

    specs: list[tuple[str, Callable[[bool], float | None], str, float]] = [
        ("dispatch, dict arguments (µs)", us("dispatch_dict"), "<=", 3.0),
        ("dispatch / floor (issue 11)", ratio("dispatch_dict", "floor"), "<=", 1.7),
        ("unused retry policy / dispatch (issue 5)",
         ratio("dispatch_retry_unused", "dispatch_dict"), "<=", 1.05),
        ("session over dispatch, µs (issue 5)",
         extra("session_dispatch", "dispatch_dict"), "<=", 1.0),
        ("LangChain invoke / dispatch", ratio("langchain_invoke", "dispatch_dict"), ">=", 50.0),
        ("Agents SDK async tool / dispatch", ratio("agents_async", "dispatch_dict"), ">=", 4.0),
        ("hidden failure, logged (µs)", us("dispatch_hidden_failure"), "<=", 15.0),
        ("LangChain handled error / hidden failure",
         ratio("langchain_handled_error", "dispatch_hidden_failure"), ">=", 10.0),
        ("@tool direct call / plain wrapt", ratio("tool_direct", "wrapt_passthrough"),
         "<=", 1.2),
        ("round: 100 async x 10 ms (ms)", scaled("round_async_100", 1e-3, wall_only=True),
         "<=", 25.0),
        ("round: 16 sync x 10 ms, 16 threads (ms)",
         scaled("round_sync_16", 1e-3, wall_only=True), "<=", 40.0),
        ("import toolguard (s)", scaled("import_toolguard", 1e-6), "<=", 0.35),
        ("import langchain_core.tools / toolguard",
         ratio("import_langchain", "import_toolguard"), ">=", 3.0),
    ]  # fmt: skip
    out = []
    for name, get, op, goal in specs:
        measured, measured_cpu = get(False), get(True)
        met = None if measured is None else (measured <= goal if op == "<=" else measured >= goal)
        out.append(
            {
                "target": name,
                "goal": f"{op} {goal:g}",
                "measured": measured,
                "met": met,
                "measured_cpu": measured_cpu,
            }
        )
    return out


# --- output -----------------------------------------------------------------------------------


def _finish(rows: list[Row]) -> None:
    by_key = {row.key: row for row in rows}
    bare = _median(by_key, "bare_call")
    for row in rows:
        if row.median_us is None:
            continue
        if row.unit == "µs" and bare:
            row.ratio_to_bare = row.median_us / bare
        if row.vs is not None:
            row.ratio_to_toolguard = _ratio(by_key, row.key, row.vs)
            row.ratio_to_toolguard_cpu = _ratio(by_key, row.key, row.vs, cpu=True)
        if row.ideal_us:
            row.ratio_to_ideal = row.median_us / row.ideal_us


def _num(value_us: float | None, unit: str) -> str:
    if value_us is None:
        return "-"
    value = value_us / 1000 if unit == "ms" else value_us
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def _times(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value:,.0f}x" if value >= 100 else f"{value:.1f}x" if value >= 10 else f"{value:.2f}x"


def _cells(row: Row) -> list[str]:
    if row.skipped is not None:
        return [row.label, "-", "-", "-", "-", row.unit, "", "", row.vs or "", row.skipped]
    note = row.note
    if row.ratio_to_ideal is not None and row.ideal_us is not None:
        note = f"{_times(row.ratio_to_ideal)} the ideal {row.ideal_us / 1000:g} ms" + (
            f"; {note}" if note else ""
        )
    return [
        row.label,
        _num(row.median_us, row.unit),
        _num(row.min_us, row.unit),
        _num(row.max_us, row.unit),
        _num(row.cpu_median_us, row.unit),
        row.unit,
        _times(row.ratio_to_bare),
        _times(row.ratio_to_toolguard),
        row.vs or "",
        note,
    ]


HEADERS = [
    "case", "median", "min", "max", "cpu", "unit", "x bare", "peer/tg", "vs (toolguard)", "note"
]  # fmt: skip


def render_text(rows: list[Row]) -> str:
    table = [HEADERS] + [_cells(row) for row in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(HEADERS) - 1)]
    right = {1, 2, 3, 4, 6, 7}
    out: list[str] = []
    group = None
    for index, line in enumerate(table):
        if index > 0 and rows[index - 1].group != group:
            group = rows[index - 1].group
            out.append(f"-- {group} " + "-" * 40)
        cells = [
            cell.rjust(widths[i]) if i in right else cell.ljust(widths[i])
            for i, cell in enumerate(line[:-1])
        ]
        out.append("  ".join([*cells, line[-1]]).rstrip())
    return "\n".join(out)


def render_markdown(rows: list[Row]) -> str:
    align = ["---", "--:", "--:", "--:", "--:", "---", "--:", "--:", "---", "---"]
    out = ["| " + " | ".join(HEADERS) + " |", "|" + "|".join(align) + "|"]
    group = None
    for row in rows:
        if row.group != group:
            group = row.group
            out.append(f"| **{group}** |" + " |" * (len(HEADERS) - 1))
        cells = _cells(row)
        cells[-1] = cells[-1].replace("|", "\\|")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def render_targets(targets: Iterable[dict[str, Any]]) -> str:
    def shown(value: float | None) -> str:
        return "-" if value is None else f"{value:.3g}"

    lines = [f"  {'target':<42} {'goal':<8} {'wall':>8} {'cpu':>8}  verdict (wall)"]
    for t in targets:
        verdict = {True: "met", False: "MISSED", None: "n/a"}[t["met"]]
        lines.append(
            f"  {t['target']:<42} {t['goal']:<8} {shown(t['measured']):>8} "
            f"{shown(t['measured_cpu']):>8}  {verdict}"
        )
    return "\n".join(lines)


def render_targets_markdown(targets: Iterable[dict[str, Any]]) -> str:
    out = ["| target (issue 7) | goal | wall | cpu | verdict (wall) |", "|---|---|--:|--:|---|"]
    for t in targets:
        cells = ["-" if t[k] is None else f"{t[k]:.3g}" for k in ("measured", "measured_cpu")]
        verdict = {True: "met", False: "**missed**", None: "n/a"}[t["met"]]
        out.append(f"| {t['target']} | {t['goal']} | {cells[0]} | {cells[1]} | {verdict} |")
    return "\n".join(out)


def _versions(suites: Iterable[Suite]) -> dict[str, str]:
    out: dict[str, str] = {}
    for suite in suites:
        for dist in suite.versions:
            try:
                out[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                out[dist] = "not installed"
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write the results here")
    parser.add_argument("--markdown", type=Path, metavar="PATH", help="also write a md table")
    parser.add_argument(
        "--toolguard-only", action="store_true", help="only toolguard's own cases (no peers)"
    )
    options = parser.parse_args(argv)
    mode = QUICK if options.quick else FULL

    started = time.perf_counter()

    def echo(text: str) -> None:
        print(f"[{time.perf_counter() - started:5.1f}s] {text}", file=sys.stderr, flush=True)

    load_before = os.getloadavg() if hasattr(os, "getloadavg") else None
    configure_process()
    suites = (TOOLGUARD, ROUNDS) if options.toolguard_only else (TOOLGUARD, ROUNDS, *peer_suites())
    echo(f"toolguard benchmarks, {mode.name} mode")
    with ThreadPoolExecutor(max_workers=1) as background:
        imports = background.submit(measure_imports, mode, echo)
        if not mode.imports_in_background:
            imports.result()
        harness = Harness(mode)
        try:
            rows = run_suites(harness, suites, echo)
        finally:
            harness.close()
        # tracemalloc traces every thread: the import thread must be done first
        import_rows, startup_s = imports.result()
        echo("  memory ...")
        gc.collect()
        gc.freeze()  # the collections around each measurement then scan only new objects
        try:
            memory = measure_memory(mode)
            leak = measure_leak(mode, echo)
        finally:
            gc.unfreeze()
    rows.extend(import_rows)
    _finish(rows)
    targets = evaluate_targets({row.key: row for row in rows})
    load_after = os.getloadavg() if hasattr(os, "getloadavg") else None

    meta = {
        "mode": mode.name,
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average_before": load_before,
        "load_average_after": load_after,
        "versions": _versions(suites),
        "timer": "time.perf_counter_ns",
        "batch_target_ms": mode.batch_ns / 1e6,
        "batches": mode.batches,
        "round_batches": mode.round_batches,
        "import_runs": mode.import_runs,
        "imports_in_background": mode.imports_in_background,
        "interpreter_startup_ms": startup_s * 1000,
        "gc": GC_POLICY,
        "structlog": STRUCTLOG_PIPELINE,
        "stdlib_logging": STDLIB_LOGGING,
        "peers": {s.group: s.description for s in suites if s.description},
        "elapsed_s": None,
    }
    print(render_text(rows))
    print("\ntargets (issue 7):")
    print(render_targets(targets))
    print(
        f"\nmemory: {memory['bytes_per_tool']:,.0f} B per @tool "
        f"(plain wrapt wrapper: {memory['bytes_per_wrapt_wrapper']:,.0f} B); "
        f"Dispatcher of {memory['tools']:,} tools: {memory['bytes_per_dispatcher']:,.0f} B "
        f"({memory['dispatcher_bytes_per_tool']:,.0f} B per tool)\n"
        f"time: @tool {memory['decoration_us_per_tool']:,.0f} µs per tool, Dispatcher "
        f"{memory['dispatcher_construction_us_per_tool']:,.1f} µs per tool"
    )
    print(
        f"leak check: {leak['dispatches']:,} mixed dispatches, traced memory grew "
        f"{leak['growth_bytes']:+,} B (first half {leak['growth_first_half_bytes']:+,} B, "
        f"second half {leak['growth_second_half_bytes']:+,} B)"
    )
    elapsed = time.perf_counter() - started
    meta["elapsed_s"] = round(elapsed, 2)
    print(f"\n{mode.name} mode, {elapsed:.1f} s; python {meta['python']}, {meta['cpus']} cpus")
    if options.json is not None:
        payload = {
            "meta": meta,
            "cases": {row.key: asdict(row) for row in rows},
            "targets": targets,
            "memory": memory,
            "leak_check": leak,
        }
        options.json.write_text(json.dumps(payload, indent=2, allow_nan=False) + "\n")
    if options.markdown is not None:
        options.markdown.write_text(
            render_markdown(rows) + "\n\n" + render_targets_markdown(targets) + "\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
