"""Bounds on everything the checker reads: HTTP answers, JSON, files (standard library only).

- HTTP: `DeadlineHandler` gives every request a wall-clock deadline (`request.deadline`, a
  `time.monotonic()` value) that covers the connection, the status line, the headers and the
  body, so a server that drips one byte a second cannot stretch a request past it (a socket
  timeout alone bounds each read, not their sum). `read_capped` reads at most a size cap.
- JSON: `loads` refuses text nested deeper than `MAX_JSON_DEPTH` before decoding it (the
  decoder would otherwise raise RecursionError, or take the stack, on `[[[[...`).
- YAML: `bounded_yaml_loader` is PyYAML's safe loader refusing nesting deeper than
  `MAX_JSON_DEPTH` as soon as it meets it.
- Files: `read_regular` refuses anything but a regular file (a FIFO would block, `/dev/zero`
  never ends) and files above a size cap.

`dualstack.gate.prometheus` uses the same bounds for Prometheus answers.
"""

from __future__ import annotations

import functools
import http.client
import io
import json
import os
import re
import socket
import stat
import time
import urllib.request
from pathlib import Path
from typing import Any

MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects any answer or file may have (an OpenAI answer
nests 6 deep, a Prometheus answer 5)."""

_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


class TooLarge(ValueError):
    """An answer or a file above its size cap."""


def json_depth(payload: bytes | str) -> int:
    """How deep arrays and objects nest in JSON text (brackets inside strings do not count):
    `1` -> 0, `[1]` -> 1, `{"a": [[]]}` -> 3. Linear in the size of `payload`; the text need
    not be valid JSON."""
    data = payload.encode("utf-8", "surrogatepass") if isinstance(payload, str) else payload
    brackets = _STRINGS.sub(b"", data).translate(None, _NOT_BRACKETS)
    level = deepest = 0
    for byte in brackets:
        level += 1 if byte in b"[{" else -1
        deepest = max(deepest, level)
    return deepest


def loads(payload: bytes | str, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`json.loads(payload)`, refusing text nested deeper than `max_depth` levels; raises
    ValueError (json.JSONDecodeError for text that is not JSON, a plain ValueError for depth,
    UnicodeDecodeError for bytes that are not UTF-8)."""
    depth = json_depth(payload)
    if depth > max_depth:
        raise ValueError(f"nested {depth} levels deep, more than {max_depth}")
    return json.loads(payload)


def read_regular(path: str | Path, limit: int) -> bytes:
    """The bytes of a regular file of at most `limit` bytes.

    Opens without blocking (`O_NONBLOCK`: a FIFO with no writer would wait forever) and
    raises OSError for a missing or unreadable file, for anything that is not a regular file
    (a FIFO, a device such as `/dev/zero`, a folder: errno EINVAL or EISDIR), and TooLarge
    above `limit`.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as file:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(21, "is a folder, not a file")
        if not stat.S_ISREG(mode):
            raise OSError(22, "not a regular file (a FIFO, socket or device is refused)")
        data = file.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(f"larger than {limit} bytes")
    return data


def read_capped(response: io.BufferedIOBase, limit: int) -> bytes:
    """At most `limit` bytes of an HTTP answer's body; raises TooLarge when there are more."""
    body = response.read(limit + 1)
    if len(body) > limit:
        raise TooLarge(f"answer larger than {limit} bytes")
    return body


class _DeadlineSocket:
    """A connected socket whose every receive and send waits at most until `deadline`
    (`time.monotonic()`), never more than the socket's own timeout; past it, TimeoutError.

    `close` is deferred while a file made by `makefile` is open, as `socket.socket` does.
    """

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self._sock, self._deadline = sock, deadline
        self._timeout = sock.gettimeout()
        self._files, self._closed = 0, False

    def _bound(self) -> None:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("the request's deadline passed")
        self._sock.settimeout(remaining if self._timeout is None else min(remaining, self._timeout))

    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        self._bound()
        return self._sock.recv_into(buffer, nbytes, flags)

    def recv(self, size: int, flags: int = 0) -> bytes:
        self._bound()
        return self._sock.recv(size, flags)

    def send(self, data: bytes, flags: int = 0) -> int:
        self._bound()
        return self._sock.send(data, flags)

    def sendall(self, data: bytes, flags: int = 0) -> None:
        view = memoryview(data).cast("B")
        while view:
            view = view[self.send(view[: 64 * 1024], flags) :]

    def makefile(self, mode: str = "rb", buffering: int | None = None, **_: Any) -> io.IOBase:
        self._files += 1
        raw = socket.SocketIO(self, mode)  # type: ignore[arg-type]
        return io.BufferedReader(raw, buffering or io.DEFAULT_BUFFER_SIZE)

    def _decref_socketios(self) -> None:
        self._files -= 1
        if self._closed and self._files <= 0:
            self._sock.close()

    def close(self) -> None:
        self._closed = True
        if self._files <= 0:
            self._sock.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def bound_socket(sock: socket.socket, deadline: float | None) -> Any:
    """`sock`, every receive and send of which waits at most until `deadline`
    (`time.monotonic()`); `sock` itself when `deadline` is None."""
    return sock if deadline is None else _DeadlineSocket(sock, deadline)


class DeadlineConnection(http.client.HTTPConnection):
    """An HTTP connection bounded by `deadline` (`time.monotonic()`; None: no deadline)."""

    deadline: float | None = None

    def connect(self) -> None:
        super().connect()
        self.sock = bound_socket(self.sock, self.deadline)


class DeadlineHTTPSConnection(http.client.HTTPSConnection):
    """An HTTPS connection bounded by `deadline`, TLS handshake included."""

    deadline: float | None = None

    def connect(self) -> None:
        super().connect()
        self.sock = bound_socket(self.sock, self.deadline)


def connection_for(cls: type, request: urllib.request.Request, host: str, **kwargs: Any) -> Any:
    """A `cls(host, **kwargs)` connection carrying `request.deadline` (None when unset)."""
    connection = cls(host, **kwargs)
    connection.deadline = getattr(request, "deadline", None)
    return connection


class DeadlineHandler(urllib.request.HTTPHandler):
    """http:// requests through `DeadlineConnection`, each bounded by `request.deadline`."""

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(connection_for, DeadlineConnection, req), req)


class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
    """https:// requests through `DeadlineHTTPSConnection`, each bounded by `request.deadline`."""

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        factory = functools.partial(connection_for, DeadlineHTTPSConnection, req)
        return self.do_open(factory, req, context=self._context)


def bounded_yaml_loader(yaml: Any, max_depth: int = MAX_JSON_DEPTH) -> type:
    """PyYAML's safe loader (`yaml` is the imported module: the checker's Job has none),
    raising `yaml.YAMLError` at a node nested deeper than `max_depth`, as soon as it meets
    it (before its scanner, quadratic in the nesting, reads the rest)."""

    class Loader(yaml.SafeLoader):
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > max_depth:
                    raise yaml.YAMLError(f"nested more than {max_depth} levels deep")
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

    return Loader
