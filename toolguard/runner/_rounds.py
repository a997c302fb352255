"""Rounds: the model's parallel calls, run together, one result each, in call order.

A round of sync tools runs on the round pool (a single call inline); a round with
an async tool runs its calls as tasks, sync ones offloaded to the pool. One call's
failure never cancels or loses its siblings' results. When the round stops is one
rule, :func:`round_stops`, which the integrations apply to their frameworks' rounds
too.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Sequence
from concurrent.futures import FIRST_EXCEPTION, Future
from concurrent.futures import wait as futures_wait
from typing import Any, Final

from toolguard._marks import is_interrupt
from toolguard._text import shown
from toolguard._values import Round, ToolCall, ToolResult, _new
from toolguard.errors import ToolCallFailed
from toolguard.policy._agent import ReturnDirectMode
from toolguard.policy._handlers import fill_message
from toolguard.policy._precedence import BUILTIN_MESSAGE
from toolguard.policy._values import ToolPolicy
from toolguard.runner._attempts import no_running_loop, run_loop
from toolguard.runner._pipeline import Runner
from toolguard.sessions._steps import Step

__all__ = ["Rounds", "assemble_round", "round_stops"]

_POLL: Final = 0.1  # seconds: how often a waiting round looks for an interrupt


def round_stops(stops: Sequence[bool], mode: ReturnDirectMode) -> bool:
    """Whether a round whose calls asked to stop (``stops``, one per call) ends the loop.

    ``"any"``: when any call asked; ``"all"``: only when every call did. An empty
    round never stops.
    """
    return bool(stops) and (all(stops) if mode == "all" else any(stops))


class Rounds:
    """Runs rounds of one agent's calls through its runner."""

    def __init__(self, runner: Runner, mode: ReturnDirectMode) -> None:
        self.runner = runner
        self.mode = mode

    def run(
        self,
        calls: list[ToolCall],
        policy: ToolPolicy | None,
        context: Any,
        step: Step | None,
    ) -> Round:
        """A round on this thread: sync tools on the round pool, async ones on a new
        event loop (``asyncio.run``)."""
        runner = self.runner
        if any(runner.is_async(call.name) for call in calls):
            no_running_loop("this round")
            return run_loop(self.arun(calls, policy, context, step))
        if len(calls) <= 1:
            outcomes: list[ToolResult | BaseException] = []
            for call in calls:
                try:
                    outcomes.append(runner.dispatch(call, policy, context, step))
                except ToolCallFailed as failed:
                    outcomes.append(failed)
            return assemble_round(calls, outcomes, self.mode)
        pool = runner.pools.rounds()
        futures: list[Future[ToolResult]] = [
            pool.submit(
                contextvars.copy_context().run, runner.dispatch, call, policy, context, step
            )
            for call in calls
        ]
        try:
            _wait_all(futures)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        outcomes = [_outcome_of(future) for future in futures]
        return assemble_round(calls, outcomes, self.mode)

    def one(self, calls: list[ToolCall], outcome: ToolResult | Exception) -> Round:
        """The round of one call (``calls``), from what its dispatch returned or raised
        (which then propagates as :func:`assemble_round` says)."""
        if type(outcome) is ToolResult:
            return _round((outcome,), self.mode)
        return assemble_round(calls, [outcome], self.mode)

    async def arun(
        self,
        calls: list[ToolCall],
        policy: ToolPolicy | None,
        context: Any,
        step: Step | None,
    ) -> Round:
        """A round on the running event loop: its calls as tasks (sync tools offloaded
        to the pool when there are several calls)."""
        if len(calls) == 1:  # no task to make: the one call runs right here
            try:
                outcome = await self.runner.adispatch(calls[0], policy, context, step, False)
            except Exception as error:  # noqa: BLE001 - ToolCallFailed, control flow: the round decides
                return self.one(calls, error)
            return self.one(calls, outcome)
        gathered = await asyncio.gather(
            *(self.runner.adispatch(call, policy, context, step, True) for call in calls),
            return_exceptions=True,
        )
        return assemble_round(calls, list(gathered), self.mode)


def _round(results: tuple[ToolResult, ...], mode: ReturnDirectMode) -> Round:
    """``Round(results=..., stop=..., final=...)`` for ``results``, built faster: the
    instance dict is filled at once, as for a result (a test pins that it is equal)."""
    stop = False
    for result in results:
        if result.return_direct:
            stop = round_stops([r.return_direct for r in results], mode)
            break
    round_: Round = _new(Round)
    fields = round_.__dict__
    fields["results"] = results  # in field order, as attrs' __init__ stores them
    fields["stop"] = stop
    fields["final"] = next(r for r in results if r.return_direct) if stop else None
    return round_


def _wait_all(futures: Sequence[Future[ToolResult]]) -> None:
    """Wait for a round's calls; an interrupt from any of them, or of this thread
    (``KeyboardInterrupt``, even ``_thread.interrupt_main()``), stops it at once."""
    pending: set[Future[ToolResult]] = set(futures)
    while pending:
        # woken by a call that raised (an interrupt must stop the round at once), or
        # every _POLL s (an interrupt of this thread), not by each call that returns
        done, pending = futures_wait(pending, timeout=_POLL, return_when=FIRST_EXCEPTION)
        for future in done:
            error = future.exception()
            if error is not None and is_interrupt(error):
                raise error


def _outcome_of(future: Future[ToolResult]) -> ToolResult | BaseException:
    """A round call's result or the exception it propagated (interrupts re-raised)."""
    try:
        return future.result()
    except ToolCallFailed as failed:
        return failed
    except BaseException as error:
        if is_interrupt(error):
            raise
        return error


def assemble_round(
    calls: Sequence[ToolCall],
    outcomes: Sequence[ToolResult | BaseException],
    mode: ReturnDirectMode,
) -> Round:
    """Assemble a round; then raise the first propagating failure, if any.

    Control flow (a handoff, an interrupt) goes first, whatever a sibling's handler
    did: nothing else carries it. A ``ToolCallFailed`` carries the whole round (its
    own call answered with the built-in generic message), so the conversation can
    still be answered.
    """
    for outcome in outcomes:  # the common case first: every call has its result
        if type(outcome) is not ToolResult:
            break
    else:
        if len(outcomes) == len(calls):
            return _round(tuple(outcomes), mode)  # type: ignore[arg-type]  # all results
    results: list[ToolResult] = []
    first: BaseException | None = None
    for call, outcome in zip(calls, outcomes, strict=True):
        if isinstance(outcome, ToolResult):
            results.append(outcome)
            continue
        if first is None or (
            isinstance(first, ToolCallFailed) and not isinstance(outcome, ToolCallFailed)
        ):
            first = outcome
        if isinstance(outcome, ToolCallFailed):
            text = fill_message(BUILTIN_MESSAGE, tool=outcome.tool, error_id=outcome.error_id)
            results.append(
                ToolResult(
                    call_id=call.id,
                    name=shown(call.name),
                    content=text,
                    is_error=True,
                    error_id=outcome.error_id,
                    error_kind="hidden",
                )
            )
        else:
            results.append(
                ToolResult(call_id=call.id, name=shown(call.name), content="", is_error=True)
            )
    round_ = _round(tuple(results), mode)
    if first is not None:
        if isinstance(first, ToolCallFailed):
            first.round = round_
        raise first
    return round_
