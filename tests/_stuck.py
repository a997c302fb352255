"""A tool body that stays stuck until its test releases it: deadline tests without a clock.

A test that pins "answered at once, not after the stuck tool ended" has the tool call
:meth:`Stuck.wait`, sets :attr:`Stuck.release` only after its assertions (in a
``finally``), and asserts that :attr:`Stuck.finished` is not set when the answer came.
A correct implementation answers while the body still waits; a broken one (that waits
for the tool) gets its answer only once the body gave up after :data:`STUCK` seconds,
and the assertion fails, deterministically, on however loaded a machine: no wall-clock
bound to tune.

:func:`once_main_waits` sends an interrupt while the main thread waits for a round's
calls, not on a timer that may fire before it began to wait.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Callable

__all__ = ["STUCK", "Stuck", "once_main_waits"]

STUCK = 30.0
"""Seconds a stuck body waits for its release: far beyond any answer a correct
implementation gives, and what a broken one costs before its test fails."""


class Stuck:
    """One stuck tool body (or several calls of it): entered, released, finished."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.finished = threading.Event()

    def wait(self) -> None:
        """Block until released (or :data:`STUCK` seconds pass), then record the end."""
        self.entered.set()
        self.release.wait(STUCK)
        self.finished.set()

    async def until_entered(self) -> None:
        """On an event loop: return once a call is stuck, without blocking the loop."""
        for _ in range(int(STUCK / 0.01)):
            if self.entered.is_set():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"no call entered the stuck body within {STUCK} s")


def once_main_waits(
    action: Callable[[], object],
    given_up: threading.Event,
    *,
    inside: Callable[..., object] = concurrent.futures.wait,
) -> threading.Thread:
    """A thread (to start) that calls ``action`` once the main thread blocks inside
    ``inside`` (by default ``concurrent.futures.wait``, where a sync round waits for its
    calls), or gives up when ``given_up`` is set.

    Not any ``wait``: starting a thread (the pool's, or this one) also waits, briefly,
    and an interrupt landing there would prove nothing about the round's wait.
    """
    main = threading.main_thread().ident
    code = getattr(inside, "__code__", None)

    def watch() -> None:
        while not given_up.wait(0.01):
            frame = sys._current_frames().get(main) if main is not None else None
            while frame is not None and frame.f_code is not code:
                frame = frame.f_back
            if frame is not None:
                action()
                return

    return threading.Thread(target=watch, name="once-main-waits", daemon=True)
