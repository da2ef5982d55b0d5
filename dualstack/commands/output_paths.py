"""Checking where a command will write, before it does any work.

A report that cannot be saved after a five-minute gate run, or a stack file already edited
when the PR body cannot be written, is worse than refusing at once: each command checks its
output paths first and raises UsageError naming the option and the path.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from dualstack.errors import UsageError
from dualstack.repo.atomic import write_file

REPORT_FIELDS = ("json_report", "markdown_report")
"""The checker's options naming a report file (`--json`, `--markdown`)."""


def _existing_ancestor(path: Path) -> Path:
    for folder in (path, *path.parents):
        if folder.exists():
            return folder
    return Path(".")


def check_output_file(path: Path | None, option: str) -> None:
    """`path` can be written as a file: its folder exists and is writable, and `path` is not
    a folder nor a read-only file. None (option not given) passes.

    Raises UsageError `--markdown out/gate.md: folder out does not exist`.
    """
    if path is None:
        return
    folder = path.parent
    if path.is_dir():
        raise UsageError(f"{option} {path}: is a folder, expected a file name")
    if not folder.is_dir():
        why = "is not a folder" if folder.exists() else "does not exist"
        raise UsageError(f"{option} {path}: folder {folder} {why}")
    if path.exists() and not os.access(path, os.W_OK):
        raise UsageError(f"{option} {path}: the file is not writable")
    if not path.exists() and not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: folder {folder} is not writable")


def check_output_dir(path: Path, option: str) -> None:
    """`path` is a writable folder, or can be created as one (its nearest existing ancestor
    is a writable folder).

    Raises UsageError `--output out.yaml: exists and is not a folder`.
    """
    if path.exists():
        if not path.is_dir():
            raise UsageError(f"{option} {path}: exists and is not a folder")
        if not os.access(path, os.W_OK | os.X_OK):
            raise UsageError(f"{option} {path}: the folder is not writable")
        return
    ancestor = _existing_ancestor(path.parent)
    if not ancestor.is_dir():
        raise UsageError(f"{option} {path}: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: cannot create it, {ancestor} is not writable")


@contextmanager
def staged_reports(args: argparse.Namespace, keep: Sequence[str] = ()) -> Iterator[dict[str, Path]]:
    """While the block runs, each report option of `args` the user gave (`--json FILE`,
    `--markdown FILE`), and each field in `keep` even when not given, names a file in a
    private temporary folder: the {field: staged path} yielded. Afterwards each given report
    the block wrote there is put where the user asked with `dualstack.repo.atomic.write_file`,
    so a report is the old file or the complete new one, never half of one. (The precision
    checker is stdlib-only and runs from a ConfigMap, so it writes its reports plainly; the CLI
    stages them here.)

    Raises OSError (one line: the path and why) when a report cannot be put in place."""
    given = {field: getattr(args, field, None) for field in REPORT_FIELDS}
    fields = [field for field in REPORT_FIELDS if given[field] or field in keep]
    with tempfile.TemporaryDirectory(prefix="dualstack-reports-") as folder:
        staged = {field: Path(folder) / field for field in fields}
        for field in fields:
            setattr(args, field, str(staged[field]))
        try:
            yield staged
        finally:
            for field, path in given.items():
                setattr(args, field, path)
        for field in fields:
            if given[field] and staged[field].is_file():
                write_file(Path(given[field]), staged[field].read_bytes())
