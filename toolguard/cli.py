"""The ``toolguard`` command: ``demo``, ``check``, ``explain``, ``schema``, ``serve-mcp``.

Exit codes: 0 ok, 1 problems found, 2 usage errors (a bad command line, or a
``MODULE:ATTR`` that names no Dispatcher or tools).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Final, TextIO

import attrs

from toolguard._dispatcher import Dispatcher
from toolguard._suggest import did_you_mean
from toolguard._targets import TargetError, importable_cwd, load_target
from toolguard.errors import ToolDefinitionError
from toolguard.files._load import PolicyFileError, load_policy
from toolguard.policy._handlers import Handler
from toolguard.policy._precedence import Setting
from toolguard.policy._values import ReturnDirect, ToolPolicy

__all__ = ["build_parser", "main"]

OK: Final = 0
PROBLEMS: Final = 1
USAGE: Final = 2

FORMATS: Final = ("openai", "anthropic", "gemini", "mcp")
_UNLIMITED: Final = frozenset({"max_result_chars", "timeout", "max_model_retries", "total"})
_VALUE_WIDTH: Final = 60


# --- toolguard demo --------------------------------------------------------------------


def _demo(args: argparse.Namespace, out: TextIO) -> int:
    from toolguard import _demo

    # the closing "Try:" commands name the program as it was started (.venv/bin/toolguard)
    started = sys.argv[0] if sys.argv else ""
    program = started if os.path.basename(started) == "toolguard" else "toolguard"
    return _demo.run(out, program=program)


# --- toolguard check FILE... -----------------------------------------------------------


def _check(args: argparse.Namespace, out: TextIO) -> int:
    bad = 0
    for file in args.files:
        try:
            with importable_cwd():  # a file may name the application's own classes
                load_policy(file)
        except PolicyFileError as error:
            bad += 1
            for problem in error.problems:
                out.write(f"{problem}\n")
        else:
            out.write(f"{file}: ok\n")
    if bad:
        sys.stderr.write(f"toolguard check: problems in {bad} of {len(args.files)} files\n")
        return PROBLEMS
    return OK


# --- toolguard explain MODULE:ATTR ----------------------------------------------------


def _explain(args: argparse.Namespace, out: TextIO) -> int:
    dispatcher = load_target(args.target)
    if args.policy is not None:
        try:
            with importable_cwd():
                policy = load_policy(args.policy)
        except PolicyFileError as error:
            out.write(f"{error}\n")
            return PROBLEMS
        try:
            dispatcher = dispatcher.with_policy(policy)
        except ToolDefinitionError as error:
            out.write(f"{args.policy}: {error}\n")
            return PROBLEMS
    # the tools it runs, then those it guards where they run (external_tools=)
    names = [*dispatcher.tools, *dispatcher.external_tools]
    if args.tool is not None:
        if args.tool not in names:
            elsewhere = ", ".join(dispatcher.external_tools)
            raise TargetError(
                f"{args.target!r} has no tool named {args.tool!r}"
                f"{did_you_mean(args.tool, names)}; tools: {', '.join(dispatcher.tools) or 'none'}"
                + (f"; guarded elsewhere: {elsewhere}" if elsewhere else "")
            )
        names = [args.tool]
    explained = {name: dispatcher.explain(name) for name in names}
    if args.json:
        json.dump(_as_json(dispatcher, explained), out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(_as_table(dispatcher, explained))
    return OK


Explained = Mapping[str, Mapping[str, Setting | tuple[Setting, ...]]]


def _round(dispatcher: Dispatcher) -> dict[str, Any]:
    return {
        "return_direct_mode": dispatcher.return_direct_mode,
        "max_workers": dispatcher.max_workers,
        "max_abandoned": dispatcher.max_abandoned,
    }


def _text(name: str, value: Any) -> str:
    """A setting's value as the table shows it."""
    if value is None:
        return "unlimited" if name in _UNLIMITED else "none"
    if isinstance(value, Handler):
        return value.name
    if isinstance(value, ReturnDirect):
        return f"predicate {_json(value)}" if value.mode == "predicate" else value.mode
    if isinstance(value, type):
        return value.__name__
    if isinstance(value, tuple):
        return ", ".join(_text(name, item) for item in value) or "(none)"
    if attrs.has(type(value)):
        fields = [field for field in attrs.fields(type(value)) if field.repr]
        inner = (
            f"{field.name}={_inner(field.name, getattr(value, field.name))}" for field in fields
        )
        return f"{type(value).__name__}({', '.join(inner)})"
    return str(value)


def _inner(name: str, value: Any) -> str:
    text = _text(name, value)
    return f"({text})" if isinstance(value, tuple) else text


def _ordered(settings: Mapping[str, Setting | tuple[Setting, ...]]) -> list[str]:
    """Settings in ToolPolicy's field order (any others after them)."""
    order = [field.name for field in attrs.fields(ToolPolicy)]
    return sorted(settings, key=lambda name: order.index(name) if name in order else len(order))


def _json(value: Any) -> Any:
    """A setting's value as ``--json`` shows it."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Handler):
        return value.name
    if isinstance(value, ReturnDirect):
        if value.mode != "predicate":
            return value.mode
        predicate = value.predicate
        return f"{getattr(predicate, '__module__', '?')}:{getattr(predicate, '__qualname__', '?')}"
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}"
    if isinstance(value, tuple | list):
        return [_json(item) for item in value]
    if attrs.has(type(value)):
        return {
            field.name: _json(getattr(value, field.name))
            for field in attrs.fields(type(value))
            if field.repr
        }
    if callable(value):
        return f"{getattr(value, '__module__', '?')}:{getattr(value, '__qualname__', '?')}"
    return repr(value)


def _as_json(dispatcher: Dispatcher, explained: Explained) -> dict[str, Any]:
    tools: dict[str, Any] = {}
    for tool, settings in explained.items():
        tools[tool] = {}
        for name in _ordered(settings):
            setting = settings[name]
            if isinstance(setting, tuple):
                tools[tool][name] = [
                    {"handler": s.value.name, "level": s.level, "source": s.source} for s in setting
                ]
            else:
                tools[tool][name] = {
                    "value": _json(setting.value),
                    "level": setting.level,
                    "source": setting.source,
                }
    return {**_round(dispatcher), "external_tools": list(dispatcher.external_tools), "tools": tools}


def _as_table(dispatcher: Dispatcher, explained: Explained) -> str:
    round_settings = ", ".join(f"{k} = {v}" for k, v in _round(dispatcher).items())
    lines = [f"round settings: {round_settings}"]
    for tool, settings in explained.items():
        rows: list[tuple[str, str, str, str]] = [("setting", "value", "level", "source")]
        for name in _ordered(settings):
            setting = settings[name]
            chain = setting if isinstance(setting, tuple) else (setting,)
            for index, s in enumerate(chain, start=1):
                value = _text(name, s.value)
                if isinstance(setting, tuple):
                    value = f"{index}. {value}"
                wrapped = textwrap.wrap(value, _VALUE_WIDTH, subsequent_indent="   ") or [""]
                rows.append((name if index == 1 else "", wrapped[0], s.level, s.source or ""))
                rows += [("", more, "", "") for more in wrapped[1:]]
        widths = [max(len(row[column]) for row in rows) for column in range(3)]
        elsewhere = " (runs elsewhere: external_tools)" if tool in dispatcher.external_tools else ""
        lines += ["", f"tool {tool}{elsewhere}"]
        for row in rows:
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            lines.append(("  " + "  ".join([*cells, row[3]])).rstrip())
    return "\n".join(lines) + "\n"


# --- toolguard schema MODULE:ATTR --format F ------------------------------------------


def _schema(args: argparse.Namespace, out: TextIO) -> int:
    dispatcher = load_target(args.target)
    module_name = f"toolguard.formats.{args.format}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        sys.stderr.write(
            f"toolguard schema: the {args.format} format is not available in this version\n"
        )
        return PROBLEMS
    try:
        declarations = module.tools(dispatcher)
    except ToolDefinitionError as error:
        sys.stderr.write(f"toolguard schema: {error}\n")
        return PROBLEMS
    json.dump(declarations, out, indent=2, ensure_ascii=False)
    out.write("\n")
    return OK


# --- toolguard serve-mcp MODULE:ATTR -----------------------------------------------------


def _serve_mcp(args: argparse.Namespace, out: TextIO) -> int:
    try:
        from toolguard.integrations import mcp
    except ImportError as error:
        sys.stderr.write(f"toolguard serve-mcp: {error}\n")
        return PROBLEMS
    code: int = mcp.main([args.target, "--name", args.name])
    return code


# --- the parser --------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolguard",
        description="Declarative error handling for LLM agent tools.",
        epilog="Exit codes: 0 ok, 1 problems found, 2 usage errors.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="a scripted agent conversation under two presets (offline)",
        description="Show three tools' code, then run one scripted agent conversation "
        "(no network, no LLM) under the development and production presets: the "
        "model's arguments before each call, what the model is told, what the log "
        "gets. Ends with commands to try on the demo's agent, toolguard._demo:agent.",
    )
    demo.set_defaults(run=_demo)

    check = commands.add_parser(
        "check",
        help="validate policy files",
        description="Validate policy files (paths, or preset names); print each problem as "
        "file:line: key: message.",
    )
    check.add_argument("files", nargs="+", metavar="FILE", help="a policy file or preset name")
    check.set_defaults(run=_check)

    explain = commands.add_parser(
        "explain",
        help="show each tool's effective settings and where they come from",
        description="Import a Dispatcher (or a list of tools) and print, per tool and per "
        "setting, the effective value, the precedence level it came from, and its source.",
    )
    explain.add_argument("target", metavar="MODULE:ATTR", help="a Dispatcher or a list of tools")
    explain.add_argument(
        "--policy",
        metavar="FILE",
        help="explain with this policy file (or preset) in place of the dispatcher's own",
    )
    explain.add_argument("--tool", metavar="NAME", help="only this tool")
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    explain.set_defaults(run=_explain)

    schema = commands.add_parser(
        "schema",
        help="print the tool declarations a provider expects",
        description="Print the tools' declarations in a provider's format, as JSON.",
    )
    schema.add_argument("target", metavar="MODULE:ATTR", help="a Dispatcher or a list of tools")
    schema.add_argument("--format", required=True, choices=FORMATS, help="the provider format")
    schema.set_defaults(run=_schema)

    serve = commands.add_parser(
        "serve-mcp",
        help="serve the tools as an MCP server over stdio (needs toolguard-agents[mcp])",
        description="Serve a Dispatcher's tools as an MCP server over stdio "
        "(see docs/integrations/mcp.md).",
    )
    serve.add_argument("target", metavar="MODULE:ATTR", help="a Dispatcher or a list of tools")
    serve.add_argument("--name", default="toolguard", help="the server name sent to clients")
    serve.set_defaults(run=_serve_mcp)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code (argparse's own exits included)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else USAGE
    run = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return USAGE
    try:
        result: int = run(args, out or sys.stdout)
    except TargetError as error:
        sys.stderr.write(f"toolguard {args.command}: {error}\n")
        return USAGE
    except BrokenPipeError:  # `toolguard demo | head`: the reader left; not an error
        if out is None:  # our stdout: keep the interpreter's exit flush quiet too
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return OK
    return result


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
