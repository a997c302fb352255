"""Durable engines' workflow code: what toolguard does differently there.

Temporal runs workflow code in a sandbox that refuses, at run time, threads, locks
made through ``threading``, the system clock and the global random functions. A
dispatcher or session made in workflow code takes its locks from :func:`new_lock`.
"""

from __future__ import annotations

import _thread
from typing import Any

__all__ = ["new_lock"]


def new_lock() -> Any:
    """A new ``threading.Lock``, made without the ``threading`` module.

    ``threading.Lock`` is ``_thread.allocate_lock``; Temporal's sandbox refuses every
    use of ``threading`` in workflow code at run time, so a dispatcher or session made
    there takes its locks from here. A lock guarding a short critical section decides
    nothing: it is as deterministic in a workflow as anywhere.
    """
    return _thread.allocate_lock()
