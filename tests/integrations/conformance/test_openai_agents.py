"""Conformance: a toolguard tool inside the Agents SDK is one of the SDK's own, plus policy.

The same function is built three ways:

* ``sdk``: the SDK's ``function_tool`` on the plain function (the reference for success);
* ``in_place``: the SDK's ``function_tool`` on the toolguard tool, guarded in place by
  ``guard()``;
* ``adapter``: toolguard's ``as_function_tools``.

Each way runs in a real ``Runner.run`` with the offline ``ScriptModel`` (tracing off),
and the three must give the same schema the model sees, the same injected values
(the SDK's ``RunContextWrapper``/``ToolContext``), the same handling of a success
(text, the SDK's output types), and on failure toolguard's policy (``in_place`` and
``adapter``; the ``sdk`` way shows the SDK's default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from agents import (
    FunctionTool,
    RunContextWrapper,
    ToolOutputFileContent,
    ToolOutputImage,
    ToolOutputText,
    function_tool,
)
from agents import Tool as AgentsTool
from agents.tool_context import ToolContext

import toolguard
from toolguard import Dispatcher, ToolError
from toolguard.integrations.openai_agents import as_function_tools, guard
from toolguard.policy._precedence import BUILTIN_MESSAGE

from ..test_openai_agents_support import call, outputs, run, say

Way = Literal["sdk", "in_place", "adapter"]
WAYS: tuple[Way, ...] = ("sdk", "in_place", "adapter")
SECRET = "token=sk-live-5ecr3t"
SDK_DEFAULT = "An error occurred while running the tool. Please try again."


@dataclass
class App:
    """The run's context object."""

    user: str


# --- the plain functions, written as an SDK user writes them ---------------------------------


def greet(ctx: RunContextWrapper[App], greeting: str, times: int = 1) -> str:
    """Greet the user of this run.

    Args:
        greeting: The word to greet with.
        times: How many times to say it.
    """
    return " ".join([greeting] * times) + f", {ctx.context.user}"


async def who_called(ctx: ToolContext[App], note: str) -> str:
    """Say which call this is.

    Args:
        note: A note to repeat.
    """
    return f"{ctx.tool_name}/{ctx.tool_call_id}/{ctx.context.user}: {note}"


def headline(topic: str) -> ToolOutputText:
    """A headline as the SDK's text output."""
    return ToolOutputText(text=f"News about {topic}")


def gallery(count: int) -> list[ToolOutputImage | ToolOutputText]:
    """Images as the SDK's image outputs, with a caption."""
    return [
        *(ToolOutputImage(image_url=f"https://example.test/{i}.png") for i in range(count)),
        ToolOutputText(text=f"{count} images"),
    ]


def report(name: str) -> ToolOutputFileContent:
    """A file as the SDK's file output."""
    return ToolOutputFileContent(file_url=f"https://example.test/{name}.pdf", filename=name)


def withdraw(amount: int) -> str:
    """Withdraw money (its backend fails)."""
    raise RuntimeError(f"bank said no: {SECRET}")


def lookup(order_id: int) -> str:
    """Look up an order (says what is wrong)."""
    raise ToolError(f"There is no order {order_id}.")


FUNCTIONS: tuple[Callable[..., Any], ...] = (
    greet,
    who_called,
    headline,
    gallery,
    report,
    withdraw,
    lookup,
)


def build(way: Way) -> tuple[list[AgentsTool], Dispatcher | None]:
    """Every function as one of the three ways builds it."""
    if way == "sdk":
        return [function_tool(fn) for fn in FUNCTIONS], None
    tools = [toolguard.tool(fn) for fn in FUNCTIONS]
    if way == "in_place":
        dispatcher = Dispatcher(tools)
        return guard([function_tool(t) for t in tools], dispatcher), dispatcher
    dispatcher = Dispatcher(tools)
    return as_function_tools(dispatcher), dispatcher


def by_name(tools: list[AgentsTool]) -> dict[str, FunctionTool]:
    return {tool.name: tool for tool in tools if isinstance(tool, FunctionTool)}


# --- what the model sees ------------------------------------------------------------------------


@pytest.mark.parametrize("way", ["in_place", "adapter"])
def test_the_model_sees_the_same_tools_as_with_the_sdks_own_decorator(way: Way) -> None:
    reference = by_name(build("sdk")[0])
    built = by_name(build(way)[0])

    assert list(built) == list(reference)
    for name, tool in built.items():
        expected = reference[name]
        assert tool.description == expected.description, name
        assert tool.params_json_schema == expected.params_json_schema, name
        assert tool.strict_json_schema == expected.strict_json_schema, name
    # the SDK's context parameter is nowhere in what the model sees
    assert "ctx" not in built["greet"].params_json_schema["properties"]
    assert "ctx" not in built["who_called"].params_json_schema["properties"]


# --- injection and success ------------------------------------------------------------------------

SUCCESS_SCRIPT = [
    [
        call("greet", {"greeting": "hi", "times": 2}, "c1"),
        call("who_called", {"note": "n"}, "c2"),
        call("headline", {"topic": "tea"}, "c3"),
        call("gallery", {"count": 2}, "c4"),
        call("report", {"name": "q3"}, "c5"),
    ],
    say("done"),
]


async def run_way(way: Way, script: list[Any]) -> tuple[dict[str, Any], str]:
    tools, _ = build(way)
    result, model = await run(tools, script, context=App("ann"))
    return {key: item.output for key, item in outputs(result).items()}, model.sent()


@pytest.mark.parametrize("way", ["in_place", "adapter"])
async def test_injected_values_and_successes_are_the_sdks_own(way: Way) -> None:
    expected, expected_sent = await run_way("sdk", SUCCESS_SCRIPT)
    got, sent = await run_way(way, SUCCESS_SCRIPT)

    assert got == expected
    assert got["c1"] == "hi hi, ann"  # RunContextWrapper: the run's context
    assert got["c2"] == "who_called/c2/ann: n"  # ToolContext: this call's
    assert got["c3"] == ToolOutputText(text="News about tea")
    assert isinstance(got["c4"], list)
    assert isinstance(got["c4"][0], ToolOutputImage)
    assert isinstance(got["c5"], ToolOutputFileContent)
    # and the model was sent the same thing: the SDK's structured outputs
    assert sent == expected_sent


# --- failures: toolguard's policy ---------------------------------------------------------------

FAILURE_SCRIPT = [
    [call("withdraw", {"amount": 5}, "c1"), call("lookup", {"order_id": 7}, "c2")],
    say("sorry"),
]


async def test_the_sdk_alone_answers_every_failure_with_its_default() -> None:
    """The reference for failures (before 0.24 the default also appends the
    exception's text, secrets included; from 0.24 it says nothing more)."""
    got, _ = await run_way("sdk", FAILURE_SCRIPT)
    assert str(got["c1"]).startswith(SDK_DEFAULT)
    assert str(got["c2"]).startswith(SDK_DEFAULT)


@pytest.mark.parametrize("way", ["in_place", "adapter"])
async def test_failures_follow_toolguards_policy(way: Way, logs: list[dict[str, Any]]) -> None:
    got, sent = await run_way(way, FAILURE_SCRIPT)

    [event] = [e for e in logs if e["tool"] == "withdraw"]
    assert event["event"] == "tool_error_hidden"
    assert got["c1"] == BUILTIN_MESSAGE.replace("{tool}", "withdraw").replace(
        "{error_id}", event["error_id"]
    )
    assert got["c2"] == "There is no order 7."
    assert SECRET not in sent
    assert sum(SECRET in repr(e) for e in logs) == 1


@pytest.mark.parametrize("way", ["in_place", "adapter"])
async def test_the_tools_own_policy_applies_in_both_toolguard_ways(way: Way) -> None:
    """The decorator's policy (the tool level) holds whichever way the tool is built."""
    polite = toolguard.tool(withdraw, on_error="The bank is closed; try tomorrow.")
    dispatcher = Dispatcher([polite])
    tools = (
        guard([function_tool(polite)], dispatcher)
        if way == "in_place"
        else as_function_tools(dispatcher)
    )
    result, _ = await run(tools, [[call("withdraw", {"amount": 1}, "c1")], say("ok")])
    assert outputs(result)["c1"].output == "The bank is closed; try tomorrow."
