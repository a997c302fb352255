"""``ToolguardPlugin``: one line on a worker (or client) for toolguard in Temporal.

* **The sandbox.** Temporal's default workflow runner re-imports a workflow's modules in
  a sandbox for every run. The plugin passes toolguard and what it imports through
  (imported once, outside; toolguard itself is sandbox-safe, and replay-safe in workflow
  code through ``toolguard.integrations.temporal``'s runtime), so a workflow that
  imports and uses toolguard needs no passthrough settings.
* **Exception types.** ``ToolCallFailed`` (a handler chose to fail the invocation) and
  ``ToolDefinitionError`` (a tool or policy declared wrongly) fail the workflow, rather
  than its task, which Temporal would retry forever.
* **Activities.** Given dispatchers, it registers their tools' activities.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Final

from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkflowRunner
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner

from toolguard import Dispatcher, ToolCallFailed, ToolDefinitionError
from toolguard.integrations.temporal._activities import PREFIX, tool_activities

__all__ = ["PASSTHROUGH", "ToolguardPlugin", "passthrough"]

PASSTHROUGH: Final = (
    "toolguard",
    "structlog",
    "rich",  # structlog's, where installed: its import draws random bits
    "pygments",  # rich's, imported when a traceback is rendered
    "markdown_it",
    "mdurl",
    "attrs",
    "attr",
    "wrapt",
    "tenacity",
    "docstring_parser",
    "typing_extensions",
    "typing_inspection",
    "pydantic",
    "pydantic_core",
    "annotated_types",
)
"""The modules passed through the workflow sandbox: toolguard and its dependencies."""


def passthrough(runner: WorkflowRunner | None) -> WorkflowRunner:
    """``runner`` (the worker's) with toolguard passed through its sandbox."""
    if runner is None:
        runner = SandboxedWorkflowRunner()
    if not isinstance(runner, SandboxedWorkflowRunner):
        return runner  # not sandboxed: nothing to pass through
    restrictions = runner.restrictions.with_passthrough_modules(*PASSTHROUGH)
    return dataclasses.replace(runner, restrictions=restrictions)


class ToolguardPlugin(SimplePlugin):
    """toolguard for a Temporal worker or client: ``plugins=[ToolguardPlugin(agent)]``.

    Passes toolguard through the default workflow sandbox, fails the workflow (not its
    task) on ``ToolCallFailed`` and ``ToolDefinitionError``, and registers the
    activities of the tools of each dispatcher given (named ``prefix + tool``, as
    ``WorkflowTools`` calls them). Importing ``toolguard.integrations.temporal``
    registers its workflow runtime (ids, clock, replays) in the process.
    """

    def __init__(self, *dispatchers: Dispatcher, prefix: str = PREFIX) -> None:
        activities: list[Callable[..., Any]] = []
        seen: dict[str, Dispatcher] = {}
        for dispatcher in dispatchers:
            if not isinstance(dispatcher, Dispatcher):
                raise ToolDefinitionError(
                    f"ToolguardPlugin takes toolguard Dispatchers, got {dispatcher!r}"
                )
            for tool in dispatcher.tools:
                other = seen.setdefault(tool, dispatcher)
                if other is not dispatcher:
                    raise ToolDefinitionError(
                        f"two dispatchers have a tool named {tool!r}: their activities "
                        f"would share the name {prefix + tool!r}; register one with "
                        "tool_activities(dispatcher, prefix=...) and use the same prefix "
                        "in its WorkflowTools"
                    )
            activities += tool_activities(dispatcher, prefix=prefix)
        failures: Sequence[type[BaseException]] = [ToolCallFailed, ToolDefinitionError]
        super().__init__(
            "toolguard.ToolguardPlugin",
            workflow_runner=passthrough,
            workflow_failure_exception_types=failures,
            activities=activities or None,
        )
