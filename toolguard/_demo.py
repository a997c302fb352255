"""``toolguard demo``: a guided tour, offline, in a few seconds.

The demo prints its three tools' code, then a scripted "model" asks for four rounds
of tool calls: a success and a model-visible ``ToolError``, a failure whose cause
must stay hidden, arguments that do not fit, and a ``return_direct`` tool that ends
the loop. Before each call it prints the arguments the model sent; after it, what
the model is told and, where toolguard logged, what the application's log got. The
same conversation runs twice, under the ``development`` preset and under
``production``; last, the two runs' model-facing results, call by call.

``agent`` (``toolguard._demo:agent``) is the demo's Dispatcher, importable, so the
commands the demo closes with work as printed::

    toolguard explain toolguard._demo:agent --tool refund --policy production
"""

from __future__ import annotations

import ast
import inspect
import json
import shlex
import sys
from typing import Any, Final, TextIO

import structlog

from toolguard import Dispatcher, Setting, ToolCall, ToolError, ToolResult, tool
from toolguard._values import Round
from toolguard.files._load import load_policy

ORDERS = {42: "shipped", 7: "processing"}


class DatabaseError(Exception):
    """Stands in for a driver error whose message must never reach a model."""


@tool
def order_status(order_id: int) -> str:
    """Look up the status of an order.

    Args:
        order_id: The order number the user gave.
    """
    if order_id not in ORDERS:
        raise ToolError(f"There is no order {order_id}. Ask the user to check the number.")
    return ORDERS[order_id]


@tool
def refund(order_id: int, reason: str) -> str:
    """Refund an order.

    Args:
        order_id: The order to refund.
        reason: Why the user wants a refund.
    """
    try:
        raise DatabaseError("connection to postgres://admin:hunter2@db.internal/orders refused")
    except DatabaseError as error:
        raise RuntimeError("refund ledger unavailable") from error


@tool(return_direct=True)
def hand_off_to_human(summary: str) -> str:
    """Hand the conversation to a human agent; ends the agent's turn.

    Args:
        summary: What the human needs to know.
    """
    return f"A human agent will take over. Summary: {summary}"


TOOLS: Final = (order_status, refund, hand_off_to_human)

agent = Dispatcher(list(TOOLS))
"""The demo's agent: ``toolguard explain toolguard._demo:agent`` (the runs add a preset)."""

# Each round: what it shows, and the calls the scripted model makes. The arguments are
# what a model sends: a JSON string (as the providers' APIs deliver them) or a dict.
SCRIPT: tuple[tuple[str, tuple[ToolCall, ...]], ...] = (
    (
        "two lookups: one succeeds, one raises a ToolError",
        (
            ToolCall(name="order_status", arguments='{"order_id": 42}', id="call_1"),
            ToolCall(name="order_status", arguments='{"order_id": 9}', id="call_2"),
        ),
    ),
    (
        "a failure whose cause must stay hidden",
        (ToolCall(name="refund", arguments='{"order_id": 42, "reason": "broken"}', id="call_3"),),
    ),
    (
        "the model gets the arguments wrong",
        (ToolCall(name="refund", arguments='{"order": "42"}', id="call_4"),),
    ),
    (
        "a return_direct tool ends the loop",
        (
            ToolCall(
                name="hand_off_to_human",
                arguments='{"summary": "refund for order 42 failed"}',
                id="call_5",
            ),
        ),
    ),
)

PRESETS: Final = ("development", "production")
TRY: Final = (
    "explain toolguard._demo:agent --tool refund --policy development",
    "explain toolguard._demo:agent --tool refund --policy production",
    "check development production",
    "schema toolguard._demo:agent --format openai",
)
"""The commands the demo closes with (after the program's name, printed as the demo was
started: ``.venv/bin/toolguard`` stays that); ``tests/test_readme.py`` runs each one."""


def _configure_logging(out: TextIO) -> None:
    """The demo is an application, so it (not toolguard) configures structlog."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False),
            _log_prefix,
        ],
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


def _log_prefix(logger: Any, method: str, rendered: Any) -> str:
    """Mark every line the log got, so it cannot be mistaken for what the model saw."""
    return "\n".join(f"  log | {line}".rstrip() for line in str(rendered).splitlines())


def _code(tool: Any) -> list[str]:
    """The tool's source as written, without its docstring (a few lines)."""
    function = inspect.unwrap(tool)
    lines, _ = inspect.getsourcelines(function)
    tree = ast.parse("".join(lines))
    definition = tree.body[0]
    assert isinstance(definition, ast.FunctionDef)
    docstring = definition.body[0]
    skip: set[int] = set()
    if isinstance(docstring, ast.Expr) and isinstance(docstring.value, ast.Constant):
        end = docstring.end_lineno or docstring.lineno
        skip = set(range(docstring.lineno, end + 1))
    return [line.rstrip() for number, line in enumerate(lines, start=1) if number not in skip]


def _show_code(out: TextIO) -> None:
    out.write("\nThe agent's three tools (toolguard/_demo.py, docstrings left out):\n")
    for each in TOOLS:
        out.write("\n")
        for line in _code(each):
            out.write(f"    {line}".rstrip() + "\n")


def _arguments(call: ToolCall) -> str:
    arguments = call.arguments
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _show(round_: Round, out: TextIO) -> None:
    for result in round_.results:
        status = "error" if result.is_error else "ok"
        if result.error_id:
            status += f", error id {result.error_id} (its cause is in the log above)"
        out.write(f"  tool {result.name} [{status}] -> model sees:\n")
        for line in result.text.splitlines():
            out.write(f"      {line}\n")


def _handler(setting: Setting) -> str:
    """The handler as a reader would write it: a message in full, never cut."""
    message = getattr(setting.value, "message", None)
    if isinstance(message, str):
        return f"generic_unless_visible({json.dumps(message)})"
    return str(setting.value.name)


def _conversation(preset: str, out: TextIO) -> list[ToolResult]:
    """Run the script under one preset; returns every result, in order."""
    dispatcher = agent.with_policy(load_policy(preset))
    explained = dispatcher.explain("refund")
    chain, level = explained["on_error"], explained["log_level"]
    assert isinstance(chain, tuple)
    assert isinstance(level, Setting)
    out.write(f"\n=== run {PRESETS.index(preset) + 1} of 2: the {preset!r} preset ===\n")
    out.write(f"    on_error = {_handler(chain[0])}\n")
    out.write(f"    hidden causes are logged at {level.value}\n")
    results: list[ToolResult] = []
    with dispatcher:
        for number, (shows, calls) in enumerate(SCRIPT, start=1):
            out.write(f"\n--- round {number}: {shows}\n")
            for call in calls:
                out.write(f"  model calls {call.name} with {_arguments(call)}  ({call.id})\n")
            round_ = dispatcher.run(calls)
            _show(round_, out)
            results += round_.results
            if round_.stop:
                assert round_.final is not None
                out.write(
                    f"\n  the loop stops: {round_.final.name} asked to return directly.\n"
                    f"  final answer: {round_.final.text}\n"
                )
                break
    return results


def _compare(runs: dict[str, list[ToolResult]], out: TextIO) -> None:
    out.write("\n=== the two runs compared: what the model saw, call by call ===\n")
    width = max(len(preset) for preset in PRESETS) + 1
    for results in zip(*runs.values(), strict=True):
        out.write(f"\n  {results[0].call_id} {results[0].name}\n")
        for preset, result in zip(runs, results, strict=True):
            lines = result.text.splitlines() or [""]
            out.write(f"    {(preset + ':').ljust(width)} {lines[0]}\n")
            for line in lines[1:]:
                out.write(f"    {''.ljust(width)} {line}\n")


def run(out: TextIO = sys.stdout, *, program: str = "toolguard") -> int:
    """Run the tour; returns the process exit code.

    ``program`` is how the closing commands name the ``toolguard`` command: as it was
    started, so that they work as printed without activating a venv.
    """
    _configure_logging(out)
    out.write(
        "toolguard demo: one scripted agent conversation (no network, no LLM), run under\n"
        "two policy presets. Lines under 'model sees:' are all the model was told; lines\n"
        "starting '  log |' are what the application's log got.\n"
    )
    _show_code(out)
    try:
        runs = {preset: _conversation(preset, out) for preset in PRESETS}
    finally:
        structlog.reset_defaults()
    _compare(runs, out)
    out.write(
        "\nWhat happened: in both runs the ToolError's message reached the model and bad\n"
        "arguments were refused before the tool ran; a return_direct tool ended the loop.\n"
        "The refund's failure differs: development sent the exception's own message\n"
        "(never its cause: the database error with its password stayed in the log);\n"
        "production sent a generic message quoting an error id, and logged the cause\n"
        "once, at WARNING, under that id.\n"
        "\nTry (the demo's agent is importable as toolguard._demo:agent):\n"
    )
    for command in TRY:
        out.write(f"  {shlex.quote(program)} {command}\n")
    return 0
