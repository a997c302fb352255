"""The Dispatcher: one agent's tools and defaults, the public face of the core.

    Dispatcher ─┬─▶ Guard    (guard/)    the precedence chain, handlers, hidden-cause log
                ├─▶ Runner   (runner/)   bind, validate, run, retry, breakers ─▶ the guard
                │     └─▶ Foreign        answers for tools that run elsewhere
                ├─▶ Rounds   (runner/)   parallel calls through the runner
                └─▶ Sessions (sessions/) named conversations, found again by id

It reads its own options into an agent policy (a policy file's is the later word),
builds the parts from the tools and policies, and forwards each call. Control-flow
signals and non-``Exception`` ``BaseException``s never enter the handler chain: they
propagate exactly as raised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from typing_extensions import Unpack

from toolguard import _engine
from toolguard._misuse import check_calls, check_tools, not_a_call
from toolguard._scope import Scope
from toolguard._session import Session, workflow_session
from toolguard._tool import AnyTool, runner_for, tool_table
from toolguard._values import Round, ToolCall, ToolResult
from toolguard.errors import InvalidOption, ToolDefinitionError
from toolguard.guard._guard import Guard
from toolguard.policy._agent import AGENT_DEFAULTS, AgentPolicy, ReturnDirectMode, code_options
from toolguard.policy._precedence import Setting
from toolguard.policy._values import (
    UNSET,
    PolicyOptions,
    ToolPolicy,
    policy_from_options,
)
from toolguard.runner._rounds import Rounds, assemble_round, round_stops
from toolguard.sessions._named import Sessions
from toolguard.sessions._steps import Opens
from toolguard.telemetry import _switch as _telemetry

__all__ = ["Dispatcher"]


_OPTIONS: Final = (
    "policy",
    "overrides",
    "return_direct_mode",
    "max_workers",
    "max_abandoned",
    "telemetry",
    "external_tools",
)
"""``Dispatcher()``'s own options, beside the policy fields (named in a bad option's error)."""


class Dispatcher:
    """One agent's tools plus its agent-wide defaults.

    ``Dispatcher(tools, *, on_error=..., return_direct=..., log_level=..., redact=...,
    overrides={name_or_glob: ToolPolicy(...)}, return_direct_mode="any", max_workers=32,
    max_abandoned=4)``

    The policy options are the agent default level; ``overrides`` is the agent
    override level (an exact name is asked before globs; matching globs are asked
    in the order declared). ``external_tools`` names tools that run elsewhere
    (another library's, answered with :meth:`handle_error`/:meth:`handle_result`) so
    that overrides may name them exactly. ``policy`` is an
    :class:`~toolguard.AgentPolicy` (a policy file's, :func:`~toolguard.load_policy`),
    the later word over what is passed in code. ``max_workers`` is the round pool's
    size; ``max_abandoned`` bounds, per tool, the attempts left running past their
    timeout (a thread cannot be killed) before the tool is answered "unavailable"
    without running. ``telemetry=True``/``False`` puts this agent's calls in
    OpenTelemetry spans, or keeps them out, whatever ``configure(telemetry=)`` says
    (unset: as it says; docs/telemetry.md). Tools may be ``@tool`` functions,
    tools bound to an instance (``obj.method``), or plain functions (decorated on
    the fly).
    """

    def __init__(
        self,
        tools: Iterable[Callable[..., Any]],
        *,
        policy: AgentPolicy | None = None,
        overrides: Mapping[str, ToolPolicy] | None = None,
        return_direct_mode: ReturnDirectMode | None = None,
        max_workers: int | None = None,
        max_abandoned: int | None = None,
        telemetry: bool | None = None,
        external_tools: Iterable[str] = (),
        **defaults: Unpack[PolicyOptions],
    ) -> None:
        try:
            code = AgentPolicy(
                defaults=policy_from_options(defaults, where="Dispatcher()", also=_OPTIONS),
                overrides=overrides or {},
                return_direct_mode=UNSET if return_direct_mode is None else return_direct_mode,
                max_workers=UNSET if max_workers is None else max_workers,
                max_abandoned=UNSET if max_abandoned is None else max_abandoned,
                telemetry=UNSET if telemetry is None else telemetry,
            )
        except InvalidOption as error:
            raise InvalidOption(
                f"Dispatcher(): {str(error).removeprefix('Dispatcher(): ')}"
            ) from None
        if policy is not None and not isinstance(policy, AgentPolicy):
            raise ToolDefinitionError(
                f"policy= takes an AgentPolicy (see toolguard.load_policy), got {policy!r}"
            )
        # The policy (a file) is the later word: its entries come first at each level.
        self._policies = (code,) if policy is None else (policy, code)
        self._round_settings = {
            name: _first_setting(self._policies, name, default)
            for name, default in AGENT_DEFAULTS.items()
        }
        self.return_direct_mode: ReturnDirectMode = self._round_settings["return_direct_mode"].value
        self.max_workers: int = self._round_settings["max_workers"].value
        self.max_abandoned: int = self._round_settings["max_abandoned"].value
        check_tools(tools, Dispatcher)
        self._tools = tool_table(tools)
        external = () if isinstance(external_tools, str) else tuple(external_tools)
        if isinstance(external_tools, str) or not all(isinstance(n, str) for n in external):
            raise InvalidOption(
                "Dispatcher(): external_tools takes tool names (a list of str), "
                f"got {external_tools!r}"
            )
        self._external = frozenset(external)
        self._traced = _first_setting(self._policies, "telemetry", None)
        if self._traced.value:
            _telemetry.start()  # the OpenTelemetry API, or the extra's install hint
        self._guard = Guard(
            self._policies,
            {name: t.policy for name, t in self._tools.items()},
            self._external,
            telemetry=self._traced.value,
        )
        self._runner = runner_for(self._tools, self._guard, self.max_workers, self.max_abandoned)
        self._rounds = Rounds(self._runner, self.return_direct_mode)
        self._sessions: Sessions[Session] = Sessions()

    # --- inspection --------------------------------------------------------------

    @property
    def tools(self) -> Mapping[str, AnyTool]:
        """This agent's tools by name, in declaration order."""
        return dict(self._tools)

    @property
    def external_tools(self) -> tuple[str, ...]:
        """The names of the tools it guards that run elsewhere (``external_tools=``),
        sorted; :meth:`explain` explains them too."""
        return tuple(sorted(self._external))

    def explain(
        self, tool_name: str, *, policy: ToolPolicy | None = None, foreign: bool = False
    ) -> dict[str, Setting | tuple[Setting, ...]]:
        """Each setting's effective value and the level that supplied it.

        ``on_error`` maps to the ordered chain of ``Setting(handler, level)`` that
        will be asked. ``policy`` adds a call level, as ``dispatch(..., policy=)``.
        ``foreign=True`` explains a name that is not one of this agent's tools (the
        policy :meth:`handle_error` applies to another library's tool).
        """
        chain = self._guard.explain(tool_name, policy=policy, foreign=foreign)
        traced = self._traced
        if traced.level == "builtin":  # as configure(telemetry=) says now
            traced = Setting(_telemetry.on, "global" if _telemetry.on else "builtin")
        return {**chain, **self._round_settings, "telemetry": traced}

    @property
    def policy(self) -> AgentPolicy | None:
        """The policy (a file's) this dispatcher was built with, beside its code."""
        return self._policies[0] if len(self._policies) == 2 else None

    def with_policy(self, policy: AgentPolicy | None) -> Dispatcher:
        """The same tools and code settings under another policy (``None``: none).

        For an operator's tooling (``toolguard explain --policy``): the code of the
        application stays as written, the policy file changes.
        """
        return Dispatcher(
            self._tools.values(),
            policy=policy,
            external_tools=self._external,
            **code_options(self._policies[-1]),
        )

    # --- calls ---------------------------------------------------------------------

    def session(
        self,
        *,
        id: str | None = None,
        clock: Callable[[], float] | None = None,
        store: Opens | None = None,
    ) -> Session:
        """A conversation on this dispatcher: its own retry budgets and breakers.

        Without ``id``, a new conversation. With one (a LangGraph thread id, an MCP
        session id), the same conversation each time: the dispatcher keeps it while
        it is in use, and forgets one left idle for :data:`SESSION_TTL` seconds, or
        the least recently used beyond :data:`MAX_SESSIONS`. ``clock`` (tests)
        applies when the session is made. ``store`` is where the budgets and
        breakers live (``toolguard.stores``): process memory by default, or a
        ``RedisStore`` shared by a fleet (then another process finds the same
        conversation by its ``id``; see ``docs/fleet.md``).

        In a durable engine's workflow code (``docs/durable.md``) a session lives in the
        workflow run's own state, on the engine's clock, so that a replay decides as the
        first run did: a named one is found again within that run only, and a store
        outside the workflow is refused.
        """
        if id is not None and (not isinstance(id, str) or not id):
            raise InvalidOption(f"session(id=...) takes a non-empty str, got {id!r}")
        if store is not None and not callable(getattr(store, "open", None)):
            raise InvalidOption(
                "session(store=...) takes a store (toolguard.stores.MemoryStore(), "
                f"RedisStore(client)), got {store!r}"
            )
        if store is None and self._round_settings["store"].value != "memory":
            store = self._policy_store()  # a policy file's store = "redis://..."
        if store is not None and store.name == "memory":
            store = None  # the default: today's in-process state
        runtime = _engine.current()
        if runtime is not None:
            return workflow_session(runtime, (self, id), self._runner, self._rounds, clock, store)
        if id is None:
            return Session(self._runner, self._rounds, clock=clock, store=store)
        found = self._sessions.find(id, store)
        if found is not None:
            return found
        return self._sessions.get(
            id,
            lambda: Session(self._runner, self._rounds, id=id, clock=clock, store=store),
            store,
        )

    def _policy_store(self) -> Opens:
        """The store a policy file names (``store = "redis://..."``), made once."""
        made: Opens | None = self.__dict__.get("_store")
        if made is None:
            from toolguard.stores._policy import policy_store

            settings = self._round_settings
            made = policy_store(settings["store"].value, settings["store_unavailable"].value)
            made = self.__dict__.setdefault("_store", made)
        return made

    def dispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Run one call, synchronously, on this thread. Always returns a result,
        unless a handler fails the invocation (``ToolCallFailed``) or the failure is
        control flow.

        ``context`` is what ``Injected`` parameters receive; ``framework_values``,
        by parameter name, what a framework's own parameters receive (its
        ``RunContext``, ``InjectedState``...: what an integration supplies).
        """
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise not_a_call(call, "dispatch")
        return self._runner.dispatch(call, policy, context, None, framework_values)

    async def adispatch(
        self,
        call: ToolCall,
        *,
        policy: ToolPolicy | None = None,
        context: Any = None,
        offload: bool = False,
        framework_values: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Run one call on the running event loop.

        A sync tool runs inline, blocking the loop while it runs, unless
        ``offload=True`` (then on the dispatcher's thread pool: what a server
        answering many requests on one loop wants). ``framework_values`` as for
        :meth:`dispatch`.
        """
        if type(call) is not ToolCall and not isinstance(call, ToolCall):
            raise not_a_call(call, "adispatch")
        return await self._runner.adispatch(call, policy, context, None, offload, framework_values)

    def run(
        self, calls: Iterable[ToolCall], *, policy: ToolPolicy | None = None, context: Any = None
    ) -> Round:
        """Run a round of parallel calls: sync tools on this dispatcher's thread pool.

        A round with async tools runs on a new event loop (``asyncio.run``); inside
        a running loop, use :meth:`arun`.
        """
        return self._rounds.run(check_calls(calls, "run"), policy, context, None)

    async def arun(
        self, calls: Iterable[ToolCall], *, policy: ToolPolicy | None = None, context: Any = None
    ) -> Round:
        """Run a round concurrently: async tools as tasks, sync tools on the pool.

        Cancelling ``arun`` cancels the running tools.
        """
        calls = check_calls(calls, "arun")
        if len(calls) != 1:
            return await self._rounds.arun(calls, policy, context, None)
        # Rounds.arun's one call, awaited here: the frame less is a fifth of its cost
        try:
            outcome = await self._runner.adispatch(calls[0], policy, context, None, False)
        except Exception as error:  # noqa: BLE001 - ToolCallFailed, control flow: the round decides
            return self._rounds.one(calls, error)
        return self._rounds.one(calls, outcome)

    # --- tools that ran elsewhere ------------------------------------------------------

    def scope(self) -> Scope:
        """The :class:`~toolguard.Scope` of calls of tools another framework runs, in no
        conversation (no breaker or budget is counted); a session's is
        ``session.scope(step=...)``."""
        return Scope(self._runner)

    def round_stops(self, stops: Sequence[bool], *, mode: ReturnDirectMode | None = None) -> bool:
        """Whether a round whose calls asked to stop (``stops``, one per call, in call
        order) ends the agent loop, under ``mode`` (``"any"`` or ``"all"``; by default
        this agent's ``return_direct_mode``): for an integration whose framework
        assembles the round."""
        if mode is not None and mode not in ("any", "all"):
            raise InvalidOption(f"round_stops(mode={mode!r}): allowed: 'any', 'all'")
        return round_stops(stops, self.return_direct_mode if mode is None else mode)

    def round_of(
        self, calls: Sequence[ToolCall], outcomes: Sequence[ToolResult | BaseException]
    ) -> Round:
        """A round whose calls ran elsewhere (a durable engine's activities, gathered by
        the integration), assembled as :meth:`run` assembles one: ``outcomes`` has, per
        call in call order, its result or what answering it raised. Control flow is
        raised first; a ``ToolCallFailed`` is raised carrying the round (``.round``)."""
        return assemble_round(calls, outcomes, self.return_direct_mode)

    def handle_result(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """The result of a successful call of a tool that ran elsewhere.

        The value becomes content as for one of this agent's tools (serialised,
        truncated per ``max_result_chars``), and ``return_direct`` is decided by the
        chain for that name. A value that cannot be serialised is a hidden failure.
        """
        return self._runner.foreign.handle_result(call, value, policy=policy)

    async def ahandle_result(
        self, call: ToolCall, value: Any, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`handle_result` (async handlers allowed)."""
        return await self._runner.foreign.ahandle_result(call, value, policy=policy)

    def handle_error(
        self, call: ToolCall, error: BaseException, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Answer a failure of a tool that ran elsewhere (another library's tool).

        For integrations that run the tool themselves: the failure goes through the
        same chain as one of this agent's tools (call, override, tool when the name
        is one of ours, agent, global, built-in), is logged the same way, and the
        result is returned. Control flow and non-``Exception`` errors are re-raised.
        """
        return self._runner.foreign.handle_error(call, error, policy=policy)

    async def ahandle_error(
        self, call: ToolCall, error: BaseException, *, policy: ToolPolicy | None = None
    ) -> ToolResult:
        """Async :meth:`handle_error` (async handlers allowed)."""
        return await self._runner.foreign.ahandle_error(call, error, policy=policy)

    # --- the thread pools -----------------------------------------------------------

    def close(self, *, wait: bool = True) -> None:
        """Shut the thread pools down. Idempotent.

        ``wait=True`` waits for running tools; a sync tool abandoned by its timeout
        is still running and is waited for too (pass ``wait=False`` not to).
        """
        self._runner.pools.close(wait=wait)

    def __enter__(self) -> Dispatcher:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Dispatcher(tools=[{', '.join(self._tools)}])"


def _first_setting(policies: Iterable[AgentPolicy], name: str, default: Any) -> Setting:
    """A round setting: the first policy that sets it (a file's before the code's)."""
    for policy in policies:
        value = getattr(policy, name)
        if value is not UNSET:
            return Setting(value, "agent", policy.source)
    return Setting(default, "builtin")
