"""Pydantic AI's ``DBOSDurability`` beside ``ToolguardCapability``, on DBOS (SQLite).

The tools are DBOS steps guarded inside the step (``guard_step``): a failure is answered
there (the journal keeps the answer, never the hidden text), a retry is DBOS's (one
attempt per step, the step options compiled from the tool's policy); the capability
answers what crossed in workflow code, on the DBOS runtime.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from tests.integrations._dbos_pydantic_ai import support_workflow
from tests.integrations._engines import dbos_launched, journal
from tests.integrations._orders import ATTEMPTS, SECRET

Logs = list[dict[str, Any]]


@pytest.fixture
def launched(tmp_path: Path) -> Iterator[Path]:
    ATTEMPTS.clear()
    with dbos_launched(tmp_path):
        yield tmp_path / "dbos.sqlite"


async def test_the_capability_beside_dbos_durability(launched: Path, logs: Logs) -> None:
    handle = await DBOS.start_workflow_async(support_workflow, "Where are my orders?")
    secret, visible, retried = (await handle.get_result()).split("\n")
    [event] = [event for event in logs if event["event"] == "tool_error_hidden"]
    assert event["error_type"] == "ValueError"  # logged in the tool's step, once
    assert f"error id {event['error_id']}" in secret and SECRET not in secret
    assert visible == "There is no order 42. Ask the user to check the number."
    assert retried == "connected" and ATTEMPTS == {"lookup": 2, "reconnect": 3}
    assert SECRET not in journal(launched)
