"""Conformance (issue 32): Semantic Kernel guarded in place by its one line,
``guard(kernel, dispatcher)``, against the same kernel unguarded.

Each scenario of :data:`_table.SCENARIOS` runs twice through a real kernel's auto
function calling on the scripted chat service of tests/integrations/test_semantic_kernel.py,
with functions made by Semantic Kernel's own ``@kernel_function`` (in the plugin
``t``: the model calls ``t-lookup``); the function results the model read, the
kernel's own result objects, the run's answer and the tools' runs and state are
compared by :func:`_table.conforms`.

Semantic Kernel marks no function result as an error: a failure's ``FunctionResult`` is
one it makes itself (no metadata; Semantic Kernel's own ``An error occurred ...`` text,
or toolguard's answer), a success's is the function's (its arguments in the metadata).
That is the ``is_error`` of each result the model saw here.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from semantic_kernel import Kernel
from semantic_kernel.contents import ChatHistory, FunctionResultContent
from semantic_kernel.functions import FunctionResult, kernel_function
from structlog.testing import capture_logs

from toolguard import Dispatcher
from toolguard.integrations.semantic_kernel import guard

from ..test_semantic_kernel import ScriptedChat, settings
from . import _table
from ._table import Counter, Observation, Scenario

NOT_APPLICABLE = {
    "unknown_tool": (
        "Semantic Kernel answers a function name it has no function for itself "
        "(Kernel.invoke_function_call: 'The tool call with name ... is not part of the "
        "provided tools'), before any filter runs: a guard on the kernel never sees that call"
    ),
}

PLUGIN = "t"


class Bump:
    """A plugin keeping its own state."""

    def __init__(self) -> None:
        self.counter = Counter()

    @kernel_function(description="Count the calls.")
    def bump(self) -> str:
        return self.counter.bump()


def _counted(function: Callable[..., Any], runs: dict[str, int]) -> Callable[..., Any]:
    """Semantic Kernel's ``@kernel_function`` on ``function``, counting its runs."""

    def body(*args: Any, **kwargs: Any) -> Any:
        runs[function.__name__] = runs.get(function.__name__, 0) + 1
        return function(*args, **kwargs)

    functools.update_wrapper(body, function)
    # _table is written with postponed annotations: Semantic Kernel reads the types
    body.__signature__ = inspect.signature(function, eval_str=True)  # type: ignore[attr-defined]
    made: Callable[..., Any] = kernel_function(body, name=function.__name__)
    return made


def _is_error(item: FunctionResultContent) -> bool:
    inner = item.inner_content
    return not (isinstance(inner, FunctionResult) and "used_arguments" in inner.metadata)


async def play(
    kernel: Kernel, calls: Sequence[tuple[str, dict[str, Any]]], *, guarded: bool, names: list[str]
) -> Observation:
    if guarded:
        guard(kernel, Dispatcher([], external_tools=[f"{PLUGIN}-{name}" for name in names]))
    chat = ScriptedChat(
        ai_model_id="scripted", steps=[[(f"{PLUGIN}-{name}", args) for name, args in calls]]
    )
    kernel.add_service(chat)
    history = ChatHistory()
    history.add_user_message("go")
    seen = Observation()
    try:
        answer = await chat.get_chat_message_contents(history, settings(), kernel=kernel)
        seen.final = [str(message) for message in answer]
    except Exception as error:
        seen.raised = type(error).__name__
    sent = [  # what the model was sent back, by call id (parallel calls finish in any order)
        item
        for message in chat.seen[-1]
        for item in message.items
        if isinstance(item, FunctionResultContent)
    ]
    sent.sort(key=lambda item: str(item.id))
    seen.model_saw = [(str(item.result), _is_error(item)) for item in sent]
    seen.shape = (
        [
            (
                type(item).__name__,
                item.id,
                item.function_name,
                item.plugin_name,
                sorted(item.metadata),
                type(item.inner_content).__name__,
            )
            for item in sent
        ],
        [str(message.role) for message in chat.seen[-1]],
        len(chat.seen),
    )
    return seen


async def observe(scenario: Scenario, *, guarded: bool) -> tuple[Observation, list[Any]]:
    runs: dict[str, int] = {}
    kernel = Kernel()
    bump = Bump()
    if scenario.name == "state":
        kernel.add_plugin(bump, PLUGIN)
        names = ["bump"]
    else:
        functions = [_counted(body, runs) for body in scenario.tools]
        kernel.add_functions(PLUGIN, functions)
        names = [body.__name__ for body in scenario.tools]
    with capture_logs() as logs:
        seen = await play(kernel, scenario.calls, guarded=guarded, names=names)
    seen.runs = runs
    if scenario.name == "state":
        # the two calls run at once (Semantic Kernel gathers them): which one got
        # "call 1" is the event loop's scheduling, guarded or not
        seen.model_saw = sorted(seen.model_saw)
        seen.state = bump.counter.calls
    return seen, logs


@pytest.mark.parametrize("name", _table.played(NOT_APPLICABLE))
async def test_the_conformance_table(name: str) -> None:
    scenario = _table.BY_NAME[name]
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, logs = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    if name == "hidden_failure":
        _table.answered_hidden(guarded, logs)
    elif name == "visible_failure":
        _table.answered_visible(guarded)
    elif name == "bad_arguments":
        _table.answered_bad_arguments(guarded)
        assert unguarded.model_saw[-1][0].startswith("An error occurred while invoking")
    else:
        assert all(e["log_level"] != "warning" for e in logs), logs


@pytest.mark.parametrize("name", sorted(NOT_APPLICABLE))
async def test_what_cannot_apply_is_left_as_semantic_kernel_answers(name: str) -> None:
    """A scenario Semantic Kernel answers before any filter sees the call
    (``NOT_APPLICABLE`` says why) is not the table's test: played here, guarded changes
    nothing at all."""
    scenario = _table.kept_as_the_framework_answers(name)
    unguarded, _ = await observe(scenario, guarded=False)
    guarded, _ = await observe(scenario, guarded=True)
    _table.conforms(scenario, unguarded, guarded)
    assert guarded.model_saw[-1][1], guarded  # the framework's own error answer
