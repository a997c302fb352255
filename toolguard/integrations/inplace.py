"""The in-place pipeline: guard a tool another framework runs, on public names only.

Every toolguard integration that guards a framework's existing tools ("in place")
runs this one pipeline; an integration holds only what is its framework's: how to
reach its tool call, how to hand back its own result type, how to read its context.
A new framework's integration can be written outside toolguard with the same names
(docs/integrations/writing-an-integration.md).

For each call the integration gives :func:`guard_call` (or its async twin
:func:`aguard_call`) a :class:`~toolguard.Scope` (the dispatcher's policy, in the
call's conversation), the toolguard :class:`~toolguard.ToolCall`, the framework's own
invocation of the tool, and an :class:`Adapter` for its framework's objects. Then:

1. **admit**: the tool's breaker is open in this conversation: toolguard's answer,
   in the framework's shape (:meth:`Adapter.answer`); the tool does not run;
2. **run** the framework's own invocation, under the tool's ``timeout`` and
   ``retries`` (:meth:`Scope.run <toolguard.Scope.run>`) when the integration can
   re-run it;
3. **a failure**: control flow (``toolguard.errors.is_control_flow``),
   ``ToolCallFailed`` and what the framework says must pass (:meth:`Adapter.passes`:
   its own signals, its wiring errors, which are the developer's) propagate untouched;
   anything else is answered by the handler chain (:meth:`Adapter.cause` says what
   the chain is asked about; :meth:`Adapter.tool_setting` adds the framework's own
   per-tool error setting at the tool level);
4. **a result**: the framework's own error result (:meth:`Adapter.own_error`: the tool
   told the model about a problem itself) is the tool author's answer: kept as it is,
   unless an override answers otherwise, and never logged as a hidden failure; a
   success goes through :meth:`Scope.succeeded <toolguard.Scope.succeeded>` on what
   the model will read of it (:meth:`Adapter.seen`) and comes back through
   :meth:`Adapter.succeeded`, which changes the framework's object only where
   toolguard decided something (content cut, ``return_direct``); where there is
   nothing to decide (:meth:`Scope.stands <toolguard.Scope.stands>`), no result is
   made and the outcome comes back through :meth:`Adapter.stood`.

Where :meth:`Scope.quiet <toolguard.Scope.quiet>` says toolguard has nothing to do
before a failure (one policy lookup), steps 1 and 2 are ``invoke()`` itself, and a
success that is not the framework's own error result and whose text toolguard sends as
it is comes back through :meth:`Adapter.stood` at once.

A framework whose hooks come before and after a tool's invocation, with none around
it (Google ADK's callbacks, Strands' hook events), admits in its before-hook
(:meth:`Scope.aadmit <toolguard.Scope.aadmit>`), answers an exception in its
after-hook (:meth:`Scope.afailed <toolguard.Scope.afailed>`) and gives step 4 the
outcome of a call that ran: :func:`guard_result` (:func:`aguard_result`), so that a
tool's own error result and a success are decided as the whole pipeline decides them
(``return_direct`` included: a predicate that raises answers no, logged once).

Each pair is twins: diff them and the differences are ``await`` and the
``a``-prefixed scope methods.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import ClassVar, Generic, TypeVar

from toolguard import Scope, ToolCall, ToolCallFailed, ToolPolicy, ToolResult
from toolguard.errors import is_control_flow

__all__ = ["Adapter", "aguard_call", "aguard_result", "guard_call", "guard_result"]

Outcome = TypeVar("Outcome")


class Adapter(Generic[Outcome]):
    """What a framework's integration tells the pipeline about its own objects.

    ``Outcome`` is what the framework's invocation returns and what the integration
    must hand back (a ``ToolMessage``, a ``CallToolResult``, a plain value). Only
    :meth:`answer` has no default.
    """

    lazy_seen: ClassVar[bool] = False
    """``True`` when :meth:`seen` matters only to what toolguard decides: it returns a
    ``str``, raises nothing and changes nothing, and :meth:`succeeded` reads
    ``result.content`` only where it was cut. A success with nothing to decide then
    skips :meth:`seen` (for a framework whose text of a value costs a serialisation)."""

    def answer(self, call: ToolCall, result: ToolResult) -> Outcome:
        """toolguard's answer (a failure, an open breaker, an unknown tool) as the
        framework's own outcome."""
        raise NotImplementedError

    def passes(self, error: Exception) -> bool:
        """Whether ``error`` must propagate untouched: the framework's own signals (a
        retry request, an approval, a handoff) and its wiring errors (the developer's
        bug, which the framework raises with a clear message). Default: none."""
        return False

    def cause(self, call: ToolCall, error: Exception) -> Exception:
        """What the handler chain is asked about: ``error``, or what the framework's
        exception means (its "tell the model this" error made model-visible, its
        validation of the model's arguments as ``InvalidArguments``). Default: as is."""
        return error

    def tool_setting(self, call: ToolCall) -> ToolPolicy | None:
        """The framework's own error setting for this tool (its author's word), as a
        policy for the tool level of the chain. Default: none."""
        return None

    def own_error(self, outcome: Outcome) -> str | None:
        """When ``outcome`` is the framework's own error result (the tool answered a
        problem itself), the text the model reads of it; else ``None``. Default: never."""
        return None

    def seen(self, outcome: Outcome) -> object:
        """What the model will read of a success, for ``max_result_chars`` and
        ``return_direct`` (its text). Default: the outcome itself."""
        return outcome

    def succeeded(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        """The framework's outcome of a success with toolguard's decisions applied:
        ``result.truncated`` (the content was cut: ``result.content``) and
        ``result.return_direct``. Where ``result`` decided nothing, return ``outcome``
        itself. Default: ``outcome`` (a framework with no room for either)."""
        return outcome

    def kept(self, call: ToolCall, outcome: Outcome, result: ToolResult) -> Outcome:
        """The framework's own error result, kept, with ``result.return_direct`` (the
        chain's decision for it) applied. Default: ``outcome``."""
        return outcome

    def stood(self, call: ToolCall, outcome: Outcome) -> Outcome:
        """A success toolguard had nothing to decide about (:meth:`Scope.stands
        <toolguard.Scope.stands>`: no result was made), as :meth:`succeeded` would
        hand it back for a result that decided nothing. Default: ``outcome``."""
        return outcome


_BLANK = "The tool reported an error without a message."


class _OwnAnswer(Exception):
    """A tool's own error result, for the chain: model-visible, with nothing hidden."""

    def __init__(self, text: str) -> None:
        self.text = text if text.strip() else _BLANK
        super().__init__(self.text)

    def message_for_model(self) -> str:
        return self.text


def guard_call(
    scope: Scope,
    call: ToolCall,
    invoke: Callable[[], Outcome],
    adapter: Adapter[Outcome],
    *,
    run: bool = True,
) -> Outcome:
    """One call of a tool the framework runs, guarded (see the module).

    ``invoke()`` is the framework's own invocation; with ``run=False`` it is called
    once, as it is (a framework that cannot run it again: the integration refuses
    ``timeout`` and ``retries`` for it instead).
    """
    quiet = scope.quiet(call)  # then nothing before or around it, one lookup
    if not quiet and scope.counts(call):
        refused = scope.admit(call)
        if refused is not None:
            return adapter.answer(call, refused)
    try:
        outcome = scope.run(call, invoke) if run and not quiet else invoke()
    except ToolCallFailed:
        raise
    except Exception as error:
        if is_control_flow(error) or adapter.passes(error):
            raise
        failure: Exception = adapter.cause(call, error)
    else:
        if quiet and _stands(scope, outcome, adapter):
            return adapter.stood(call, outcome)
        return guard_result(scope, call, outcome, adapter)
    return adapter.answer(call, scope.failed(call, failure, tool=adapter.tool_setting(call)))


async def aguard_call(
    scope: Scope,
    call: ToolCall,
    invoke: Callable[[], Awaitable[Outcome]],
    adapter: Adapter[Outcome],
    *,
    run: bool = True,
) -> Outcome:
    """Async :func:`guard_call`: ``invoke()`` is awaited."""
    quiet = scope.quiet(call)  # then nothing before or around it, one lookup
    if not quiet and scope.counts(call):
        refused = await scope.aadmit(call)
        if refused is not None:
            return adapter.answer(call, refused)
    try:
        outcome = await (scope.arun(call, invoke) if run and not quiet else invoke())
    except ToolCallFailed:
        raise
    except Exception as error:
        if is_control_flow(error) or adapter.passes(error):
            raise
        failure: Exception = adapter.cause(call, error)
    else:
        if quiet and _stands(scope, outcome, adapter):
            return adapter.stood(call, outcome)
        return await aguard_result(scope, call, outcome, adapter)
    return adapter.answer(call, await scope.afailed(call, failure, tool=adapter.tool_setting(call)))


def guard_result(
    scope: Scope, call: ToolCall, outcome: Outcome, adapter: Adapter[Outcome]
) -> Outcome:
    """Step 4 alone: ``outcome``, what the framework's invocation of the tool returned,
    decided (see the module): the framework's own error result kept unless an override
    answers, a success through :meth:`Scope.succeeded <toolguard.Scope.succeeded>`.
    Every path ends in one of the adapter's ``answer``, ``kept`` or ``succeeded``, each
    given the :class:`~toolguard.ToolResult` decided (``return_direct`` on it)."""
    text = adapter.own_error(outcome)
    if text is not None:
        own = _OwnAnswer(text)
        result = scope.failed(call, own, tool=adapter.tool_setting(call))
        return _own(call, outcome, own, result, adapter)
    lazy = adapter.lazy_seen  # then any text will do: it decides nothing here
    seen = "" if lazy else adapter.seen(outcome)
    if scope.stands(call, seen):
        return adapter.stood(call, outcome)
    result = scope.succeeded(call, adapter.seen(outcome) if lazy else seen)
    if result.is_error:  # a value toolguard cannot read: a hidden failure
        return adapter.answer(call, result)
    return adapter.succeeded(call, outcome, result)


async def aguard_result(
    scope: Scope, call: ToolCall, outcome: Outcome, adapter: Adapter[Outcome]
) -> Outcome:
    """Async :func:`guard_result`."""
    text = adapter.own_error(outcome)
    if text is not None:
        own = _OwnAnswer(text)
        result = await scope.afailed(call, own, tool=adapter.tool_setting(call))
        return _own(call, outcome, own, result, adapter)
    lazy = adapter.lazy_seen  # then any text will do: it decides nothing here
    seen = "" if lazy else adapter.seen(outcome)
    if scope.stands(call, seen):
        return adapter.stood(call, outcome)
    result = await scope.asucceeded(call, adapter.seen(outcome) if lazy else seen)
    if result.is_error:
        return adapter.answer(call, result)
    return adapter.succeeded(call, outcome, result)


def _stands(scope: Scope, outcome: Outcome, adapter: Adapter[Outcome]) -> bool:
    """Whether a quiet call's success stands as the framework made it: not its own
    error result, and what the model reads of it sent as it is (:meth:`Scope.as_is
    <toolguard.Scope.as_is>`; any text, for an adapter whose :meth:`Adapter.seen` is
    lazy). What :func:`guard_result` decides of it, without a second lookup."""
    if adapter.own_error(outcome) is not None:
        return False
    return adapter.lazy_seen or scope.as_is(adapter.seen(outcome))


def _own(
    call: ToolCall,
    outcome: Outcome,
    own: _OwnAnswer,
    result: ToolResult,
    adapter: Adapter[Outcome],
) -> Outcome:
    """The tool's own error result: kept when the chain answered with its text (no
    override replaced it, and it was within bounds), else toolguard's answer."""
    if result.content == own.text:
        return adapter.kept(call, outcome, result)
    return adapter.answer(call, result)
