"""A temporary, detached `git worktree` of one commit, removed again on exit."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from dualstack.repo.git import GitError, git


@contextmanager
def temporary_worktree(root: Path, commit: str, prefix: str = "dualstack-") -> Iterator[Path]:
    """The project folder (the one matching `root`, which holds `Pulumi.yaml`) inside a fresh
    detached worktree of `commit`; the worktree and its folder are removed on exit.

    Raises GitError when git cannot make it (not a repository, unknown commit).
    """
    inside = git(root, "rev-parse", "--show-prefix").strip()
    tmp = Path(tempfile.mkdtemp(prefix=prefix))
    tree = tmp / "tree"
    try:
        git(root, "worktree", "add", "-q", "--detach", str(tree), commit)
        yield tree / inside
    finally:
        if tree.exists():
            with suppress(GitError):  # the folder goes below; `worktree prune` drops the record
                git(root, "worktree", "remove", "--force", str(tree))
        shutil.rmtree(tmp, ignore_errors=True)
