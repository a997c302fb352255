"""The differential test's engine: seeded random sequences of session operations,
played on a memory session and on a Redis session side by side, compared after every
operation (the answer, the log events, every tool's state).

Operations are JSON values, so a divergence is saved as a file and replayed as it
was (:func:`save`, :func:`load`, :func:`shrink`):

* ``{"op": "dispatch", "tool": t, "outcome": o, "step": k}``: one call (``step`` a
  named step's key, or ``null`` for a step of its own);
* ``{"op": "round", "calls": [[t, o], ...]}``: a parallel round (distinct tools, and
  any number of ``retry`` calls of one tool: what commutes, so that the stores'
  different interleavings cannot change an answer);
* ``{"op": "admit", "step": k, "then": "ok" | "fail" | "visible" | "retry" | "none"}``:
  a tool another framework runs: admitted, then reported (or never: an abandoned
  trial's lease);
* ``{"op": "wait", "seconds": s}``: both stores' clocks move on (the Redis store's by
  its test-only skew, the memory session's by its injected clock);
* ``{"op": "reset", "tool": t | null}``.

The session id of a sequence is one of :data:`IDS` (hostile ones included), the
same on both sides. ``mode`` is ``"sync"`` or ``"async"`` (an asyncio client, a new
event loop per operation, as a web application running ``asyncio.run`` per request).
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from structlog.testing import capture_logs

from tests._content import str_content
from toolguard import (
    Breaker,
    Dispatcher,
    RetryWithFeedback,
    Session,
    ToolCall,
    ToolError,
    ToolPolicy,
    tool,
)
from toolguard.stores import MemoryStore, RedisStore

__all__ = ["IDS", "Case", "diverges", "generate", "load", "save", "shrink"]

COOLDOWN = 60.0
OUTCOMES = ("ok", "fail", "visible", "retry", "bad")
TOOLS = ("alpha", "beta", "gamma")
# (store_unavailable too: an outage, on a machine too loaded for the store's timeouts,
# shows as what it is rather than as a difference of state)
EVENTS = (
    "breaker_opened",
    "breaker_closed",
    "session_reset",
    "tool_error_hidden",
    "store_unavailable",
)
IDS = (
    "conversation",
    "\ud800 lone surrogate",
    "h-" + "0" * 64,
    "%h" + "0" * 64,
    "a:b|{c}%41",
    "x" * 5000,
)
Case = dict[str, Any]


def _body(name: str) -> Callable[[str], str]:
    def run(outcome: str) -> str:
        if outcome == "fail":
            raise OSError("hidden detail")
        if outcome == "visible":
            raise ToolError("Try another query.")
        if outcome == "retry":
            raise RetryWithFeedback("Use a number.")
        return "ok"

    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"The tool {name}."
    return run


def dispatcher() -> Dispatcher:
    return Dispatcher(
        [
            tool(breaker=Breaker(failures=2, cooldown=COOLDOWN), max_model_retries=3)(
                _body("alpha")
            ),
            tool(max_model_retries=2)(_body("beta")),
            tool(breaker=Breaker(failures=1, cooldown=COOLDOWN))(_body("gamma")),
        ],
        external_tools=["ext"],
        overrides={
            "ext": ToolPolicy(breaker=Breaker(failures=2, cooldown=COOLDOWN), max_model_retries=2)
        },
    )


def generate(seed: int, length: int) -> Case:
    """A sequence of ``length`` operations, the same for the same seed."""
    pick = random.Random(seed)
    steps = [f"m{n}" for n in range(4)]
    ops: list[dict[str, Any]] = []
    for _ in range(length):
        kind = pick.choices(["dispatch", "round", "admit", "wait", "reset"], [10, 3, 4, 2, 1])[0]
        if kind == "dispatch":
            step = pick.choice([None, None, *steps])
            ops.append(
                {
                    "op": kind,
                    "tool": pick.choice(TOOLS),
                    "outcome": pick.choice(OUTCOMES),
                    "step": step,
                }
            )
        elif kind == "round":
            chosen = pick.sample(TOOLS, pick.randint(1, len(TOOLS)))
            calls = [[name, pick.choice(OUTCOMES)] for name in chosen]
            calls += [[chosen[0], "retry"]] * (pick.random() < 0.3) * 2
            if any(c[0] == chosen[0] and c[1] != "retry" for c in calls[len(chosen) :]):
                calls = calls[: len(chosen)]
            if len(calls) > len(chosen):
                calls[0] = [chosen[0], "retry"]
            ops.append({"op": kind, "calls": calls})
        elif kind == "admit":
            then = pick.choice(["ok", "fail", "fail", "visible", "retry", "none"])
            ops.append({"op": kind, "step": pick.choice(steps), "then": then})
        elif kind == "wait":
            ops.append({"op": kind, "seconds": pick.choice([1.0, COOLDOWN + 1])})
        else:
            ops.append({"op": kind, "tool": pick.choice([*TOOLS, "ext", None])})
    return {
        "seed": seed,
        "mode": pick.choice(["sync", "async"]),
        "id": pick.choice(IDS),
        "ops": ops,
    }


def _call(name: str, outcome: str) -> ToolCall:
    arguments: dict[str, Any] = {} if outcome == "bad" else {"outcome": outcome}
    return ToolCall(name=name, arguments=arguments, id=f"{name}-{outcome}")


def _error(outcome: str) -> Exception:
    return {
        "fail": OSError("hidden detail"),
        "visible": ToolError("Try another query."),
        "retry": RetryWithFeedback("Use a number."),
    }[outcome]


_ABOUT = re.compile(r"about (\d+) s")


def _text(result: Any) -> str:
    """An answer without its error id (each side draws its own)."""
    text = str_content(result)
    return text[: text.index("error id")] if "error id" in text else text


class Side:
    """One store's session, driven through the sync or the async methods."""

    def __init__(self, session: Session, mode: str) -> None:
        self.session, self.mode = session, mode

    def _do(self, name: str, *args: Any, **kwargs: Any) -> Any:
        if self.mode == "sync":
            return getattr(self.session, name)(*args, **kwargs)
        return asyncio.run(getattr(self.session, "a" + name)(*args, **kwargs))

    def play(self, op: dict[str, Any]) -> Any:
        kind = op["op"]
        if kind == "dispatch":
            return _text(self._do("dispatch", _call(op["tool"], op["outcome"]), step=op["step"]))
        if kind == "round":
            calls = [_call(name, outcome) for name, outcome in op["calls"]]
            return sorted(_text(r) for r in self._do("run", calls).results)
        if kind == "admit":
            call = ToolCall(name="ext", arguments={}, id="ext")
            refused = self._do("admit", call, step=op["step"])
            if refused is not None:
                return ["refused", _text(refused)]
            if op["then"] == "none":
                return ["admitted"]
            if op["then"] == "ok":
                return _text(self._do("handle_result", call, "done", step=op["step"]))
            return _text(self._do("handle_error", call, _error(op["then"]), step=op["step"]))
        if kind == "wait":  # the clocks moved (see diverges)
            return None
        self._do("reset", op["tool"])
        return None

    def states(self) -> list[tuple[int, int, bool]]:
        found = [self._do("state", name) for name in (*TOOLS, "ext")]
        return [(s.model_retries, s.consecutive_failures, s.open_until is None) for s in found]


def _observe(side: Side, op: dict[str, Any]) -> tuple[Any, list[Any], Any, list[int]]:
    """The answer (its "about N s" numbers apart), the events, every tool's state."""
    with capture_logs() as captured:
        try:
            answer = side.play(op)
        except Exception as error:  # a divergence to report, not a crash
            answer = ["raised", type(error).__name__]
    events = sorted(
        (str(e["event"]), str(e.get("tool")), int(e.get("failures", 0)))
        for e in captured
        if e["event"] in EVENTS
    )
    try:
        states: Any = side.states()
    except Exception as error:  # as above
        states = ["raised", type(error).__name__]
    numbers: list[int] = []
    return _apart(answer, numbers), events, states, numbers


def _apart(answer: Any, numbers: list[int]) -> Any:
    """``answer`` with each "about N s" as "about ~ s", N appended to ``numbers``: the
    server's clock moved on a few milliseconds meanwhile, so N may differ by one."""
    if isinstance(answer, str):

        def keep(match: re.Match[str]) -> str:
            numbers.append(int(match.group(1)))
            return "about ~ s"

        return _ABOUT.sub(keep, answer)
    if isinstance(answer, list):
        return [_apart(a, numbers) for a in answer]
    return answer


def _same(one: tuple[Any, ...], other: tuple[Any, ...]) -> bool:
    numbers, others = one[3], other[3]
    if len(numbers) != len(others):
        return False
    close = all(abs(a - b) <= 1 for a, b in zip(numbers, others, strict=True))
    return one[:3] == other[:3] and close


def diverges(case: Case, url: str) -> tuple[int, Any, Any] | None:
    """Play ``case`` on both stores: ``None``, or the first divergence (the
    operation's index, memory's observation, Redis's)."""
    moved = [0.0]  # both clocks: real time, plus the waits
    store = RedisStore.from_url(
        url,
        asyncio=case["mode"] == "async",
        agent=f"diff-{uuid.uuid4().hex[:10]}",
        ttl=600,
        timeout=2.0,  # generous: a loaded machine's scheduling is no outage here
        max_wait=4.0,
    )
    clock = lambda: time.monotonic() + moved[0]  # noqa: E731
    agent = dispatcher()  # its own named sessions: the same id is a new conversation
    memory = Side(agent.session(id=case["id"], store=MemoryStore(), clock=clock), case["mode"])
    shared = Side(agent.session(id=case["id"], store=store), case["mode"])
    try:
        for index, op in enumerate(case["ops"]):
            if op["op"] == "wait":
                moved[0] += op["seconds"]
                store._skew_ms = int(moved[0] * 1000)  # the server's clock, moved as well
            seen = _observe(memory, op), _observe(shared, op)
            if not _same(*seen):
                return index, seen[0], seen[1]
        return None
    finally:
        if not store.is_async:
            getattr(store, "close", lambda: None)()  # (absent before issue 28)


def shrink(case: Case, url: str) -> Case:
    """A shorter case that still diverges: drop operations one by one while it does."""
    found = diverges(case, url)
    if found is None:
        return case
    ops = case["ops"][: found[0] + 1]
    index = 0
    while index < len(ops):
        trial = {**case, "ops": ops[:index] + ops[index + 1 :]}
        if diverges(trial, url) is not None:
            ops = trial["ops"]
        else:
            index += 1
    return {**case, "ops": ops}


def save(case: Case, directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"seed-{case['seed']}-{case['mode']}.json"
    head = {k: v for k, v in case.items() if k != "ops"}  # ensure_ascii: surrogates escaped
    ops = ",\n  ".join(json.dumps(op) for op in case["ops"])
    path.write_text(json.dumps(head)[:-1] + f', "ops": [\n  {ops}\n]}}\n')
    return path


def load(path: Path) -> Case:
    loaded: Case = json.loads(path.read_text())
    return loaded
