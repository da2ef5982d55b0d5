"""The one writer of files: every file the CLI writes is replaced whole or not at all.

`write_file(path, data)` writes `data` to a temporary file in the target's own folder
(`.<name>.<pid>.<random>.tmp`, created exclusively), flushes and fsyncs it, gives it the
target's mode (and owner, where the process may), renames it over the target (`os.replace`,
atomic within one file system, POSIX `rename(2)`) and fsyncs the folder, so the rename itself
survives a crash. A failure at any point (a full disk, `ulimit -f`, a read-only folder,
`kill -9`, Ctrl-C) leaves the old bytes: the rename is the only moment the content changes,
and a reader sees the old file or the new one, never a mix.

What the target may be:

- a regular file, or a name not taken yet (created with the mode `open()` would give it,
  0666 less the umask): replaced atomically, as above;
- a symlink: followed; its target is replaced (in the target's folder), the link stays;
- a folder: refused, `OSError(EISDIR)`, before anything is written;
- a FIFO, a character device or a socket (`/dev/stdout`, `/dev/null`, a pipe): written
  through in order, since a stream has no old content to keep (a FIFO nobody opens for
  reading within `FIFO_WAIT_S` is refused, never waited on forever).

A temporary file left behind by a writer killed mid-write (its pid gone) is removed by the
next write of the same file. Errors are `OSError` with `strerror` and `filename` set, which
the CLI prints as one line (`dualstack.errors.error_lines`).
"""

from __future__ import annotations

import errno
import glob
import os
import secrets
import stat
import time
from contextlib import suppress
from pathlib import Path

FIFO_WAIT_S = 5.0
"""Seconds a write to a FIFO waits for a reader to open it."""
DEFAULT_MODE = 0o666
"""A new file's mode before the umask, as `open(path, "w")` creates it."""


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _temp_name(target: Path) -> Path:
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale_temps(target: Path) -> list[Path]:
    """Remove the temporary files of `target` whose writer is gone (killed mid-write); the
    ones removed. A live writer's file is left alone."""
    removed = []
    pattern = str(target.with_name(f".{glob.escape(target.name)}.*.tmp"))
    for name in glob.glob(pattern):
        pid = Path(name).name[len(target.name) + 2 :].split(".", 1)[0]
        if pid.isdigit() and pid.isascii() and not _alive(int(pid)):
            with suppress(OSError):
                os.unlink(name)
                removed.append(Path(name))
    return removed


def fsync_folder(folder: Path) -> None:
    """fsync a folder, so a rename or an unlink inside it is on disk (a file system that
    cannot sync a folder, EINVAL, is skipped)."""
    fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.EBADF, errno.ENOTSUP):
            raise
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _stream(path: Path, data: bytes) -> None:
    """Write `data` to a FIFO, device or socket as it comes (no old content to keep). A FIFO
    nobody has opened for reading within `FIFO_WAIT_S` is refused (ENXIO), never waited on
    forever."""
    give_up = time.monotonic() + FIFO_WAIT_S
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
            break
        except OSError as exc:
            fifo = exc.errno == errno.ENXIO and stat.S_ISFIFO(os.stat(path).st_mode)
            if fifo and time.monotonic() < give_up:
                time.sleep(0.05)
                continue
            if fifo:
                why = f"no process opened this FIFO for reading within {FIFO_WAIT_S:g} s"
                raise OSError(exc.errno, why, str(path)) from None
            raise OSError(exc.errno, exc.strerror, str(path)) from None
    try:
        os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(path)) from None
    finally:
        os.close(fd)


def write_file(path: Path | str, data: bytes | str, encoding: str = "utf-8") -> None:
    """Replace the file at `path` with `data` (text is encoded with `encoding`), atomically
    (see the module docstring): afterwards `path` holds the old bytes or `data`, whatever
    happened in between. The file keeps its mode; a new file gets 0666 less the umask.

    Raises OSError (`strerror`, `filename` = `path`) when `path` is a folder, its folder is
    missing or not writable, or the write, sync or rename fails; the old file is intact then
    and no temporary file is left.
    """
    given = Path(path)
    raw = data.encode(encoding) if isinstance(data, str) else bytes(data)
    try:
        info = os.stat(given)  # follows a symlink: its target is what changes
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a folder, expected a file name", str(given))
    if info is not None and not stat.S_ISREG(info.st_mode):
        _stream(given, raw)
        return
    target = Path(os.path.realpath(given))
    mode = stat.S_IMODE(info.st_mode) if info is not None else DEFAULT_MODE & ~_umask()
    remove_stale_temps(target)
    temp = _temp_name(target)
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, str(given)) from None
    try:
        try:
            _write_all(fd, raw)
            os.fchmod(fd, mode)
            if info is not None and (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
                with suppress(OSError):  # only root may give a file away; the mode is kept
                    os.fchown(fd, info.st_uid, info.st_gid)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException as exc:
        with suppress(OSError):
            os.unlink(temp)
        if isinstance(exc, OSError):
            raise OSError(exc.errno, exc.strerror, str(given)) from None
        raise
    fsync_folder(target.parent)


def append_file(path: Path | str, text: str, encoding: str = "utf-8") -> None:
    """Add `text` at the end of the file at `path` (created when missing), atomically as
    `write_file`: the old content and the addition, or the old content alone. For files other
    tools also add to (a CI job summary); a stream is written through."""
    given = Path(path)
    try:
        info = os.stat(given)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISREG(info.st_mode):
        with open(given, "rb") as existing:
            old = existing.read()
    else:
        old = b""
    write_file(given, old + text.encode(encoding))


def put_back(path: Path | str, original: bytes) -> None:
    """Give the file at `path` its `original` bytes again after a failed edit: `write_file`,
    skipped when it holds them still (a failed atomic write left them), so putting back never
    fails for the reason the edit did (a full disk, `ulimit -f`)."""
    try:
        with open(path, "rb") as current:
            if current.read(len(original) + 1) == original:
                return
    except OSError:
        pass
    write_file(path, original)
