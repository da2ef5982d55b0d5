"""A bounded child process with its pipes served by threads: send stdin early, collect later.

The judge and the head's render are separate interpreters (`dualstack.offline.judge_client`,
`dualstack.offline.head_render`). Reading stdout and stderr on threads from the start, and
writing stdin on a thread, means no pipe can fill and stall either side, and the caller can
hand over its input, do other work (validate its own objects), then collect the answer.
"""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Mapping, Sequence
from contextlib import suppress
from pathlib import Path
from typing import IO

from dualstack.offline.protocol import JudgeError
from dualstack.processes import LINGER_S, kill_tree


def _drain(stream: IO[str], into: list[str]) -> None:
    into.append(stream.read())


class Child:
    """A subprocess in its own session and process group (killed whole on `stop()`, with
    anything it started: `dualstack.processes.kill_tree`)."""

    def __init__(self, argv: Sequence[str], cwd: Path, env: Mapping[str, str]) -> None:
        self.argv = list(argv)
        self.process = subprocess.Popen(
            self.argv,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self._inodes = {
            os.fstat(stream.fileno()).st_ino
            for stream in (self.process.stdout, self.process.stderr)
        }
        self._out: list[str] = []
        self._err: list[str] = []
        self._threads = [
            threading.Thread(target=_drain, args=(self.process.stdout, self._out), daemon=True),
            threading.Thread(target=_drain, args=(self.process.stderr, self._err), daemon=True),
        ]
        self._writer: threading.Thread | None = None
        for thread in self._threads:
            thread.start()

    def send(self, text: str) -> None:
        """Write `text` to the child's stdin and close it, on a thread (returns at once)."""

        def write() -> None:
            stdin = self.process.stdin
            assert stdin is not None
            with suppress(BrokenPipeError, ValueError):  # the child died or closed early
                stdin.write(text)
            with suppress(BrokenPipeError, ValueError):
                stdin.close()

        self._writer = threading.Thread(target=write, daemon=True)
        self._writer.start()

    def finish(self, timeout: float, what: str) -> tuple[int, str, str]:
        """(exit code, stdout, stderr) once the child ends; stdin is closed if nothing was
        sent. Raises JudgeError naming `what` when it runs longer than `timeout` s."""
        if self._writer is None:
            self.send("")
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            raise JudgeError(f"{what} gave no answer within {timeout:g} s") from None
        for thread in (*self._threads, self._writer):
            if thread is not None:
                thread.join(timeout=LINGER_S)
        if any(thread.is_alive() for thread in self._threads):  # a detached child holds them
            kill_tree(self.process, self._inodes)
            for thread in self._threads:
                thread.join(timeout=LINGER_S)
        return code, "".join(self._out), "".join(self._err)

    def stop(self) -> None:
        """Kill the process group if it still runs, with its descendants and whatever holds
        its output pipes (`dualstack.processes.kill_tree`), and reap it."""
        if self.process.poll() is None or any(t.is_alive() for t in self._threads):
            kill_tree(self.process, self._inodes)
