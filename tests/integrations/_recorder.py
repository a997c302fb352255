"""What workflow code told the model, per workflow and per pass (the first run, or a
replay): passed through Temporal's sandbox, so every run of a workflow records here."""

from __future__ import annotations

from typing import Any

from temporalio import workflow

__all__ = ["ANSWERS", "record"]

ANSWERS: dict[tuple[str, bool], list[dict[str, Any]]] = {}


def record(workflow_id: str, answer: dict[str, Any]) -> None:
    """Keep ``answer``, under the workflow and whether Temporal is replaying it."""
    ANSWERS.setdefault((workflow_id, workflow.unsafe.is_replaying()), []).append(answer)
