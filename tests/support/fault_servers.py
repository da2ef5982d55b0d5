"""A misbehaving HTTP server for fault tests (127.0.0.1, random port, threads of the test).

Each connection reads one request and runs a `Script`, which writes whatever bytes it likes:
a plain answer, an answer that drips one byte at a time, headers that never end, a body that
never ends, nothing at all. Every script ends when the server stops (`FaultServer` is a
context manager) and after `HANG_LIMIT` seconds at most, so no test waits on it longer.
"""

from __future__ import annotations

import itertools
import json
import socket
import socketserver
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

HANG_LIMIT = 30.0
"""Seconds any script runs at most."""

Script = Callable[[socket.socket, bytes, threading.Event], None]
"""(connection, the request's bytes, the server's stop event) -> None."""


def _send(conn: socket.socket, data: bytes) -> bool:
    try:
        conn.sendall(data)
        return True
    except OSError:  # the client gave up, which is what the test wants
        return False


def head(status: int = 200, headers: Iterable[tuple[str, str]] = (), length: int | None = None):
    """The status line and headers of an answer, ending with the blank line."""
    lines = [f"HTTP/1.1 {status} X", "Connection: close", *(f"{k}: {v}" for k, v in headers)]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def answer(body: bytes | str | Any, status: int = 200, headers=()) -> Script:
    """Answer once with `body` (bytes as they are, text as UTF-8, anything else as JSON,
    NaN written as `NaN` the way Python and some servers do)."""
    if isinstance(body, str):
        body = body.encode()
    elif not isinstance(body, bytes):
        body = json.dumps(body).encode()
    data = head(status, (("Content-Type", "application/json"), *headers), len(body)) + body

    def script(conn: socket.socket, _request: bytes, _stop: threading.Event) -> None:
        _send(conn, data)

    return script


def drip(body: bytes, interval: float = 0.2, length: int | None = None) -> Script:
    """Headers at once, then `body` one byte every `interval` seconds."""

    def script(conn: socket.socket, _request: bytes, stop: threading.Event) -> None:
        if not _send(conn, head(200, (("Content-Type", "application/json"),), length)):
            return
        for byte in body:
            if stop.wait(interval) or not _send(conn, bytes([byte])):
                return

    return script


def drip_headers(interval: float = 0.2) -> Script:
    """A status line, then one header byte every `interval` seconds, never ending."""

    def script(conn: socket.socket, _request: bytes, stop: threading.Event) -> None:
        if not _send(conn, b"HTTP/1.1 200 OK\r\nX-Slow: "):
            return
        while not stop.wait(interval):
            if not _send(conn, b"a"):
                return

    return script


def endless(chunk: bytes = b"[" * 65536, chunked: bool = True) -> Script:
    """An answer whose body never ends, sent as fast as the client reads (chunked, or with
    no length and no end)."""

    def script(conn: socket.socket, _request: bytes, stop: threading.Event) -> None:
        headers = (("Transfer-Encoding", "chunked"),) if chunked else ()
        if not _send(conn, head(200, headers)):
            return
        frame = f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" if chunked else chunk
        started = time.monotonic()
        while not stop.is_set() and time.monotonic() - started < HANG_LIMIT:
            if not _send(conn, frame):
                return

    return script


def huge(size: int, byte: bytes = b" ") -> Script:
    """A `size`-byte answer with its Content-Length, sent as fast as the client reads."""

    def script(conn: socket.socket, _request: bytes, stop: threading.Event) -> None:
        if not _send(conn, head(200, (), size)):
            return
        block = byte * 65536
        for _ in range(size // len(block)):
            if stop.is_set() or not _send(conn, block):
                return

    return script


def silent() -> Script:
    """Accept, read the request, never answer."""

    def script(_conn: socket.socket, _request: bytes, stop: threading.Event) -> None:
        stop.wait(HANG_LIMIT)

    return script


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    conn.settimeout(5.0)
    while b"\r\n\r\n" not in data:
        part = conn.recv(65536)
        if not part:
            return data
        data += part
    header, _, body = data.partition(b"\r\n\r\n")
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in header.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        part = conn.recv(65536)
        if not part:
            break
        body += part
    return header + b"\r\n\r\n" + body


class FaultServer:
    """Serves `script` (or each of `scripts` in turn, the last one repeated) on 127.0.0.1.

    `url` is `http://127.0.0.1:<port>`; `requests` counts the requests read.
    """

    def __init__(self, *scripts: Script) -> None:
        self.stop = threading.Event()
        self.requests = 0
        order = itertools.chain(scripts[:-1], itertools.repeat(scripts[-1]))
        lock = threading.Lock()
        server = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                try:
                    request = _read_request(self.request)
                except OSError:
                    return
                with lock:
                    server.requests += 1
                    script = next(order)
                self.request.settimeout(None)
                script(self.request, request, server.stop)

        self._server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> FaultServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
