"""The CLI's error types and what each means for the exit code.

Exit codes shared by every command: 0 success, 1 a check failed (policy violation, gate
failure, precision mismatch), 2 the command could not do its work (bad input, missing file,
unreachable server). `dualstack status` alone also uses 3: git and the cluster disagree (drift)
or a step is pending. An expected error (`dualstack.cli.expected_errors()`) prints one line
per cause on stderr, prefixed `error:`, and exits 2; anything else is a bug and keeps its
traceback. This module imports nothing of the project, so every package may raise its errors.
"""

from __future__ import annotations

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
EXIT_PENDING = 3
"""`dualstack status`: a stack's deployed weight differs from git, or a step is pending."""


class UsageError(ValueError):
    """A command-line value is malformed (e.g. `--set` without `=`, an unknown flag value)."""


def error_lines(exc: BaseException) -> list[str]:
    """What to print for an expected error: its message lines; an OSError as
    `<strerror>: <filename>` (`No such file or directory: out/gate.md`), not `[Errno 2] ...`."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return [f"{exc.strerror}{where}"]
    return str(exc).splitlines() or [type(exc).__name__]
