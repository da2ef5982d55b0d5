"""One lock per repository around the commands that write its stack files or commit in it.

`repo_lock(root, what)` holds an exclusive flock(2) on `<git common dir>/dualstack.lock`
(`.git/dualstack.lock` in a plain clone) while its block runs. The common dir is shared by
every worktree of the clone, so a `promote --commit` writing in a temporary worktree and a
`rollback` in the checkout exclude each other. `promote`, `rollback` (`--emergency` included)
and `verify-precision` take it, before their first check of the tree and until their last
write or commit: two of them never interleave their edits, branches and commits.

A second command waits up to `DUALSTACK_LOCK_WAIT` seconds (default `DEFAULT_WAIT_S`; `0`:
refuse at once), then refuses in one line naming the holder, from what the holder wrote into
the lock file (its pid, its command and since when), exit 2, nothing changed:

    error: .git/dualstack.lock is held by pid 4242 (dualstack promote -s staging --commit,
    since 2026-05-01T12:00:03Z); waited 10 s: let it finish, or end it (kill 4242)

The kernel drops a flock when its holder ends (`kill -9` included), so a lock file left
behind never blocks: the next command takes it and writes its own pid. The lock file is the
one file written in place, not atomically: its inode is what is locked, and its text only
informs. Outside a git repository there is no commit to serialise and no lock is taken
(stack-file writes are still atomic, `dualstack.repo.atomic`). The lock is re-entrant within
one process.
"""

from __future__ import annotations

import fcntl
import os
import re
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dualstack.repo.git import git_or_none

LOCK_NAME = "dualstack.lock"
DEFAULT_WAIT_S = 10.0
"""Seconds a command waits for the lock by default (`DUALSTACK_LOCK_WAIT`)."""
MAX_WAIT_S = 3600.0
POLL_S = 0.05
WAIT_VARIABLE = "DUALSTACK_LOCK_WAIT"
_SECONDS = re.compile(r"(0|[1-9][0-9]*)(\.[0-9]+)?")
_HELD: dict[Path, int] = {}


class RepoLockError(RuntimeError):
    """The repository lock is held by another command (or cannot be taken); one line."""


def wait_seconds(environ: dict[str, str] | os._Environ = os.environ) -> float:
    """`DUALSTACK_LOCK_WAIT` as seconds (plain ASCII decimal, 0 to `MAX_WAIT_S`), else
    `DEFAULT_WAIT_S`. Raises RepoLockError naming the variable for any other text."""
    text = environ.get(WAIT_VARIABLE)
    if text is None:
        return DEFAULT_WAIT_S
    if not _SECONDS.fullmatch(text) or float(text) > MAX_WAIT_S:
        raise RepoLockError(
            f"{WAIT_VARIABLE}={text[:40]!r}: expected seconds to wait for the repository lock, "
            f"a plain decimal from 0 to {MAX_WAIT_S:g}"
        )
    return float(text)


def lock_path(root: Path) -> Path | None:
    """`<git common dir>/dualstack.lock` of the repository holding `root`; None outside git."""
    common = git_or_none(root, "rev-parse", "--git-common-dir")
    if not common:
        return None
    folder = Path(common)
    return (folder if folder.is_absolute() else Path(root) / folder).resolve() / LOCK_NAME


def _holder(fd: int) -> str:
    """What the holder wrote into the lock file (`pid 4242 (...)`), or that it said nothing."""
    try:
        text = os.pread(fd, 512, 0).decode("utf-8", "replace").strip()
    except OSError:
        text = ""
    return text.splitlines()[0] if text else "another process (it wrote no pid yet)"


def _shown(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(Path(root).resolve()))
    except ValueError:
        return str(path)


@contextmanager
def repo_lock(root: Path, what: str | None = None) -> Iterator[Path | None]:
    """Hold the repository's lock while the block runs (see the module docstring); the lock
    file's path, None outside git. `what` names this command in the lock file (default: this
    process's command line).

    Raises RepoLockError when another process holds it for longer than `wait_seconds()`, or
    the lock file cannot be opened."""
    wait = wait_seconds()
    path = lock_path(root)
    if path is None:
        yield None
        return
    if path in _HELD:
        _HELD[path] += 1
        try:
            yield path
        finally:
            _HELD[path] -= 1
        return
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise RepoLockError(
            f"{_shown(path, root)}: cannot open the repository lock: {exc.strerror or exc}"
        ) from None
    try:
        give_up = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= give_up:
                    holder = _holder(fd)
                    pid = re.match(r"pid (\d+)", holder)
                    end = f" (kill {pid[1]})" if pid else ""
                    raise RepoLockError(
                        f"{_shown(path, root)} is held by {holder}; waited {wait:g} s: let it "
                        f"finish, or end it{end}"
                    ) from None
                time.sleep(POLL_S)
        command = what or "dualstack " + " ".join(sys.argv[1:])
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        note = f"pid {os.getpid()} ({command[:200]}, since {since})\n".encode()
        os.ftruncate(fd, 0)
        os.pwrite(fd, note, 0)
        _HELD[path] = 1
        try:
            yield path
        finally:
            del _HELD[path]
            os.ftruncate(fd, 0)
    finally:
        os.close(fd)  # closing the only descriptor releases the flock
