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
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Final

import attrs

from toolguard import _config
from toolguard._decorator import BoundTool, Tool, tool
from toolguard._logging import (
    EVENT_FAILED,
    EVENT_HANDLER_RAISED,
    EVENT_HIDDEN,
    arguments_for_log,
    emit,
    new_error_id,
)
from toolguard._suggest import did_you_mean
from toolguard.errors import (
    ToolCallFailed,
    ToolDefinitionError,
    UnknownTool,
    has_hidden_cause,
    is_control_flow,
    model_message,
)
from toolguard.handlers import Handler, HandlerContext
from toolguard.policy import (
    BUILTIN_MESSAGE,
    NEVER,
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
from toolguard.results import Content, Image, Round, Text, ToolCall, ToolResult, to_content
from toolguard.schema import Arguments

__all__ = ["Dispatcher"]

TRUNCATED: Final = (
    "\n[toolguard: output truncated: showing the first {shown} of {total} characters]"
)
_GLOB_CHARS: Final = re.compile(r"[*?\[]")
_FOREIGN_CACHE: Final = 256


@attrs.define(slots=True)
class _Entry:
    """One tool as this dispatcher runs it; ``resolved`` is cached per config version."""

    name: str
    function: Callable[..., Any]
    arguments: Arguments
    is_async: bool
    layers: tuple[Layer, ...]
    resolved: Resolved | None = None
    version: int = -1


class Dispatcher:
    """One agent's tools plus its agent-wide defaults.

    ``Dispatcher(tools, *, on_error=..., return_direct=..., log_level=..., redact=...,
    overrides={name_or_glob: ToolPolicy(...)}, return_direct_mode="any", max_workers=32)``

    The policy options are the agent default level; ``overrides`` is the agent
    override level (an exact name beats a glob; among globs the first declared
    wins). Tools may be ``@tool`` functions, tools bound to an instance
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
        self.return_direct_mode: ReturnDirectMode = _first(
            [p.return_direct_mode for p in self._policies], "any"
        )
        self._max_workers: int = _first([p.max_workers for p in self._policies], 32)
        self._executor: ThreadPoolExecutor | None = None
        self._tools: dict[str, Tool[..., Any] | BoundTool[..., Any]] = {}
        for candidate in tools:
            self._add(candidate)
        self._overrides = self._check_overrides()
        self._agent_layers = tuple(
            Layer("agent", p.defaults, p.source)
            for p in self._policies
            if not p.defaults.is_empty()
        )
        self._entries = {name: self._entry(name, t) for name, t in self._tools.items()}
        self._foreign: dict[str, _Entry] = {}

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
                layer = Layer("override", policy, f"{prefix}overrides[{key!r}]")
                if _GLOB_CHARS.search(key):
                    problem = glob_problem(key)
                    if problem:
                        raise ToolDefinitionError(
                            f"{prefix}overrides[{key!r}]: bad glob: {problem}"
                        )
                    globs.append((key, layer, re.compile(fnmatch.translate(key))))
                elif key in self._tools:
                    exact.append((key, layer, None))
                elif agent_policy.source is None:
                    # In code, a name that matches no tool is a typo; a policy file
                    # may serve several agents, so there it is allowed.
                    tools = ", ".join(self._tools) or "none"
                    raise ToolDefinitionError(
                        f"overrides[{key!r}] names no tool of this agent"
                        f"{did_you_mean(key, self._tools)}; tools: {tools}"
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
        return _Entry(
            name=name,
            function=t.__wrapped__,
            arguments=t.spec.arguments,
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
        return self._resolved(entry, policy).explain()

    def _resolved(self, entry: _Entry, policy: ToolPolicy | None) -> Resolved:
        if entry.version != _config._version:
            version = _config._version
            entry.resolved = resolve((*entry.layers, Layer("global", _config._policy)))
            entry.version = version
        if policy is None:
            return entry.resolved  # type: ignore[return-value]
        if not isinstance(policy, ToolPolicy):
            raise TypeError(f"policy= takes a ToolPolicy, got {policy!r}")
        return resolve((Layer("call", policy), *entry.layers, Layer("global", _config._policy)))

    def _sync_resolved(self, entry: _Entry, policy: ToolPolicy | None) -> Resolved:
        resolved = self._resolved(entry, policy)
        if resolved.is_async:
            setting = resolved.async_handler()
            assert setting is not None
            raise TypeError(
                f"tool {entry.name!r}: handler {setting.value.name} at level "
                f"{setting.level!r} is async; use adispatch()/arun(), or give a sync handler"
            )
        return resolved

    # --- one call ----------------------------------------------------------------

    def dispatch(
        self, call: ToolCall, *, policy: ToolPolicy | None = None, context: Any = None
    ) -> ToolResult:
        """Run one call, synchronously, on this thread. Always returns a result,
        unless a handler fails the invocation (``ToolCallFailed``) or the failure is
        control flow."""
        entry = self._entries.get(call.name)
        if entry is None:
            resolved = self._sync_resolved(self._foreign_entry(call.name), policy)
            return self._handle(self._unknown_error(call), call, resolved)
        resolved = self._sync_resolved(entry, policy)
        if entry.is_async:
            _no_running_loop(entry.name)
        try:
            args, kwargs = entry.arguments.bind(call, context)
            value = entry.function(*args, **kwargs)
            if entry.is_async:
                value = asyncio.run(value)
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            return self._handle(error, call, resolved, entry.name)
        return self._success(call, entry.name, content, artifact, resolved)

    async def adispatch(
        self, call: ToolCall, *, policy: ToolPolicy | None = None, context: Any = None
    ) -> ToolResult:
        """Run one call on the running event loop (a sync tool runs inline)."""
        return await self._adispatch(call, policy, context, offload=False)

    async def _adispatch(
        self, call: ToolCall, policy: ToolPolicy | None, context: Any, *, offload: bool
    ) -> ToolResult:
        entry = self._entries.get(call.name)
        if entry is None:
            resolved = self._resolved(self._foreign_entry(call.name), policy)
            return await self._ahandle(self._unknown_error(call), call, resolved)
        resolved = self._resolved(entry, policy)
        try:
            args, kwargs = entry.arguments.bind(call, context)
            if entry.is_async:
                value = await entry.function(*args, **kwargs)
            elif offload:
                run = contextvars.copy_context().run
                value = await asyncio.get_running_loop().run_in_executor(
                    self._pool(), functools.partial(run, entry.function, *args, **kwargs)
                )
            else:
                value = entry.function(*args, **kwargs)
            content, artifact = to_content(value)
        except Exception as error:
            if is_control_flow(error):
                raise
            return await self._ahandle(error, call, resolved, entry.name)
        return self._success(call, entry.name, content, artifact, resolved)

    def _success(
        self, call: ToolCall, name: str, content: Any, artifact: Any, resolved: Resolved
    ) -> ToolResult:
        if resolved.max_result_chars is not None:
            content = _truncate(content, resolved.max_result_chars)
        result = ToolResult(call_id=call.id, name=name, content=content, artifact=artifact)
        return_direct = resolved.return_direct
        if return_direct is not NEVER and return_direct.applies(result):
            return attrs.evolve(result, return_direct=True)
        return result

    def _unknown_error(self, call: ToolCall) -> UnknownTool:
        names = tuple(self._entries)
        listed = ", ".join(names) or "none"
        return UnknownTool(
            f"There is no tool named '{call.name[:64]}'{did_you_mean(call.name, names)}. "
            f"Available tools: {listed}.",
            tool=call.name,
            available=names,
        )

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
        return self._handle(error, call, self._sync_resolved(entry, policy), entry.name)

    async def ahandle_error(
        self, call: ToolCall, error: BaseException, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        if is_control_flow(error):
            raise error
        assert isinstance(error, Exception)
        entry = self._entries.get(call.name) or self._foreign_entry(call.name)
        return await self._ahandle(error, call, self._resolved(entry, policy), entry.name)

    def _handle(
        self, error: Exception, call: ToolCall, resolved: Resolved, name: str = ""
    ) -> ToolResult:
        failure = _Failure(error, call, name or call.name, resolved)
        for handler, context in failure.asks():
            try:
                answer = handler(error, context)
            except Exception as raised:
                failure.raised(raised, handler, context)
                raise
            if answer is not None:
                return failure.answered(answer, handler, context)
        raise AssertionError("the built-in handler never declines")  # pragma: no cover

    async def _ahandle(
        self, error: Exception, call: ToolCall, resolved: Resolved, name: str = ""
    ) -> ToolResult:
        failure = _Failure(error, call, name or call.name, resolved)
        for handler, context in failure.asks():
            try:
                answer = await handler.acall(error, context)
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
        calls = list(calls)
        if any(self._is_async(call) for call in calls):
            _no_running_loop("this round")
            return asyncio.run(self.arun(calls, policy=policy, context=context))
        if len(calls) <= 1:
            outcomes: list[ToolResult | BaseException] = []
            for call in calls:
                try:
                    outcomes.append(self.dispatch(call, policy=policy, context=context))
                except ToolCallFailed as failed:
                    outcomes.append(failed)
            return self._round(calls, outcomes)
        pool = self._pool()
        futures: list[Future[ToolResult]] = [
            pool.submit(
                contextvars.copy_context().run,
                functools.partial(self.dispatch, call, policy=policy, context=context),
            )
            for call in calls
        ]
        try:
            outcomes = [_outcome(future) for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise
        return self._round(calls, outcomes)

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
        calls = list(calls)
        offload = len(calls) > 1
        gathered = await asyncio.gather(
            *(self._adispatch(call, policy, context, offload=offload) for call in calls),
            return_exceptions=True,
        )
        return self._round(calls, list(gathered))

    def _is_async(self, call: ToolCall) -> bool:
        entry = self._entries.get(call.name)
        return entry is not None and entry.is_async

    def _round(
        self, calls: Sequence[ToolCall], outcomes: Sequence[ToolResult | BaseException]
    ) -> Round:
        """Assemble a round; then raise the first propagating failure, if any."""
        results: list[ToolResult] = []
        first: BaseException | None = None
        for call, outcome in zip(calls, outcomes, strict=True):
            if isinstance(outcome, ToolResult):
                results.append(outcome)
                continue
            if first is None:
                first = outcome
            if isinstance(outcome, ToolCallFailed):
                text = BUILTIN_MESSAGE.replace("{tool}", outcome.tool).replace(
                    "{error_id}", outcome.error_id
                )
                results.append(
                    ToolResult(
                        call_id=call.id,
                        name=call.name,
                        content=text,
                        is_error=True,
                        error_id=outcome.error_id,
                    )
                )
            else:
                results.append(
                    ToolResult(call_id=call.id, name=call.name, content="", is_error=True)
                )
        stops = [result.return_direct for result in results]
        stop = bool(stops) and (all(stops) if self.return_direct_mode == "all" else any(stops))
        final = next((r for r in results if r.return_direct), None) if stop else None
        round_ = Round(results=tuple(results), stop=stop, final=final)
        if first is not None:
            if isinstance(first, ToolCallFailed):
                first.round = round_
            raise first
        return round_

    # --- the thread pool -----------------------------------------------------------

    def _pool(self) -> ThreadPoolExecutor:
        if self._executor is None:
            self._executor = ThreadPoolExecutor(
                max_workers=self._max_workers, thread_name_prefix="toolguard"
            )
            weakref.finalize(self, self._executor.shutdown, wait=False)
        return self._executor

    def close(self) -> None:
        """Shut the thread pool down (waiting for running tools). Idempotent."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dispatcher(tools=[{', '.join(self._entries)}])"


class _Failure:
    """One failure on its way through the handler chain (shared by sync and async)."""

    __slots__ = ("call", "error", "error_id", "message", "name", "resolved")

    def __init__(self, error: Exception, call: ToolCall, name: str, resolved: Resolved) -> None:
        self.error = error
        self.call = call
        self.name = name
        self.resolved = resolved
        self.error_id = new_error_id()
        self.message = model_message(error, name)

    def asks(self) -> Iterable[tuple[Handler, HandlerContext]]:
        for setting in self.resolved.chain:
            yield (
                setting.value,
                HandlerContext(
                    call=self.call,
                    tool=self.name,
                    error_id=self.error_id,
                    level=setting.level,
                    model_message=self.message,
                ),
            )

    def _fields(self, handler: Handler, context: HandlerContext) -> dict[str, Any]:
        return {
            "tool": self.name,
            "call_id": self.call.id,
            "answered_by": context.level,
            "handler": handler.name,
            "error_type": type(self.error).__name__,
            "arguments": arguments_for_log(self.call.arguments, self.resolved.redact),
            "exc_info": self.error,
        }

    def answered(self, answer: Any, handler: Handler, context: HandlerContext) -> ToolResult:
        content = _checked(answer, handler)
        if self.resolved.max_result_chars is not None:
            content = _truncate(content, self.resolved.max_result_chars)
        hidden = self.message is None or content != self.message or has_hidden_cause(self.error)
        if hidden:
            emit(
                self.resolved.log_level,
                EVENT_HIDDEN,
                error_id=self.error_id,
                **self._fields(handler, context),
            )
        result = ToolResult(
            call_id=self.call.id,
            name=self.name,
            content=content,
            is_error=True,
            error_id=self.error_id if hidden else None,
        )
        return_direct = self.resolved.return_direct
        if return_direct is not NEVER and return_direct.applies(result):
            return attrs.evolve(result, return_direct=True)
        return result

    def raised(self, raised: Exception, handler: Handler, context: HandlerContext) -> None:
        """A handler raised: log once, and keep the original failure reachable."""
        if isinstance(raised, ToolCallFailed):
            if raised.__cause__ is None:
                raised.__cause__ = self.error
            emit("error", EVENT_FAILED, error_id=raised.error_id, **self._fields(handler, context))
            return
        if is_control_flow(raised):
            return
        emit(
            "error",
            EVENT_HANDLER_RAISED,
            error_id=self.error_id,
            handler_error=type(raised).__name__,
            **self._fields(handler, context),
        )
        if raised.__cause__ is None and raised.__context__ is None:
            raised.__context__ = self.error


def _checked(answer: Any, handler: Handler) -> str | tuple[Any, ...]:
    if isinstance(answer, str):
        return answer
    if (
        isinstance(answer, list | tuple)
        and answer
        and all(isinstance(block, Text | Image) for block in answer)
    ):
        return tuple(answer)
    raise TypeError(
        f"handler {handler.name} answered {type(answer).__name__}; a handler answers "
        "with a str, content blocks, or None (not mine)"
    )


def _truncate(content: Content, limit: int) -> Content:
    """Cut text longer than ``limit`` characters, telling the model it was cut."""
    if isinstance(content, str):
        if len(content) <= limit:
            return content
        return content[:limit] + TRUNCATED.format(shown=limit, total=len(content))
    return tuple(
        Text(text=_truncate(block.text, limit))  # type: ignore[arg-type]
        if isinstance(block, Text) and len(block.text) > limit
        else block
        for block in content
    )


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


def _first(values: Iterable[Any], default: Any) -> Any:
    return next((value for value in values if value is not UNSET), default)


def _outcome(future: Future[ToolResult]) -> ToolResult | BaseException:
    try:
        return future.result()
    except ToolCallFailed as failed:
        return failed
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt | SystemExit):
            raise
        return error


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
