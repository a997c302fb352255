"""Names on a shared store for any string: agent, session and tool names, step ids.

Every Python string is accepted, lone surrogates included (legal in JSON, ``"\\ud800"``):
it is encoded with ``surrogatepass``, so distinct strings give distinct bytes. A key
part is those bytes percent-escaped (only ``A-Z a-z 0-9 _ . - ~`` stay as they are),
or, past :data:`MAX_PART` bytes, ``%h`` and their SHA-256: an escaped part has a ``%``
only before two hex digits, so no name's escape is ever another name's hash. A step
id is ``=`` and the key's bytes, ``#`` and their SHA-256 past :data:`MAX_STEP` bytes,
or ``~`` and a random id for an unnamed step: three forms that never meet.

Each is computed once (a session's part when the session is opened, a step's id when
the step first needs it, a tool's part cached per store), so a call's cost does not
grow with the length of the names it carries.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Final
from urllib.parse import quote_from_bytes

__all__ = ["MAX_PART", "MAX_STEP", "Parts", "part", "random_step", "step_id"]

MAX_PART: Final = 120  # bytes of a name kept readable in a key; longer ones are hashed
MAX_STEP: Final = 200  # bytes of a step key sent as it is; longer ones are hashed
_TOOLS_CACHED: Final = 4096


def _bytes(name: str) -> bytes:
    return name.encode("utf-8", "surrogatepass")


def part(name: str) -> str:
    """``name`` as a key part: escaped, or hashed when long (see the module)."""
    raw = _bytes(name)
    if len(raw) > MAX_PART:
        return "%h" + hashlib.sha256(raw).hexdigest()
    return quote_from_bytes(raw, safe="")


def step_id(key: str) -> bytes:
    """A named step's id in the store (see the module)."""
    raw = _bytes(key)
    if len(raw) > MAX_STEP:
        return b"#" + hashlib.sha256(raw).hexdigest().encode()
    return b"=" + raw


def random_step() -> bytes:
    """An unnamed step's id: unique across processes."""
    return b"~" + uuid.uuid4().hex.encode()


class Parts:
    """Tool names' key parts, cached (a dispatcher has few tools; the cache is
    bounded all the same, for names a model invents)."""

    __slots__ = ("_known",)

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def __call__(self, tool: str) -> str:
        found = self._known.get(tool)
        if found is None:
            if len(self._known) >= _TOOLS_CACHED:
                self._known.clear()
            found = self._known[tool] = part(tool)
        return found
