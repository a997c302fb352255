"""The one semantics of a session's books: breakers, budgets, steps, life and outages.

Both stores follow these rules. The memory store applies the functions below to its
records (``sessions._steps``); the Redis store's Lua scripts (``stores._lua``)
implement the same rules on the server, each script naming the rule it implements;
``tests/test_stores_differential.py`` runs seeded random sequences on both and
compares answers, events and states after every step. Where a server cannot do what
process memory does, the rule changed for both (R3's window, R5's life).

**R1 Check** (before a tool with a breaker runs). A closed breaker lets it run (and
asks for its success to be reported if there were failures in a row). An open one
refuses it for the rest of its cool-down. Past the cool-down, the first caller is
granted the half-open *trial* as a lease of one cool-down; the others are refused
until the trial reports (R2) or its lease ends, whichever comes first.

**R2 Outcome** (after the handler chain, or a success that R1 asked for). An
unmarked failure or a timeout counts: one more failure in a row; the breaker opens at
the threshold, or at once if it was open (a failed trial). A success or a
model-visible error closes it and clears the failures in a row. Neutral outcomes
(:data:`NEUTRAL`) change nothing. Any outcome ends the trial's lease.

**R3 Budget** (a ``RetryWithFeedback``, before the handler chain). It counts once per
model step and tool: the calls of one step (a parallel round, or the calls an
integration reports under one ``step=`` key) count once. Per tool, the newest
:data:`COUNTED_STEPS` steps that counted are remembered: a step replayed after that
many others counted against the same tool counts again (no budget is that large).

**R4 Reset** forgets a session's failures, breakers, budgets and counted steps, for
one tool or all; fleet-wide breakers are the fleet's and stay.

**R5 Life.** A session keeps its state while it is used. In memory it lives as long
as the session object; on a server, a session not used for ``ttl`` seconds may be
forgotten, and one used within ``ttl`` is not (each use within the last part of the
TTL renews it, reads included).

**R6 Outage.** Whatever a store raises is the store's outage, never the tool's: it
never reaches a handler chain, a breaker or a budget. Fail-open answers from this
process's memory by R1-R4; fail-closed answers "unavailable right now", and a tool
with a breaker or a budget does not run. Either way the outage is logged once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from toolguard.errors import (
    InvalidArguments,
    ModelRetriesExhausted,
    RetryWithFeedback,
    ToolTimeout,
    ToolUnavailable,
    UnknownTool,
)
from toolguard.policy._resilience import Breaker

__all__ = [
    "CLOSED",
    "COUNTED_STEPS",
    "NEUTRAL",
    "OPEN",
    "EVENT_BREAKER_CLOSED",
    "EVENT_BREAKER_OPENED",
    "TRIAL",
    "Record",
    "admit",
    "closed",
    "exhausted",
    "failed",
    "settle",
    "spend",
    "unavailable",
]

# R1's answers (also the Redis CHECK script's first reply field)
CLOSED: Final = 0  # run it
TRIAL: Final = 1  # run it: this caller holds the half-open trial's lease
OPEN: Final = 2  # do not run it for retry_after seconds

# R2's events
EVENT_BREAKER_OPENED: Final = "breaker_opened"
EVENT_BREAKER_CLOSED: Final = "breaker_closed"

COUNTED_STEPS: Final = 1024  # R3: steps remembered per tool as having counted

# Outcomes that say nothing about whether the tool works: it did not run, or the
# model asked wrongly. They neither trip nor reset a breaker (R2).
NEUTRAL: Final = (InvalidArguments, UnknownTool, ToolUnavailable, RetryWithFeedback)


class Record:
    """What a session remembers about one tool (memory's record; a Redis hash holds
    the same fields: ``f``, ``o``, ``c``, ``l``, ``r`` and the counted steps)."""

    __slots__ = ("cooldown", "counted", "failures", "lease_until", "opened_at", "retries")

    def __init__(self) -> None:
        self.failures = 0  # failures in a row
        self.opened_at: float | None = None  # when the breaker opened (None: closed)
        self.cooldown = 0.0  # the cool-down it opened with
        self.lease_until: float | None = None  # the half-open trial's lease
        self.retries = 0  # model retries spent (R3)
        # R3: steps that counted, oldest first (an OrderedDict: a dict's oldest key is
        # found past every deleted one, which costs more the longer it serves as a queue)
        self.counted: OrderedDict[object, None] | None = None


def admit(record: Record, now: float, cooldown: float) -> tuple[int, float]:
    """R1 on an open breaker: ``(TRIAL, 0)`` (the lease granted to this caller),
    ``(CLOSED, 0)`` or ``(OPEN, retry_after)``."""
    opened = record.opened_at
    if opened is None:
        return CLOSED, 0.0
    waited = now - opened
    lease = record.lease_until
    if waited >= cooldown and (lease is None or now >= lease):
        record.lease_until = now + cooldown
        return TRIAL, 0.0
    retry_after = max(0.0, cooldown - waited)
    if lease is not None:  # another caller holds the trial
        retry_after = max(retry_after, lease - now)
    return OPEN, retry_after


def failed(error: Exception | None, visible: bool) -> bool | None:
    """R2's classification: ``True`` a failure counts, ``False`` a success (or a
    model-visible answer), ``None`` neutral: nothing to record."""
    if error is None:
        return False
    if isinstance(error, NEUTRAL):
        return None
    return isinstance(error, ToolTimeout) or not visible


def settle(
    record: Record, failure: bool, breaker: Breaker, clock: Callable[[], float]
) -> str | None:
    """R2: record one outcome; the event it causes (:data:`EVENT_BREAKER_OPENED`,
    :data:`EVENT_BREAKER_CLOSED` or ``None``). ``clock`` is read only when the breaker
    opens (in a durable engine's workflow each reading is recorded)."""
    was_open = record.opened_at is not None
    record.lease_until = None
    if failure:
        record.failures += 1
        if was_open or record.failures >= breaker.failures:
            record.opened_at = clock()
            record.cooldown = breaker.cooldown
            return EVENT_BREAKER_OPENED
        return None
    record.failures = 0
    if was_open:
        record.opened_at = None
        return EVENT_BREAKER_CLOSED
    return None


def spend(record: Record, step: object) -> int:
    """R3: count ``step`` against the budget once; the retries spent so far."""
    counted = record.counted
    if counted is None:
        counted = record.counted = OrderedDict()
    elif step in counted:
        return record.retries
    counted[step] = None
    if len(counted) > COUNTED_STEPS:
        counted.popitem(last=False)  # the oldest
    record.retries += 1
    return record.retries


def unavailable(tool: str, breaker: Breaker, retry_after: float) -> ToolUnavailable:
    """What the model is told while ``tool``'s breaker is open (every store says this)."""
    return ToolUnavailable(
        f"The tool '{tool}' is unavailable: it failed {breaker.failures} times in a row. "
        f"Do not call it again for about {retry_after:.0f} s; use another tool or tell "
        "the user.",
        tool=tool,
        retry_after=retry_after,
    )


def closed(tool: str, seconds: float) -> ToolUnavailable:
    """R6: what the model is told when a fail-closed store cannot answer."""
    return ToolUnavailable(
        f"The tool '{tool}' is unavailable right now. Do not call it again for about "
        f"{seconds:.0f} s; use another tool or tell the user.",
        tool=tool,
        retry_after=seconds,
    )


def exhausted(error: RetryWithFeedback, tool: str, used: int, limit: int) -> Exception:
    """The error the handler chain sees after a ``RetryWithFeedback`` counted as number
    ``used`` of ``limit``: the same one with its counts, or ``ModelRetriesExhausted``."""
    if used <= limit:
        error.attempt, error.limit = used, limit
        return error
    spent = ModelRetriesExhausted(
        f"The tool '{tool}' was called incorrectly too many times ({limit} retries are "
        "allowed in this conversation). Stop calling it and tell the user what went wrong."
    )
    spent.__cause__ = error
    return spent
