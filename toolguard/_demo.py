"""``toolguard demo``: a guided tour, offline, in a few seconds.

A scripted "model" asks for four rounds of tool calls: a success, a model-visible
``ToolError``, a failure whose cause must stay hidden, arguments that do not fit,
and a ``return_direct`` tool that ends the loop. The same conversation runs twice,
under the ``development`` preset and under ``production``; each round prints what
the model is told and, where toolguard logged, what the application's log got.
Last, the two runs' model-facing results, call by call.
"""

from __future__ import annotations

import sys
from typing import Any, Final, TextIO

import structlog

from toolguard import Dispatcher, Setting, ToolCall, ToolError, ToolResult, tool
from toolguard._files import load_policy
from toolguard._values import Round

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


SCRIPT: tuple[tuple[str, tuple[ToolCall, ...]], ...] = (
    (
        "Where is my order 42? And order 9?",
        (
            ToolCall(name="order_status", arguments={"order_id": 42}, id="call_1"),
            ToolCall(name="order_status", arguments='{"order_id": 9}', id="call_2"),
        ),
    ),
    (
        "Please refund order 42, it arrived broken.",
        (ToolCall(name="refund", arguments={"order_id": 42, "reason": "broken"}, id="call_3"),),
    ),
    (
        "(the model gets the arguments wrong)",
        (ToolCall(name="refund", arguments='{"order": "42"}', id="call_4"),),
    ),
    (
        "I want to talk to a person.",
        (
            ToolCall(
                name="hand_off_to_human",
                arguments={"summary": "refund for order 42 failed"},
                id="call_5",
            ),
        ),
    ),
)


PRESETS: Final = ("development", "production")
_CELL: Final = 80


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


def _show(round_: Round, out: TextIO) -> None:
    for result in round_.results:
        status = "error" if result.is_error else "ok"
        if result.error_id:
            status += f", error id {result.error_id} (its cause is in the log above)"
        out.write(f"  tool {result.name} [{status}] -> model sees:\n")
        for line in result.text.splitlines():
            out.write(f"      {line}\n")


def _conversation(preset: str, out: TextIO) -> list[ToolResult]:
    """Run the script under one preset; returns every result, in order."""
    policy = load_policy(preset)
    dispatcher = Dispatcher([order_status, refund, hand_off_to_human], policy=policy)
    explained = dispatcher.explain("refund")
    chain, level = explained["on_error"], explained["log_level"]
    assert isinstance(chain, tuple)
    assert isinstance(level, Setting)
    out.write(f"\n=== run {PRESETS.index(preset) + 1} of 2: the {preset!r} preset ===\n")
    out.write(f"    on_error = {chain[0].value.name}; hidden causes logged at {level.value}\n")
    results: list[ToolResult] = []
    with dispatcher:
        for number, (user, calls) in enumerate(SCRIPT, start=1):
            out.write(f"\n--- round {number}: user says {user!r}\n")
            out.write(f"  model calls: {', '.join(c.name for c in calls)}\n")
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


def _first_line(text: str) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= _CELL else line[: _CELL - 3] + "..."


def _compare(runs: dict[str, list[ToolResult]], out: TextIO) -> None:
    out.write("\n=== the two runs compared: what the model saw, call by call ===\n")
    width = max(len(preset) for preset in PRESETS) + 1
    for results in zip(*runs.values(), strict=True):
        out.write(f"\n  {results[0].call_id} {results[0].name}\n")
        for preset, result in zip(runs, results, strict=True):
            out.write(f"    {(preset + ':').ljust(width)} {_first_line(result.text)}\n")


def run(out: TextIO = sys.stdout) -> int:
    """Run the tour; returns the process exit code."""
    _configure_logging(out)
    out.write(
        "toolguard demo: one scripted agent conversation (no network, no LLM), run under\n"
        "two policy presets. Lines under 'model sees:' are all the model was told; lines\n"
        "starting '  log |' are what the application's log got.\n"
    )
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
        "once, at WARNING, under that id. Try: toolguard explain, toolguard check.\n"
    )
    return 0
