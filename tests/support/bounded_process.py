"""Server processes a test starts die with the test process, even when it is killed with
SIGKILL (a mutation-testing timeout, a CI cancel, `kill -9` of pytest): nothing is left running.

`spawn` starts the child with `die_with_parent` run before exec: Linux's prctl(2)
`PR_SET_PDEATHSIG` sends it SIGKILL when the thread that forked it ends, and a check right
after closes the race of a parent that died before the call. `stop` ends it (SIGTERM, then
SIGKILL) and reaps it.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
from typing import Any

PR_SET_PDEATHSIG = 1
"""prctl(2) option: the signal the calling process gets when its parent thread dies."""
STOP_TIMEOUT_S = 10.0
"""Seconds a server has to end after SIGTERM before it is killed."""


def die_with_parent(parent: int | None = None) -> None:
    """In a child before exec (Linux; elsewhere nothing): SIGKILL when the parent dies.
    `parent` is the pid the child was forked from; if that parent has already gone, the
    child ends at once."""
    if not sys.platform.startswith("linux"):
        return
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def spawn(argv: list[str], **kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen(argv, **kwargs)` bounded by this process (`die_with_parent`)."""
    parent = os.getpid()
    return subprocess.Popen(argv, preexec_fn=lambda: die_with_parent(parent), **kwargs)


def stop(process: subprocess.Popen) -> None:
    """End `process`: SIGTERM, then SIGKILL after `STOP_TIMEOUT_S`; always reaped."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=STOP_TIMEOUT_S)
