"""Git helpers for `--base`: the default base ref and short commit names."""

from __future__ import annotations

from pathlib import Path

from dualstack.repo.git import git_or_none

DEFAULT_BRANCH_CANDIDATES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")


def default_base(root: Path) -> str | None:
    """The merge base of HEAD with the default branch, as a commit id.

    On the default branch itself that is HEAD, so the preview shows the uncommitted change
    (what `pulumi config set` just wrote). None outside git or before the first commit.
    """
    if git_or_none(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") is None:
        return None
    for candidate in DEFAULT_BRANCH_CANDIDATES:
        if git_or_none(root, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"):
            return git_or_none(root, "merge-base", "HEAD", candidate)
    return git_or_none(root, "rev-parse", "HEAD")


def describe(root: Path, ref: str) -> str:
    """`<ref> (<short sha>)`, or just `ref` when git cannot name it."""
    short = git_or_none(root, "rev-parse", "--short", f"{ref}^{{commit}}")
    return f"{ref} ({short})" if short and not short.startswith(ref[:7]) else (short or ref)
