"""Git helpers for `--base`: the default base ref and short commit names."""

from __future__ import annotations

import subprocess
from pathlib import Path

DEFAULT_BRANCH_CANDIDATES = ("origin/HEAD", "origin/main", "origin/master", "main", "master")


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def default_base(root: Path) -> str | None:
    """The merge base of HEAD with the default branch, as a commit id.

    On the default branch itself that is HEAD, so the preview shows the uncommitted change
    (what `pulumi config set` just wrote). None outside git or before the first commit.
    """
    if _git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") is None:
        return None
    for candidate in DEFAULT_BRANCH_CANDIDATES:
        if _git(root, "rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}"):
            return _git(root, "merge-base", "HEAD", candidate)
    return _git(root, "rev-parse", "HEAD")


def describe(root: Path, ref: str) -> str:
    """`<ref> (<short sha>)`, or just `ref` when git cannot name it."""
    short = _git(root, "rev-parse", "--short", f"{ref}^{{commit}}")
    return f"{ref} ({short})" if short and not short.startswith(ref[:7]) else (short or ref)
