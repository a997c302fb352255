"""CrewAI's own tool call, unguarded and guarded by ``guard(tools, dispatcher)``.

The path timed is what CrewAI's native function-calling loop does per call
(``crewai/utilities/agent_utils.py``): ``tool.run(**arguments)`` (the tool validates
its arguments with its ``args_schema``, counts its usage, runs), an exception answered
with ``f"Error executing tool: {e}"``; inside a task (``set_current_task_id``), so that,
guarded, the call belongs to the task's conversation. The failure's unguarded side is
that answer (nothing logged); guarded, one hidden failure of the core, returned as
CrewAI's own ``ToolFailure``. CrewAI installs only in its own environment: run
``.venv-crewai/bin/python benchmarks/compare.py --only inplace_crewai_ok_unguarded,...``.
"""

from __future__ import annotations

from typing import Any

from _peers import ARGS, Bench, Namespace, RunAsync, Suite, does


def _setup(run: RunAsync) -> Namespace:
    from crewai.context import set_current_task_id
    from crewai.tools import tool

    from toolguard import Dispatcher
    from toolguard.integrations.crewai import guard

    @tool("add")
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @tool("crash")
    def crash(a: int, b: int) -> int:
        """Add two integers (fails)."""
        raise ConnectionError("orders-db at postgres://admin:s3cret@db refused")

    guarded = guard([add, crash], Dispatcher([], external_tools=["add", "crash"]))
    set_current_task_id("benchmark-task")

    def native(tool: Any) -> Any:
        """What CrewAI's native loop does with one call of ``tool``."""
        try:
            return tool.run(**ARGS)
        except Exception as error:
            return f"Error executing tool: {error}"

    return {"cr_call": native, "cr_add": add, "cr_crash": crash,
            "cr_add_g": guarded[0], "cr_crash_g": guarded[1]}  # fmt: skip


CR_VALIDATES = "the tool's args_schema (CrewAI's BaseTool.run)"

SUITE = Suite(
    group="inplace-crewai",
    module="crewai",
    versions=("crewai",),
    description="tool.run(**arguments) as CrewAI's native loop calls it, inside a task",
    benches=(
        Bench(
            key="inplace_crewai_ok_unguarded",
            label="crewai: tool call, success (unguarded)",
            stmt="cr_call(cr_add)",
            check="cr_call(cr_add) == 3",
            does=does(CR_VALIDATES, "Error executing tool armed", "nothing", "the value"),
        ),
        Bench(
            key="inplace_crewai_ok_guarded",
            label="crewai: tool call, success (guarded)",
            stmt="cr_call(cr_add_g)",
            vs="inplace_crewai_ok_unguarded",
            check="cr_call(cr_add_g) == 3",
            does=does(CR_VALIDATES, "the handler chain armed", "nothing", "the value"),
        ),
        Bench(
            key="inplace_crewai_failure_unguarded",
            label="crewai: tool call, failure (unguarded: Error executing tool)",
            stmt="cr_call(cr_crash)",
            check="'s3cret' in cr_call(cr_crash)",
            does=does(CR_VALIDATES, "str(e) to the model", "nothing", "a str"),
        ),
        Bench(
            key="inplace_crewai_failure_guarded",
            label="crewai: tool call, failure (guarded: hidden)",
            stmt="cr_call(cr_crash_g)",
            vs="inplace_crewai_failure_unguarded",
            check="'error id' in cr_call(cr_crash_g).message",
            does=does(
                CR_VALIDATES,
                "hidden: toolguard's message with an error id",
                "once (tool_error_hidden)",
                "ToolFailure",
            ),
        ),
    ),
    setup=_setup,
)
