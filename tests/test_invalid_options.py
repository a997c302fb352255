"""Every bad option raises ``InvalidOption``, wherever it is given: an unknown name (with
the closest allowed one) or a value the option does not take. It is a ``TypeError`` and a
``ValueError`` too, so ``except`` clauses written for either keep working."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import toolguard
from toolguard import AgentPolicy, Breaker, Dispatcher, InvalidOption, Retry, ToolPolicy

BAD: dict[str, Callable[[], object]] = {
    "configure(telemetry=1)": lambda: toolguard.configure(telemetry=1),  # type: ignore[arg-type]
    "configure(record_exception='x')": lambda: toolguard.configure(
        record_exception="x"  # type: ignore[arg-type]
    ),
    "AgentPolicy(store='x')": lambda: AgentPolicy(store="x"),
    "AgentPolicy(store_unavailable='x')": lambda: AgentPolicy(store_unavailable="x"),
    "AgentPolicy(defaults=1)": lambda: AgentPolicy(defaults=1),  # type: ignore[arg-type]
    "AgentPolicy(overides={})": lambda: AgentPolicy(overides={}),  # type: ignore[call-arg]
    "Retry(attempts=0)": lambda: Retry(attempts=0),
    "Retry(on=3)": lambda: Retry(on=3),  # type: ignore[arg-type]
    "Retry(jitter=-1)": lambda: Retry(jitter=-1),
    "Retry(attmpts=2)": lambda: Retry(attmpts=2),  # type: ignore[call-arg]
    "Breaker(failures=0)": lambda: Breaker(failures=0),
    "Breaker(cooldown=-1)": lambda: Breaker(cooldown=-1),
    "Breaker(cooldwn=1)": lambda: Breaker(cooldwn=1),  # type: ignore[call-arg]
    "ToolPolicy(on_eror=...)": lambda: ToolPolicy(on_eror="fail"),  # type: ignore[call-arg]
    "ToolPolicy(timeout=-1)": lambda: ToolPolicy(timeout=-1),
    "ToolPolicy(retries='x')": lambda: ToolPolicy(retries="x"),  # type: ignore[arg-type]
    "session(store='x')": lambda: Dispatcher([]).session(store="x"),  # type: ignore[arg-type]
    "session(id=3)": lambda: Dispatcher([]).session(id=3),  # type: ignore[arg-type]
    "Dispatcher(external_tools='abc')": lambda: Dispatcher([], external_tools="abc"),
}


@pytest.mark.parametrize("make", BAD.values(), ids=BAD.keys())
def test_a_bad_option_raises_invalid_option_which_is_also_type_and_value_error(
    make: Callable[[], Any],
) -> None:
    with pytest.raises(InvalidOption) as raised:
        make()
    assert isinstance(raised.value, TypeError) and isinstance(raised.value, ValueError)


@pytest.mark.parametrize(
    ("make", "suggestion"),
    [
        (lambda: Retry(attmpts=2), "'attempts'"),  # type: ignore[call-arg]
        (lambda: Breaker(cooldwn=1), "'cooldown'"),  # type: ignore[call-arg]
        (lambda: AgentPolicy(overides={}), "'overrides'"),  # type: ignore[call-arg]
        (lambda: ToolPolicy(on_eror="fail"), "'on_error'"),  # type: ignore[call-arg]
        (lambda: AgentPolicy(store_unavailable="fail-close"), "'fail-closed'"),
    ],
)
def test_a_misspelt_option_gets_the_closest_allowed_one(
    make: Callable[[], Any], suggestion: str
) -> None:
    with pytest.raises(InvalidOption, match=f"did you mean {suggestion}"):
        make()


def test_external_tools_may_be_any_iterable_of_names() -> None:
    agent = Dispatcher([], external_tools=(name for name in ["a", "b"]))
    assert agent.explain("a")["on_error"] and agent.explain("b")["on_error"]
