"""Serving over stdio: ``run_stdio``, ``serve_stdio`` and ``python -m
toolguard.integrations.mcp MODULE:ATTR`` (what ``toolguard serve-mcp`` runs)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Coroutine, Sequence
from typing import Any

import structlog
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

from toolguard import Dispatcher
from toolguard.integrations.mcp._server import mcp_server
from toolguard.targets import TargetError, load_target

__all__ = ["TargetError", "load_target", "main", "run_stdio", "serve_stdio"]


# --- stdio ----------------------------------------------------------------------------


async def serve_stdio(server: Server[Any]) -> None:
    """Serve ``server`` over this process's stdin/stdout until stdin closes.

    Leaves logging alone (see :func:`run_stdio`); stdout carries the protocol, so
    the application's logs must go elsewhere (stderr, a file).
    """
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio(
    dispatcher: Dispatcher,
    *,
    name: str = "toolguard",
    log_to_stderr: bool = True,
    **options: Any,
) -> None:
    """Serve ``dispatcher``'s tools over stdio; blocks until the client disconnects.

    This is an application entry point (``toolguard serve-mcp``), and stdout is the
    protocol channel. So with ``log_to_stderr`` (the default), if structlog has not
    been configured yet, it is configured to write one JSON line per event to
    stderr, tracebacks included, where MCP hosts collect a server's log. A process
    that configured structlog itself keeps its configuration. ``options`` go to
    :func:`mcp_server`. Runs on asyncio (toolguard's async dispatch needs it).

    The event loop survives a tool's ``SystemExit`` or ``KeyboardInterrupt`` raised
    in a task of the tool's own (asyncio lets those escape the loop, whoever
    awaits the task): the loop is resumed, and the call that awaited the task is
    answered with a JSON-RPC error like any aborted call. A real Ctrl-C (SIGINT)
    still stops the server (``KeyboardInterrupt`` from this function).
    """
    if log_to_stderr and not structlog.is_configured():
        _log_to_stderr()
    server = mcp_server(dispatcher, name=name, **options)
    _run_resilient(serve_stdio(server))


def _run_resilient(main: Coroutine[Any, Any, None]) -> None:
    """Run ``main`` on a new asyncio loop until it ends, resuming the loop when a
    task's ``SystemExit``/``KeyboardInterrupt`` escapes it; SIGINT cancels ``main``."""
    loop = asyncio.new_event_loop()
    task = loop.create_task(main)
    interrupted = False

    def interrupt() -> None:
        nonlocal interrupted
        interrupted = True
        task.cancel()

    with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
        loop.add_signal_handler(signal.SIGINT, interrupt)  # the main thread, on POSIX
    try:
        while True:
            try:
                loop.run_until_complete(task)
                return
            except (SystemExit, KeyboardInterrupt):
                if task.done():
                    raise
                # a tool's task raised it: the call awaiting that task answers it
                # (logged there, once); the server goes on
            except asyncio.CancelledError:
                if interrupted:
                    raise KeyboardInterrupt from None
                raise
    finally:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(signal.SIGINT)
        _close(loop)


def _close(loop: asyncio.AbstractEventLoop) -> None:
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    with contextlib.suppress(BaseException):
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()


def _log_to_stderr() -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            structlog.processors.JSONRenderer(),
        ],
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


# --- MODULE:ATTR ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m toolguard.integrations.mcp MODULE:ATTR``: serve it over stdio.

    ``MODULE:ATTR`` is read by :func:`load_target`: a ``Dispatcher``, a list or
    tuple of tools, or one ``@tool``. The current directory is importable for the
    whole run, as with ``python -m``. Returns the exit status: 0 when the client
    disconnected, 2 for a bad target (:class:`TargetError`: malformed, not found,
    of another kind, or a module whose import raised).
    """
    parser = argparse.ArgumentParser(
        prog="python -m toolguard.integrations.mcp",
        description="Serve a toolguard Dispatcher's tools as an MCP server over stdio.",
    )
    parser.add_argument("target", metavar="MODULE:ATTR", help="a Dispatcher or a list of tools")
    parser.add_argument("--name", default="toolguard", help="the server name sent to clients")
    args = parser.parse_args(argv)
    _import_from_cwd(sys.path)
    try:
        dispatcher = load_target(args.target)
    except TargetError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    try:
        run_stdio(dispatcher, name=args.name)
    except KeyboardInterrupt:
        return 130
    return 0


def _import_from_cwd(path: list[str]) -> None:
    """Put the working directory on ``sys.path`` (a console script does not)."""
    cwd = os.getcwd()
    if "" not in path and cwd not in path:
        path.insert(0, cwd)
