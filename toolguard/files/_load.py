"""Policy files: TOML in, an :class:`~toolguard.AgentPolicy` out.

A policy file holds what an operator may change without touching code::

    version = 1

    [agent]                                  # the agent default level
    on_error = "generic_unless_visible"
    message = "The tool '{tool}' failed (error id {error_id})."
    log_level = "warning"

    [[agent.rules]]                          # asked before on_error, in order
    exception = "TimeoutError"
    message = "The search timed out; try again later."

    [tools."search_*"]                       # the override level, by name or glob
    on_error = "fail_unless_visible"

Every mistake is one :class:`PolicyFileError` listing each problem with the file,
the line, the key path, what was wrong and what is allowed. The keys a table may
hold are data (:data:`KEYS`): a new policy setting is one more entry there.
Loading a file imports the modules its import paths name: a policy file is code
the application trusts, like a settings module.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Sequence
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, Final

import attrs

from toolguard._suggest import did_you_mean
from toolguard._text import TOOL_NAME, TOOL_NAME_RULE
from toolguard.errors import InvalidOption
from toolguard.files._keys import KEYS, Key, compose
from toolguard.files._lines import KeyLines, KeyPath, format_path
from toolguard.files._values import Bad, describe
from toolguard.policy._agent import AgentPolicy
from toolguard.policy._precedence import glob_problem, is_glob
from toolguard.policy._values import ToolPolicy

__all__ = ["KEYS", "VERSION", "Key", "PolicyFileError", "Problem", "load_policy", "presets"]

VERSION: Final = 1
"""The format version this toolguard reads (``version = 1`` in every file)."""


# --- what a caller gets ------------------------------------------------------------


@attrs.frozen
class Problem:
    """One mistake: ``file:line: key: message`` (``line`` is ``None`` when unknown)."""

    file: str
    line: int | None
    key: str
    message: str

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.key}: {self.message}" if self.key else f"{where}: {self.message}"


class PolicyFileError(InvalidOption):
    """A policy file that cannot be used; ``problems`` lists every mistake found.

    An :class:`~toolguard.InvalidOption` (the one error for a bad option, from code or
    from a file), hence a ``ValueError`` as before.

    ``str(error)`` is one ``file:line: key: message`` line per problem; ``file``,
    ``line``, ``key`` and ``message`` are the first problem's.
    """

    def __init__(self, problems: Sequence[Problem]) -> None:
        if not problems:
            raise ValueError("PolicyFileError needs at least one problem")
        self.problems = tuple(problems)
        first = self.problems[0]
        self.file, self.line, self.key, self.message = (
            first.file,
            first.line,
            first.key,
            first.message,
        )
        super().__init__("\n".join(str(problem) for problem in self.problems))


_TOP_KEYS: Final = ("version", "agent", "tools")


# --- loading ----------------------------------------------------------------------


class _Loader:
    """One file's document on its way to an AgentPolicy, collecting every problem."""

    def __init__(self, file: str, text: str) -> None:
        self.file = file
        self.text = text
        self.problems: list[tuple[KeyPath, str]] = []

    def report(self, path: KeyPath, message: str) -> None:
        self.problems.append((path, message))

    def error(self) -> PolicyFileError:
        lines = KeyLines(self.text)
        problems = [
            Problem(self.file, lines.line_of(path), format_path(path), message)
            for path, message in self.problems
        ]
        return PolicyFileError(sorted(problems, key=lambda problem: problem.line or 0))

    def policy(self, document: dict[str, Any]) -> AgentPolicy:
        for key in document:
            if key not in _TOP_KEYS:
                self.report((key,), self._unknown_top(key))
        if not self._version(document):
            raise self.error()
        agent = document.get("agent", {})
        defaults, round_settings = ToolPolicy(), dict[str, Any]()
        if isinstance(agent, dict):
            defaults, round_settings = self.table(agent, ("agent",), "agent")
        else:
            self.report(("agent",), f"expected a table ([agent]), got {describe(agent)}")
        overrides = self.tools(document.get("tools", {}))
        if self.problems:
            raise self.error()
        try:
            return AgentPolicy(
                defaults=defaults, overrides=overrides, source=self.file, **round_settings
            )
        except (TypeError, ValueError) as error:  # pragma: no cover - the keys check first
            self.report(("agent",), str(error))
            raise self.error() from None

    def _version(self, document: dict[str, Any]) -> bool:
        version = document.get("version")
        if version is None:
            self.report(("version",), f"missing: start the file with version = {VERSION}")
        elif not isinstance(version, int) or isinstance(version, bool):
            self.report(("version",), f"expected the integer {VERSION}, got {describe(version)}")
        elif version != VERSION:
            self.report(
                ("version",),
                f"version {version} is not supported; this toolguard reads version {VERSION}",
            )
        else:
            return True
        return False

    def _unknown_top(self, key: str) -> str:
        if any(key == k.name for k in KEYS):
            return f"{key} is an agent setting: put it in the [agent] table"
        return f"unknown key {key!r}{did_you_mean(key, _TOP_KEYS)}; allowed: {', '.join(_TOP_KEYS)}"

    def tools(self, tools: Any) -> dict[str, ToolPolicy]:
        if not isinstance(tools, dict):
            self.report(("tools",), f'expected [tools."NAME"] tables, got {describe(tools)}')
            return {}
        overrides: dict[str, ToolPolicy] = {}
        for name, table in tools.items():
            path: KeyPath = ("tools", name)
            problem = _tool_name_problem(name)
            if problem:
                self.report(path, problem)
            elif not isinstance(table, dict):
                header = f"[{format_path(path)}]"
                self.report(path, f"expected a table of settings ({header}), got {describe(table)}")
            else:
                overrides[name] = self.table(table, path, "tools")[0]
        return overrides

    def table(
        self, table: dict[str, Any], path: KeyPath, kind: str
    ) -> tuple[ToolPolicy, dict[str, Any]]:
        """One ``[agent]`` or ``[tools."NAME"]`` table: its policy and round settings."""
        keys = {key.name: key for key in KEYS if kind in key.tables}
        fields: dict[str, dict[str, Any]] = {"policy": {}, "agent": {}, "handler": {}}
        for name, value in table.items():
            key = keys.get(name)
            if key is None:
                self.report((*path, name), self._unknown(name, kind, keys))
                continue
            try:
                parsed = key.parse(value)
            except Bad as bad:
                for each in (bad, *bad.more):
                    self.report((*path, name, *each.at), each.message)
                continue
            fields[key.into][key.name if key.into == "handler" else key.field] = parsed
        try:
            handler = compose(fields["handler"])
        except Bad as bad:
            self.report((*path, "message"), bad.message)
        else:
            if handler is not None:
                fields["policy"]["on_error"] = handler
        try:
            return ToolPolicy(**fields["policy"]), fields["agent"]
        except (TypeError, ValueError) as error:  # pragma: no cover - the keys check first
            self.report(path, str(error))
            return ToolPolicy(), {}

    def _unknown(self, name: str, kind: str, keys: dict[str, Key]) -> str:
        if kind == "tools" and any(key.name == name for key in KEYS):
            return f"{name} applies to the whole agent; set it in [agent]"
        if kind == "agent" and name == "tools":
            return 'per-tool settings are top-level tables, [tools."NAME"], not [agent.tools]'
        return f"unknown key {name!r}{did_you_mean(name, keys)}; allowed: {', '.join(keys)}"


def _tool_name_problem(name: str) -> str | None:
    """Why ``name`` can match no tool, or ``None`` when it is a name or a usable glob."""
    if not name:
        return "a tool name cannot be empty"
    if not is_glob(name):
        if TOOL_NAME.fullmatch(name):
            return None
        return (
            f"{name!r} is not a tool name ({TOOL_NAME_RULE}) nor a glob "
            "(*, ?, [abc]); it would match no tool"
        )
    problem = glob_problem(name)
    if problem:
        return f"bad glob {name!r}: {problem}"
    stray = sorted({c for c in name if not (c.isascii() and (c.isalnum() or c in "_-*?[]!"))})
    if stray:
        chars = ", ".join(map(repr, stray))
        return f"glob {name!r} matches no tool: tool names cannot contain {chars}"
    return None


# --- reading files and presets ----------------------------------------------------------

_TOML_POSITION: Final = re.compile(r" \(at line (\d+), column (\d+)\)$| \(at end of document\)$")
_UNQUOTED_GLOB: Final = re.compile(r"^\s*\[+\s*tools\s*\.\s*[^\"'\]\s]*[*?]")


def presets() -> dict[str, Traversable]:
    """The shipped presets by name: ``toolguard/_policies/`` in an installed wheel,
    the repository's ``policies/`` in a checkout."""
    folder: Traversable = resources.files("toolguard").joinpath("_policies")
    if not folder.is_dir():
        folder = Path(__file__).resolve().parents[2] / "policies"
    if not folder.is_dir():  # pragma: no cover - a broken installation
        return {}
    return {
        entry.name.removesuffix(".toml"): entry
        for entry in sorted(folder.iterdir(), key=lambda e: e.name)
        if entry.name.endswith(".toml")
    }


def load_policy(name_or_path: str | os.PathLike[str]) -> AgentPolicy:
    """Read a policy file, or a shipped preset by bare name, into an AgentPolicy.

    A bare name (``"production"``) is a preset; anything with a ``/``, a leading
    ``.`` or a ``.toml`` suffix, or a ``Path``, is a file. Every mistake, including a
    file that cannot be read or is not TOML, raises one :class:`PolicyFileError`.
    """
    if isinstance(name_or_path, os.PathLike):
        name_or_path = os.fspath(name_or_path)
    if not isinstance(name_or_path, str):
        raise TypeError(f"load_policy() takes a preset name or a path, got {name_or_path!r}")
    if _is_path(name_or_path):
        return _read(name_or_path, lambda: Path(name_or_path).read_bytes())
    shipped = presets()
    entry = shipped.get(name_or_path)
    if entry is None:
        hint = did_you_mean(name_or_path, shipped)
        local = f"; to read the file {name_or_path!r}, write ./{name_or_path}"
        raise PolicyFileError(
            [
                Problem(
                    name_or_path,
                    None,
                    "",
                    f"no preset named {name_or_path!r}{hint}; presets: {', '.join(shipped)}"
                    + (local if os.path.exists(name_or_path) else ""),
                )
            ]
        )
    return _read(str(entry), entry.read_bytes)


def _is_path(text: str) -> bool:
    separators = [s for s in ("/", os.sep, os.altsep) if s]
    return any(s in text for s in separators) or text.startswith(".") or text.endswith(".toml")


def _read(file: str, read: Callable[[], bytes]) -> AgentPolicy:
    try:
        data = read()
    except FileNotFoundError:
        raise PolicyFileError([Problem(file, None, "", "no such file")]) from None
    except IsADirectoryError:
        raise PolicyFileError([Problem(file, None, "", "is a directory, not a file")]) from None
    except OSError as error:
        reason = error.strerror or str(error)
        raise PolicyFileError([Problem(file, None, "", f"cannot read it: {reason}")]) from None
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise PolicyFileError(
            [
                Problem(
                    file,
                    line,
                    "",
                    f"not UTF-8 text (byte {data[error.start]:#04x}); save it as UTF-8",
                )
            ]
        ) from None
    return _parse(file, text)


def _parse(file: str, text: str) -> AgentPolicy:
    try:
        document = tomllib.loads(text)
    except ValueError as error:  # TOMLDecodeError, and int() refusing a huge number
        raise PolicyFileError([_toml_problem(file, text, error)]) from None
    except RecursionError:
        raise PolicyFileError(
            [Problem(file, None, "", "invalid TOML: nested too deeply")]
        ) from None
    return _Loader(file, text).policy(document)


def _toml_problem(file: str, text: str, error: ValueError) -> Problem:
    message = str(error)
    match = _TOML_POSITION.search(message)
    line: int | None = None
    if match:
        message = message[: match.start()]
        if match.group(1):
            line = int(match.group(1))
            message += f" (column {match.group(2)})"
        else:
            line = text.count("\n") + 1
            message += " (at the end of the file)"
    if line is not None:
        source = text.splitlines()[line - 1] if line <= len(text.splitlines()) else ""
        if _UNQUOTED_GLOB.match(source):
            message += '; quote tool names with glob characters: [tools."search_*"]'
    return Problem(file, line, "", f"invalid TOML: {message}")
