"""The six-level precedence chain: call > override > tool > agent > global > builtin.

For every pair of levels, the higher one wins for handlers and for scalar
settings, a declining handler falls through to the lower one, and ``explain``
names the level that supplied each setting.
"""

from __future__ import annotations

import itertools
from typing import Any

import attrs
import pytest

import toolguard
from tests._content import str_content
from toolguard import Dispatcher, Setting, ToolCall, ToolPolicy, tool
from toolguard.handlers import always, on
from toolguard.policy._precedence import LEVELS, Level
from toolguard.policy._values import UNSET

SETTABLE: tuple[Level, ...] = ("call", "override", "tool", "agent", "global")
PAIRS = [(hi, lo) for hi, lo in itertools.combinations(LEVELS, 2)]


class Boom(Exception):
    pass


def _options(policy: ToolPolicy) -> dict[str, Any]:
    return {
        name: value
        for name, value in attrs.asdict(policy, recurse=False).items()
        if value is not UNSET
    }


def _run(levels: dict[Level, ToolPolicy]) -> tuple[Dispatcher, ToolPolicy | None]:
    """A dispatcher for one failing tool ``t`` with a policy at each given level."""

    def t() -> str:
        raise Boom("no")

    guarded = tool(t, **_options(levels.get("tool", ToolPolicy())))
    if "global" in levels:
        toolguard.configure(**_options(levels["global"]))
    dispatcher = Dispatcher(
        [guarded],
        overrides={"t": levels["override"]} if "override" in levels else None,
        **_options(levels.get("agent", ToolPolicy())),
    )
    return dispatcher, levels.get("call")


def _dispatch(levels: dict[Level, ToolPolicy]) -> toolguard.ToolResult:
    dispatcher, call_policy = _run(levels)
    return dispatcher.dispatch(ToolCall(name="t", id="c1"), policy=call_policy)


def _explain(levels: dict[Level, ToolPolicy]) -> dict[str, Any]:
    dispatcher, call_policy = _run(levels)
    return dispatcher.explain("t", policy=call_policy)


def _chain(explained: dict[str, Setting | tuple[Setting, ...]]) -> tuple[Setting, ...]:
    """``explain()``'s ``on_error`` entry: the handler chain (a tuple, unlike the scalars)."""
    chain = explained["on_error"]
    assert isinstance(chain, tuple)
    return chain


@pytest.mark.parametrize(("hi", "lo"), PAIRS)
def test_higher_level_handler_answers(hi: Level, lo: Level) -> None:
    levels = {
        level: ToolPolicy(on_error=f"from {level}") for level in (hi, lo) if level in SETTABLE
    }
    result = _dispatch(levels)
    assert result.is_error
    assert result.content == f"from {hi}"


@pytest.mark.parametrize(("hi", "lo"), [p for p in PAIRS if p[0] in SETTABLE])
def test_declining_handler_falls_through_to_the_lower_level(hi: Level, lo: Level) -> None:
    levels = {hi: ToolPolicy(on_error=on(KeyError, "only for KeyError"))}
    if lo in SETTABLE:
        levels[lo] = ToolPolicy(on_error=f"from {lo}")
    result = _dispatch(levels)
    if lo == "builtin":
        assert str_content(result).startswith("The tool 't' failed because of an internal error")
        assert result.error_id is not None and result.error_id in result.content
    else:
        assert result.content == f"from {lo}"


@pytest.mark.parametrize(("hi", "lo"), PAIRS)
def test_higher_level_scalar_wins_and_explain_names_it(
    hi: Level, lo: Level, logs: list[dict[str, Any]]
) -> None:
    values = {"call": "critical", "override": "error", "tool": "info", "agent": "debug"}
    values["global"] = "error" if hi != "override" and lo != "override" else "info"
    levels = {level: ToolPolicy(log_level=values[level]) for level in (hi, lo) if level in SETTABLE}
    expected = values.get(hi, "warning")
    explained = _explain(levels)
    assert explained["log_level"] == Setting(expected, hi)
    result = _dispatch(levels)
    [event] = [e for e in logs if e["event"] == "tool_error_hidden"]
    assert event["log_level"] == expected
    assert event["error_id"] == result.error_id


@pytest.mark.parametrize(("hi", "lo"), PAIRS)
def test_return_direct_takes_the_highest_level_that_sets_it(hi: Level, lo: Level) -> None:
    levels = {}
    if hi in SETTABLE:
        levels[hi] = ToolPolicy(return_direct="always")
    if lo in SETTABLE:
        levels[lo] = ToolPolicy(return_direct=False)
    result = _dispatch(levels)
    # builtin says "never"; any settable level above it saying "always" wins
    assert result.return_direct is (hi != "builtin")


def test_explain_lists_the_whole_chain_in_precedence_order() -> None:
    levels = {level: ToolPolicy(on_error=f"from {level}") for level in SETTABLE}
    chain = _explain(levels)["on_error"]
    assert [setting.level for setting in chain] == list(LEVELS)
    assert [setting.value.name for setting in chain[:-1]] == [f"'from {lv}'" for lv in SETTABLE]


def test_composed_handlers_at_one_level_are_asked_in_order_then_the_next_level() -> None:
    tool_level = ToolPolicy(on_error=on(KeyError, "key") | on(ValueError, "value"))
    chain = _explain({"tool": tool_level, "agent": ToolPolicy(on_error="agent")})["on_error"]
    assert [(s.value.name, s.level) for s in chain] == [
        ("on(KeyError, 'key')", "tool"),
        ("on(ValueError, 'value')", "tool"),
        ("'agent'", "agent"),
        ("generic_unless_visible(BUILTIN_MESSAGE)", "builtin"),
    ]
    assert _dispatch({"tool": tool_level, "agent": ToolPolicy(on_error="agent")}).content == "agent"


def test_configure_after_decoration_applies_on_the_next_call() -> None:
    @tool
    def t() -> str:
        raise Boom("no")

    dispatcher = Dispatcher([t])
    assert str_content(dispatcher.dispatch(ToolCall(name="t"))).startswith("The tool 't' failed")
    toolguard.configure(on_error="global says no")
    assert dispatcher.dispatch(ToolCall(name="t")).content == "global says no"
    assert _chain(dispatcher.explain("t"))[0] == Setting(
        _chain(dispatcher.explain("t"))[0].value, "global"
    )
    toolguard.reset_defaults()
    assert str_content(dispatcher.dispatch(ToolCall(name="t"))).startswith("The tool 't' failed")


def test_exact_override_beats_a_glob_and_the_first_glob_beats_later_ones() -> None:
    @tool
    def search_web() -> str:
        raise Boom("no")

    dispatcher = Dispatcher(
        [search_web],
        overrides={
            "search_*": ToolPolicy(on_error="first glob", log_level="info"),
            "*": ToolPolicy(on_error="second glob", log_level="error"),
            "search_web": ToolPolicy(on_error=on(KeyError, "exact declines")),
        },
    )
    chain = _chain(dispatcher.explain("search_web"))
    assert [s.value.name for s in chain[:3]] == [
        "on(KeyError, 'exact declines')",
        "'first glob'",
        "'second glob'",
    ]
    assert dispatcher.dispatch(ToolCall(name="search_web")).content == "first glob"
    assert dispatcher.explain("search_web")["log_level"] == Setting("info", "override")


def test_an_override_naming_no_tool_is_an_error_with_a_suggestion() -> None:
    @tool
    def search_web() -> str:
        return "ok"

    with pytest.raises(toolguard.ToolDefinitionError, match="did you mean 'search_web'"):
        Dispatcher([search_web], overrides={"search_wbe": ToolPolicy(on_error="x")})


def test_explain_of_an_unknown_tool_suggests_the_closest_name() -> None:
    dispatcher = Dispatcher([tool(name="lookup")(lambda: "x")])
    with pytest.raises(KeyError, match="did you mean 'lookup'"):
        dispatcher.explain("lookpu")


# --- an agent policy (what a policy file holds) beside code settings ---------------


def _failing_search() -> toolguard.Tool[..., str]:
    @tool(on_error=on(KeyError, "tool: key"))
    def search_web() -> str:
        raise Boom("no")

    return search_web


def test_an_agent_policy_is_the_later_word_at_each_level() -> None:
    policy = toolguard.AgentPolicy(
        defaults=ToolPolicy(on_error=on(ValueError, "file: value"), log_level="error"),
        overrides={"search_*": ToolPolicy(on_error=on(Boom, "file override"))},
        return_direct_mode="all",
        source="prod.toml",
    )
    dispatcher = Dispatcher(
        [_failing_search()],
        policy=policy,
        overrides={"search_web": ToolPolicy(on_error=on(OSError, "code override"))},
        on_error="code agent",
        log_level="info",
        return_direct_mode="any",
    )
    explained = dispatcher.explain("search_web")
    chain = [(s.value.name, s.level, s.source) for s in _chain(explained)]
    assert chain == [
        ("on(OSError, 'code override')", "override", "overrides['search_web']"),
        ("on(Boom, 'file override')", "override", 'prod.toml: tools."search_*"'),
        ("on(KeyError, 'tool: key')", "tool", None),
        ("on(ValueError, 'file: value')", "agent", "prod.toml"),
        ("'code agent'", "agent", None),
        ("generic_unless_visible(BUILTIN_MESSAGE)", "builtin", None),
    ]
    log_level = explained["log_level"]
    assert isinstance(log_level, Setting)
    assert log_level == Setting("error", "agent")
    assert log_level.source == "prod.toml"
    assert dispatcher.return_direct_mode == "all"
    assert dispatcher.dispatch(ToolCall(name="search_web")).content == "file override"


def test_a_policy_override_may_name_tools_this_agent_lacks() -> None:
    policy = toolguard.AgentPolicy(
        overrides={"other_agents_tool": ToolPolicy(on_error="x")}, source="shared.toml"
    )
    dispatcher = Dispatcher([_failing_search()], policy=policy)
    assert str_content(dispatcher.dispatch(ToolCall(name="search_web"))).startswith("The tool")


def test_agent_policy_values_are_checked() -> None:
    with pytest.raises(ValueError, match="return_direct_mode='some'"):
        toolguard.AgentPolicy(return_direct_mode="some")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_workers=0"):
        toolguard.AgentPolicy(max_workers=0)
    with pytest.raises(TypeError, match=r"overrides\['x'\] must be a ToolPolicy"):
        toolguard.AgentPolicy(overrides={"x": "y"})  # type: ignore[dict-item]  # under test
    with pytest.raises(toolguard.ToolDefinitionError, match="policy= takes an AgentPolicy"):
        Dispatcher([], policy=ToolPolicy())  # type: ignore[arg-type]
    with pytest.raises(toolguard.ToolDefinitionError, match="bad glob"):
        Dispatcher([], policy=toolguard.AgentPolicy(overrides={"[": ToolPolicy()}, source="f"))


def test_unknown_names_take_their_overrides_and_follow_later_global_defaults() -> None:
    """Names no override matches share one resolution of the agent level (issue 16);
    it must still follow ``configure()`` and leave glob-matched names their override."""
    dispatcher = Dispatcher(
        [tool(name="lookup")(lambda: "x")],
        overrides={"admin_*": ToolPolicy(on_invalid_call=always("no admin tools here"))},
        on_invalid_call=on(KeyError, "agent declines"),
    )

    def answer(name: str) -> str:
        return str_content(dispatcher.dispatch(ToolCall(name=name)))

    assert answer("lookpu").startswith("There is no tool named 'lookpu'")
    assert answer("admin_drop") == "no admin tools here"
    toolguard.configure(on_invalid_call=always("global: unknown"))
    assert answer("lookpu") == "global: unknown"  # seen before the change
    assert answer("lookup_all") == "global: unknown"  # first seen after it
    assert answer("admin_drop") == "no admin tools here"
    toolguard.reset_defaults()
    assert answer("lookup_all").startswith("There is no tool named 'lookup_all'")
