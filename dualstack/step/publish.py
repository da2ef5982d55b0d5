"""The git side of a migration step: a new branch from the default branch, one commit.

`--commit` always branches from the default branch's tip (`origin/HEAD`, `origin/main`, ...,
as `dualstack.repo.baseref`), never from whatever HEAD holds, so a feature branch's unrelated
commits never ride along in a migration PR. When HEAD is elsewhere, the step is written and
committed in a temporary `git worktree`, leaving the user's checkout untouched. Only the stack
file is committed (`git commit -- <file>`), so unrelated staged or unstaged work is never
swept in. Every check (identity, clean stack file, free branch name) runs before anything is
changed, and a failed commit puts back the file and deletes the branch it created.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from components.settings import PROJECT
from dualstack.repo.atomic import put_back
from dualstack.repo.baseref import DEFAULT_BRANCH_CANDIDATES
from dualstack.repo.git import GitError, git, git_or_none
from dualstack.repo.stackfile import StackFileError, read_config, read_config_at

EVIDENCE_KEYS = ("verifiedAscendImage", "verifiedImages")
"""What `dualstack verify-precision` writes: evidence, which lands through its own pull request
(the verification job's, approved by the owners), never inside a step (docs/trust-model.md)."""


MAX_BRANCH_SUFFIX = 99
"""`--commit` without `--branch` tries `<name>-2` .. `<name>-99` when `<name>` is taken."""


@dataclass(frozen=True)
class CommitPlan:
    """Where `--commit` branches from and what it carries.

    `base`: the default branch's ref (`origin/main`, ...); `base_sha`: its commit;
    `in_place`: HEAD is that commit, so the user's working tree is used.
    """

    base: str
    base_sha: str
    in_place: bool


def branch_exists(root: Path, branch: str) -> bool:
    """True when `branch` exists locally or as a remote-tracking branch (`origin/<branch>`)."""
    refs = git(root, "for-each-ref", "--format=%(refname)", f"refs/heads/{branch}")
    refs += git(root, "for-each-ref", "--format=%(refname)", f"refs/remotes/*/{branch}")
    return bool(refs.strip())


def default_branch(root: Path) -> tuple[str, str]:
    """(ref, commit id) of the default branch's tip: the first of `DEFAULT_BRANCH_CANDIDATES`
    that resolves. Raises GitError when none does."""
    for candidate in DEFAULT_BRANCH_CANDIDATES:
        try:
            sha = git(root, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}")
        except GitError:
            continue
        return candidate, sha.strip()
    names = ", ".join(DEFAULT_BRANCH_CANDIDATES)
    raise GitError(f"--commit branches from the default branch, but none of {names} exists")


def local_branch(root: Path, ref: str) -> str:
    """The local branch name a user switches to for the default branch's `ref`: `main` for
    `origin/main`, and for `origin/HEAD` the branch it points to (`git symbolic-ref`), since
    `git switch HEAD` is no branch. `ref` itself when it is local already."""
    if ref == "origin/HEAD":
        target = git_or_none(root, "symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
        ref = target or "origin/main"
    return ref.removeprefix("origin/")


def check_identity(root: Path) -> None:
    """Raise GitError unless git knows who commits (`git var GIT_AUTHOR_IDENT`, and the
    committer), so a commit cannot fail half-way for want of a name."""
    for var in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        try:
            git(root, "var", var)
        except GitError:
            raise GitError(
                "git has no identity to commit with: set `git config user.name` and "
                "`git config user.email` (nothing was changed)"
            ) from None


def check_clean_stack_file(root: Path, path: Path, stack: str) -> None:
    """Raise GitError when `path` has uncommitted changes; an uncommitted verification record
    (`EVIDENCE_KEYS`) gets its own explanation: it never rides along with a step."""
    if not git(root, "status", "--porcelain", "--", path.name).strip():
        return
    dirty = GitError(f"{path.name} has uncommitted changes; commit or stash them first")
    try:
        now, head = read_config(root, stack), read_config_at(root, stack, "HEAD")
    except StackFileError:
        raise dirty from None
    evidence = {f"{PROJECT}:{key}" for key in EVIDENCE_KEYS}
    changed = {k for k in set(now) | set(head or {}) if now.get(k) != (head or {}).get(k)}
    if head is not None and changed and changed <= evidence:
        raise GitError(
            f"{path.name} has an uncommitted verification record "
            f"({', '.join(sorted(k.removeprefix(PROJECT + ':') for k in changed))}): evidence "
            "lands through its own pull request (the verification job's, approved by the "
            "owners), never with a step; commit it apart or stash it"
        )
    raise dirty


def prepare_commit(root: Path, path: Path, stack: str) -> CommitPlan:
    """Before editing: `root` is a git work tree with a commit, git has an identity, the
    default branch exists, and `path` has no uncommitted change.

    Raises GitError naming the problem; changes nothing.
    """
    git(root, "rev-parse", "--is-inside-work-tree")
    head = git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}").strip()
    check_identity(root)
    check_clean_stack_file(root, path, stack)
    base, sha = default_branch(root)
    return CommitPlan(base, sha, in_place=head == sha)


def choose_branch(root: Path, branch: str, free_name: bool = False) -> str:
    """`branch` when it is a valid name not taken yet; with `free_name`, a taken `branch` is
    replaced by the first free `<branch>-2`, `<branch>-3`, ... (an earlier incident's rollback
    branch must not block this one). Raises GitError naming the problem."""
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


@contextmanager
def commit_workspace(root: Path, plan: CommitPlan | None, stack: str) -> Iterator[Path]:
    """The project root to write and commit the step in.

    `root` itself when there is no plan (no `--commit`) or HEAD is the default branch's tip;
    otherwise a temporary detached worktree at that tip, removed on exit. Raises GitError
    when it cannot be made.
    """
    if plan is None or plan.in_place:
        yield root
        return
    prefix = git(root, "rev-parse", "--show-prefix").strip()
    tmp = Path(tempfile.mkdtemp(prefix="dualstack-commit-"))
    try:
        git(root, "worktree", "add", "-q", "--detach", str(tmp / "tree"), plan.base_sha)
        yield tmp / "tree" / prefix
    finally:
        if (tmp / "tree").exists():
            with suppress(GitError):  # the folder goes below; `worktree prune` drops the record
                git(root, "worktree", "remove", "--force", str(tmp / "tree"))
        shutil.rmtree(tmp, ignore_errors=True)


def commit_on_new_branch(root: Path, path: Path, branch: str, message: str, original: bytes) -> str:
    """Create `branch` at HEAD (keeping the working tree), commit only `path` with `message`.

    Returns the new commit's short id. On failure (a refusing hook, a vanished identity) the
    file gets its `original` bytes back, HEAD returns to where it was and `branch` is deleted
    before GitError is raised.
    """
    previous = git_or_none(root, "symbolic-ref", "--short", "-q", "HEAD")
    previous_sha = git_or_none(root, "rev-parse", "HEAD") or "HEAD"
    created = False
    try:
        git(root, "checkout", "-q", "-b", branch)
        created = True
        git(root, "add", "--", path.name)
        git(root, "commit", "-q", "-m", message, "--", path.name)
    except BaseException:  # GitError (a held index.lock, a hook), Ctrl-C: nothing stays
        _undo(root, path, branch if created else None, original, previous or None, previous_sha)
        raise
    return git(root, "rev-parse", "--short", "HEAD").strip()


def _undo(
    root: Path, path: Path, branch: str | None, original: bytes, previous: str | None, sha: str
) -> None:
    """Put back `path`'s `original` bytes, unstage it, go back to `previous` (or detached
    `sha`) and drop `branch` when this command created it (None: it did not get that far).
    The file comes first: it is what the user sees, and needs no git that works."""
    put_back(path, original)
    steps = [("reset", "-q", "--", path.name)]
    if branch is not None:
        back = ("checkout", "-q", previous) if previous else ("checkout", "-q", "--detach", sha)
        steps += [back, ("branch", "-q", "-D", branch)]
    for args in steps:
        with suppress(GitError):  # best effort: the original error is the one to report
            git(root, *args)
