"""The guard half of the core: what the model is told about one call, and what is logged.

Given a tool's name, its call and an exception (or a value that came back), the
guard resolves the precedence chain for that name, asks the handlers in order,
logs a hidden cause once, and builds the :class:`~toolguard.ToolResult`. It runs
nothing and keeps no conversation's state: the runner (``toolguard.runner``) runs the
tools, keeps the session's books around the chain, and hands every outcome here,
those of tools another framework ran included.

The handler chain is written twice, as twins that differ only in how a handler is
asked (``handler(...)`` or ``await handler.acall(...)``); everything else about a
failure is :class:`~toolguard.guard._failure.Failure`'s.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol

import attrs

from toolguard._engine import new_lock
from toolguard._suggest import Names, did_you_mean
from toolguard._text import NAME_LIMIT
from toolguard._values import Content, ToolCall, ToolResult
from toolguard.errors import RemoteFailure, ToolDefinitionError, UnknownTool
from toolguard.guard._content import checked, truncate
from toolguard.guard._failure import Failure, asks_to_stop
from toolguard.guard._remote import books_visible, crossed, remote
from toolguard.policy import _config
from toolguard.policy._agent import AgentPolicy
from toolguard.policy._precedence import Layer, Overrides, Resolved, Setting, is_glob, resolve
from toolguard.policy._resilience import Breaker
from toolguard.policy._values import NEVER, ToolPolicy
from toolguard.telemetry import _spans as _telemetry
from toolguard.telemetry import _switch

__all__ = ["Books", "Guard", "Rules"]

_FOREIGN_CACHE: Final = 256


@functools.lru_cache(maxsize=16)
def _names_of(available: tuple[str, ...]) -> Names:
    """The did-you-mean index of a framework's tool names (a few sets per process)."""
    return Names(available)


class Books(Protocol):
    """What keeps a conversation's books around a failure's handler chain: a session's
    step (``toolguard.sessions``). The guard calls it; it decides nothing about it."""

    def before(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Before the chain: spend what the failure costs; the error the chain sees."""
        ...

    def after(self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool) -> None:
        """After the chain: record the outcome."""
        ...

    async def abefore(self, error: Exception, tool: str, resolved: Resolved) -> Exception:
        """Async :meth:`before`."""
        ...

    async def aafter(
        self, tool: str, breaker: Breaker | None, error: Exception, *, visible: bool
    ) -> None:
        """Async :meth:`after`."""
        ...


_UNRESOLVED: Final = resolve(())


class Rules:
    """The precedence levels that apply to one tool name, and their resolution.

    ``resolved`` is cached with the version of the global defaults it was resolved
    under (see :meth:`Guard.resolved`). ``derive``, when set (the runner sets it on
    its own tools' rules), computes what else is kept with a resolution (the runner's
    plan), as ``derived``: one cache, one version, one lock for both.
    """

    __slots__ = ("derive", "derived", "layers", "name", "resolved", "version")

    def __init__(self, name: str, layers: tuple[Layer, ...]) -> None:
        self.name = name
        self.layers = layers
        self.resolved: Resolved = _UNRESOLVED  # never read before the first resolution
        self.derive: Callable[[Resolved], object] | None = None
        self.derived: Any = None
        self.version = -2  # below any config version: resolve on first use


class Guard:
    """One agent's policy applied to calls: the levels, the chain, the answer.

    ``policies`` are the agent's policies, a policy file's first (the later word);
    ``tools`` maps each of the agent's own tools to the policy its author wrote;
    ``external`` names tools that run elsewhere, so that overrides may name them.
    """

    def __init__(
        self,
        policies: tuple[AgentPolicy, ...],
        tools: Mapping[str, ToolPolicy],
        external: Iterable[str] = (),
        *,
        telemetry: bool | None = None,
    ) -> None:
        self.external = frozenset(external)
        self.telemetry = _switch.switch(telemetry)  # .on: whether to trace now
        self.names = tuple(tools)
        self._names = Names(self.names)
        self._lock = new_lock()  # not threading.Lock(): a workflow may make a dispatcher
        self._overrides = self._read_overrides(policies, tools)
        self._agent = tuple(
            Layer("agent", p.defaults, p.source) for p in policies if not p.defaults.is_empty()
        )
        self._rules = {
            name: Rules(name, (*self._overrides.layers(name), Layer("tool", policy), *self._agent))
            for name, policy in tools.items()
        }
        self._foreign: dict[str, Rules] = {}
        self._unmatched = Rules("", self._agent)  # resolved once for every name no override names
        self._unknown_messages: dict[str, str] = {}

    def _read_overrides(
        self, policies: tuple[AgentPolicy, ...], tools: Mapping[str, ToolPolicy]
    ) -> Overrides:
        overrides = Overrides()
        for agent_policy in policies:
            prefix = f"{agent_policy.source}: " if agent_policy.source else ""
            for key, policy in agent_policy.overrides.items():
                where = f'tools."{key}"' if agent_policy.source else f"overrides[{key!r}]"
                layer = Layer("override", policy, f"{prefix}{where}")
                known = key in tools or key in self.external
                if not known and agent_policy.source is None and not is_glob(key):
                    # In code, a name that matches no tool is a typo; a policy file
                    # may serve several agents, so there it is allowed.
                    listed = ", ".join(tools) or "none"
                    raise ToolDefinitionError(
                        f"overrides[{key!r}] names no tool of this agent"
                        f"{did_you_mean(key, tools)}; tools: {listed}. A tool that "
                        "runs elsewhere (another library's) goes in external_tools=[...]"
                    )
                try:
                    overrides.add(key, layer)
                except ValueError as error:
                    raise ToolDefinitionError(f"{prefix}overrides[{key!r}]: {error}") from None
        return overrides

    # --- the levels of one name ----------------------------------------------------

    def rules(self, name: str) -> Rules:
        """The levels for ``name``: one of the agent's tools, or any other name.

        Another name (an unknown tool, another library's tool) gets the overrides that
        match it and the agent level. Those are kept in a bounded cache, so random
        names from a model cannot grow it without end.
        """
        rules = self._rules.get(name) or self._foreign.get(name)
        if rules is None:
            matched = self._overrides.layers(name)
            if matched:
                rules = Rules(name, (*matched, *self._agent))
            else:  # the agent level alone: its resolution is shared, not redone per name
                shared = self._unmatched
                if shared.version != _config._version:
                    self._refresh(shared)
                rules = Rules(name, shared.layers)
                rules.version = shared.version  # read first: a newer resolution is only redone
                rules.resolved = shared.resolved
            if len(name) <= NAME_LIMIT:  # a longer name is no tool's: not worth keeping
                if len(self._foreign) >= _FOREIGN_CACHE:
                    self._foreign.clear()
                self._foreign[name] = rules
        return rules

    def resolved(
        self, rules: Rules, policy: ToolPolicy | None = None, tool: ToolPolicy | None = None
    ) -> Resolved:
        """The chain for ``rules`` under the current global defaults; with ``policy``, a
        call level, and with ``tool``, a framework's own setting for a tool it runs, at
        the tool level after the tool's own (both resolved for this call only)."""
        if policy is not None or tool is not None:
            layers = [*rules.layers, Layer("global", _config._policy)]
            if policy is not None:
                if not isinstance(policy, ToolPolicy):
                    raise TypeError(f"policy= takes a ToolPolicy, got {policy!r}")
                layers.insert(0, Layer("call", policy))
            if tool is not None:
                layers.append(Layer("tool", tool, "the framework's own setting"))
            return resolve(layers)
        if rules.version != _config._version:
            self._refresh(rules)
        return rules.resolved

    def _refresh(self, rules: Rules) -> None:
        """Resolve under the current global defaults. Versions only move forward, so a
        slow thread can never leave an older chain cached under a newer version."""
        version, global_policy = _config.snapshot()
        resolved = resolve((*rules.layers, Layer("global", global_policy)))
        derived = None if rules.derive is None else rules.derive(resolved)
        with self._lock:
            if rules.version >= version:
                return
            rules.resolved, rules.derived = resolved, derived
            rules.version = version  # readers check the version first: set it last

    def explain(
        self, name: str, *, policy: ToolPolicy | None = None, foreign: bool = False
    ) -> dict[str, Setting | tuple[Setting, ...]]:
        """Each setting of ``name`` and the level that supplied it (see ``Dispatcher.explain``)."""
        rules = self._rules.get(name)
        if rules is None:
            if not foreign and name not in self.external:
                known = (*self.names, *sorted(self.external))
                raise KeyError(
                    f"no tool named {name!r}{did_you_mean(name, known)}; "
                    f"tools: {', '.join(self.names) or 'none'}"
                    + (
                        f"; guarded elsewhere: {', '.join(sorted(self.external))}"
                        if self.external
                        else ""
                    )
                )
            rules = self.rules(name)
        return self.resolved(rules, policy).explain()

    def check_sync(self, name: str, resolved: Resolved) -> None:
        """The sync path cannot await: refuse a chain with an async handler."""
        setting = resolved.async_handler() if resolved.is_async else None
        if setting is not None:
            raise TypeError(
                f"tool {name!r}: handler {setting.value.name} at level "
                f"{setting.level!r} is async; use adispatch()/arun(), or give a sync handler"
            )

    # --- answers -----------------------------------------------------------------------

    def failed(
        self,
        error: Exception,
        call: ToolCall,
        resolved: Resolved,
        name: str,
        books: Books | None = None,
        attempts: int = 1,
    ) -> ToolResult:
        """Ask the chain about ``error`` (sync handlers only); the first answer wins.

        ``books`` (a session's step) keeps the conversation's books: it is told once
        before the chain (it may spend the model-retry budget, and change the error the
        chain sees) and once after (the outcome, for the breaker), however the chain
        answered, even by raising. A :class:`~toolguard.RemoteFailure` was answered where
        the tool ran: its answer is given as it crossed, and counted.
        """
        error = crossed(error, name)
        if isinstance(error, RemoteFailure):
            try:
                return remote(error, call, resolved, name)
            finally:
                visible = books_visible(error)
                if books is not None and visible is not None:
                    books.after(name, resolved.breaker, error, visible=visible)
        seen = error if books is None else books.before(error, name, resolved)
        failure = Failure(seen, call, name, resolved, attempts, self.telemetry.on, error)
        try:
            for setting in failure.chain:
                handler, context = setting.value, failure.context(setting)
                try:
                    answer = handler(failure.error, context)
                    if answer is not None:
                        answer = checked(answer, handler.name)
                except Exception as raised:
                    failure.raised(raised, handler, context)
                    raise
                if answer is not None:
                    return failure.answered(answer, handler, context)
            raise AssertionError("the built-in handler never declines")  # pragma: no cover
        finally:
            if books is not None:
                books.after(name, resolved.breaker, error, visible=failure.message is not None)

    async def afailed(
        self,
        error: Exception,
        call: ToolCall,
        resolved: Resolved,
        name: str,
        books: Books | None = None,
        attempts: int = 1,
    ) -> ToolResult:
        """Async :meth:`failed`: async handlers are awaited, and the books' twins too."""
        error = crossed(error, name)
        if isinstance(error, RemoteFailure):
            try:
                return remote(error, call, resolved, name)
            finally:
                visible = books_visible(error)
                if books is not None and visible is not None:
                    await books.aafter(name, resolved.breaker, error, visible=visible)
        seen = error if books is None else await books.abefore(error, name, resolved)
        failure = Failure(seen, call, name, resolved, attempts, self.telemetry.on, error)
        try:
            for setting in failure.chain:
                handler, context = setting.value, failure.context(setting)
                try:
                    answer = await handler.acall(failure.error, context)
                    if answer is not None:
                        answer = checked(answer, handler.name)
                except Exception as raised:
                    failure.raised(raised, handler, context)
                    raise
                if answer is not None:
                    return failure.answered(answer, handler, context)
            raise AssertionError("the built-in handler never declines")  # pragma: no cover
        finally:
            if books is not None:
                await books.aafter(
                    name, resolved.breaker, error, visible=failure.message is not None
                )

    def succeeded(
        self,
        call: ToolCall,
        name: str,
        content: Content,
        artifact: object,
        resolved: Resolved,
        value: object = None,
    ) -> ToolResult:
        """The result of a success: truncated per ``max_result_chars``, ``return_direct``
        decided by the chain; ``value`` is what the tool returned."""
        cut = False
        if resolved.max_result_chars is not None:
            whole = content
            content = truncate(content, resolved.max_result_chars)
            cut = content is not whole
        result = ToolResult(
            call_id=call.id,
            name=name,
            content=content,
            artifact=artifact,
            truncated=cut,
            value=value,
        )
        return_direct = resolved.return_direct
        if return_direct is not NEVER and asks_to_stop(return_direct, result):
            result = attrs.evolve(result, return_direct=True)
        if self.telemetry.on:  # a span of its own, unless the runner has one open for the call
            _telemetry.succeeded(call, name, result)
        return result

    def unknown_tool(
        self, call: ToolCall, name: str, available: tuple[str, ...] | None = None
    ) -> UnknownTool:
        """The model-visible error for a call of a tool this agent does not have.

        ``name`` is the call's name as toolguard may echo it (:func:`~toolguard._text.shown`).
        ``available`` names the tools that do exist when they are not this agent's own
        (a framework's tools, guarded in place); by default the agent's tools.
        """
        if available is not None:  # never the called name itself: a framework that
            # lists a tool it then refuses (FastMCP's auth) said "unknown" of it
            others = tuple(known for known in available if known != call.name)
            return self._unknown(call, name, _names_of(others))
        message = self._unknown_messages.get(name)
        if message is None:
            message = self._unknown_message(call, name, self._names)
            if len(name) <= NAME_LIMIT:
                if len(self._unknown_messages) >= _FOREIGN_CACHE:
                    self._unknown_messages.clear()
                self._unknown_messages[name] = message
        return UnknownTool(message, tool=name, available=self.names)

    def _unknown(self, call: ToolCall, name: str, known: Names) -> UnknownTool:
        message = self._unknown_message(call, name, known)
        return UnknownTool(message, tool=name, available=known.names)

    @staticmethod
    def _unknown_message(call: ToolCall, name: str, known: Names) -> str:
        """The one wording of an unknown tool's answer: the name (as toolguard may echo
        it), the closest tool, and the tools there are (bounded)."""
        listed = known.listing
        if type(call.name) is str:
            hint = known.did_you_mean(call.name[:NAME_LIMIT])
            return f"There is no tool named '{name}'{hint}. Available tools: {listed}."
        return f"A tool call names its tool with a string, not {name}. Available tools: {listed}."
