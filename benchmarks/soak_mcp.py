"""Soak test: mixed calls over a real MCP stdio server (issue 12).

Starts ``toolguard``'s stdio server (``run_stdio``, what ``toolguard serve-mcp``
runs) in a subprocess over the tools below and drives it with raw JSON-RPC lines,
``--concurrency`` requests in flight. The calls are a fixed mix of successes,
hidden failures, ``ToolError``s, invalid arguments, unknown tool names, timeouts
(sync tools abandoned on their thread, async tools that swallow cancellation),
a tool whose breaker keeps tripping, and ``BaseException``s (``SystemExit``,
``KeyboardInterrupt``, ``GeneratorExit``, a tool's own ``CancelledError``, a
``TaskGroup`` whose task calls ``sys.exit``). Checks, and prints:

* every request answered exactly once, each with the kind of answer its tool
  must get (a result, an error result, or a JSON-RPC error);
* the server's threads bounded (sampled from ``/proc``: the maximum);
* its memory flat (RSS after the warm-up and at the end);
* calls per second.

::

    python benchmarks/soak_mcp.py                  # 100,000 calls (a few minutes)
    python benchmarks/soak_mcp.py --quick          # 1,200 calls, for the test suite
    python benchmarks/soak_mcp.py --calls 20000 --concurrency 64

Exit status 0 when every check held, 1 otherwise. Linux only (``/proc``). Not part
of CI's timing: the suite runs ``--quick`` and checks the verdict, never a rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import queue
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

ROOT: Final = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from toolguard import Breaker, Dispatcher, ToolError, tool  # noqa: E402

SECRET: Final = "soak-5ecr3t"
MAX_WORKERS: Final = 16
MAX_ABANDONED: Final = 4
THREAD_BOUND: Final = MAX_WORKERS + 2 * MAX_ABANDONED + 8  # pools + abandoned + the SDK's


# --- the server's tools ------------------------------------------------------------------


@tool
def ok(n: int) -> int:
    """Succeed."""
    return n + 1


@tool
async def aok(n: int) -> int:
    """Succeed (async)."""
    return n * 2


@tool
def hidden(n: int) -> str:
    """Fail with a secret (hidden)."""
    raise ConnectionError(f"backend refused ({SECRET})")


@tool
def visible(n: int) -> str:
    """Fail with a model-visible message."""
    raise ToolError(f"There is no item {n}.")


@tool(timeout=0.02)
def slow_sync(n: int) -> str:
    """Overrun its timeout on a worker thread (abandoned, not killed)."""
    time.sleep(0.1)
    return "late"


@tool(timeout=0.02)
async def stubborn(n: int) -> str:
    """Swallow its own cancellation a few times before it gives up."""
    for _ in range(3):
        try:
            await asyncio.sleep(0.05)
        except asyncio.CancelledError:  # a retry loop with a bare except, as in the wild
            continue
    return "late"


@tool(breaker=Breaker(failures=3, cooldown=0.2))
def flaky(n: int) -> str:
    """Always fail: its breaker opens, re-opens after each trial."""
    raise TimeoutError(f"upstream timed out ({SECRET})")


@tool
def exits(n: int) -> str:
    """sys.exit() inside a call."""
    raise SystemExit(SECRET)


@tool
def interrupts(n: int) -> str:
    """KeyboardInterrupt from the tool's code."""
    raise KeyboardInterrupt(SECRET)


@tool
def closes(n: int) -> str:
    """GeneratorExit from the tool's code."""
    raise GeneratorExit(SECRET)


@tool
async def cancels(n: int) -> str:
    """An async tool raising CancelledError of its own accord."""
    raise asyncio.CancelledError(SECRET)


@tool
async def group_exit(n: int) -> str:
    """A TaskGroup whose task calls sys.exit()."""

    async def leave() -> None:
        raise SystemExit(SECRET)

    async with asyncio.TaskGroup() as group:
        group.create_task(leave())
    return "unreachable"


TOOLS: Final = [ok, aok, hidden, visible, slow_sync, stubborn, flaky]
ABORTING: Final = [exits, interrupts, closes, cancels, group_exit]
dispatcher = Dispatcher(
    [*TOOLS, *ABORTING],
    max_workers=MAX_WORKERS,
    max_abandoned=MAX_ABANDONED,
)

# (tool, arguments, weight, expected answer): "ok", "error" (isError), "rpc" (JSON-RPC
# error), "timeout": an error, or a late success when the tool's result and its
# deadline are both due once a stalled event loop wakes (on a saturated machine);
# those are counted and printed, never unanswered.
MIX: Final[list[tuple[str, dict[str, Any], int, str]]] = [
    ("ok", {"n": 1}, 30, "ok"),
    ("aok", {"n": 1}, 20, "ok"),
    ("hidden", {"n": 1}, 10, "error"),
    ("visible", {"n": 1}, 10, "error"),
    ("ok", {"n": "one"}, 6, "error"),  # invalid arguments
    ("no_such_tool", {}, 4, "error"),  # unknown tool
    ("slow_sync", {"n": 1}, 2, "timeout"),  # timeout, then "unavailable" while abandoned
    ("stubborn", {"n": 1}, 2, "timeout"),  # timeout at the deadline, whatever the tool does
    ("flaky", {"n": 1}, 6, "error"),  # breaker trips
    ("exits", {"n": 1}, 2, "rpc"),
    ("interrupts", {"n": 1}, 2, "rpc"),
    ("closes", {"n": 1}, 2, "rpc"),
    ("cancels", {"n": 1}, 2, "rpc"),
    ("group_exit", {"n": 1}, 2, "rpc"),
]


def serve() -> None:
    """The server side: toolguard's stdio server over ``dispatcher``, logs dropped
    (the soak measures the server, not a log writer)."""
    import structlog

    from toolguard.integrations.mcp import run_stdio

    structlog.configure(processors=[], logger_factory=structlog.ReturnLoggerFactory())
    run_stdio(dispatcher, name="soak", log_to_stderr=False)


# --- the client side -----------------------------------------------------------------


def proc_status(pid: int) -> tuple[int, int]:
    """(threads, RSS in KiB) of ``pid``, from /proc."""
    threads = rss = 0
    with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
        for line in status:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1])
    return threads, rss


def kind_of(reply: dict[str, Any]) -> str:
    if "error" in reply:
        return "rpc"
    return "error" if reply["result"].get("isError") else "ok"


def soak(calls: int, concurrency: int, timeout: float, only: str | None = None) -> int:
    mix = [entry for entry in MIX if only is None or entry[0] == only]
    schedule = [entry for entry in mix for _ in range(entry[2])]
    process = subprocess.Popen(
        [sys.executable, os.environ.get("SOAK_SERVER", str(Path(__file__).resolve())), "--serve"],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    replies: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            replies.put(json.loads(line))
        replies.put(None)

    threading.Thread(target=read, daemon=True).start()

    def send(message: dict[str, Any]) -> None:
        assert process.stdin is not None
        process.stdin.write(json.dumps(message).encode() + b"\n")
        process.stdin.flush()

    def wait_reply() -> dict[str, Any]:
        reply = replies.get(timeout=timeout)
        if reply is None:
            raise RuntimeError("the server closed its stdout")
        return reply

    send(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "soak", "version": "0"},
            },
        }
    )
    wait_reply()
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    expected: dict[int, tuple[str, str]] = {}
    answered: Counter[str] = Counter()
    wrong: list[str] = []
    leaks = late = 0
    max_threads = 0
    rss_start = rss_end = 0
    warm_up = min(1_000, calls // 10)
    in_flight = 0
    sent = received = 0
    started = time.perf_counter()
    measure_from = started
    try:
        while sent < calls or in_flight:
            while sent < calls and in_flight < concurrency:
                sent += 1
                name, arguments, _, want = schedule[sent % len(schedule)]
                expected[sent] = (name, want)
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": sent,
                        "method": "tools/call",
                        "params": {"name": name, "arguments": arguments},
                    }
                )
                in_flight += 1
            reply = wait_reply()
            request_id = reply.get("id")
            if not isinstance(request_id, int) or request_id not in expected:
                continue  # a notification, or an answer to nothing we sent
            in_flight -= 1
            name, want = expected.pop(request_id)
            got = kind_of(reply)
            answered[got] += 1
            if want == "timeout":
                late += got == "ok"
                want = got if got == "ok" else "error"
            if got != want:
                wrong.append(f"{name}: wanted {want}, got {got}: {str(reply)[:200]}")
            if SECRET in json.dumps(reply):
                leaks += 1
            received += 1
            if received % 250 == 0 or received == warm_up:
                threads, rss = proc_status(process.pid)
                max_threads = max(max_threads, threads)
                if not rss_start and received >= warm_up:
                    rss_start, measure_from = rss, time.perf_counter()
                rss_end = rss
    except queue.Empty:
        print(f"FAIL: no answer within {timeout} s; {len(expected)} requests unanswered")
        process.kill()
        return 1
    finally:
        elapsed = time.perf_counter() - started
        process.stdin.close()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        process.stdout.close()

    measured = max(calls - warm_up, 1)
    rate = measured / max(time.perf_counter() - measure_from, 1e-9)
    growth = rss_end - rss_start
    print(f"calls:        {calls:,} ({dict(answered)})")
    print(f"unanswered:   {len(expected)}")
    print(f"wrong kind:   {len(wrong)}")
    print(f"secret leaks: {leaks}")
    print(f"late success: {late} (a timed tool's result seen before its deadline fired)")
    print(f"calls/s:      {rate:,.0f} (after {warm_up:,} warm-up calls; {elapsed:.1f} s in all)")
    print(f"max threads:  {max_threads} (bound {THREAD_BOUND})")
    print(f"RSS:          {rss_start / 1024:.1f} MiB -> {rss_end / 1024:.1f} MiB ({growth:+,} KiB)")
    for line in wrong[:5]:
        print(f"  {line}")
    flat = growth < max(16 * 1024, rss_start // 5)  # under 16 MiB or 20 % of the start
    ok_all = (
        not expected
        and not wrong
        and not leaks
        and sum(answered.values()) == calls
        and 0 < max_threads <= THREAD_BOUND
        and flat
        and process.returncode == 0
    )
    print("verdict:      " + ("every check held" if ok_all else "FAILED"))
    return 0 if ok_all else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100_000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--quick", action="store_true", help="1,200 calls (the test suite)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for a reply")
    parser.add_argument("--only", help="call only this tool of the mix (to profile one)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return 0
    if not os.path.exists("/proc/self/status"):
        print("the soak test reads /proc: Linux only")
        return 2
    return soak(1_200 if args.quick else args.calls, args.concurrency, args.timeout, args.only)


if __name__ == "__main__":
    sys.exit(main())
