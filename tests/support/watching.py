"""Run a `--watch` command as a user does, on a terminal or into a pipe, and stop it with
Ctrl-C (SIGINT) once it has drawn enough: for the tests of `status --watch`.

`watched(argv, cwd, drawings, terminal)` starts `python -m dualstack ARGV` (this tree's code),
its output on a pseudo-terminal (`pty.openpty`) or a pipe, reads until the header line has
appeared `drawings` times (or `TIMEOUT_S` passed), sends SIGINT and returns (exit code,
everything written). Bounded: the child is killed if it outlives the bound.
"""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO

TIMEOUT_S = 60.0
HEADER = "(Ctrl-C stops)"


def watched(argv: list[str], cwd: Path, drawings: int, terminal: bool) -> tuple[int, str]:
    """(exit code, output) of `dualstack ARGV --watch ...` stopped by SIGINT after
    `drawings` drawings."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if terminal:
        reader, writer = pty.openpty()
    else:
        reader, writer = os.pipe()
    child = subprocess.Popen(
        [sys.executable, "-m", "dualstack", *argv],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=writer,
        stderr=writer,
        env=env,
    )
    os.close(writer)
    chunks: list[bytes] = []
    deadline = time.monotonic() + TIMEOUT_S
    stopped = False
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([reader], [], [], 0.2)
            if ready:
                try:
                    data = os.read(reader, 65536)
                except OSError:  # a pty reads EIO once the child has gone
                    data = b""
                if not data:
                    break
                chunks.append(data)
            if not stopped and b"".join(chunks).decode(errors="replace").count(HEADER) >= drawings:
                child.send_signal(signal.SIGINT)
                stopped = True
        code = child.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        os.close(reader)
    return code, b"".join(chunks).decode(errors="replace").replace("\r\n", "\n")
