"""The leak properties of ``tests/test_leaks.py`` through the Agents SDK (property-based).

A tool raises random exceptions whose message, cause/context chain, notes,
attributes, class name or traceback locals carry a fresh secret (the plans of
``tests/test_leaks.py``); it runs in a real ``Runner.run``, either as the SDK's own
``@function_tool`` guarded in place by ``guard()`` or as a toolguard tool through
``as_function_tool``, sync or async. Properties:

* the secret is in nothing the SDK produced or sent the model (run items, the input
  list for the next turn, every model request), nor in the SDK's own log records;
* it is in exactly one structlog event, whose ``error_id`` is the one the call's
  output item carries, with ``exc_info`` the very exception the tool raised (a sync
  SDK tool's ``TimeoutError`` crosses asyncio's thread bridge as a new
  ``TimeoutError`` with the same arguments).
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from typing import Any, Literal

from agents import function_tool
from hypothesis import example, given
from hypothesis import strategies as st
from structlog.testing import capture_logs

import toolguard
from toolguard import Dispatcher
from toolguard.integrations.openai_agents import as_function_tool, guard

from .._hypothesis import PROFILE
from ..test_leaks import Plan, events_mentioning, fail_with, plans
from .test_openai_agents_support import call, outputs, run, say

Way = Literal["in_place", "adapter"]


class Records(logging.Handler):
    """Every record the SDK's own logger emits, formatted with its traceback."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(logging.Formatter().format(record))


def leaky_tools(way: Way, is_async: bool, plan: Plan, secret: str, raised: list[Any]) -> Any:
    def act(key: str) -> str:
        fail_with(plan, secret, raised.append)
        raise AssertionError("unreachable")  # pragma: no cover

    if is_async:

        async def leaky(key: str) -> str:
            """Do the work."""
            await asyncio.sleep(0)
            return act(key)

    else:

        def leaky(key: str) -> str:  # type: ignore[misc]
            """Do the work."""
            return act(key)

    if way == "in_place":
        return guard([function_tool(leaky)], Dispatcher([], external_tools=["leaky"]))
    return [as_function_tool(toolguard.tool(leaky))]


@PROFILE
@given(plan=plans(), is_async=st.booleans(), way=st.sampled_from(["in_place", "adapter"]))
# the SDK's own report of a handled failure reads str(error) (before 0.23 always): an
# exception refusing it once replaced toolguard's answer with the SDK's default text
@example(plan=Plan(kind="str_raises", extras=frozenset()), is_async=False, way="in_place")
def test_a_secret_in_any_part_of_a_tools_exception_never_reaches_the_model(
    plan: Plan, is_async: bool, way: Way
) -> None:
    secret = f"S3CRET-{secrets.token_hex(6)}"
    raised: list[Any] = []
    records = Records()
    sdk_logger = logging.getLogger("openai.agents")
    level = sdk_logger.level
    sdk_logger.addHandler(records)
    sdk_logger.setLevel(logging.DEBUG)
    try:
        with capture_logs() as events:
            result, model = asyncio.run(
                run(
                    leaky_tools(way, is_async, plan, secret, raised),
                    [[call("leaky", {"key": "k"}, "c1")], say("ok")],
                )
            )
    finally:
        sdk_logger.removeHandler(records)
        sdk_logger.setLevel(level)

    for text in (
        repr(result.new_items),
        json.dumps(result.to_input_list(), default=str),
        repr(result.final_output),
        model.sent(),
        *records.texts,
    ):
        assert secret not in text
    item = outputs(result)["c1"]
    assert item.custom_data is not None
    error_id = item.custom_data["toolguard"]["error_id"]
    [event] = [e for e in events if e.get("error_id") == error_id]
    assert event["event"] == "tool_error_hidden"
    assert f"error id {error_id}" in str(item.output) or plan.kind == "visible_with_hidden_cause"
    carrying = events_mentioning(events, secret)
    [error] = raised
    if way == "in_place" and not is_async and type(error) is TimeoutError:
        # asyncio's thread bridge (the SDK's asyncio.to_thread) raises a new
        # TimeoutError with the same arguments (no cause, notes or attributes) in
        # place of the one the tool raised: what it keeps is logged once
        assert (type(event["exc_info"]), event["exc_info"].args) == (TimeoutError, error.args)
        assert carrying in ([], [event])
    else:
        assert carrying == [event]
        assert event["exc_info"] is error
