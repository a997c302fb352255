"""The ``toolguard`` command: ``demo``, ``check``, ``explain``, ``schema``, ``serve-mcp``,
``policy`` (the shipped presets), and ``--version``.

Exit codes: 0 ok, 1 problems found, 2 usage errors (a bad command line, or a
``MODULE:ATTR`` that names no Dispatcher or tools).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, Final, NoReturn, TextIO

from toolguard import Dispatcher, __version__
from toolguard._explained import as_json, as_table
from toolguard._suggest import did_you_mean
from toolguard.errors import ToolDefinitionError
from toolguard.files._load import PolicyFileError, load_policy, presets
from toolguard.targets import TargetError, importable_cwd, load_target

__all__ = ["build_parser", "main"]

OK: Final = 0
PROBLEMS: Final = 1
USAGE: Final = 2

FORMATS: Final = ("openai", "anthropic", "gemini", "mcp")


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
    dispatcher = load_target(args.target, foreign=True)
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
    compiled = _compiled(args.engine, dispatcher, names) if args.engine else None
    if args.json:
        shown = as_json(dispatcher, explained)
        if compiled is not None:
            shown["engine"] = {"name": args.engine, "tools": _compiled_json(compiled)}
        json.dump(shown, out, indent=2, ensure_ascii=False)
        out.write("\n")
    else:
        out.write(as_table(dispatcher, explained))
        if compiled is not None:
            out.write(_compiled_table(args.engine, compiled))
    return OK


Compiled = dict[str, list[tuple[str, str, str]]]


def _compiled(engine: str, dispatcher: Dispatcher, names: list[str]) -> Compiled:
    """What each tool's retries and timeout compile to for a durable engine's options
    (``toolguard.integrations.temporal``/``dbos``: ``compiled``)."""
    module = importlib.import_module(f"toolguard.integrations.{engine}")
    return {name: module.compiled(dispatcher, name) for name in names}


def _compiled_json(compiled: Compiled) -> dict[str, Any]:
    return {
        tool: [{"option": option, "value": value, "from": source} for option, value, source in rows]
        for tool, rows in compiled.items()
    }


def _compiled_table(engine: str, compiled: Compiled) -> str:
    lines = ["", f"compiled for {engine}: the engine retries and times out, toolguard never on top"]
    for tool, rows in compiled.items():
        table = [("option", "value", "from"), *rows]
        widths = [max(len(row[column]) for row in table) for column in range(2)]
        lines += ["", f"tool {tool}"]
        lines += [
            f"  {option.ljust(widths[0])}  {value.ljust(widths[1])}  {source}".rstrip()
            for option, value, source in table
        ]
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
    tools = list(load_target(args.target).tools)  # a bad target: a usage error, here
    # stdout is the protocol's: what it serves, and that it waits, go to stderr
    sys.stderr.write(
        f"toolguard serve-mcp: serving {len(tools)} tool{'s' * (len(tools) != 1)} "
        f"({', '.join(tools)}) from {args.target} as the MCP server {args.name!r} over "
        "stdio; waiting for a client on stdin (Ctrl-C stops)\n"
    )
    sys.stderr.flush()
    code: int = mcp.main([args.target, "--name", args.name])
    return code


# --- toolguard policy list | show NAME ---------------------------------------------------


def _policy_list(args: argparse.Namespace, out: TextIO) -> int:
    for name, file in presets().items():
        out.write(f"{name:<12} {_summary(file.read_text(encoding='utf-8'))}\n")
    out.write("Print one to start a file from: toolguard policy show NAME > agent.toml\n")
    return OK


def _summary(preset: str) -> str:
    """The first sentence of a preset's opening comment, after its ``The "x" preset:``."""
    words = []
    for line in preset.splitlines():
        if not line.startswith("#") or not line.strip("# "):
            break
        words.append(line.lstrip("# "))
    text = " ".join(words).split(": ", 1)[-1]
    return text.split(". ", 1)[0].rstrip(".") + "."


def _policy_show(args: argparse.Namespace, out: TextIO) -> int:
    shipped = presets()
    if args.name not in shipped:
        raise TargetError(
            f"no preset named {args.name!r}{did_you_mean(args.name, shipped)}; "
            f"presets: {', '.join(shipped)}"
        )
    out.write(shipped[args.name].read_text(encoding="utf-8"))
    return OK


# --- the parser --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors suggest the closest command or choice
    (``toolguard explian``, ``--format opnai``); :func:`main` suggests options."""

    def error(self, message: str) -> NoReturn:
        chosen = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if chosen is not None:
            choices = re.findall(r"'([^']*)'", chosen.group(2))
            message += did_you_mean(chosen.group(1), choices)
        super().error(message)


def _refuse_extra(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> NoReturn:
    """A usage error for options the command does not take, from the command's own
    parser (its usage line), suggesting the closest of its options (``--jsno``)."""
    command = parser
    for name in (args.command, getattr(args, "action", None)):
        chosen = _commands(command).get(name) if name else None
        if chosen is None:
            break
        command = chosen
    options = [o for action in command._actions for o in action.option_strings]
    message = f"unrecognized arguments: {' '.join(extra)}"
    for word in extra:
        hint = did_you_mean(word.split("=", 1)[0], options) if word.startswith("-") else ""
        if hint:
            message += hint
            break
    command.error(message)


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="toolguard",
        description="Declarative error handling for LLM agent tools.",
        epilog="Exit codes: 0 ok, 1 problems found, 2 usage errors.",
    )
    parser.add_argument(
        "--version",
        action="version",
        version=f"toolguard {__version__} (the distribution toolguard-agents)",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

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
        "setting, the effective value, the precedence level it came from, and its source. "
        "For tools guarded in place, it also reads a framework's tools (as external tools "
        "under the global defaults) and what holds a dispatcher (an integration's "
        "middleware, capability or plugin).",
    )
    explain.add_argument(
        "target",
        metavar="MODULE:ATTR",
        help="a Dispatcher, a list of tools (toolguard's or a framework's), or a middleware",
    )
    explain.add_argument(
        "--policy",
        metavar="FILE",
        help="explain with this policy file (or preset) in place of the dispatcher's own",
    )
    explain.add_argument("--tool", metavar="NAME", help="only this tool")
    explain.add_argument("--json", action="store_true", help="machine-readable output")
    explain.add_argument(
        "--engine",
        choices=("temporal", "dbos"),
        help="also show each tool's retries and timeout compiled into that durable engine's "
        "options (docs/durable.md)",
    )
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

    policy = commands.add_parser(
        "policy",
        help="list the shipped presets, or print one to start a policy file from",
        description="The policy presets shipped with toolguard (docs/policies.md).",
    )
    actions = policy.add_subparsers(dest="action", metavar="ACTION", parser_class=_Parser)
    actions.required = True
    listed = actions.add_parser("list", help="each preset, with what it is for")
    listed.set_defaults(run=_policy_list)
    show = actions.add_parser(
        "show",
        help="print a preset's file (toolguard policy show production > agent.toml)",
    )
    show.add_argument("name", metavar="NAME", help="a preset: default, development, ...")
    show.set_defaults(run=_policy_show)
    return parser


def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    """Run the command; returns the exit code (argparse's own exits included)."""
    parser = build_parser()
    try:
        args, extra = parser.parse_known_args(argv)
        if extra:
            _refuse_extra(parser, args, extra)
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
