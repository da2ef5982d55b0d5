"""`--watch`: draw a command's text again every few seconds, as `kubectl argo rollouts get
rollout --watch` and `watch(1)` do, until Ctrl-C.

On a terminal each drawing replaces the last (the screen is cleared: ANSI `ESC [ H ESC [ 2 J`);
into a pipe or a log the drawings follow one another, each under its header line, so nothing
is lost. Ctrl-C ends the watch without an error line, and the exit code is the last drawing's.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TextIO

CLEAR = "\x1b[H\x1b[2J"
"""Cursor home, clear the screen (ECMA-48 CUP and ED)."""


def watch(
    draw: Callable[[], tuple[int, str]],
    interval: float,
    title: str,
    out: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
    now: Callable[[], float] = time.time,
) -> int:
    """Call `draw()` ((exit code, text)) every `interval` seconds and write its text under
    `Every 10 s: <title> (Ctrl-C stops)  <UTC time>`; returns the last exit code when
    interrupted. The screen is cleared before each drawing only when `out` is a terminal."""
    out = out if out is not None else sys.stdout
    terminal = out.isatty()
    code, drawn = 0, 0
    try:
        while True:
            code, text = draw()
            stamp = datetime.fromtimestamp(now(), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            head = f"Every {interval:g} s: {title} (Ctrl-C stops)  {stamp}\n\n"
            lead = CLEAR if terminal else ("\n" if drawn else "")
            out.write(lead + head + text)
            out.flush()
            drawn += 1
            sleep(interval)
    except KeyboardInterrupt:
        out.write("\n")
        out.flush()
        return code
