"""The one runner of child processes (git, the Pulumi CLI, the base's CLI) and what they start.

`run_bounded` starts the child in its own session and process group (`start_new_session`):
a terminal's Ctrl-C reaches dualstack alone, which then ends the child itself; so do SIGTERM
and SIGHUP (a cancelled CI job, a closed terminal: `TERMINATING`). It reads the
child's output and waits for it within one deadline. At the deadline, on Ctrl-C or on any
other error it ends the whole tree (`kill_tree`) with SIGKILL: the child's process group (git's
hooks, Pulumi's plugins), every descendant still linked to it that moved to a group or session
of its own (found through /proc's parent links), and every process still holding the child's
output pipes (a detached daemon whose parent is gone), then reaps the child. After a normal
exit, a process that keeps the output pipes open more than `LINGER_S` is ended the same way:
otherwise it would hold the command until it ends, however long. A descendant that let go of
the pipes and detached (git's `gc --auto --detach`) is left to finish its work.

Finding descendants and pipe holders reads /proc (Linux); elsewhere the process group alone is
killed. This module imports nothing of the project.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

LINGER_S = 2.0
"""Seconds the child's output pipes may stay open after it exited (a grandchild writing its
last lines) before whoever holds them is killed."""
MAX_OUTPUT_BYTES = 64 * 1024 * 1024
"""Most bytes read from a child's stdout or stderr; more ends the child (`OutputTooLarge`)."""
_CHUNK = 65536


class Timeout(Exception):
    """The child did not finish within its bound; the whole tree was killed."""


class OutputTooLarge(Exception):
    """The child printed more than `MAX_OUTPUT_BYTES` on one stream; the tree was killed."""


@dataclass(frozen=True)
class Finished:
    """A child that ended: its exit code (negative: killed by that signal) and its output."""

    returncode: int
    stdout: bytes
    stderr: bytes


def universal_text(data: bytes, errors: str = "strict") -> str:
    """`data` as UTF-8 text with `\\r\\n` and `\\r` read as `\\n`, as `subprocess.run(...,
    text=True)` reads a child's output. Raises UnicodeDecodeError with `errors="strict"`."""
    return data.decode("utf-8", errors).replace("\r\n", "\n").replace("\r", "\n")


def _proc_pids() -> list[int]:
    try:
        return [int(name) for name in os.listdir("/proc") if name.isdigit()]
    except OSError:
        return []


def _parent_of(pid: int) -> int | None:
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line.rsplit(")", 1)[-1].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def descendants(pid: int) -> set[int]:
    """Every live process below `pid` by parent links (children, their children, ...),
    whatever group or session each has moved to; empty without /proc."""
    children: dict[int, list[int]] = {}
    for other in _proc_pids():
        parent = _parent_of(other)
        if parent is not None:
            children.setdefault(parent, []).append(other)
    found: set[int] = set()
    todo = list(children.get(pid, []))
    while todo:
        child = todo.pop()
        if child not in found:
            found.add(child)
            todo += children.get(child, [])
    return found


def pipe_holders(inodes: set[int]) -> set[int]:
    """The processes other than this one holding an end of one of the pipes `inodes` (their
    `st_ino`); empty without /proc."""
    wanted = {f"pipe:[{inode}]" for inode in inodes}
    holders = set()
    me = os.getpid()
    for pid in _proc_pids():
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with suppress(OSError):
                if os.readlink(f"/proc/{pid}/fd/{fd}") in wanted:
                    holders.add(pid)
                    break
    return holders


def kill_tree(process: subprocess.Popen, inodes: set[int] = frozenset()) -> None:
    """SIGKILL `process`'s group, its descendants and the holders of the pipes `inodes`
    (see the module docstring), then reap `process`."""
    victims = descendants(process.pid) | pipe_holders(set(inodes))
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    for pid in victims - {os.getpid()}:
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with suppress(ChildProcessError):
        process.wait()


TERMINATING = (signal.SIGTERM, signal.SIGHUP)
"""Signals that end dualstack (a CI job cancelled, a terminal closed): while a child runs they
end it with its tree first (`SystemExit(128 + signal)`); the child, in a session of its own,
would not get them from a signal to dualstack's group."""


def _terminate(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def _ending_on_termination() -> Iterator[None]:
    """While the block runs, `TERMINATING` signals left at their default raise SystemExit in
    the main thread (so `run_bounded` kills the tree on the way out); elsewhere nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}
    for number in TERMINATING:
        if signal.getsignal(number) is signal.SIG_DFL:
            previous[number] = signal.signal(number, _terminate)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def run_bounded(
    argv: Sequence[str],
    timeout: float,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
) -> Finished:
    """Run `argv` (stdin: /dev/null) in its own session and process group; its exit code and
    output once it and everything holding its output have ended, within `timeout` seconds.

    Raises Timeout when it runs longer (the tree is killed: `kill_tree`), OutputTooLarge
    past `MAX_OUTPUT_BYTES` on a stream, OSError when it cannot start. On any other
    exception (KeyboardInterrupt included, and SystemExit(128 + n) for SIGTERM or SIGHUP in
    the main thread) the tree is killed before it goes on.
    """
    process = subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    streams = {process.stdout: bytearray(), process.stderr: bytearray()}
    inodes = {os.fstat(stream.fileno()).st_ino for stream in streams}
    try:
        with _ending_on_termination():
            code = _collect(process, streams, inodes, timeout)
    except BaseException:
        kill_tree(process, inodes)
        raise
    finally:
        for stream in streams:
            stream.close()
    return Finished(code, bytes(streams[process.stdout]), bytes(streams[process.stderr]))


def _collect(process: subprocess.Popen, streams: dict, inodes: set[int], timeout: float) -> int:
    """Read `streams` (the child's stdout and stderr) into their buffers until both close,
    the child has exited and `LINGER_S` has passed, or `timeout` s; the child's exit code.
    Raises Timeout or OutputTooLarge after `kill_tree`."""
    end = time.monotonic() + timeout
    linger_end = None
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if linger_end is None and process.poll() is not None:
                linger_end = now + LINGER_S
            bound = end if linger_end is None else min(end, linger_end)
            if now >= bound:
                break
            for key, _ in selector.select(min(bound - now, 0.1)):
                chunk = os.read(key.fileobj.fileno(), _CHUNK)
                if not chunk:
                    selector.unregister(key.fileobj)
                    continue
                streams[key.fileobj] += chunk
                if len(streams[key.fileobj]) > MAX_OUTPUT_BYTES:
                    kill_tree(process, inodes)
                    raise OutputTooLarge(f"more than {MAX_OUTPUT_BYTES} bytes of output")
        if selector.get_map():  # a stream still open at the bound
            kill_tree(process, inodes)
            if linger_end is None or time.monotonic() >= end:
                raise Timeout(f"no answer within {timeout:g} s")
    try:
        return process.wait(timeout=max(0.0, end - time.monotonic()))
    except subprocess.TimeoutExpired:
        kill_tree(process, inodes)
        raise Timeout(f"no answer within {timeout:g} s") from None
