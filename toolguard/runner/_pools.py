"""The threads of one agent, and the bound on what its timeouts leave running.

* ``rounds``: a pool of ``max_workers`` threads for the calls of a parallel round of
  sync tools, and for sync tools offloaded from an event loop
  (``adispatch(offload=True)``), made on first use.
* A sync tool with a ``timeout`` runs each attempt on a thread of its own, never on
  the round pool: a thread cannot be killed, so an attempt that overruns keeps
  running after the caller was answered, and must not hold a slot other calls need.
* Every attempt abandoned at its deadline (that thread, or an async tool's task that
  would not stop when cancelled) is counted against its tool until it ends. A tool
  with ``max_abandoned`` of them still running is answered "unavailable" at once,
  without running: one stuck tool can neither pile up threads nor take the agent's
  other tools down with it.

The round pool is shut down (without waiting) when its owner is garbage collected,
or by :meth:`Pools.close`.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Awaitable, Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from toolguard._engine import new_lock
from toolguard._logging import emit
from toolguard.errors import ToolUnavailable

__all__ = ["EVENT_ABANDONED", "Boxed", "Pools", "abox", "box", "unbox"]

EVENT_ABANDONED = "tool_abandoned"

Boxed = tuple[bool, Any]
"""An outcome carried as a value: ``(True, result)`` or ``(False, what it raised)``.

Outcomes cross threads and event loops boxed: asyncio would replace a ``TimeoutError``
raised in a thread with a bare copy (losing its cause and traceback), and formats a
failed main task with ``repr()`` (which a hostile exception may make raise)."""


def box(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Boxed:
    """``function(*args, **kwargs)``'s outcome, boxed (``BaseException`` included: the
    caller re-raises it intact on its own thread)."""
    try:
        return True, function(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - re-raised, intact, by unbox()
        return False, error


async def abox(awaitable: Awaitable[Any]) -> Boxed:
    """Async :func:`box` for the main task of a loop of its own: an ``Exception`` is
    boxed; anything else (an interrupt, a cancellation) ends the loop as it would."""
    try:
        return True, await awaitable
    except Exception as error:  # noqa: BLE001 - re-raised, intact, by unbox()
        return False, error


def unbox(boxed: Boxed) -> Any:
    """The result, or what was raised, raised again here."""
    ok, value = boxed
    if ok:
        return value
    raise value


class Pools:
    """The round pool of one agent, and its timed attempts' threads and tasks."""

    def __init__(self, max_workers: int, max_abandoned: int = 4) -> None:
        self.max_workers = max_workers
        self.max_abandoned = max_abandoned
        self._lock = new_lock()  # not threading.Lock(): a workflow may make a dispatcher
        self._rounds: ThreadPoolExecutor | None = None
        self._abandoned: dict[str, int] = {}
        self._runaway: set[asyncio.Task[Any]] = set()  # kept alive until they end

    def rounds(self) -> ThreadPoolExecutor:
        executor = self._rounds
        if executor is None:
            with self._lock:  # two first rounds at once must not make two pools
                executor = self._rounds
                if executor is None:
                    executor = ThreadPoolExecutor(
                        max_workers=self.max_workers, thread_name_prefix="toolguard"
                    )
                    weakref.finalize(self, executor.shutdown, wait=False)
                    self._rounds = executor
        return executor

    # --- timed attempts ------------------------------------------------------------

    def admit(self, tool: str, seconds: float) -> None:
        """Refuse an attempt of a tool that has too many abandoned ones still running."""
        running = self._abandoned.get(tool, 0)
        if running >= self.max_abandoned:
            raise ToolUnavailable(
                f"The tool '{tool}' is unavailable: {running} earlier calls of it are still "
                f"running past their time limit of {seconds:g} s. Do not call it again now; "
                "use another tool or tell the user.",
                tool=tool,
                retry_after=seconds,
            )

    def start(self, tool: str, seconds: float, function: Callable[[], Any]) -> Future[Boxed]:
        """Run ``function`` on a thread of its own; its future holds the boxed outcome
        (an exception crosses intact: asyncio would replace a ``TimeoutError``)."""
        self.admit(tool, seconds)
        future: Future[Boxed] = Future()

        def run() -> None:
            future.set_result(box(function))

        threading.Thread(target=run, name=f"toolguard-timed-{tool}", daemon=True).start()
        return future

    def abandon(
        self, tool: str, seconds: float, attempt: Future[Boxed] | asyncio.Task[Any]
    ) -> None:
        """The caller was answered at the deadline: count ``attempt`` until it ends."""
        with self._lock:
            running = self._abandoned[tool] = self._abandoned.get(tool, 0) + 1
            if isinstance(attempt, asyncio.Task):
                self._runaway.add(attempt)
        emit("warning", EVENT_ABANDONED, tool=tool, seconds=seconds, still_running=running)
        attempt.add_done_callback(lambda done: self._ended(tool, done))

    def abandon_if_running(
        self, tool: str, seconds: float, attempt: Future[Boxed] | asyncio.Task[Any]
    ) -> None:
        """:meth:`abandon` ``attempt`` unless it has ended already."""
        if not attempt.done():
            self.abandon(tool, seconds, attempt)

    def _ended(self, tool: str, attempt: Future[Boxed] | asyncio.Task[Any]) -> None:
        with self._lock:
            left = self._abandoned.get(tool, 1) - 1
            if left:
                self._abandoned[tool] = left
            else:
                self._abandoned.pop(tool, None)
            if isinstance(attempt, asyncio.Task):
                self._runaway.discard(attempt)
                if not attempt.cancelled():
                    attempt.exception()  # retrieved: nobody awaits a runaway task

    def abandoned(self, tool: str) -> int:
        """How many abandoned attempts of ``tool`` are still running."""
        return self._abandoned.get(tool, 0)

    def close(self, *, wait: bool = True) -> None:
        """Shut the round pool down (idempotent); ``wait`` waits for running tools."""
        with self._lock:
            executor, self._rounds = self._rounds, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)
