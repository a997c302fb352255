"""The conformance table: what every framework guarded in place must keep.

Guarded in place by its documented one line, a framework behaves exactly as unguarded
except for the answers toolguard exists to change (design.md, "Transparent in place").
Each framework has a driver (``test_<framework>.py`` here) that plays every scenario of
:data:`SCENARIOS` twice on the framework's own offline test model, unguarded and
guarded, observes each run as an :class:`Observation`, and calls :func:`conforms`.

A scenario names the tool bodies the model calls (plain functions below, given to the
framework's own decorator by the driver, or, for ``state``, the framework's own
class-based tool holding state), the calls of one model step, and which fields of the
observation toolguard is meant to change (``changes``); every other field must be equal.
A driver that cannot play a scenario says why in :data:`NOT_APPLICABLE` of its module
(the table in docs/integrations says it too): :func:`played` leaves it out of the
table's test, so no skipped test stands in for it; a driver may play it again, under
:func:`kept_as_the_framework_answers`, to show that guarding changes nothing there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from toolguard import ToolError

SECRET: Final = "password=hunter2"


# --- the tool bodies ------------------------------------------------------------------


def lookup(query: str) -> str:
    """Look something up.

    Args:
        query: What to look up.
    """
    return f"found {query}"


def crash(query: str) -> str:
    """Fail with a secret in the text.

    Args:
        query: What to look up.
    """
    raise RuntimeError(f"backend refused {query}: {SECRET}")


def refuse(query: str) -> str:
    """Fail with a message for the model.

    Args:
        query: What to look up.
    """
    raise ToolError(f"There is no {query}. Ask the user for another one.")


def count(number: int) -> str:
    """Take a number.

    Args:
        number: A whole number.
    """
    return f"got {number}"


class Counter:
    """The state a stateful tool keeps on itself (a driver puts it on the framework's
    own tool object: a field of a ``BaseTool``, of a ``FunctionTool`` subclass, ...)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def bump(self) -> str:
        with self.lock:
            self.calls += 1
            return f"call {self.calls}"


# --- what a run shows -------------------------------------------------------------------


@dataclass
class Observation:
    """What one run showed, normalised so that two runs can be compared.

    * ``model_saw``: per tool result the model received, in order, ``(text, is_error)``;
    * ``raised``: the type name of what ended the run, if anything did;
    * ``runs``: how many times each tool body ran;
    * ``state``: the tool object's own state afterwards (``Counter.calls``);
    * ``final``: the run's final output, as the framework returns it (normalised);
    * ``shape``: the framework's own view of the result objects (types, status fields,
      artifacts, ids, metadata), to catch anything toolguard adds where it decided nothing.
    """

    model_saw: list[tuple[str, bool]] = field(default_factory=list)
    raised: str | None = None
    runs: dict[str, int] = field(default_factory=dict)
    state: object = None
    final: object = None
    shape: object = None


@dataclass(frozen=True)
class Scenario:
    name: str
    tools: tuple[Callable[..., Any], ...]
    calls: tuple[tuple[str, dict[str, Any]], ...]  # (tool name, arguments) of one model step
    changes: frozenset[str] = frozenset()  # Observation fields toolguard is meant to change
    about: str = ""


_ANSWER: Final = frozenset({"model_saw", "raised", "final", "shape"})

SCENARIOS: Final[tuple[Scenario, ...]] = (
    Scenario(
        "success",
        (lookup,),
        (("lookup", {"query": "hats"}),),
        about="a success comes back as the framework returned it, nothing added",
    ),
    Scenario(
        "parallel",
        (lookup, count),
        (("lookup", {"query": "a"}), ("count", {"number": 2}), ("lookup", {"query": "b"})),
        about="parallel calls: one result each, in order, each body run once",
    ),
    Scenario(
        "state",
        (),  # the driver's own stateful tool, named "bump"
        (("bump", {}), ("bump", {})),
        about="a tool's state on itself survives each call",
    ),
    Scenario(
        "hidden_failure",
        (crash,),
        (("crash", {"query": "x"}),),
        changes=_ANSWER,
        about="toolguard's generic answer with an error id; the secret never sent; logged once",
    ),
    Scenario(
        "visible_failure",
        (refuse,),
        (("refuse", {"query": "hat"}),),
        changes=_ANSWER,
        about="a ToolError's message arrives intact",
    ),
    Scenario(
        "bad_arguments",
        (count,),
        (("count", {"number": "many"}),),
        changes=_ANSWER,
        about="toolguard's message naming the argument; the tool does not run",
    ),
    Scenario(
        "unknown_tool",
        (lookup,),
        (("lookpu", {"query": "x"}),),
        changes=_ANSWER,
        about="toolguard's unknown-tool answer, listing the framework's tools",
    ),
)

BY_NAME: Final = {scenario.name: scenario for scenario in SCENARIOS}


def played(not_applicable: Mapping[str, str]) -> list[str]:
    """The scenarios a driver's table test is generated for, in the table's order: all
    but those its ``NOT_APPLICABLE`` names, each of which must be the table's and say why."""
    assert set(not_applicable) <= set(BY_NAME), sorted(set(not_applicable) - set(BY_NAME))
    assert all(why.strip() for why in not_applicable.values()), not_applicable
    return [scenario.name for scenario in SCENARIOS if scenario.name not in not_applicable]


def kept_as_the_framework_answers(name: str) -> Scenario:
    """A scenario that cannot apply to a framework (the framework answers it before any
    guard sees the call), played to show that guarded changes nothing at all."""
    return replace(BY_NAME[name], changes=frozenset())


def conforms(scenario: Scenario, unguarded: Observation, guarded: Observation) -> None:
    """Guarded equals unguarded on every field the scenario does not mean to change."""
    for name in ("model_saw", "raised", "runs", "state", "final", "shape"):
        if name in scenario.changes:
            continue
        assert getattr(guarded, name) == getattr(unguarded, name), (
            f"{scenario.name}: guarded {name} differs\n"
            f"  unguarded: {getattr(unguarded, name)!r}\n"
            f"  guarded:   {getattr(guarded, name)!r}"
        )


def answered_hidden(guarded: Observation, logs: list[dict[str, Any]]) -> None:
    """The guarded run of ``hidden_failure``: toolguard's answer, the secret withheld
    everywhere the model looks, one hidden-cause event whose id the model was told."""
    assert SECRET not in repr(guarded.model_saw) and SECRET not in repr(guarded.final)
    hidden = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert len(hidden) == 1, [event["event"] for event in logs]
    text, is_error = guarded.model_saw[-1]
    assert is_error and hidden[0]["error_id"] in text


def answered_visible(guarded: Observation) -> None:
    text, is_error = guarded.model_saw[-1]
    assert is_error and text == "There is no hat. Ask the user for another one."


def answered_bad_arguments(guarded: Observation) -> None:
    text, is_error = guarded.model_saw[-1]
    assert is_error and "number" in text and guarded.runs.get("count", 0) == 0


def judge(
    scenario: Scenario,
    unguarded: Observation,
    guarded: Observation,
    logs: list[dict[str, Any]],
) -> None:
    """The table's test of one played scenario: guarded as unguarded but for what the
    scenario lets change, a failure answered as toolguard answers it, and no warning
    logged where nothing failed (a driver adds what is its framework's own)."""
    conforms(scenario, unguarded, guarded)
    if scenario.name == "hidden_failure":
        answered_hidden(guarded, logs)
    elif scenario.name == "visible_failure":
        answered_visible(guarded)
    elif scenario.name == "bad_arguments":
        answered_bad_arguments(guarded)
    else:
        assert all(e["log_level"] != "warning" for e in logs), logs


def answered_unknown(guarded: Observation, tools: list[str]) -> None:
    text, is_error = guarded.model_saw[-1]
    assert is_error and text.startswith("There is no tool named 'lookpu' (did you mean 'lookup'?)")
    assert all(name in text for name in tools)
