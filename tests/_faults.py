"""Faults between a store and its real server, on 127.0.0.1 only: a TCP proxy that
passes traffic through, slows the server's replies, or swallows them (a black hole),
and can drop every connection it carries (what an idle timeout or a load balancer
does). Started and stopped by the test; every thread it starts ends with it."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Iterator

__all__ = ["Proxy", "proxy"]


class Proxy:
    """``127.0.0.1:port`` forwarding to ``127.0.0.1:upstream``.

    * ``delay``: seconds each chunk the server sends waits before it is passed on;
    * ``black_hole``: accept connections, pass nothing on in either direction;
    * :meth:`drop`: close every connection now (the client finds out when it next
      reads or writes).
    """

    def __init__(self, upstream: int) -> None:
        self.upstream = upstream
        self.delay = 0.0
        self.black_hole = False
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._start(self._accept)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def _start(self, target: object, *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)  # type: ignore[arg-type]
        self._threads.append(thread)
        thread.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.black_hole:
                with self._lock:
                    self._open.append(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream), timeout=5)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, server]
            self._start(self._pump, client, server, False)
            self._start(self._pump, server, client, True)

    def _pump(self, source: socket.socket, target: socket.socket, replies: bool) -> None:
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                if replies and self.delay:
                    time.sleep(self.delay)
                if self.black_hole:
                    continue
                target.sendall(chunk)
        except OSError:
            pass
        finally:
            for end in (source, target):
                with contextlib.suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)

    def drop(self) -> None:
        """Close every connection the proxy carries (the listener stays)."""
        with self._lock:
            open_, self._open = self._open, []
        for sock in open_:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        self._listener.close()
        self.drop()
        for thread in self._threads:
            thread.join(timeout=5)


@contextlib.contextmanager
def proxy(upstream: int) -> Iterator[Proxy]:
    made = Proxy(upstream)
    try:
        yield made
    finally:
        made.close()
