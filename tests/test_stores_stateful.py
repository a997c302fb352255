"""Both stores, one story: a hypothesis state machine drives a memory session and a
Redis session with the same calls (failures, successes, model-visible errors, retries
asked of the model in new and repeated steps, waits past the cool-down, resets) and
requires the same answers, the same state and the same log events after each step."""

from __future__ import annotations

import time
import uuid
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    rule,
    run_state_machine_as_test,
)
from structlog.testing import capture_logs

from tests._content import str_content
from tests._redis_server import RedisServer
from toolguard import Breaker, Dispatcher, RetryWithFeedback, ToolCall, ToolError, tool
from toolguard.stores import MemoryStore, RedisStore

COOLDOWN = 0.3
TOOLS = ("alpha", "beta")
_STORY_EVENTS = ("breaker_opened", "breaker_closed", "session_reset", "tool_error_hidden")


def _make(name: str) -> Any:
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
    return tool(breaker=Breaker(failures=2, cooldown=COOLDOWN), max_model_retries=3)(run)


DISPATCHER = Dispatcher([_make(name) for name in TOOLS])
SERVER: dict[str, RedisServer] = {}


def _answer(text: str) -> str:
    """An answer without its error id (each side draws its own)."""
    if "error id" in text:
        return text[: text.index("error id")]
    return text


def _events(captured: list[Any]) -> list[tuple[str, Any]]:
    return [(e["event"], e.get("tool")) for e in captured if e["event"] in _STORY_EVENTS]


class BothStores(RuleBasedStateMachine):
    """A memory session and a Redis session, asked the same things."""

    @initialize()
    def open_sessions(self) -> None:
        conversation = uuid.uuid4().hex
        self.store = RedisStore.from_url(SERVER["server"].url, agent="stateful")
        self.sessions = [
            DISPATCHER.session(id=conversation, store=MemoryStore()),
            DISPATCHER.session(id=conversation, store=self.store),
        ]
        self.steps = 0

    def _both(self, act: Any) -> None:
        seen = []
        for session in self.sessions:
            with capture_logs() as captured:
                answer = act(session)
            seen.append((answer, _events(captured)))
        assert seen[0] == seen[1]

    @rule(name=st.sampled_from(TOOLS), outcome=st.sampled_from(["ok", "fail", "visible", "retry"]))
    def call(self, name: str, outcome: str) -> None:
        call = ToolCall(name=name, arguments={"outcome": outcome})
        self.steps += 1
        step = f"step-{self.steps}"
        self._both(lambda s: _answer(str_content(s.dispatch(call, step=step))))

    @rule(name=st.sampled_from(TOOLS))
    def retry_again_in_the_same_step(self, name: str) -> None:
        call = ToolCall(name=name, arguments={"outcome": "retry"})
        step = f"step-{self.steps}"
        self._both(lambda s: _answer(str_content(s.dispatch(call, step=step))))

    @rule()
    def wait_past_the_cooldown(self) -> None:
        time.sleep(COOLDOWN + 0.05)

    @rule(name=st.sampled_from([*TOOLS, None]))
    def reset(self, name: str | None) -> None:
        self._both(lambda s: s.reset(name))

    @invariant()
    def same_state(self) -> None:
        if not hasattr(self, "sessions"):
            return
        for name in TOOLS:
            memory, shared = (s.state(name) for s in self.sessions)
            assert memory.model_retries == shared.model_retries
            assert memory.consecutive_failures == shared.consecutive_failures
            assert (memory.open_until is None) == (shared.open_until is None)

    def teardown(self) -> None:
        if hasattr(self, "store"):
            self.store.client.close()


def test_both_stores_give_the_same_answers_states_and_events(redis_server: RedisServer) -> None:
    SERVER["server"] = redis_server
    run_state_machine_as_test(
        BothStores,
        settings=settings(
            max_examples=15,
            stateful_step_count=12,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
