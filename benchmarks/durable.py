"""What guarding a durable engine's tool call costs: a guarded activity or step beside
an unguarded one, on the real engines, and the part toolguard adds in process.

    .venv/bin/python benchmarks/durable.py           # about a minute
    .venv/bin/python benchmarks/durable.py --quick   # a few seconds: "it still works"

* **temporal**: one workflow makes ``n`` tool calls, one after the other, on the
  time-skipping test server: each an unguarded activity (``workflow.execute_activity``
  of the bare function) or a guarded one (``WorkflowTools.call``: the tool's activity
  answering where it runs, the result settled in the workflow's session).
* **dbos**: one workflow makes ``n`` calls as steps on SQLite: ``DBOS.run_step`` of the
  bare function, or ``DBOSTools.call``.
* **in process**: what toolguard adds around one call where the tool runs
  (``durable.answer``: the dispatcher with the call-level observer, the crossing) and
  in the workflow (``durable.settle`` of what crossed), beside the bare call and
  ``Dispatcher.dispatch``.

Medians of per-call wall time over the batches; each engine's round trips dominate its
rows, so compare a row with its unguarded neighbour, not with the in-process ones.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from temporalio import activity, workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from toolguard import Dispatcher, ToolCall
from toolguard.integrations.durable import answer, settle
from toolguard.integrations.temporal import ToolguardPlugin, WorkflowTools

# this module is also the workflows' (Temporal's sandbox re-imports it): DBOS comes from
# outside the sandbox
with workflow.unsafe.imports_passed_through():
    from dbos import DBOS

    from toolguard.integrations.dbos import DBOSTools


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


agent = Dispatcher([add])
dbos_tools = DBOSTools(agent)
CALL = ToolCall(name="add", arguments={"a": 1, "b": 2}, id="c1")


@activity.defn(name="bare_add")
async def bare_add(a: int, b: int) -> int:
    return add(a, b)


@workflow.defn
class Unguarded:
    @workflow.run
    async def run(self, n: int) -> int:
        total = 0
        for _ in range(n):
            total += await workflow.execute_activity(
                bare_add, args=[1, 2], start_to_close_timeout=timedelta(seconds=10)
            )
        return total


@workflow.defn
class Guarded:
    @workflow.run
    async def run(self, n: int) -> int:
        tools = WorkflowTools(agent)
        total = 0
        for _ in range(n):
            result = await tools.call(ToolCall(name="add", arguments={"a": 1, "b": 2}))
            total += int(result.text)
        return total


def _dbos_workflows() -> tuple[Callable[[int], int], Callable[[int], int]]:
    """The two DBOS workflows, registered when the DBOS rows run (not at import: Temporal's
    sandbox re-imports this module)."""

    @DBOS.workflow()
    def dbos_unguarded(n: int) -> int:
        return sum(DBOS.run_step({"name": "bare_add"}, add, 1, 2) for _ in range(n))

    @DBOS.workflow()
    def dbos_guarded(n: int) -> int:
        return sum(int(dbos_tools.call(CALL).text) for _ in range(n))

    return dbos_unguarded, dbos_guarded


def _median(samples: list[float]) -> float:
    return statistics.median(samples) / 1000  # us


async def temporal(n: int, batches: int) -> tuple[float, float]:
    from tests.integrations._engines import temporal_test_server

    environment = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_test_server()
    )
    times: dict[str, list[float]] = {"unguarded": [], "guarded": []}
    async with environment:
        client = environment.client
        async with Worker(
            client,
            task_queue="bench",
            workflows=[Unguarded, Guarded],
            activities=[bare_add],
            plugins=[ToolguardPlugin(agent)],
        ):
            for batch in range(batches + 1):  # the first: warm-up
                for name, workflow_class in (("unguarded", Unguarded), ("guarded", Guarded)):
                    started = time.perf_counter_ns()
                    await client.execute_workflow(
                        workflow_class.run, n, id=f"bench-{uuid.uuid4()}", task_queue="bench"
                    )
                    if batch:
                        times[name].append((time.perf_counter_ns() - started) / n)
    return _median(times["unguarded"]), _median(times["guarded"])


def dbos(n: int, batches: int) -> tuple[float, float]:
    from tests.integrations._engines import dbos_config

    times: dict[str, list[float]] = {"unguarded": [], "guarded": []}
    unguarded, guarded = _dbos_workflows()
    with tempfile.TemporaryDirectory() as folder:
        DBOS(config=dbos_config(Path(folder), name="toolguard-bench"))
        DBOS.launch()
        try:
            for batch in range(batches + 1):
                for name, function in (("unguarded", unguarded), ("guarded", guarded)):
                    started = time.perf_counter_ns()
                    DBOS.start_workflow(function, n).get_result()
                    if batch:
                        times[name].append((time.perf_counter_ns() - started) / n)
        finally:
            DBOS.destroy()
    return _median(times["unguarded"]), _median(times["guarded"])


def in_process(n: int, batches: int) -> dict[str, float]:
    crossed = answer(agent, CALL)
    session = agent.session()
    cases: dict[str, Callable[[], object]] = {
        "bare add(1, 2)": lambda: add(1, 2),
        "Dispatcher.dispatch": lambda: agent.dispatch(CALL),
        "durable.answer (where the tool runs)": lambda: answer(agent, CALL),
        "durable.settle (in the workflow)": lambda: settle(session.scope(), CALL, crossed),
    }
    found = {}
    for name, case in cases.items():
        samples = []
        for _ in range(batches + 1):
            started = time.perf_counter_ns()
            for _ in range(n):
                case()
            samples.append((time.perf_counter_ns() - started) / n)
        found[name] = _median(samples[1:])
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few short batches")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' engine helpers
    n, batches = (5, 2) if args.quick else (50, 7)
    print(f"{'per tool call (median)':<44} {'unguarded':>12} {'guarded':>12} {'added':>10}")
    for engine, (bare, guarded) in (
        ("temporal activity (test server)", asyncio.run(temporal(n, batches))),
        ("dbos step (SQLite)", dbos(n, batches)),
    ):
        print(f"{engine:<44} {bare:>10.0f}us {guarded:>10.0f}us {guarded - bare:>8.0f}us")
    print()
    for name, micros in in_process(n * 100, batches).items():
        print(f"{name:<44} {micros:>10.1f}us")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
