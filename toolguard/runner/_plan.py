"""What the runner decides once per tool, not per call: the tool as it runs
(:class:`Entry`) and how it runs under one version of the global defaults
(:class:`Plan`), cached with the tool's resolved chain on its ``Rules``.

Whether the sync path may call the tool as it is (no timeout thread, no event loop),
whether the async path may await it right here, and whether a success needs the guard
(truncation, ``return_direct``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from toolguard.guard._guard import Rules
from toolguard.policy._precedence import Resolved
from toolguard.policy._values import NEVER
from toolguard.schema._arguments import Arguments

__all__ = ["GENERAL", "Entry", "Plan", "plan_for"]


class Plan:
    """How the runner runs one tool under one version of the global defaults.

    * ``inline``: the sync path calls the tool as it is, on the caller's thread (a
      sync tool with no timeout, and no async handler in its chain);
    * ``direct``: the async path calls or awaits the tool right here (no timeout;
      a sync tool unless the call asks to be offloaded);
    * ``plain``: a success needs no truncation and no ``return_direct`` decision.

    :data:`GENERAL` is the plan that decides nothing in advance: every tool gives the
    same results under it. The tests run the dispatch and resilience suites with it
    forced (``plan_for`` replaced), so both kinds of plan are pinned by the same cases.
    """

    __slots__ = ("direct", "inline", "name", "plain")

    def __init__(self, *, inline: bool, direct: bool, plain: bool) -> None:
        self.inline = inline
        self.direct = direct
        self.plain = plain
        self.name = "+".join(n for n, on in (("inline", inline), ("direct", direct)) if on) or (
            "general"
        )
        if plain:
            self.name += "+plain"

    def __repr__(self) -> str:
        return f"Plan({self.name})"


GENERAL: Final = Plan(inline=False, direct=False, plain=False)


def plan_for(is_async: bool, resolved: Resolved) -> Plan:
    """The plan for a tool (sync or async) under ``resolved``."""
    untimed = resolved.timeout is None
    return Plan(
        inline=untimed and not is_async and not resolved.is_async,
        direct=untimed,
        plain=resolved.max_result_chars is None and resolved.return_direct is NEVER,
    )


class Entry:
    """One of the agent's tools as the runner runs it. Its chain and plan are cached
    on its ``rules`` (the guard's), as ``resolved`` and ``derived``, under one version."""

    __slots__ = ("arguments", "description", "function", "is_async", "name", "rules", "validate")

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        arguments: Arguments,
        is_async: bool,
        rules: Rules,
        description: str | None = None,
    ) -> None:
        self.name = name
        self.description = description  # for telemetry: gen_ai.tool.description
        self.function = function
        self.arguments = arguments
        # the validator itself, when the model's dict is all the function takes (no
        # injected or positional-only parameters): such calls skip Arguments.bind
        self.validate = arguments.plain_validate
        self.is_async = is_async
        self.rules = rules
        rules.derive = self._plan  # the plan is kept with each resolution of the chain

    def _plan(self, resolved: Resolved) -> Plan:
        return plan_for(self.is_async, resolved)  # read at call time: tests replace it

    @property
    def plan(self) -> Plan:
        """The plan under the chain as last resolved (for inspection)."""
        plan: Plan = self.rules.derived if self.rules.derived is not None else GENERAL
        return plan
