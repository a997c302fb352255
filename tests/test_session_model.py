"""One session, driven at random, checked step by step against a reference model.

A Hypothesis :class:`~hypothesis.stateful.RuleBasedStateMachine` drives one
:class:`~toolguard.Session` (``dispatcher.session(clock=fake_clock)``) over four tools:

* ``alpha``: a sync tool with a breaker and a model-retry budget;
* ``beta``: an async tool with a breaker and a budget (it can be cancelled mid-flight,
  or run into a real, tiny ``timeout``);
* ``gamma``: a sync tool with a budget and no breaker (it may appear several times in
  one parallel round);
* ``ext``: a tool another framework runs, guarded in place (``session.admit`` then
  ``handle_error``/``handle_result``, with named steps), its breaker and budget set
  by an agent override.

Every call succeeds, fails hidden (an unmarked exception, or a value with no JSON
form), fails visible (``ToolError``), raises ``RetryWithFeedback``, times out (a
``ToolTimeout`` as the runner produces it, or a real timeout), fails transiently
(retried once: then fails again, or works), is cancelled, ends in control flow, sends
bad arguments, or names no tool; the clock advances; ``reset``
forgets one tool or all. Single calls (``dispatch``/``adispatch``), parallel rounds
(``run``/``arun``) and the in-place path are mixed.

:class:`Model` is the reference: the documented rules, written plainly.

* **Budgets** (``max_model_retries``): per tool per session, one count per model step
  that raised ``RetryWithFeedback`` (parallel calls of a step, and in-place calls with
  the same ``step=`` key, count once). Within the budget the model is told
  ``"(retry i of n)"``; past it, ``model_retries_exhausted`` decides: the exhaustion
  message (``"message"``), the same and the round stops (``"stop"``), or
  ``ToolCallFailed`` (``"fail"``).
* **Breakers** (``Breaker(failures=k, cooldown=c)``): ``k`` consecutive unmarked
  failures or timeouts open it; a success or a model-visible error resets the count;
  neutral outcomes (bad arguments, unknown tool, unavailable, ``RetryWithFeedback``)
  change nothing; a retried call is one outcome. While open, calls do not run and get
  ``ToolUnavailable``. After the cool-down one trial runs, holding a lease of one
  cool-down: success closes, failure re-opens, and a trial that never reports
  (cancelled, control flow) expires with its lease.
* **Logs**: ``breaker_opened`` (with ``failures``), ``breaker_closed`` and
  ``session_reset`` exactly when the model says; every hidden failure is logged once
  under the error id its result carries.
* ``session.state(tool)`` equals the model's after every step.

Depth: ``tests/_hypothesis.py`` (``HYPOTHESIS_PROFILE=thorough`` runs more and longer
sequences).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, Literal, TypeAlias, cast

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)
from structlog.testing import capture_logs

from toolguard import (
    Breaker,
    ControlFlow,
    Dispatcher,
    InjectedCallId,
    ModelRetriesExhausted,
    Retry,
    RetryWithFeedback,
    Round,
    Session,
    ToolCall,
    ToolCallFailed,
    ToolError,
    ToolPolicy,
    ToolResult,
    ToolState,
    ToolTimeout,
    tool,
)
from toolguard.handlers import fail

from ._hypothesis import PROFILE, PROFILE_NAME

# --- the tools -----------------------------------------------------------------------

VISIBLE = "There is no such order; ask the user to check the number."
FEEDBACK = "Send the order number as digits only."
TIMEOUT_TEXT = "The tool did not finish in time; try a smaller request."
SECRET = "tgsecret-session-model-7f3a"


class Handoff(ControlFlow):
    """A signal for another agent: passes through untouched, reports nothing."""


class Unserialisable:
    """A return value with no JSON form: a hidden failure."""


ATTEMPTS: Counter[str] = Counter()  # attempts per call id, for "transient_once"
RETRY = Retry(attempts=2, on=(ConnectionError,), initial=0.001, jitter=0, sleep=lambda _: None)


def act(outcome: str, name: str, call_id: str = "") -> Any:
    """What a tool does for ``outcome`` (shared by every tool's body)."""
    if outcome == "ok":
        return "ok"
    if outcome == "transient":  # retried once (RETRY), and fails again: one failure
        raise ConnectionError(f"connection reset, session {SECRET}")
    if outcome == "transient_once":  # retried once, and then works: one success
        ATTEMPTS[call_id] += 1
        if ATTEMPTS[call_id] == 1:
            raise ConnectionError(f"connection reset, session {SECRET}")
        return "ok"
    if outcome == "hidden":
        raise RuntimeError(f"db refused the credentials {SECRET}")
    if outcome == "unserialisable":
        return Unserialisable()
    if outcome == "visible":
        raise ToolError(VISIBLE) from PermissionError(SECRET)
    if outcome == "feedback":
        raise RetryWithFeedback(FEEDBACK)
    if outcome == "timeout":
        raise ToolTimeout(TIMEOUT_TEXT, tool=name, seconds=1.0)
    if outcome == "control":
        raise Handoff("to the billing agent")
    raise AssertionError(f"unplanned outcome {outcome!r}")


class Hang:
    """Where ``beta`` tells the test it started a call that will not finish."""

    def __init__(self) -> None:
        self.started: asyncio.Event | None = None


HANG = Hang()


def make_tools(
    breakers: dict[str, Breaker], limits: dict[str, int | None]
) -> list[Callable[..., Any]]:
    def alpha(outcome: str, call_id: Annotated[str, InjectedCallId]) -> Any:
        return act(outcome, "alpha", call_id)

    async def beta(outcome: str, call_id: Annotated[str, InjectedCallId]) -> Any:
        await asyncio.sleep(0)
        if outcome == "hang":
            if HANG.started is not None:
                HANG.started.set()
            await asyncio.sleep(60)
        return act(outcome, "beta", call_id)

    def gamma(outcome: str, call_id: Annotated[str, InjectedCallId]) -> Any:
        return act(outcome, "gamma", call_id)

    return [
        tool(
            name="alpha",
            check_docstring=False,
            breaker=breakers["alpha"],
            max_model_retries=limits["alpha"],
            retries=RETRY,
        )(alpha),
        tool(
            name="beta",
            check_docstring=False,
            breaker=breakers["beta"],
            max_model_retries=limits["beta"],
            retries=RETRY,
        )(beta),
        tool(
            name="gamma",
            check_docstring=False,
            max_model_retries=limits["gamma"],
            retries=RETRY,
        )(gamma),
    ]


TOOLS = ("alpha", "beta", "gamma", "ext")
BREAKER_TOOLS = ("alpha", "beta", "ext")
# outcomes every tool can have on every path
RUN_OUTCOMES = ("ok", "hidden", "unserialisable", "visible", "feedback", "timeout", "control")
# and the agent's own tools, which toolguard runs and retries (RETRY): transient failures;
# what a call can be besides running: arguments that fail validation
CALL_KINDS = (*RUN_OUTCOMES, "transient", "transient_once", "bad_args")

Mode: TypeAlias = Literal["message", "stop", "fail"]

# --- the reference model ---------------------------------------------------------------


@attrs.define
class Expect:
    """What one call must come to."""

    kind: str  # ok | hidden | visible | feedback | exhausted | timeout | unavailable
    #            | arguments | unknown_tool | control | cancelled | failed
    content: str | None = None  # exact text, where the docs give it
    contains: str | None = None  # a part of it, where only that is documented
    stop: bool = False  # asks the round to stop


@attrs.define
class ToolModel:
    breaker: Breaker | None
    limit: int | None
    retries: int = 0
    keys: set[str] = attrs.field(factory=set)  # named steps that already counted
    failures: int = 0
    opened_at: float | None = None
    lease_until: float | None = None

    def state(self) -> ToolState:
        open_until = None
        if self.opened_at is not None:
            assert self.breaker is not None
            open_until = self.opened_at + self.breaker.cooldown
        return ToolState(self.retries, self.failures, open_until)


class Model:
    """The documented budget and breaker rules of one session, and its log events."""

    def __init__(
        self, breakers: dict[str, Breaker | None], limits: dict[str, int | None], mode: Mode
    ) -> None:
        self.mode = mode
        self.now = 0.0
        self.breakers = breakers
        self.limits = limits
        self.tools = {name: ToolModel(breakers[name], limits[name]) for name in TOOLS}
        self.events: list[tuple[str, Any]] = []  # (event, detail) the session must log

    def reset(self, name: str | None) -> None:
        for each in TOOLS if name is None else (name,):
            self.tools[each] = ToolModel(self.breakers[each], self.limits[each])
        self.events.append(("session_reset", name))

    # breakers

    def admit(self, name: str) -> float | None:
        """``None``: the call runs (a trial if the breaker was open). Otherwise the
        seconds the model is told to wait: the call is answered unavailable."""
        record = self.tools[name]
        breaker = record.breaker
        if breaker is None or record.opened_at is None:
            return None
        ready = record.opened_at + breaker.cooldown
        if record.lease_until is not None:
            ready = max(ready, record.lease_until)  # another call holds the trial
        if self.now >= ready:
            record.lease_until = self.now + breaker.cooldown  # the trial's lease
            return None
        return ready - self.now

    def worked(self, name: str) -> None:
        """A success or a model-visible error: the tool answered."""
        record = self.tools[name]
        if record.breaker is None:
            return
        record.failures = 0
        record.lease_until = None
        if record.opened_at is not None:
            record.opened_at = None
            self.events.append(("breaker_closed", name))

    def broke(self, name: str) -> None:
        """An unmarked failure or a timeout."""
        record = self.tools[name]
        breaker = record.breaker
        if breaker is None:
            return
        record.failures += 1
        record.lease_until = None
        if record.opened_at is not None or record.failures >= breaker.failures:
            record.opened_at = self.now
            self.events.append(("breaker_opened", (name, record.failures)))

    # budgets

    def feedback(self, name: str, key: str | None) -> Expect:
        record = self.tools[name]
        limit = record.limit
        if limit is None:
            return Expect("feedback", content=FEEDBACK)
        if key is None or key not in record.keys:
            record.retries += 1
            if key is not None:
                record.keys.add(key)
        used = record.retries
        if used <= limit:
            return Expect("feedback", content=f"{FEEDBACK} (retry {used} of {limit})")
        if self.mode == "fail":
            return Expect("failed")
        text = (
            f"The tool '{name}' was called incorrectly too many times ({limit} retries are "
            "allowed in this conversation). Stop calling it and tell the user what went wrong."
        )
        return Expect("exhausted", content=text, stop=self.mode == "stop")

    # one call

    def call(self, name: str, what: str, key: str | None = None) -> Expect:
        """One call of ``name`` that would do ``what`` if it ran."""
        if name == "delta":
            return Expect("unknown_tool", contains="delta")
        if what == "bad_args":  # validated before the breaker: the tool never runs
            return Expect("arguments", contains="outcome")
        wait = self.admit(name)
        if wait is not None:
            breaker = self.breakers[name]
            assert breaker is not None
            return Expect(
                "unavailable",
                content=(
                    f"The tool '{name}' is unavailable: it failed {breaker.failures} times in "
                    f"a row. Do not call it again for about {wait:.0f} s; use another tool or "
                    "tell the user."
                ),
            )
        if what in ("ok", "transient_once"):  # a retried call that worked is a success
            self.worked(name)
            return Expect("ok", content="ok")
        if what == "visible":
            self.worked(name)
            return Expect("visible", content=VISIBLE)
        if what in ("hidden", "unserialisable", "transient"):  # retries: one failure
            self.broke(name)
            return Expect("hidden")
        if what == "timeout":
            self.broke(name)
            return Expect("timeout", content=TIMEOUT_TEXT)
        if what == "real_timeout":
            self.broke(name)
            return Expect("timeout", contains="did not finish within")
        if what == "feedback":
            return self.feedback(name, key)
        if what == "control":
            return Expect("control")
        assert what == "cancel"
        return Expect("cancelled")


# --- checking what the session did against the model -------------------------------------

WATCHED = ("breaker_opened", "breaker_closed", "session_reset")


def session_events(events: Sequence[dict[str, Any]]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for event in events:
        name = event["event"]
        if name == "breaker_opened":
            found.append((name, (event["tool"], event["failures"])))
        elif name in ("breaker_closed", "session_reset"):
            found.append((name, event["tool"]))
    return found


def check_result(result: ToolResult, expect: Expect, events: Sequence[dict[str, Any]]) -> None:
    """A result against what the model expected of it."""
    kinds = {
        "ok": None,
        "hidden": "hidden",
        "visible": "visible",
        "feedback": "feedback",
        "timeout": "timeout",
        "unavailable": "unavailable",
        "arguments": "arguments",
        "unknown_tool": "unknown_tool",
    }
    assert expect.kind in (*kinds, "exhausted"), f"expected {expect}, got the result {result}"
    text = result.text
    assert SECRET not in text
    if expect.content is not None:
        assert text == expect.content, (expect, result)
    if expect.contains is not None:
        assert expect.contains in text, (expect, result)
    assert result.return_direct is expect.stop, (expect, result)
    if expect.kind == "ok":
        assert not result.is_error and result.error_id is None, result
        return
    assert result.is_error, (expect, result)
    if expect.kind != "exhausted":
        assert result.error_kind == kinds[expect.kind], (expect, result)
    hidden_ids = [e["error_id"] for e in events if e["event"] == "tool_error_hidden"]
    if expect.kind in ("hidden", "visible", "exhausted"):
        # a hidden cause (the failure, the visible error's cause, the last feedback)
        # is logged exactly once, under the id the result carries
        assert result.error_id is not None, (expect, result)
        assert hidden_ids.count(result.error_id) == 1, (expect, result, hidden_ids)
    else:
        assert result.error_id is None, (expect, result)


def check_failed(error: ToolCallFailed, name: str, events: Sequence[dict[str, Any]]) -> None:
    """``model_retries_exhausted="fail"``: the invocation fails, cause the exhaustion."""
    assert error.tool == name
    assert isinstance(error.__cause__, ModelRetriesExhausted)
    assert isinstance(error.__cause__.__cause__, RetryWithFeedback)
    failed_ids = [e["error_id"] for e in events if e["event"] == "tool_call_failed"]
    assert failed_ids.count(error.error_id) == 1


# --- the machine ---------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


COOLDOWNS = st.sampled_from([1.0, 2.0, 3.5])
THRESHOLDS = st.integers(1, 3)
LIMITS = st.sampled_from([None, 0, 1, 2])
KEYS = st.sampled_from(["msg-1", "msg-2", "msg-3"])


def breakers_strategy() -> st.SearchStrategy[Breaker]:
    return st.builds(Breaker, failures=THRESHOLDS, cooldown=COOLDOWNS)


@st.composite
def round_calls(draw: st.DrawFn) -> list[tuple[str, str]]:
    """A parallel round: each breaker tool at most once (so that the order in which
    the round's calls finish cannot matter), ``gamma`` and unknown names any number
    of times."""
    calls: list[tuple[str, str]] = []
    for name in ("alpha", "beta"):
        if draw(st.booleans()):
            calls.append((name, draw(st.sampled_from(CALL_KINDS))))
    calls.extend(
        (name, draw(st.sampled_from(CALL_KINDS)))
        for name in draw(st.lists(st.sampled_from(["gamma", "gamma", "delta"]), max_size=3))
    )
    if not calls:
        calls.append(("gamma", draw(st.sampled_from(CALL_KINDS))))
    return draw(st.permutations(calls))


def arguments_for(what: str) -> dict[str, Any]:
    return {} if what == "bad_args" else {"outcome": what}


class SessionMachine(RuleBasedStateMachine):
    """A session under random calls, checked against :class:`Model` after each step."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = Clock()
        self.dispatcher: Dispatcher | None = None
        self.session: Session | None = None
        self.model: Model | None = None
        self.serial = 0

    @initialize(
        alpha=breakers_strategy(),
        beta=breakers_strategy(),
        ext=breakers_strategy(),
        limits=st.fixed_dictionaries(dict.fromkeys(TOOLS, LIMITS)),
        mode=st.sampled_from(["message", "stop", "fail"]),
    )
    def start(
        self,
        alpha: Breaker,
        beta: Breaker,
        ext: Breaker,
        limits: dict[str, int | None],
        mode: Mode,
    ) -> None:
        breakers = {"alpha": alpha, "beta": beta, "ext": ext}
        self.dispatcher = Dispatcher(
            make_tools(breakers, limits),
            external_tools=["ext"],
            overrides={"ext": ToolPolicy(breaker=ext, max_model_retries=limits["ext"])},
            model_retries_exhausted=mode,
        )
        self.session = self.dispatcher.session(clock=self.clock)
        self.model = Model({**breakers, "gamma": None}, limits, mode)

    def teardown(self) -> None:
        if self.dispatcher is not None:
            self.dispatcher.close()

    # helpers

    @property
    def s(self) -> Session:
        assert self.session is not None
        return self.session

    @property
    def m(self) -> Model:
        assert self.model is not None
        return self.model

    def call(self, name: str, what: str) -> ToolCall:
        self.serial += 1
        return ToolCall(name=name, arguments=arguments_for(what), id=f"c{self.serial}")

    @contextmanager
    def step(self, ordered: bool = True) -> Iterator[list[dict[str, Any]]]:
        """Capture one step's events; then compare the session's to the model's."""
        before = len(self.m.events)
        with capture_logs() as captured:
            # structlog types the entries as its EventDict; each is a dict
            events = cast("list[dict[str, Any]]", captured)
            yield events
        expected = self.m.events[before:]
        got = session_events(events)
        if ordered:
            assert got == expected
        else:
            assert Counter(got) == Counter(expected)

    def answered(
        self, run: Callable[[], ToolResult], name: str, expect: Expect, events: list[dict[str, Any]]
    ) -> None:
        """Run one call and hold its outcome to ``expect``."""
        if expect.kind == "control":
            with pytest.raises(Handoff):
                run()
        elif expect.kind == "failed":
            with pytest.raises(ToolCallFailed) as raised:
                run()
            check_failed(raised.value, name, events)
        else:
            check_result(run(), expect, events)

    # rules: one call, one step

    @rule(
        name=st.sampled_from(["alpha", "beta", "gamma", "delta"]),
        what=st.sampled_from(CALL_KINDS),
        path=st.sampled_from(["dispatch", "adispatch", "adispatch_offload"]),
    )
    def one_call(self, name: str, what: str, path: str) -> None:
        call = self.call(name, what)
        with self.step() as events:
            expect = self.m.call(name, what)

            def run() -> ToolResult:
                if path == "dispatch":
                    return self.s.dispatch(call)
                return asyncio.run(self.s.adispatch(call, offload=path == "adispatch_offload"))

            self.answered(run, name, expect, events)

    @rule(path=st.sampled_from(["dispatch", "adispatch"]))
    def real_timeout(self, path: str) -> None:
        """``beta`` overruns a real (tiny) timeout: toolguard's ``ToolTimeout``."""
        call = self.call("beta", "hang")
        policy = ToolPolicy(timeout=0.01)
        with self.step() as events:
            expect = self.m.call("beta", "real_timeout")

            def run() -> ToolResult:
                if path == "dispatch":
                    return self.s.dispatch(call, policy=policy)
                return asyncio.run(self.s.adispatch(call, policy=policy))

            self.answered(run, "beta", expect, events)

    @rule()
    def cancelled(self) -> None:
        """An async call of ``beta`` cancelled while it runs: it never reports."""
        call = self.call("beta", "hang")

        async def go() -> ToolResult | None:
            HANG.started = asyncio.Event()
            task = asyncio.ensure_future(self.s.adispatch(call))
            started = asyncio.ensure_future(HANG.started.wait())
            await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
            started.cancel()
            HANG.started = None
            if task.done():  # answered without running (its breaker is open)
                return task.result()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            return None

        with self.step() as events:
            expect = self.m.call("beta", "cancel")
            result = asyncio.run(go())
            if expect.kind == "cancelled":
                assert result is None
            else:
                assert result is not None
                check_result(result, expect, events)

    # rules: a parallel round, one step

    @rule(calls=round_calls(), path=st.sampled_from(["run", "arun"]))
    def parallel_round(self, calls: list[tuple[str, str]], path: str) -> None:
        tool_calls = [self.call(name, what) for name, what in calls]
        key = f"round-{self.serial}"  # the model's name for this round's one step
        with self.step(ordered=False) as events:
            expects = [self.m.call(name, what, key) for name, what in calls]
            # after every call was answered, a round raises: control flow if any call
            # ended in it (a signal passes through untouched, whatever its siblings
            # did), else the first ToolCallFailed in call order
            propagating = next((e for e in expects if e.kind == "control"), None) or next(
                (e for e in expects if e.kind == "failed"), None
            )
            round_: Round | None = None
            if propagating is None:
                if path == "run":
                    round_ = self.s.run(tool_calls)
                else:
                    round_ = asyncio.run(self.s.arun(tool_calls))
            elif propagating.kind == "control":
                with pytest.raises(Handoff):
                    if path == "run":
                        self.s.run(tool_calls)
                    else:
                        asyncio.run(self.s.arun(tool_calls))
            else:
                index = expects.index(propagating)
                with pytest.raises(ToolCallFailed) as raised:
                    if path == "run":
                        self.s.run(tool_calls)
                    else:
                        asyncio.run(self.s.arun(tool_calls))
                check_failed(raised.value, calls[index][0], events)
                assert raised.value.call_id == tool_calls[index].id
                round_ = raised.value.round
                assert round_ is not None
            if round_ is not None:
                assert [r.call_id for r in round_.results] == [c.id for c in tool_calls]
                for result, expect in zip(round_.results, expects, strict=True):
                    if expect.kind == "failed":
                        assert result.is_error and result.error_kind == "hidden"
                    else:
                        check_result(result, expect, events)
                stops = [e.stop for e in expects]
                assert round_.stop is any(stops)
                if round_.stop:
                    assert round_.final is round_.results[stops.index(True)]

    # rules: the in-place path (a tool another framework runs)

    @rule(
        whats=st.lists(st.sampled_from((*RUN_OUTCOMES, "cancel")), min_size=1, max_size=3),
        key=st.none() | KEYS,
        colour=st.sampled_from(["sync", "async"]),
    )
    def in_place(self, whats: list[str], key: str | None, colour: str) -> None:
        """``admit``, then (if admitted) the framework runs ``ext`` and reports its
        outcome with ``handle_error``/``handle_result``; calls with one ``key`` are one
        model step. A cancelled or control-flow call reports nothing."""
        for what in whats:
            call = self.call("ext", what)
            with self.step() as events:
                expect = self.m.call("ext", what, key)
                answer = self.s.admit(call, step=key)
                if expect.kind == "unavailable":
                    assert answer is not None
                    check_result(answer, expect, events)
                    continue
                assert answer is None
                if what == "cancel":
                    continue  # the framework's call was cancelled: nothing reports

                def report(what: str = what, call: ToolCall = call) -> ToolResult:
                    try:
                        value = act(what, "ext")
                    except Exception as error:
                        if colour == "sync":
                            return self.s.handle_error(call, error, step=key)
                        return asyncio.run(self.s.ahandle_error(call, error, step=key))
                    if colour == "sync":
                        return self.s.handle_result(call, value, step=key)
                    return asyncio.run(self.s.ahandle_result(call, value, step=key))

                self.answered(report, "ext", expect, events)

    # rules: time and resets

    @rule(seconds=st.sampled_from([0.5, 1.0, 2.0, 3.5, 10.0]))
    def advance(self, seconds: float) -> None:
        self.clock.now += seconds
        self.m.now = self.clock.now

    @rule(name=st.none() | st.sampled_from(TOOLS))
    def reset(self, name: str | None) -> None:
        with self.step():
            self.m.reset(name)
            self.s.reset(name)

    @precondition(lambda self: self.model is not None)
    @invariant()
    def state_matches_the_model(self) -> None:
        for name in TOOLS:
            assert self.s.state(name) == self.m.tools[name].state(), name


# ci: 60 sequences of up to 30 steps (seconds); thorough: 500 sequences of up to 100
# steps (minutes: every step makes real calls, rounds and event loops)
THOROUGH = PROFILE_NAME == "thorough"
SessionMachine.TestCase.settings = settings(
    PROFILE,
    stateful_step_count=100 if THOROUGH else 30,
    max_examples=PROFILE.max_examples // 6 if THOROUGH else PROFILE.max_examples,
)
TestSessionAgainstTheModel = SessionMachine.TestCase


# --- pinned alone: what the machine found ---------------------------------------------------


@pytest.mark.parametrize("path", ["run", "arun"])
@pytest.mark.parametrize("order", ["failed_first", "control_first"])
def test_a_round_holding_control_flow_raises_it_whatever_a_sibling_failed(
    path: str, order: str
) -> None:
    """A round where one call ends in control flow and another's handler fails the
    invocation (``ToolCallFailed``): the control-flow signal propagates, untouched,
    in either call order. Raising the ``ToolCallFailed`` instead would lose the
    signal (a handoff, an interrupt): nothing else carries it."""

    def down() -> str:
        raise RuntimeError("db down")

    def hand_off() -> str:
        raise Handoff("to the billing agent")

    tools = [
        tool(name="down", check_docstring=False, on_error=fail)(down),
        tool(name="hand_off", check_docstring=False)(hand_off),
    ]
    calls = [ToolCall(name="down", id="d"), ToolCall(name="hand_off", id="h")]
    if order == "control_first":
        calls.reverse()
    with Dispatcher(tools) as dispatcher, pytest.raises(Handoff):
        if path == "run":
            dispatcher.run(calls)
        else:
            asyncio.run(dispatcher.arun(calls))
