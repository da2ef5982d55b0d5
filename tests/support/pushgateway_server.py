"""A real Pushgateway (Debian's `prometheus-pushgateway`) on 127.0.0.1, random port, in
memory, bounded by the test process (`tests.support.bounded_process`): stopped by the test,
and gone with it even when pytest is killed with SIGKILL."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager

from tests.support.bounded_process import spawn, stop

READY_TIMEOUT_S = 5.0


class Unavailable(RuntimeError):
    """prometheus-pushgateway is not installed (`make tools`)."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def pushgateway_server() -> Iterator[tuple[str, int]]:
    """Run a Pushgateway; yields (its base URL, its pid) once it is ready. Raises
    Unavailable when the binary is missing, RuntimeError when it is not ready within
    READY_TIMEOUT_S."""
    binary = shutil.which("prometheus-pushgateway")
    if binary is None:
        raise Unavailable("prometheus-pushgateway not installed (make tools)")
    url = f"http://127.0.0.1:{free_port()}"
    process = spawn(
        [binary, f"--web.listen-address={url[7:]}", "--persistence.file=", "--log.level=error"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=1).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"pushgateway not ready in {READY_TIMEOUT_S} s") from None
                time.sleep(0.05)
        yield url, process.pid
    finally:
        stop(process)
