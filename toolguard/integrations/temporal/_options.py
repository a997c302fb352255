"""A tool's retries and timeout compiled into Temporal's activity options.

One retry owner: the tool's ``retries`` become the activity's ``RetryPolicy``
(``maximum_attempts`` counting the first, ``initial_interval``, ``backoff_coefficient``,
``maximum_interval``, toolguard's never-retried types as ``non_retryable_error_types``)
and its ``timeout`` the ``start_to_close_timeout``; toolguard runs one attempt per
activity and never retries on top. Which failures are retried is decided where the tool
runs, with the real exception (``Retry(on=...)``): a failure not to retry crosses as an
answer, never as a retryable error.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Final

from temporalio.common import RetryPolicy
from temporalio.workflow import ActivityConfig

from toolguard import Dispatcher
from toolguard.integrations.durable import EngineRetries, engine_retries, never_retried

__all__ = ["DEFAULT_TIMEOUT", "activity_options", "compiled", "retry_policy"]

DEFAULT_TIMEOUT: Final = timedelta(minutes=5)
"""The ``start_to_close_timeout`` of a tool that sets no ``timeout`` (Temporal needs one)."""


def retry_policy(retries: EngineRetries) -> RetryPolicy:
    """The ``RetryPolicy`` of a tool's compiled retries."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=retries.initial_interval),
        backoff_coefficient=retries.backoff_rate,
        maximum_interval=timedelta(seconds=retries.maximum_interval),
        maximum_attempts=retries.attempts,
        non_retryable_error_types=list(never_retried()),
    )


def _retries(dispatcher: Dispatcher, tool: str) -> EngineRetries:
    return engine_retries(dispatcher.scope().policy(tool))


def activity_options(
    dispatcher: Dispatcher, tool: str, *, default_timeout: timedelta = DEFAULT_TIMEOUT
) -> ActivityConfig:
    """The activity options ``tool``'s policy compiles to: ``start_to_close_timeout``
    and ``retry_policy``, to pass to ``workflow.execute_activity(...)`` or a framework's
    per-tool activity config (Pydantic AI's ``tool_activity_config``)."""
    retries = _retries(dispatcher, tool)
    timeout = default_timeout if retries.timeout is None else timedelta(seconds=retries.timeout)
    return ActivityConfig(start_to_close_timeout=timeout, retry_policy=retry_policy(retries))


def compiled(
    dispatcher: Dispatcher, tool: str, *, default_timeout: timedelta = DEFAULT_TIMEOUT
) -> list[tuple[str, str, str]]:
    """What ``tool``'s policy compiles to, as rows of (option, value, where from): what
    ``toolguard explain --engine temporal`` prints."""
    retries = _retries(dispatcher, tool)
    explained = dispatcher.explain(tool, foreign=tool not in dispatcher.tools)
    timeout_from = _level(explained.get("timeout"), "timeout")
    retries_from = _level(explained.get("retries"), "retries")
    if retries.timeout is None:
        timeout = f"{default_timeout / timedelta(seconds=1):g} s"
        timeout_from = "the integration's default (the tool sets no timeout)"
    else:
        timeout = f"{retries.timeout:g} s"
    rows = [
        ("start_to_close_timeout", timeout, timeout_from),
        ("retry_policy.maximum_attempts", str(retries.attempts), retries_from),
        ("retry_policy.initial_interval", f"{retries.initial_interval:g} s", retries_from),
        ("retry_policy.backoff_coefficient", f"{retries.backoff_rate:g}", retries_from),
        ("retry_policy.maximum_interval", f"{retries.maximum_interval:g} s", retries_from),
        ("retry_policy.non_retryable_error_types", ", ".join(never_retried()), "toolguard"),
    ]
    rows += [("note", note, "toolguard") for note in retries.notes]
    return rows


def _level(setting: object, name: str) -> str:
    level = getattr(setting, "level", None)
    return f"{name} ({level})" if level else name
