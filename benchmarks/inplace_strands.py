"""Strands' own tool call, unguarded and guarded by ``hooks=[ToolguardHooks(dispatcher)]``.

The path timed is Strands' public direct tool call, ``agent.tool.add(a=1, b=2)``: it
runs the tool through the agent's own tool executor with every hook
(``BeforeToolCallEvent``, ``AfterToolCallEvent``), on an event loop of its own (which
is most of its cost); ``record_direct_tool_call=False`` keeps the agent's messages from
growing. The failure's unguarded side is Strands' own answer (``Error: {e}``, its
traceback logged to a NullHandler); guarded, one hidden failure of the core (and
Strands' traceback log of it dropped). Strands installs only in its own environment:
run ``.venv-strands/bin/python benchmarks/compare.py --only inplace_strands_ok_unguarded,...``.
"""

from __future__ import annotations

import logging
from typing import Any

from _peers import Bench, Namespace, RunAsync, Suite, does


def _setup(run: RunAsync) -> Namespace:
    from strands import Agent, tool
    from strands.models.model import Model

    from toolguard import Dispatcher
    from toolguard.integrations.strands import ToolguardHooks

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool
    def crash(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")

    class NoModel(Model):  # a direct tool call asks no model
        def update_config(self, **config: Any) -> None: ...
        def get_config(self) -> Any:
            return {}

        def structured_output(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

        def stream(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    quiet = logging.getLogger("strands")
    quiet.addHandler(logging.NullHandler())
    quiet.propagate = False

    def agent(*hooks: Any) -> Any:
        return Agent(model=NoModel(), tools=[add, crash], hooks=list(hooks),
                     callback_handler=None, record_direct_tool_call=False)  # fmt: skip

    hooks = ToolguardHooks(Dispatcher([], external_tools=["add", "crash"]))
    return {"st_plain": agent(), "st_guarded": agent(hooks)}


ST_VALIDATES = "the decorated tool's own pydantic model"

SUITE = Suite(
    group="inplace-strands",
    module="strands",
    versions=("strands-agents",),
    description="agent.tool.<name>(...): Strands' direct tool call through its executor and hooks",
    benches=(
        Bench(
            key="inplace_strands_ok_unguarded",
            label="strands: tool call, success (unguarded)",
            stmt="st_plain.tool.add(a=1, b=2)",
            check="st_plain.tool.add(a=1, b=2)['status'] == 'success'",
            does=does(ST_VALIDATES, "Error: {e} armed", "nothing", "ToolResult"),
        ),
        Bench(
            key="inplace_strands_ok_guarded",
            label="strands: tool call, success (guarded)",
            stmt="st_guarded.tool.add(a=1, b=2)",
            vs="inplace_strands_ok_unguarded",
            check="st_guarded.tool.add(a=1, b=2)['status'] == 'success'",
            does=does(ST_VALIDATES, "the handler chain armed", "nothing", "ToolResult"),
        ),
        Bench(
            key="inplace_strands_failure_unguarded",
            label="strands: tool call, failure (unguarded: Error: {e})",
            stmt="st_plain.tool.crash(a=1, b=2)",
            check="'s3cret' in str(st_plain.tool.crash(a=1, b=2))",
            does=does(ST_VALIDATES, "str(e) to the model", "traceback (NullHandler)", "ToolResult"),
        ),
        Bench(
            key="inplace_strands_failure_guarded",
            label="strands: tool call, failure (guarded: hidden)",
            stmt="st_guarded.tool.crash(a=1, b=2)",
            vs="inplace_strands_failure_unguarded",
            check="'error id' in str(st_guarded.tool.crash(a=1, b=2))",
            does=does(
                ST_VALIDATES,
                "hidden: toolguard's message with an error id",
                "once (tool_error_hidden)",
                "ToolResult",
            ),
        ),
    ),
    setup=_setup,
)
