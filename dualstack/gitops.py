"""The git side of a migration step: a clean stack file, a new branch, one commit.

Only the stack file is committed (`git commit -- <file>`), so unrelated staged or unstaged
work is never swept into a migration PR.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

GIT_TIMEOUT_S = 60.0


class GitError(RuntimeError):
    """A git operation the command needs failed; the message is git's first line of error."""


def git(root: Path, *args: str) -> str:
    """Run `git -C root args...`; its stdout. Raises GitError with git's message on failure."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args],
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitError(f"git {args[0]}: {exc}") from None
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip() or "failed").splitlines()[0]
        raise GitError(f"git {args[0]}: {message}")
    return done.stdout


MAX_BRANCH_SUFFIX = 99
"""`--commit` without `--branch` tries `<name>-2` .. `<name>-99` when `<name>` is taken."""


def branch_exists(root: Path, branch: str) -> bool:
    """True when `branch` exists locally or as a remote-tracking branch (`origin/<branch>`)."""
    refs = git(root, "for-each-ref", "--format=%(refname)", f"refs/heads/{branch}")
    refs += git(root, "for-each-ref", "--format=%(refname)", f"refs/remotes/*/{branch}")
    return bool(refs.strip())


def check_ready_to_commit(root: Path, path: Path, branch: str, free_name: bool = False) -> str:
    """Before editing: `root` is a git work tree, `path` has no uncommitted change, and
    `branch` is a valid name that does not exist yet; returns the branch to commit on.

    With `free_name`, a taken `branch` is replaced by the first free `<branch>-2`,
    `<branch>-3`, ... (an earlier incident's rollback branch must not block this one).
    Raises GitError naming the problem.
    """
    git(root, "rev-parse", "--is-inside-work-tree")
    git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if git(root, "status", "--porcelain", "--", path.name).strip():
        raise GitError(f"{path.name} has uncommitted changes; commit or stash them first")
    try:
        git(root, "check-ref-format", "--branch", branch)
    except GitError:
        raise GitError(f"--branch {branch!r} is not a valid branch name") from None
    if not branch_exists(root, branch):
        return branch
    if free_name:
        for suffix in range(2, MAX_BRANCH_SUFFIX + 1):
            if not branch_exists(root, candidate := f"{branch}-{suffix}"):
                return candidate
    raise GitError(f"branch {branch} already exists; pass --branch NAME or delete it")


def commit_on_new_branch(root: Path, path: Path, branch: str, message: str) -> str:
    """Create `branch` at HEAD (keeping the working tree), commit only `path` with `message`.

    Returns the new commit's short id. Raises GitError (e.g. no user identity configured).
    """
    git(root, "checkout", "-q", "-b", branch)
    git(root, "add", "--", path.name)
    git(root, "commit", "-q", "-m", message, "--", path.name)
    return git(root, "rev-parse", "--short", "HEAD").strip()
