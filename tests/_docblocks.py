"""Run the ```python blocks of one Markdown page (used by ``tests/test_docs.py``).

``python -m tests._docblocks PAGE.md`` (from the root) runs each block of the page in
order, each in a fresh namespace (unless the page opts into one shared namespace),
offline, and prints one JSON line, a list of ``{"line", "status", "detail"}`` (status:
``"ok"``, ``"marked"`` or ``"failed"``).
It runs in a subprocess of its own so that a block's ``configure()``, structlog setup
or stray thread never reaches the next page, and so that a timeout can stop it.

The markers (an HTML comment on the line right before the block's fence):

* ``<!-- not-run: REASON -->``: the block cannot run standalone (it needs a real
  model, a network, a server...); REASON says why. Counted and reported.
* ``<!-- docs: shared-namespace -->`` anywhere on a page: its blocks run in one
  namespace, in order (a later block uses what an earlier one defined).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import sys
import traceback
import types
from pathlib import Path
from typing import Any, Final

FENCE: Final = re.compile(r"^```python[ \t]*\n(.*?)^```[ \t]*$", re.DOTALL | re.MULTILINE)
MARKER: Final = re.compile(r"<!--\s*(not-run):\s*(.*?)\s*-->\s*$")
SHARED: Final = "<!-- docs: shared-namespace -->"


def blocks(text: str) -> list[tuple[int, str, tuple[str, str] | None]]:
    """``(line, code, marker)`` for each ```python block; ``line`` is the fence's line."""
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marked = MARKER.search(before)
        marker = (marked.group(1), marked.group(2)) if marked else None
        found.append((line, match.group(1), marker))
    return found


def _offline() -> None:
    """Refuse every connection that is not to this machine: doc blocks run offline."""
    original = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else None
        if host is not None and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"doc blocks run offline: refused a connection to {address!r}")
        original(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign,assignment]  # offline by design


def _reset() -> None:
    import structlog

    import toolguard

    toolguard.reset_defaults()
    structlog.reset_defaults()
    # left unconfigured, structlog renders tracebacks with rich when it is installed;
    # plain ones are the same event, and much faster
    for processor in structlog.get_config()["processors"]:
        if isinstance(processor, structlog.dev.ConsoleRenderer):
            processor.exception_formatter = structlog.dev.plain_traceback


def _module() -> types.ModuleType:
    """A fresh module for a block's namespace: dataclasses, pydantic and type hints look
    their names up through ``sys.modules``, as they would for the reader's own module."""
    module = types.ModuleType("__docs__")
    sys.modules["__docs__"] = module
    return module


def run_page(path: Path) -> list[dict[str, Any]]:
    text = path.read_text()
    shared = _module() if SHARED in text else None
    report = []
    for line, code, marker in blocks(text):
        if marker is not None:
            report.append({"line": line, "status": "marked", "detail": f"{marker[0]}: {marker[1]}"})
            continue
        namespace = (shared if shared is not None else _module()).__dict__
        _reset()
        try:
            compiled = compile(code, f"{path}:{line}", "exec", flags=_top_level_await())
            result = eval(compiled, namespace)  # our own documentation
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        except BaseException:  # a block's failure is reported, whatever it is
            detail = traceback.format_exc(limit=-8)
            report.append({"line": line, "status": "failed", "detail": detail[-4000:]})
        else:
            report.append({"line": line, "status": "ok", "detail": ""})
    _reset()
    return report


def _top_level_await() -> int:
    import ast

    return ast.PyCF_ALLOW_TOP_LEVEL_AWAIT


if __name__ == "__main__":
    _offline()
    outcome = run_page(Path(sys.argv[1]))
    sys.stdout.write("\n" + json.dumps(outcome) + "\n")
    sys.stdout.flush()
