"""The one git runner: every git command the CLI runs goes through `git()` here.

One timeout rule (`GIT_TIMEOUT_S`, 60 s) and one error type (`GitError`, whose message is
`git <verb>: <git's first line of error>`), so a hung or failing git reads the same in every
command. `git_or_none()` is the same call for probes where "no answer" is an answer. git runs
through `dualstack.processes.run_bounded`: in its own process group, with /dev/null as stdin,
and at its bound (or on Ctrl-C) it is killed with its hooks and whatever they started.
"""

from __future__ import annotations

from pathlib import Path

from dualstack.processes import OutputTooLarge, Timeout, run_bounded, universal_text

GIT_TIMEOUT_S = 60.0
"""Seconds one git command may take (a `git diff` of a large repo, a worktree checkout)."""


class GitError(RuntimeError):
    """A git operation the command needs failed; the message is git's first line of error."""


def _run(root: Path, args: tuple[str, ...], timeout: float) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of `git -C root args...`, read as `subprocess.run(...,
    text=True)` reads them. Raises GitError when git is missing, exceeds `timeout` seconds
    (git, its hooks and their children are killed), prints too much or prints no UTF-8."""
    try:
        done = run_bounded(["git", "-C", str(root), *args], timeout=timeout)
    except Timeout:
        raise GitError(f"git {args[0]}: no answer within {timeout:g} s") from None
    except OutputTooLarge as exc:
        raise GitError(f"git {args[0]}: {exc}") from None
    except OSError as exc:
        raise GitError(f"git {args[0]}: {exc.strerror or exc}") from None
    try:
        return done.returncode, universal_text(done.stdout), universal_text(done.stderr)
    except UnicodeDecodeError as exc:
        raise GitError(f"git {args[0]}: the output is not UTF-8 text ({exc.reason})") from None


def git(root: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> str:
    """Run `git -C root args...` and return its stdout (untrimmed).

    Raises GitError when git is missing, exceeds `timeout` seconds, or exits non-zero; the
    message names the git verb and git's own first line of error.
    """
    code, stdout, stderr = _run(root, args, timeout)
    if code != 0:
        message = (stderr.strip() or stdout.strip() or "failed").splitlines()[0]
        raise GitError(f"git {args[0]}: {message}")
    return stdout


def git_status(root: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> tuple[int, str]:
    """(exit status, stdout) of `git -C root args...`, for the verbs whose non-zero status is
    an answer (`git merge-tree` exits 1 on conflicts). Raises GitError when git is missing or
    exceeds `timeout` seconds, or for a status above 1 (git's own error)."""
    code, stdout, stderr = _run(root, args, timeout)
    if code > 1 or code < 0:
        message = (stderr.strip() or stdout.strip() or "failed").splitlines()[0]
        raise GitError(f"git {args[0]}: {message}")
    return code, stdout


def git_or_none(root: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> str | None:
    """`git()`'s stdout stripped, or None where `git()` would raise GitError (a probe: "is
    this a commit?", "is there a default branch?")."""
    try:
        return git(root, *args, timeout=timeout).strip()
    except GitError:
        return None


def is_commit(root: Path, ref: str) -> bool:
    """True when `ref` names a commit of the repository at `root`."""
    return git_or_none(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}") is not None


def entry_mode(root: Path, ref: str, path: str) -> str | None:
    """git's mode of repo-relative `path` at commit `ref` (`100644`, `100755`, `120000` for a
    symlink, `040000` a folder, `160000` a submodule), None when it does not exist there:
    git's own view of the entry, whatever a checkout's file system makes of it. Raises
    GitError when `ref` is not a commit or git fails."""
    if not is_commit(root, ref):
        raise GitError(f"git rev-parse: {ref!r} is not a commit in {root}")
    listed = git(root, "ls-tree", ref, "--", path).strip()
    return listed.split(" ", 1)[0] if listed else None


def show_file(root: Path, ref: str, path: str) -> str | None:
    """The text of repo-relative `path` at commit `ref`, or None when it does not exist there.

    `path` is relative to `root` (`./Pulumi.prod.yaml`). Raises GitError when `ref` is not a
    commit or git fails for another reason.
    """
    if not is_commit(root, ref):
        raise GitError(f"git rev-parse: {ref!r} is not a commit in {root}")
    listed = git(root, "ls-tree", "--name-only", ref, "--", path).strip()
    if not listed:
        return None
    return git(root, "show", f"{ref}:{path}")
