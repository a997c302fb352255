"""The Dispatcher: one agent's tools, its defaults, and the guarded call pipeline.

    call ─▶ look up ─▶ validate ─▶ run ─▶ content ─▶ ToolResult(ok)
                │          │         │
                └──────────┴─────────┴─▶ failure ─▶ handler chain ─▶ ToolResult(error)
                                                    (logged once when hidden)

Control-flow signals and non-``Exception`` ``BaseException``s never enter the
handler chain: they propagate exactly as raised.
"""

from __future__ import annotations

import asyncio
import contextvars
import fnmatch
import functools
import re
import threading
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, Final

import attrs
from pydantic_core import ValidationError

from toolguard import _config
from toolguard._decorator import BoundTool, Tool, tool
from toolguard._failure import Failure, assemble_round, checked, outcome_of, truncate
from toolguard._suggest import did_you_mean
from toolguard.errors import (
    ToolCallFailed,
    ToolDefinitionError,
    UnknownTool,
    is_control_flow,
)
from toolguard.policy import (
    NEVER,
    POLICY_FIELDS,
    UNSET,
    AgentPolicy,
    Layer,
    Resolved,
    ReturnDirectMode,
    Setting,
    ToolPolicy,
    policy_from_options,
    resolve,
)
from toolguard.resilience import (
    _Attempts,
    acall_with_timeout,
    call_with_timeout,
    retry_async,
    retry_sync,
)
from toolguard.results import Round, ToolCall, ToolResult, success, to_content
from toolguard.schema import Arguments
from toolguard.session import Session, Step

__all__ = ["Dispatcher"]

_GLOB_CHARS: Final = re.compile(r"[*?\[]")
_FOREIGN_CACHE: Final = 256
_MAX_NAME: Final = 64  # what every provider allows for a tool name


@attrs.define(slots=True)
class _Entry:
    """One tool as this dispatcher runs it; ``resolved`` is cached per config version."""

    name: str
    function: Callable[..., Any]
    arguments: Arguments
    is_async: bool
    layers: tuple[Layer, ...]
    resolved: Resolved | None = None
    version: int = -2  # below any config version: resolve on first use
    # decided with `resolved`: the sync path calls the tool inline (a sync tool, no
    # timeout, no async handler), with no per-call check
    inline: bool = False
    # ... and the result needs no truncation and no return_direct decision
    plain_result: bool = False
    # the config version for which dispatch() may take its specialised hot path
    # (inline and a plain result), or -1
    fast: int = -1
    # the validator itself, for tools whose arguments are all the model's (no
    # injected or positional-only ones): dict arguments skip Arguments.bind
    validate: Callable[[Any], dict[str, Any]] | None = None


class Dispatcher:
    """One agent's tools plus its agent-wide defaults.

    ``Dispatcher(tools, *, on_error=..., return_direct=..., log_level=..., redact=...,
    overrides={name_or_glob: ToolPolicy(...)}, return_direct_mode="any", max_workers=32)``

    The policy options are the agent default level; ``overrides`` is the agent
    override level (an exact name beats a glob; among globs the first declared
    wins). ``external_tools`` names tools that run elsewhere (another library's,
    answered with :meth:`handle_error`/:meth:`handle_result`) so that overrides
    may name them exactly. Tools may be ``@tool`` functions, tools bound to an instance
    (``obj.method``), or plain functions (decorated on the fly).
    """

    def __init__(
        self,
        tools: Iterable[Callable[..., Any]],
        *,
        policy: AgentPolicy | None = None,
        overrides: Mapping[str, ToolPolicy] | None = None,
        return_direct_mode: ReturnDirectMode | None = None,
        max_workers: int | None = None,
        external_tools: Iterable[str] = (),
        **defaults: Any,
    ) -> None:
        try:
            code = AgentPolicy(
                defaults=policy_from_options(defaults, where="Dispatcher()"),
                overrides=overrides or {},
                return_direct_mode=UNSET if return_direct_mode is None else return_direct_mode,
                max_workers=UNSET if max_workers is None else max_workers,
            )
        except (TypeError, ValueError) as error:
            raise ToolDefinitionError(str(error).removeprefix("Dispatcher(): ")) from None
        if policy is not None and not isinstance(policy, AgentPolicy):
            raise ToolDefinitionError(
                f"policy= takes an AgentPolicy (see toolguard.load_policy), got {policy!r}"
            )
        # The policy (a file) is the later word: its entries come first at each level.
        self._policies = (code,) if policy is None else (policy, code)
        self._round_settings = {
            name: _first_setting(self._policies, name, default)
            for name, default in (("return_direct_mode", "any"), ("max_workers", 32))
        }
        self.return_direct_mode: ReturnDirectMode = self._round_settings["return_direct_mode"].value
        self._max_workers: int = self._round_settings["max_workers"].value
        self._executor: ThreadPoolExecutor | None = None
        self._timeouts: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._tools: dict[str, Tool[..., Any] | BoundTool[..., Any]] = {}
        for candidate in tools:
            self._add(candidate)
        self._external = frozenset(external_tools)
        self._overrides = self._check_overrides()
        self._agent_layers = tuple(
            Layer("agent", p.defaults, p.source)
            for p in self._policies
            if not p.defaults.is_empty()
        )
        self._entries = {name: self._entry(name, t) for name, t in self._tools.items()}
        self._foreign: dict[str, _Entry] = {}
        self._unknown_messages: dict[str, str] = {}

    # --- construction ------------------------------------------------------------

    def _add(self, candidate: Callable[..., Any]) -> None:
        if not isinstance(candidate, Tool | BoundTool):
            if not callable(candidate):
                raise ToolDefinitionError(f"Dispatcher takes tools or functions, got {candidate!r}")
            candidate = tool(candidate)
        spec = candidate.spec
        if (
            spec.is_method
            and candidate._self_binding == "function"
            and (not isinstance(candidate, BoundTool) or candidate._self_instance is None)
        ):
            raise ToolDefinitionError(
                f"tool {spec.name!r} is an instance method; pass it bound to an instance "
                f"(Dispatcher([obj.{candidate.__name__}]))"
            )
        if spec.name in self._tools:
            raise ToolDefinitionError(
                f"two tools are named {spec.name!r}; tool names must be unique"
            )
        self._tools[spec.name] = candidate

    def _check_overrides(self) -> tuple[tuple[str, Layer, re.Pattern[str] | None], ...]:
        """Exact names first, then globs in declaration order (the policy's first)."""
        exact: list[tuple[str, Layer, re.Pattern[str] | None]] = []
        globs: list[tuple[str, Layer, re.Pattern[str] | None]] = []
        for agent_policy in self._policies:
            prefix = f"{agent_policy.source}: " if agent_policy.source else ""
            for key, policy in agent_policy.overrides.items():
                where = f'tools."{key}"' if agent_policy.source else f"overrides[{key!r}]"
                layer = Layer("override", policy, f"{prefix}{where}")
                if is_glob(key):
                    problem = glob_problem(key)
                    if problem:
                        raise ToolDefinitionError(
                            f"{prefix}overrides[{key!r}]: bad glob: {problem}"
                        )
                    globs.append((key, layer, re.compile(fnmatch.translate(key))))
                elif key in self._tools or key in self._external:
                    exact.append((key, layer, None))
                elif agent_policy.source is None:
                    # In code, a name that matches no tool is a typo; a policy file
                    # may serve several agents, so there it is allowed.
                    tools = ", ".join(self._tools) or "none"
                    raise ToolDefinitionError(
                        f"overrides[{key!r}] names no tool of this agent"
                        f"{did_you_mean(key, self._tools)}; tools: {tools}. A tool that "
                        "runs elsewhere (another library's) goes in external_tools=[...]"
                    )
                else:
                    exact.append((key, layer, None))
        return (*exact, *globs)

    def _override_layers(self, name: str) -> tuple[Layer, ...]:
        return tuple(
            layer
            for key, layer, pattern in self._overrides
            if (pattern.match(name) if pattern else key == name)
        )

    def _entry(self, name: str, t: Tool[..., Any] | BoundTool[..., Any]) -> _Entry:
        arguments = t.spec.arguments
        plain = not (arguments.positional or arguments.injected)
        return _Entry(
            name=name,
            function=t.__wrapped__,
            validate=arguments.validator.validate_python if plain else None,
            arguments=arguments,
            is_async=t.spec.is_async,
            layers=(
                *self._override_layers(name),
                Layer("tool", t.spec.policy),
                *self._agent_layers,
            ),
        )

    def _foreign_entry(self, name: str) -> _Entry:
        """The policy levels for a name that is not one of this agent's tools.

        Used for unknown tool names and for failures of other libraries' tools
        (:meth:`handle_error`): overrides that match the name, then the agent.
        Bounded, so random names from a model cannot grow it without end.
        """
        entry = self._foreign.get(name)
        if entry is None:
            entry = _Entry(
                name=name,
                function=_never_called,
                arguments=None,  # type: ignore[arg-type]
                is_async=False,
                layers=(*self._override_layers(name), *self._agent_layers),
            )
            if len(name) <= _MAX_NAME:  # a longer name is no tool's: not worth keeping
                if len(self._foreign) >= _FOREIGN_CACHE:
                    self._foreign.clear()
                self._foreign[name] = entry
        return entry

    # --- inspection --------------------------------------------------------------

    @property
    def tools(self) -> Mapping[str, Tool[..., Any] | BoundTool[..., Any]]:
        """This agent's tools by name, in declaration order."""
        return dict(self._tools)

    def explain(
        self, tool_name: str, *, policy: ToolPolicy | None = None, foreign: bool = False
    ) -> dict[str, Setting | tuple[Setting, ...]]:
        """Each setting's effective value and the level that supplied it.

        ``on_error`` maps to the ordered chain of ``Setting(handler, level)`` that
        will be asked. ``policy`` adds a call level, as ``dispatch(..., policy=)``.
        ``foreign=True`` explains a name that is not one of this agent's tools (the
        policy :meth:`handle_error` applies to another library's tool).
        """
        entry = self._entries.get(tool_name)
        if entry is None:
            if not foreign:
                raise KeyError(
                    f"no tool named {tool_name!r}{did_you_mean(tool_name, self._entries)}; "
                    f"tools: {', '.join(self._entries) or 'none'}"
                )
            entry = self._foreign_entry(tool_name)
        return {**self._resolved(entry, policy).explain(), **self._round_settings}

    @property
    def policy(self) -> AgentPolicy | None:
        """The policy (a file's) this dispatcher was built with, beside its code."""
        return self._policies[0] if len(self._policies) == 2 else None

    def with_policy(self, policy: AgentPolicy | None) -> Dispatcher:
        """The same tools and code settings under another policy (``None``: none).

        For an operator's tooling (``toolguard explain --policy``): the code of the
        application stays as written, the policy file changes.
        """
        code = self._policies[-1]
        return Dispatcher(
            self._tools.values(),
            policy=policy,
            overrides=code.overrides,
            return_direct_mode=_unset_to_none(code.return_direct_mode),
            max_workers=_unset_to_none(code.max_workers),
            external_tools=self._external,
            **{
                field: getattr(code.defaults, field)
                for field in POLICY_FIELDS
                if getattr(code.defaults, field) is not UNSET
            },
        )

    def _resolved(self, entry: _Entry, policy: ToolPolicy | None) -> Resolved:
        if entry.version != _config._version:
            self._refresh(entry)
        if policy is None:
            return entry.resolved  # type: ignore[return-value]
        if not isinstance(policy, ToolPolicy):
            raise TypeError(f"policy= takes a ToolPolicy, got {policy!r}")
        return resolve((Layer("call", policy), *entry.layers, Layer("global", _config._policy)))

    def _refresh(self, entry: _Entry) -> None:
        """Resolve ``entry``'s chain under the current global defaults (after a
        ``configure()``). Versions only move forward, so a slow thread can never
        leave an older chain cached under a newer version."""
        version, global_policy = _config.snapshot()
        resolved = resolve((*entry.layers, Layer("global", global_policy)))
        with self._lock:
            if entry.version >= version:
                return
            # readers check `version` first, then read the rest: set it last
            entry.resolved = resolved
            entry.inline = _inline(entry, resolved)
            entry.plain_result = (
                resolved.max_result_chars is None and resolved.return_direct is NEVER
            )
            entry.fast = version if entry.inline and entry.plain_result else -1
            entry.version = version

    def _sync_resolved(self, entry: _Entry, policy: ToolPolicy | None) -> Resolved:
        resolved = self._resolved(entry, policy)
        if resolved.is_async:
            self._check_sync(entry, resolved)
        return resolved

    # --- one call ----------------------------------------------------------------

    def session(self, *, clock: Callable[[], float] | None = None) -> Session:
        """A new conversation on this dispatcher: its own retry budgets and breakers."""
        return Session(self, clock=clock)

    def dispatch(
        self, call: ToolCall, *, policy: ToolPolicy | None = None, context: Any = None
    ) -> ToolResult:
        """Run one call, synchronously, on this thread. Always returns a result,
        unless a handler fails the invocation (``ToolCallFailed``) or the failure is
        control flow."""
        entry = self._entries.get(call.name)
        if entry is None or policy is not None or entry.fast != _config._version:
            return self._dispatch(call, policy, context, None)
        # The hot path, specialised (a plain sync tool: no timeout, async handler,
        # truncation or return_direct; decided once per config version). It does
        # what _dispatch does for such a tool, with ~10% fewer instructions.
        try:
            raw = call.arguments
            if type(raw) is dict and entry.validate is not None:
                args: tuple[Any, ...] = ()
                try:
                    kwargs = entry.validate(raw)
                except ValidationError as invalid:
                    raise entry.arguments.invalid(invalid) from None
            else:
                args, kwargs = entry.arguments.bind(call, context)
            try:
                value = entry.function(*args, **kwargs)
            except Exception as first:
                retry = entry.resolved.retries  # type: ignore[union-attr]
                if retry is None or not retry.retryable(first):
                    raise
                return self._retrying(entry, call, args, kwargs, first)
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            return self._handle(error, call, entry.resolved, entry.name, None)  # type: ignore[arg-type]
        return success(call.id, entry.name, content, artifact)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        offload: bool = False,
    ) -> ToolResult:
        """Run one call on the running event loop.

        A sync tool runs inline, blocking the loop while it runs, unless
        ``offload=True`` (then on the dispatcher's thread pool: what a server
        answering many requests on one loop wants).
        """
        return await self._adispatch(call, policy, context, None, offload)

    def _dispatch(
        self, call: ToolCall, policy: ToolPolicy | None, context: Any, step: Step | None
    ) -> ToolResult:
        entry = self._entries.get(call.name)
        if entry is None:
            resolved = self._sync_resolved(self._foreign_entry(call.name), policy)
            return self._handle(self._unknown_error(call), call, resolved, call.name, step)
        if policy is None and entry.version == _config._version:  # decided once per version
            resolved, inline, plain = entry.resolved, entry.inline, entry.plain_result  # type: ignore[assignment]
        else:
            resolved = self._resolved(entry, policy)
            inline, plain = _inline(entry, resolved), False
        if not inline:
            self._check_sync(entry, resolved)
        breaker = resolved.breaker if step is not None else None
        report = False
        counter: _Attempts | None = None
        try:
            raw = call.arguments
            if type(raw) is dict and entry.validate is not None:  # _bind, inlined (hot)
                args: tuple[Any, ...] = ()
                try:
                    kwargs = entry.validate(raw)
                except ValidationError as invalid:
                    raise entry.arguments.invalid(invalid) from None
            else:
                args, kwargs = entry.arguments.bind(call, context)
            report = breaker is not None and step.check_breaker(entry.name, breaker)  # type: ignore[union-attr]
            try:
                if inline:
                    value = entry.function(*args, **kwargs)
                else:
                    value = self._attempt(entry, args, kwargs, resolved)
            except Exception as first:
                retry = resolved.retries
                if retry is None or not retry.retryable(first):
                    raise
                counter = _Attempts()
                value = retry_sync(
                    retry,
                    first,
                    functools.partial(self._attempt, entry, args, kwargs, resolved),
                    tool=entry.name,
                    call_id=call.id,
                    counter=counter,
                )
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            attempts = counter.count if counter is not None else 1
            return self._handle(error, call, resolved, entry.name, step, attempts)
        if report:  # a success after failures: the breaker counts it
            step.finished(entry.name, breaker, None)  # type: ignore[union-attr]
        if plain:
            return success(call.id, entry.name, content, artifact)
        return self._success(call, entry.name, content, artifact, resolved)

    def _retrying(
        self,
        entry: _Entry,
        call: ToolCall,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        first: Exception,
    ) -> ToolResult:
        """The hot path's tool failed with a retryable error: retry, then answer."""
        resolved: Resolved = entry.resolved  # type: ignore[assignment]
        assert resolved.retries is not None
        counter = _Attempts()
        try:
            value = retry_sync(
                resolved.retries,
                first,
                functools.partial(self._attempt, entry, args, kwargs, resolved),
                tool=entry.name,
                call_id=call.id,
                counter=counter,
            )
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            return self._handle(error, call, resolved, entry.name, None, counter.count)
        return success(call.id, entry.name, content, artifact)

    @staticmethod
    def _bind(
        entry: _Entry, call: ToolCall, context: Any
    ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The function's arguments; dict arguments of plain tools go straight to the
        validator (the common case), everything else through ``Arguments.bind``."""
        raw = call.arguments
        if type(raw) is dict and entry.validate is not None:
            try:
                return (), entry.validate(raw)
            except ValidationError as invalid:
                raise entry.arguments.invalid(invalid) from None
        return entry.arguments.bind(call, context)

    def _check_sync(self, entry: _Entry, resolved: Resolved) -> None:
        """The sync path cannot await: refuse async handlers, and a running loop."""
        if resolved.is_async:
            setting = resolved.async_handler()
            assert setting is not None
            raise TypeError(
                f"tool {entry.name!r}: handler {setting.value.name} at level "
                f"{setting.level!r} is async; use adispatch()/arun(), or give a sync handler"
            )
        if entry.is_async:
            _no_running_loop(entry.name)

    def _attempt(
        self, entry: _Entry, args: tuple[Any, ...], kwargs: dict[str, Any], resolved: Resolved
    ) -> Any:
        """One attempt on the sync path: inline, or on a worker thread with a timeout."""
        seconds = resolved.timeout
        if entry.is_async:
            awaitable = entry.function(*args, **kwargs)
            if seconds is not None:
                awaitable = acall_with_timeout(awaitable, tool=entry.name, seconds=seconds)
            return asyncio.run(awaitable)
        if seconds is None:
            return entry.function(*args, **kwargs)
        run = functools.partial(contextvars.copy_context().run, entry.function)
        return call_with_timeout(
            self._timeout_pool(), run, args, kwargs, tool=entry.name, seconds=seconds
        )

    async def _adispatch(
        self,
        call: ToolCall,
        policy: ToolPolicy | None,
        context: Any,
        step: Step | None,
        offload: bool,
    ) -> ToolResult:
        entry = self._entries.get(call.name)
        if entry is None:
            resolved = self._resolved(self._foreign_entry(call.name), policy)
            return await self._ahandle(self._unknown_error(call), call, resolved, call.name, step)
        if policy is None and entry.version == _config._version:
            resolved = entry.resolved  # type: ignore[assignment]
        else:
            resolved = self._resolved(entry, policy)
        # awaited (async tool) or called inline (sync tool) right here, unless it has
        # a timeout or asks for the pool
        direct = resolved.timeout is None and (entry.is_async or not offload)
        breaker = resolved.breaker if step is not None else None
        report = False
        counter: _Attempts | None = None
        try:
            args, kwargs = self._bind(entry, call, context)
            report = breaker is not None and step.check_breaker(entry.name, breaker)  # type: ignore[union-attr]
            try:
                if direct:
                    value = entry.function(*args, **kwargs)
                    if entry.is_async:
                        value = await value
                else:
                    value = await self._aattempt(entry, args, kwargs, resolved, offload)
            except Exception as first:
                retry = resolved.retries
                if retry is None or not retry.retryable(first):
                    raise
                attempt = functools.partial(self._aattempt, entry, args, kwargs, resolved, offload)
                counter = _Attempts()
                value = await retry_async(
                    retry, first, attempt, tool=entry.name, call_id=call.id, counter=counter
                )
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            attempts = counter.count if counter is not None else 1
            return await self._ahandle(error, call, resolved, entry.name, step, attempts)
        if report:  # a success after failures: the breaker counts it
            step.finished(entry.name, breaker, None)  # type: ignore[union-attr]
        if resolved.max_result_chars is None and resolved.return_direct is NEVER:
            return success(call.id, entry.name, content, artifact)
        return self._success(call, entry.name, content, artifact, resolved)

    async def _aattempt(
        self,
        entry: _Entry,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        resolved: Resolved,
        offload: bool,
    ) -> Any:
        """One attempt on the async path: awaited, inline, or on the pool."""
        seconds = resolved.timeout
        if entry.is_async:
            awaitable = entry.function(*args, **kwargs)
        elif offload or seconds is not None:
            awaitable = self._in_pool(entry.function, args, kwargs)
        else:
            return entry.function(*args, **kwargs)
        if seconds is not None:
            return await acall_with_timeout(awaitable, tool=entry.name, seconds=seconds)
        return await awaitable

    async def _in_pool(
        self, function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """Run a sync function on the pool, with the caller's context variables.

        The outcome crosses back boxed: asyncio would replace a ``TimeoutError``
        raised in the thread with a bare copy (losing its cause and traceback).
        """
        run = functools.partial(contextvars.copy_context().run, _boxed, function)
        ok, value = await asyncio.get_running_loop().run_in_executor(
            self._pool(), functools.partial(run, *args, **kwargs)
        )
        if ok:
            return value
        raise value

    @staticmethod
    def _success(
        call: ToolCall, name: str, content: Any, artifact: Any, resolved: Resolved
    ) -> ToolResult:
        if resolved.max_result_chars is not None:
            content = truncate(content, resolved.max_result_chars)
        result = ToolResult(call_id=call.id, name=name, content=content, artifact=artifact)
        return_direct = resolved.return_direct
        if return_direct is not NEVER and return_direct.applies(result):
            return attrs.evolve(result, return_direct=True)
        return result

    def _unknown_error(self, call: ToolCall) -> UnknownTool:
        names = tuple(self._entries)
        message = self._unknown_messages.get(call.name)
        if message is None:
            listed = ", ".join(names) or "none"
            message = (
                f"There is no tool named {call.name[:64]!r}{did_you_mean(call.name, names)}. "
                f"Available tools: {listed}."
            )
            if len(call.name) <= _MAX_NAME:
                if len(self._unknown_messages) >= _FOREIGN_CACHE:
                    self._unknown_messages.clear()
                self._unknown_messages[call.name] = message
        return UnknownTool(message, tool=call.name, available=names)

    def handle_result(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """The result of a successful call of a tool that ran elsewhere.

        The value becomes content as for one of this agent's tools (serialised,
        truncated per ``max_result_chars``), and ``return_direct`` is decided by the
        chain for that name. A value that cannot be serialised is a hidden failure.
        """
        entry = self._entries.get(call.name) or self._foreign_entry(call.name)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - a value's own serialiser may raise anything
            return self._handle(error, call, self._sync_resolved(entry, policy), entry.name, None)
        return self._success(call, entry.name, content, artifact, self._resolved(entry, policy))

    async def ahandle_result(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`handle_result` (async handlers allowed)."""
        entry = self._entries.get(call.name) or self._foreign_entry(call.name)
        resolved = self._resolved(entry, policy)
        try:
            content, artifact = to_content(value)
        except Exception as error:  # noqa: BLE001 - as above
            return await self._ahandle(error, call, resolved, entry.name, None)
        return self._success(call, entry.name, content, artifact, resolved)

    # --- failures ----------------------------------------------------------------

    def handle_error(
        self, call: ToolCall, error: BaseException, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Answer a failure of a tool that ran elsewhere (another library's tool).

        For integrations that run the tool themselves: the failure goes through the
        same chain as one of this agent's tools (call, override, tool when the name
        is one of ours, agent, global, built-in), is logged the same way, and the
        result is returned. Control flow and non-``Exception`` errors are re-raised.
        """
        if is_control_flow(error):
            raise error
        assert isinstance(error, Exception)
        entry = self._entries.get(call.name) or self._foreign_entry(call.name)
        return self._handle(error, call, self._sync_resolved(entry, policy), entry.name, None)

    async def ahandle_error(
        self, call: ToolCall, error: BaseException, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        if is_control_flow(error):
            raise error
        assert isinstance(error, Exception)
        entry = self._entries.get(call.name) or self._foreign_entry(call.name)
        resolved = self._resolved(entry, policy)
        return await self._ahandle(error, call, resolved, entry.name, None)

    def _handle(
        self,
        error: Exception,
        call: ToolCall,
        resolved: Resolved,
        name: str,
        step: Step | None,
        attempts: int = 1,
    ) -> ToolResult:
        failure = Failure(error, call, name, resolved, step, attempts)
        for setting in failure.chain:
            handler, context = setting.value, failure.context(setting)
            try:
                answer = handler(failure.error, context)
                if answer is not None:
                    answer = checked(answer, handler)
            except Exception as raised:
                failure.raised(raised, handler, context)
                raise
            if answer is not None:
                return failure.answered(answer, handler, context)
        raise AssertionError("the built-in handler never declines")  # pragma: no cover

    async def _ahandle(
        self,
        error: Exception,
        call: ToolCall,
        resolved: Resolved,
        name: str,
        step: Step | None,
        attempts: int = 1,
    ) -> ToolResult:
        failure = Failure(error, call, name, resolved, step, attempts)
        for setting in failure.chain:
            handler, context = setting.value, failure.context(setting)
            try:
                answer = await handler.acall(failure.error, context)
                if answer is not None:
                    answer = checked(answer, handler)
            except Exception as raised:
                failure.raised(raised, handler, context)
                raise
            if answer is not None:
                return failure.answered(answer, handler, context)
        raise AssertionError("the built-in handler never declines")  # pragma: no cover

    # --- rounds ------------------------------------------------------------------

    def run(
        self,
        calls: Iterable[ToolCall],
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
    ) -> Round:
        """Run a round of parallel calls: sync tools on this dispatcher's thread pool.

        A round with async tools runs on a new event loop (``asyncio.run``); inside
        a running loop, use :meth:`arun`.
        """
        return self._run(list(calls), policy, context, None)

    async def arun(
        self,
        calls: Iterable[ToolCall],
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
    ) -> Round:
        """Run a round concurrently: async tools as tasks, sync tools on the pool.

        Cancelling ``arun`` cancels the running tools.
        """
        return await self._arun(list(calls), policy, context, None)

    def _run(
        self, calls: list[ToolCall], policy: ToolPolicy | None, context: Any, step: Step | None
    ) -> Round:
        if any(self._is_async(call) for call in calls):
            _no_running_loop("this round")
            return asyncio.run(self._arun(calls, policy, context, step))
        if len(calls) <= 1:
            outcomes: list[ToolResult | BaseException] = []
            for call in calls:
                try:
                    outcomes.append(self._dispatch(call, policy, context, step))
                except ToolCallFailed as failed:
                    outcomes.append(failed)
            return assemble_round(calls, outcomes, self.return_direct_mode)
        pool = self._pool()
        futures: list[Future[ToolResult]] = [
            pool.submit(contextvars.copy_context().run, self._dispatch, call, policy, context, step)
            for call in calls
        ]
        try:
            _wait_all(futures)
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        outcomes = [outcome_of(future) for future in futures]
        return assemble_round(calls, outcomes, self.return_direct_mode)

    async def _arun(
        self, calls: list[ToolCall], policy: ToolPolicy | None, context: Any, step: Step | None
    ) -> Round:
        offload = len(calls) > 1
        gathered = await asyncio.gather(
            *(self._adispatch(call, policy, context, step, offload) for call in calls),
            return_exceptions=True,
        )
        return assemble_round(calls, list(gathered), self.return_direct_mode)

    def _is_async(self, call: ToolCall) -> bool:
        entry = self._entries.get(call.name)
        return entry is not None and entry.is_async

    # --- the thread pool -----------------------------------------------------------

    def _pool(self) -> ThreadPoolExecutor:
        executor = self._executor
        if executor is None:
            executor = self._new_pool("_executor", "toolguard")
        return executor

    def _timeout_pool(self) -> ThreadPoolExecutor:
        """Sync tools with a timeout run here: apart from the round pool, so a round
        whose calls wait on timed attempts can never starve itself."""
        executor = self._timeouts
        if executor is None:
            executor = self._new_pool("_timeouts", "toolguard-timeout")
        return executor

    def _new_pool(self, attribute: str, prefix: str) -> ThreadPoolExecutor:
        with self._lock:  # two first rounds at once must not make two pools
            executor: ThreadPoolExecutor | None = getattr(self, attribute)
            if executor is None:
                executor = ThreadPoolExecutor(
                    max_workers=self._max_workers, thread_name_prefix=prefix
                )
                weakref.finalize(self, executor.shutdown, wait=False)
                setattr(self, attribute, executor)
            return executor

    def close(self, *, wait: bool = True) -> None:
        """Shut the thread pools down. Idempotent.

        ``wait=True`` waits for running tools; a sync tool abandoned by its timeout
        is still running and is waited for too (pass ``wait=False`` not to).
        """
        with self._lock:
            executors = (self._executor, self._timeouts)
            self._executor = self._timeouts = None
        for executor in executors:
            if executor is not None:
                executor.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dispatcher(tools=[{', '.join(self._entries)}])"


def is_glob(pattern: str) -> bool:
    """Whether an override key is a glob (``*``, ``?`` or ``[``) rather than a name."""
    return _GLOB_CHARS.search(pattern) is not None


def glob_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a usable tool-name glob, or ``None`` when it is."""
    depth_open = None
    for index, char in enumerate(pattern):
        if char == "[" and depth_open is None:
            depth_open = index
        elif char == "]" and depth_open is not None and index > depth_open + 1:
            depth_open = None
    if depth_open is not None:
        return f"'[' at position {depth_open} is never closed; use [abc] or [!abc]"
    return None


def _first_setting(policies: Iterable[AgentPolicy], name: str, default: Any) -> Setting:
    """A round setting: the first policy that sets it (a file's before the code's)."""
    for policy in policies:
        value = getattr(policy, name)
        if value is not UNSET:
            return Setting(value, "agent", policy.source)
    return Setting(default, "builtin")


def _unset_to_none(value: Any) -> Any:
    return None if value is UNSET else value


def _wait_all(futures: Sequence[Future[ToolResult]]) -> None:
    """Wait for a round's calls; an interrupt from any of them, or of this thread
    (``KeyboardInterrupt``, even ``_thread.interrupt_main()``), stops it at once."""
    pending: set[Future[ToolResult]] = set(futures)
    while pending:
        done, pending = futures_wait(pending, timeout=0.1, return_when=FIRST_COMPLETED)
        for future in done:
            error = future.exception()
            if isinstance(error, KeyboardInterrupt | SystemExit):
                raise error


def _inline(entry: _Entry, resolved: Resolved) -> bool:
    """Whether the sync path may call the tool as it is, with no check or thread."""
    return not entry.is_async and resolved.timeout is None and not resolved.is_async


def _boxed(function: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[bool, Any]:
    try:
        return True, function(*args, **kwargs)
    except BaseException as error:  # noqa: BLE001 - re-raised, intact, on the loop
        return False, error


def _no_running_loop(what: str) -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"{what} needs an event loop, and this thread is already running one; "
        "use await adispatch()/arun() instead"
    )


def _never_called(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover
    raise AssertionError("the unknown-tool entry never runs a function")
