"""The thread pools of one agent, made on first use.

* ``rounds``: the calls of a parallel round of sync tools, and sync tools offloaded
  from an event loop (``adispatch(offload=True)``).
* ``timeouts``: sync tools with a timeout, one attempt each. Apart from the round
  pool, so a round whose calls wait on timed attempts can never starve itself.

Each pool has ``max_workers`` threads. A pool is shut down (without waiting) when
its owner is garbage collected, or by :meth:`Pools.close`.
"""

from __future__ import annotations

import threading
import weakref
from concurrent.futures import ThreadPoolExecutor

__all__ = ["Pools"]


class Pools:
    """The round pool and the timeout pool of one agent."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._lock = threading.Lock()
        self._rounds: ThreadPoolExecutor | None = None
        self._timeouts: ThreadPoolExecutor | None = None

    def rounds(self) -> ThreadPoolExecutor:
        executor = self._rounds
        if executor is None:
            executor = self._new("_rounds", "toolguard")
        return executor

    def timeouts(self) -> ThreadPoolExecutor:
        executor = self._timeouts
        if executor is None:
            executor = self._new("_timeouts", "toolguard-timeout")
        return executor

    def _new(self, attribute: str, prefix: str) -> ThreadPoolExecutor:
        with self._lock:  # two first rounds at once must not make two pools
            executor: ThreadPoolExecutor | None = getattr(self, attribute)
            if executor is None:
                executor = ThreadPoolExecutor(
                    max_workers=self.max_workers, thread_name_prefix=prefix
                )
                weakref.finalize(self, executor.shutdown, wait=False)
                setattr(self, attribute, executor)
            return executor

    def close(self, *, wait: bool = True) -> None:
        """Shut both pools down (idempotent); ``wait`` waits for running tools."""
        with self._lock:
            executors = (self._rounds, self._timeouts)
            self._rounds = self._timeouts = None
        for executor in executors:
            if executor is not None:
                executor.shutdown(wait=wait, cancel_futures=True)
