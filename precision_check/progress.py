"""Progress of long work on stderr (standard library only; also used by `dualstack gate`).

On a terminal one line is rewritten in place (`precision check: 31/48 answers, 2.4 s`); on
anything else (a CI log, a file) progress is off unless asked for, and then it is a plain line
at most once per `interval` seconds plus the last one. `wanted(None)` is "on when stderr is a
terminal": CI logs stay quiet by default.

The checker reports through a hook the caller installs (`reporting`), so the in-cluster Job,
which installs none, prints nothing and pays nothing.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

Callback = Callable[[int, int], None]
"""`callback(done, total)`: called after each finished unit of work, from any thread."""

_hook: Callback | None = None


def wanted(flag: bool | None, stream: TextIO | None = None) -> bool:
    """`--progress` / `--no-progress` when given (`flag`), else whether `stream` (stderr)
    is a terminal."""
    if flag is not None:
        return flag
    stream = stream if stream is not None else sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class Progress:
    """A `Callback` printing `<label>: <done>/<total> <unit>, <seconds> s` on `stream`."""

    def __init__(
        self, label: str, unit: str, stream: TextIO | None = None, interval: float = 1.0
    ) -> None:
        self.label, self.unit, self.interval = label, unit, interval
        self.stream = stream if stream is not None else sys.stderr
        self.tty = wanted(None, self.stream)
        self.started = time.monotonic()
        self._last = -interval
        self._lock = threading.Lock()
        self._open = False

    def __call__(self, done: int, total: int) -> None:
        with self._lock:
            now = time.monotonic()
            final = done >= total
            if not (self.tty or final or now - self._last >= self.interval):
                return
            self._last = now
            text = f"{self.label}: {done}/{total} {self.unit}, {now - self.started:.1f} s"
            if self.tty:
                self.stream.write(f"\r\x1b[K{text}" + ("\n" if final else ""))
                self._open = not final
            else:
                self.stream.write(text + "\n")
            self.stream.flush()

    def close(self) -> None:
        """End an unfinished in-place line (the work stopped early)."""
        with self._lock:
            if self._open:
                self.stream.write("\n")
                self.stream.flush()
                self._open = False


@contextmanager
def reporting(callback: Callback | None) -> Iterator[None]:
    """Install `callback` as the checker's progress hook while the block runs."""
    global _hook
    previous, _hook = _hook, callback
    try:
        yield
    finally:
        _hook = previous
        if isinstance(callback, Progress):
            callback.close()


def report(done: int, total: int) -> None:
    """Tell the installed hook, if any, that `done` of `total` units are finished."""
    hook = _hook
    if hook is not None:
        hook(done, total)
