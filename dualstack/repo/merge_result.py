"""The merge result a merge request would land: what GitLab's judge judges (issue 28).

A merge-request pipeline checks out the source branch (or, with merged results pipelines, a
merge commit GitLab made with the target as it was then). Judged against the target's
current tip, a stale branch carries every change the target gained after the branch point as
if it reverted it: its plain step is refused for changes it never made, and an interaction
of the two (the target lowered the weight, the branch raised it) is never judged. What lands
is the merge of the two: `merge_commit` builds it from git objects alone (`git merge-tree
--write-tree`, then `git commit-tree`: no checkout, hook or program of the head runs), and the
judge reads that commit as the head.
"""

from __future__ import annotations

from pathlib import Path

from dualstack.repo.changes import ChangesError
from dualstack.repo.git import GitError, git, git_or_none, git_status

IDENTITY = ("-c", "user.name=dualstack judge", "-c", "user.email=judge@dualstack.invalid")
"""The committer of a merge result (a local object, never pushed)."""


class MergeError(ChangesError):
    """The head does not merge into the base cleanly, or a ref is unknown."""


def _commit(root: Path, ref: str) -> str:
    found = git_or_none(root, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if not found:
        raise MergeError(f"{ref!r} is not a commit of this clone (fetch it first)")
    return found.strip()


def merge_commit(root: Path, base: str, head: str = "HEAD") -> str:
    """The commit id of `head` merged into `base`: `head` itself when it already contains
    `base` (a merged-results pipeline's merge commit, an up-to-date branch), else a new merge
    commit with parents (base, head) whose tree is git's merge of the two.

    Raises MergeError naming the conflicting paths when the merge has conflicts (a rebase is
    the only thing to judge), or when a ref is not a commit; GitError when git fails.
    """
    base_id, head_id = _commit(root, base), _commit(root, head)
    contained, _out = git_status(root, "merge-base", "--is-ancestor", base_id, head_id)
    if contained == 0:
        return head_id
    status, out = git_status(
        root, "merge-tree", "--write-tree", "--name-only", "--no-messages", "-z", base_id, head_id
    )
    tree, *paths = [field for field in out.split("\0") if field]
    if status != 0:
        raise MergeError(
            f"{head} does not merge into {base} without conflicts ({', '.join(paths)}): rebase "
            f"the branch onto {base}, then judge it"
        )
    message = f"merge result of {head} ({head_id[:12]}) into {base} ({base_id[:12]})"
    args = ("commit-tree", tree, "-p", base_id, "-p", head_id, "-m", message)
    return git(root, *IDENTITY, *args).strip()


def add_detached(root: Path, folder: Path, commit: str) -> None:
    """Check `commit` out at `folder` as a detached worktree of the repository at `root`
    (files only: git runs the clone's own hooks, never a file of the head's tree). Raises
    MergeError when git cannot."""
    try:
        git(root, "worktree", "add", "--detach", "--quiet", str(folder), commit)
    except GitError as exc:
        raise MergeError(f"cannot check the merge result out at {folder}: {exc}") from None
