"""The runner half of the core: one call of one of the agent's tools, start to result.

    bind ─▶ breaker ─▶ attempt ─▶ retry? ─▶ content ─▶ result      (the guard's, on success
      │        │ open      │          │          │                 when it needs deciding)
      └────────┴───────────┴──────────┴──────────┴──▶ guard.failed: the handler chain

There is one pipeline per colour, :meth:`Runner.dispatch` and :meth:`Runner.adispatch`,
written as twins you can diff line by line. What can be decided without running
anything is decided once per tool and per version of the global defaults, as a
``Plan`` on the tool's ``Entry`` (``runner/_plan.py``).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from pydantic_core import ValidationError

from toolguard import _engine
from toolguard._marks import is_control_flow
from toolguard._text import shown
from toolguard._values import ToolCall, ToolResult, success
from toolguard.guard._content import to_content
from toolguard.guard._guard import Guard
from toolguard.policy import _config
from toolguard.policy._precedence import Resolved
from toolguard.policy._values import ToolPolicy
from toolguard.runner import _plan as plans
from toolguard.runner._attempts import (
    GRACE,
    Attempts,
    acall_with_timeout,
    athread_with_timeout,
    call_with_timeout,
    no_running_loop,
    retry_async,
    retry_sync,
    run_loop,
    to_engine,
)
from toolguard.runner._foreign import Foreign
from toolguard.runner._plan import Entry, Plan
from toolguard.runner._pools import Pools, box, unbox
from toolguard.schema._arguments import Arguments
from toolguard.sessions._steps import Step
from toolguard.telemetry import _spans as _telemetry

T = TypeVar("T")

__all__ = ["Runner"]


class Runner:
    """Runs the agent's tools, and hands every outcome to the guard."""

    def __init__(
        self,
        guard: Guard,
        tools: Iterable[tuple[str, Callable[..., Any], Arguments, bool]],
        pools: Pools,
        descriptions: Mapping[str, str] | None = None,
    ) -> None:
        self.guard = guard
        self.telemetry = guard.telemetry  # the agent's switch: .on, whether to trace now
        self.pools = pools
        self.foreign = Foreign(guard, pools)  # calls of tools that run elsewhere
        described = descriptions or {}
        self.entries = {
            name: Entry(name, function, arguments, is_async, guard.rules(name), described.get(name))
            for name, function, arguments, is_async in tools
        }

    def is_async(self, name: object) -> bool:
        try:
            entry = self.entries.get(name)  # type: ignore[call-overload]  # any object may be a name
        except TypeError:  # an unhashable name is no tool's
            return False
        return entry is not None and entry.is_async

    # --- the plan ------------------------------------------------------------------

    def _plan(self, entry: Entry, policy: ToolPolicy | None) -> tuple[Resolved, Plan]:
        """The chain and plan for one call that could not use the cached ones: the
        guard resolves (and caches) the chain; a call level is planned for the call."""
        rules = entry.rules
        if policy is None:
            self.guard.resolved(rules)
            return rules.resolved, rules.derived  # set together, under one version
        resolved = self.guard.resolved(rules, policy)
        return resolved, plans.plan_for(entry.is_async, resolved)  # tests replace it

    # --- one call, sync ----------------------------------------------------------------

    def dispatch(
        self,
        call: ToolCall,
        policy: ToolPolicy | None,
        context: Any,
        step: Step | None,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """One call on this thread (the sync pipeline); with telemetry on, inside its
        span (opened here unless it is open for this call already)."""
        if self.telemetry.on and _telemetry.outside(call):
            return _telemetry.dispatch(self, call, policy, context, step, framework_values)
        try:
            entry = self.entries.get(call.name)
        except TypeError:  # an unhashable name (a list, a dict) is no tool's
            entry = None
        if entry is None:
            return self._unknown(call, policy, step)
        rules = entry.rules
        if policy is None and rules.version == _config._version:
            resolved, plan = rules.resolved, rules.derived
        else:
            resolved, plan = self._plan(entry, policy)
        if not plan.inline:
            self._check_sync(entry, resolved)
        breaker = resolved.breaker if step is not None else None
        budget = step is not None and resolved.max_model_retries is not None
        report = False
        counter: Attempts | None = None
        try:
            raw = call.arguments
            # Arguments.bind, shortened and inlined in both twins: as one Entry.bind
            # method a dispatch costs 4.4% more instructions (16,724 against 16,018)
            if type(raw) is dict and entry.validate is not None:
                args: tuple[Any, ...] = ()
                try:
                    kwargs = entry.validate(raw)
                except ValidationError as invalid:
                    raise entry.arguments.invalid(invalid)  # noqa: B904 - its cause is set
            else:
                args, kwargs = entry.arguments.bind(call, context, framework_values)
            if (breaker is not None or budget) and step is not None:  # may refuse (R1, R6)
                report = step.check_breaker(entry.name, breaker, budget)
            try:
                if plan.inline:
                    value = entry.function(*args, **kwargs)
                else:
                    value = self._attempt(entry, args, kwargs, resolved)
            except Exception as first:
                retry = resolved.retries
                if retry is None or not retry.retryable(first):
                    raise
                to_engine(retry, first, tool=entry.name, call_id=call.id)  # an engine retries?
                attempt = functools.partial(self._attempt, entry, args, kwargs, resolved)
                counter = Attempts(entry.name, call.id)
                value = retry_sync(
                    retry, first, attempt, tool=entry.name, call_id=call.id, counter=counter
                )
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            attempts = counter.count if counter is not None else 1
            return self.guard.failed(error, call, resolved, entry.name, step, attempts)
        if report and step is not None:  # a success after failures: the breaker counts it
            step.succeeded(entry.name, breaker)
        if plan.plain:
            return success(call.id, entry.name, content, artifact, value)
        return self.guard.succeeded(call, entry.name, content, artifact, resolved, value)

    def _unknown(self, call: ToolCall, policy: ToolPolicy | None, step: Step | None) -> ToolResult:
        name = shown(call.name)  # the model's, as it may be echoed: bounded and escaped
        resolved = self.guard.resolved(self.guard.rules(name), policy)
        self.guard.check_sync(name, resolved)
        return self.guard.failed(self.guard.unknown_tool(call, name), call, resolved, name, step)

    def _check_sync(self, entry: Entry, resolved: Resolved) -> None:
        """The sync path cannot await: refuse async handlers, and a running loop."""
        self.guard.check_sync(entry.name, resolved)
        if entry.is_async:
            no_running_loop(entry.name)

    def _attempt(
        self, entry: Entry, args: tuple[Any, ...], kwargs: dict[str, Any], resolved: Resolved
    ) -> Any:
        """One attempt on the sync path: inline, on a new event loop (an async tool),
        or, with a timeout, on a thread of its own (an async tool with its own loop)."""
        seconds = resolved.timeout
        if seconds is None or _engine.engine_times_out():  # the engine's timeout applies
            if entry.is_async:
                return run_loop(entry.function(*args, **kwargs))
            return entry.function(*args, **kwargs)
        if entry.is_async:
            awaitable = acall_with_timeout(
                None, entry.function(*args, **kwargs), tool=entry.name, seconds=seconds
            )
            attempt = functools.partial(run_loop, awaitable)
            seconds += GRACE  # its loop cancels it at the deadline; the thread is given this
        else:
            attempt = functools.partial(entry.function, *args, **kwargs)
        run = functools.partial(contextvars.copy_context().run, attempt)
        return call_with_timeout(self.pools, run, tool=entry.name, seconds=seconds)

    # --- one call, async ---------------------------------------------------------------

    async def adispatch(
        self,
        call: ToolCall,
        policy: ToolPolicy | None,
        context: Any,
        step: Step | None,
        offload: bool,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """One call on the running event loop (the async pipeline); with telemetry on,
        inside its span."""
        if self.telemetry.on and _telemetry.outside(call):
            return await _telemetry.adispatch(
                self, call, policy, context, step, offload, framework_values
            )
        try:
            entry = self.entries.get(call.name)
        except TypeError:  # an unhashable name (a list, a dict) is no tool's
            entry = None
        if entry is None:
            return await self._aunknown(call, policy, step)
        rules = entry.rules
        if policy is None and rules.version == _config._version:
            resolved, plan = rules.resolved, rules.derived
        else:
            resolved, plan = self._plan(entry, policy)
        direct = plan.direct and (entry.is_async or not offload)
        breaker = resolved.breaker if step is not None else None
        budget = step is not None and resolved.max_model_retries is not None
        report = False
        counter: Attempts | None = None
        try:
            raw = call.arguments
            # Arguments.bind, shortened and inlined in both twins: as one Entry.bind
            # method a dispatch costs 4.4% more instructions (16,724 against 16,018)
            if type(raw) is dict and entry.validate is not None:
                args: tuple[Any, ...] = ()
                try:
                    kwargs = entry.validate(raw)
                except ValidationError as invalid:
                    raise entry.arguments.invalid(invalid)  # noqa: B904 - its cause is set
            else:
                args, kwargs = entry.arguments.bind(call, context, framework_values)
            if (breaker is not None or budget) and step is not None:  # may refuse (R1, R6)
                if step.remote:  # a store's step: awaited
                    report = await step.acheck_breaker(entry.name, breaker, budget)
                else:
                    report = step.check_breaker(entry.name, breaker, budget)
            try:
                if direct:
                    value = entry.function(*args, **kwargs)
                    if entry.is_async:
                        value = await value
                else:
                    if resolved.timeout is not None:  # a task or a thread of its own
                        counter = Attempts(entry.name, call.id)
                    value = await self._aattempt(entry, args, kwargs, resolved, offload, counter)
            except Exception as first:
                retry = resolved.retries
                if retry is None or not retry.retryable(first):
                    raise
                to_engine(retry, first, tool=entry.name, call_id=call.id)  # an engine retries?
                counter = counter or Attempts(entry.name, call.id)
                attempt = functools.partial(
                    self._aattempt, entry, args, kwargs, resolved, offload, counter
                )
                value = await retry_async(
                    retry, first, attempt, tool=entry.name, call_id=call.id, counter=counter
                )
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            attempts = counter.count if counter is not None else 1
            return await self.guard.afailed(error, call, resolved, entry.name, step, attempts)
        if report and step is not None:  # a success after failures: the breaker counts it
            if step.remote:
                await step.asucceeded(entry.name, breaker)
            else:
                step.succeeded(entry.name, breaker)
        if plan.plain:
            return success(call.id, entry.name, content, artifact, value)
        return self.guard.succeeded(call, entry.name, content, artifact, resolved, value)

    async def _aunknown(
        self, call: ToolCall, policy: ToolPolicy | None, step: Step | None
    ) -> ToolResult:
        name = shown(call.name)  # the model's, as it may be echoed: bounded and escaped
        resolved = self.guard.resolved(self.guard.rules(name), policy)
        return await self.guard.afailed(
            self.guard.unknown_tool(call, name), call, resolved, name, step
        )

    async def _aattempt(
        self,
        entry: Entry,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        resolved: Resolved,
        offload: bool,
        counter: Attempts | None,
    ) -> Any:
        """One attempt on the async path: awaited, inline, on the round pool (offloaded),
        or, with a timeout, as a task or on a thread of its own (``counter`` logs a
        failure that ends there as the call is cancelled)."""
        seconds = resolved.timeout
        if seconds is not None and _engine.engine_times_out():
            seconds = None  # the engine's timeout applies
            offload = offload and _engine.current() is None  # no thread in workflow code
        if entry.is_async:
            awaitable = entry.function(*args, **kwargs)
            if seconds is None:
                return await awaitable
            return await acall_with_timeout(
                self.pools, awaitable, tool=entry.name, seconds=seconds, counter=counter
            )
        if seconds is not None:
            run = functools.partial(contextvars.copy_context().run, entry.function, *args, **kwargs)
            return await athread_with_timeout(
                self.pools, run, tool=entry.name, seconds=seconds, counter=counter
            )
        if offload:
            return await self._in_pool(entry.function, args, kwargs)
        return entry.function(*args, **kwargs)

    async def _in_pool(
        self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run a sync function on the round pool, with the caller's context variables;
        its outcome crosses back boxed (``_pools.Boxed``)."""
        run = functools.partial(contextvars.copy_context().run, box, function)
        return unbox(
            await asyncio.get_running_loop().run_in_executor(
                self.pools.rounds(), functools.partial(run, *args, **kwargs)
            )
        )
