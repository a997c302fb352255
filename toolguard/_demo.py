"""``toolguard demo``: a scripted agent conversation, offline, in a few seconds.

A scripted "model" asks for four rounds of tool calls. The demo prints what the
model is told after each round and, beside it, what the application's log got:
a success, a model-visible ``ToolError``, a hidden failure (generic message with
an error id; the cause only in the log line carrying the same id), and a
``return_direct`` tool that ends the loop.
"""

from __future__ import annotations

import sys
from typing import TextIO

import structlog

from toolguard import Dispatcher, ToolCall, ToolError, tool
from toolguard.results import Round

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


def _configure_logging(out: TextIO) -> None:
    """The demo is an application, so it (not toolguard) configures structlog."""
    structlog.configure(
        processors=[
            structlog.processors.add_log_level,
            structlog.processors.format_exc_info,
            structlog.dev.ConsoleRenderer(colors=False),
        ],
        logger_factory=structlog.PrintLoggerFactory(out),
        cache_logger_on_first_use=False,
    )


def _show(round_: Round, out: TextIO) -> None:
    for result in round_.results:
        status = "error" if result.is_error else "ok"
        out.write(f"  tool {result.name} [{status}] -> model sees:\n")
        for line in result.text.splitlines():
            out.write(f"      {line}\n")
        if result.error_id:
            out.write(f"      (error id {result.error_id}: the cause is in the log line above)\n")


def run(out: TextIO = sys.stdout) -> int:
    """Run the scripted conversation; returns the process exit code."""
    _configure_logging(out)
    dispatcher = Dispatcher([order_status, refund, hand_off_to_human])
    out.write("toolguard demo: a scripted agent conversation (no network, no LLM)\n")
    try:
        for number, (user, calls) in enumerate(SCRIPT, start=1):
            out.write(f"\n--- round {number}: user says {user!r}\n")
            out.write(f"  model calls: {', '.join(c.name for c in calls)}\n")
            round_ = dispatcher.run(calls)
            _show(round_, out)
            if round_.stop:
                assert round_.final is not None
                out.write(
                    f"\n=== the loop stops: {round_.final.name} asked to return directly.\n"
                    f"    final answer: {round_.final.text}\n"
                )
                break
    finally:
        dispatcher.close()
        structlog.reset_defaults()
    out.write(
        "\nWhat happened: the ToolError's message reached the model; the database error\n"
        "(with its password) did not: the model got a generic message with an error id,\n"
        "and the cause was logged once under that id; bad arguments were refused before\n"
        "the tool ran; a return_direct tool ended the loop.\n"
    )
    return 0
