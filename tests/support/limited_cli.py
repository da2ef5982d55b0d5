"""The CLI in a child process under a real file-size limit (`ulimit -f`, RLIMIT_FSIZE), for
the faults a monkeypatch would only pretend: a write that fails part-way with EFBIG."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from tests.support.bounded_process import die_with_parent

CLI_TIMEOUT_S = 120.0


def run_cli_limited(
    argv: Sequence[str], max_file_bytes: int | None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m dualstack ARGV` with no file larger than `max_file_bytes` writable (None:
    no limit), bytecode off (no .pyc written under the limit); bounded by `CLI_TIMEOUT_S`
    and by this process (`die_with_parent`). `cwd` is also where the code is imported from
    (`-m` puts it first on sys.path): a project copy runs its own code, so it judges its own
    commit in-process (`dualstack.offline.code_identity`), without a worktree to check out
    under the limit."""
    parent = os.getpid()

    def limit() -> None:
        die_with_parent(parent)
        if max_file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (max_file_bytes, max_file_bytes))

    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "dualstack", *argv],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        preexec_fn=limit,
        timeout=CLI_TIMEOUT_S,
        check=False,
    )
