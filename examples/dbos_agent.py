"""A durable agent on DBOS: its tools run as steps, guarded where they run.

Run from the root of a clone (offline: DBOS on SQLite in a temporary directory, and a
scripted model)::

    .venv/bin/pip install -e ".[dbos]"
    .venv/bin/python examples/dbos_agent.py

``DBOSTools`` runs each call as a DBOS step with the options its policy compiles to
(DBOS retries it); a failure is answered in the step, and its recorded output (in
``operation_outputs``) is the answer: the model's text and the error id, never the
hidden text. When DBOS recovers the workflow, the recorded steps answer again, the same.
"""

from __future__ import annotations

import base64
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig

from toolguard import Dispatcher, Retry, ToolCall, ToolError, tool
from toolguard.integrations.dbos import DBOSTools

SECRET = "db-password=hunter2"
ATTEMPTS: dict[str, int] = {}


@tool
def lookup_order(order: int) -> str:
    """Find an order by its number."""
    if order == 42:
        raise ToolError("There is no order 42. Ask the user to check the number.")
    if order == 13:
        raise ValueError(f"orders table unreachable ({SECRET})")  # hidden from the model
    return f"order {order}: shipped"


@tool(retries=Retry(attempts=3, initial=0.1))  # DBOS's max_attempts, interval, backoff
def check_stock(item: str) -> str:
    """How many of an item are in stock."""
    ATTEMPTS[item] = ATTEMPTS.get(item, 0) + 1
    if ATTEMPTS[item] < 3:
        raise ConnectionError(f"warehouse API reset the connection ({SECRET})")
    return f"{item}: 12 in stock"


agent = Dispatcher([lookup_order, check_stock])
tools = DBOSTools(agent)

SCRIPT = [
    ("lookup_order", {"order": 7}),
    ("lookup_order", {"order": 42}),
    ("lookup_order", {"order": 13}),
    ("check_stock", {"item": "kettle"}),
]


@DBOS.workflow()
def support(script: list[tuple[str, dict[str, Any]]]) -> list[str]:
    told = []
    for number, (name, arguments) in enumerate(script):
        result = tools.call(ToolCall(name=name, arguments=arguments, id=f"c{number}"))
        told.append(result.text)
    return told


def journal(database: Path) -> str:
    """What DBOS recorded of the steps (their pickled outputs and errors, decoded)."""
    with sqlite3.connect(database) as connection:
        rows = connection.execute("select output, error from operation_outputs").fetchall()
    return "".join(
        base64.b64decode(value).decode("latin-1") for row in rows for value in row if value
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "dbos.sqlite"
        config: DBOSConfig = {
            "name": "toolguard-example",
            "system_database_url": f"sqlite:///{database}",
        }
        DBOS(config=config)
        DBOS.launch()
        try:
            told = DBOS.start_workflow(support, SCRIPT).get_result()
            for (name, arguments), text in zip(SCRIPT, told, strict=True):
                print(f"{name}({arguments}) -> {text}")
            assert SECRET not in journal(database)
        finally:
            DBOS.destroy()
    print(f"check_stock ran {ATTEMPTS['kettle']} times: DBOS retried it, toolguard did not")
    print("operation_outputs holds the answers and the error id, not the hidden text")


if __name__ == "__main__":
    main()
