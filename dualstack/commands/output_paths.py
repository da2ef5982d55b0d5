"""Checking where a command will write, before it does any work.

A report that cannot be saved after a five-minute gate run, or a stack file already edited
when the PR body cannot be written, is worse than refusing at once: each command checks its
output paths first and raises UsageError naming the option and the path.
"""

from __future__ import annotations

import os
from pathlib import Path

from dualstack.errors import UsageError


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
