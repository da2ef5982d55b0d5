"""Which stacks a git change touches, in deploy order: what the pipelines preview and `up`.

A stack is touched when its `Pulumi.<stack>.yaml` changed, or when the program every stack
runs changed (any path but the stack files and the documentation and tests, `INERT_PATHS`):
then every stack is. Stacks deploy non-production first and
production last (`deploy_order`), so staging takes a change before prod does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from dualstack.repo.git import GitError, git
from dualstack.repo.stackfile import stack_of

__all__ = ["stack_of"]  # the stack-file name rule is `dualstack.repo.stackfile`'s

INERT_PATHS = ("README.md", "LICENSE", "docs/", "tests/", "examples/")
"""Files and folders (ending in `/`) that neither deploy nor judge a stack: the documentation,
the test suite (its own CI job: no secrets, deploys nothing) and the pipelines offered to the
service repository. Every other path but the stack files is the program (`touches_program`),
fail closed: what a stack deploys (`__main__.py`, `components/`, `Pulumi.yaml`), the in-cluster
checker (`precision_check/`: the Job's name hashes its source), the pack, the CLI that
renders, previews and gates (`dualstack/`), the dependency and build files, the pipelines, who
owns all that (`CODEOWNERS`), and any file nobody listed: a root-level `sitecustomize.py` or a
module named like a library is imported by the head's render and by `pulumi up` (both put the
project folder first on `sys.path`), a committed `.venv/` is the interpreter the head renders
with and Pulumi runs, with its `.pth` files. Each program file is part of the safety envelope
(`dualstack.offline.envelope`), and `.github/CODEOWNERS` / `.gitlab/CODEOWNERS` own every path."""

OWNED_INERT = ("docs/CODEOWNERS",)
"""Paths under `INERT_PATHS` that still decide who judges: GitLab reads its CODEOWNERS from
the first of `CODEOWNERS`, `docs/CODEOWNERS`, `.gitlab/CODEOWNERS`."""

PRODUCTION = re.compile(r"^(prod|production)([-_.].*)?$")
"""Stack names deployed last: `prod`, `production`, `prod-eu`, `production_2`."""

NULL_COMMIT = "0" * 40
"""The `before` commit GitHub and GitLab report for the first push of a branch."""


class ChangesError(GitError):
    """Git cannot compare the two refs (unknown ref, not a repository, git missing)."""


@dataclass(frozen=True)
class StackChanges:
    """The answer for one comparison.

    `stacks`: touched stacks that exist at head, in deploy order. `removed`: touched stacks
    whose stack file is gone at head (a human decides on `pulumi stack rm`). `reason`: why,
    one line, for the job log.
    """

    stacks: tuple[str, ...]
    removed: tuple[str, ...] = ()
    reason: str = ""
    paths: tuple[str, ...] = field(default=(), repr=False)


def is_production(stack: str) -> bool:
    """True for the stacks deployed last (see `PRODUCTION`)."""
    return PRODUCTION.match(stack) is not None


def deploy_order(stacks: Iterable[str]) -> list[str]:
    """Unique stacks, non-production first, each group alphabetical: [staging, prod]."""
    return sorted(set(stacks), key=lambda stack: (is_production(stack), stack))


def _under(path: str, prefixes: Iterable[str]) -> bool:
    return any(
        path.startswith(prefix) if prefix.endswith("/") else path == prefix for prefix in prefixes
    )


def touches_program(path: str) -> bool:
    """True when `path` is part of what every stack runs: every path but a stack file
    (`Pulumi.<stack>.yaml`) and the inert ones (`INERT_PATHS`, less `OWNED_INERT`)."""
    if stack_of(path) is not None:
        return False
    return path in OWNED_INERT or not _under(path, INERT_PATHS)


def stacks_touched(paths: Iterable[str], stacks_at_head: Iterable[str]) -> StackChanges:
    """The stacks a set of changed paths touches.

    `paths`: repo-relative paths changed between base and head (old and new names of a
    rename). `stacks_at_head`: the stacks whose file exists at head.
    """
    paths = tuple(sorted(set(paths)))
    present = set(stacks_at_head)
    program = [path for path in paths if touches_program(path)]
    named = {stack for path in paths if (stack := stack_of(path)) is not None}
    if program:
        touched = present | named
        reason = f"the program changed ({', '.join(program[:3])}): every stack"
    else:
        touched = named
        reason = f"{len(named)} stack file(s) changed" if named else "no stack file changed"
    return StackChanges(
        stacks=tuple(deploy_order(touched & present)),
        removed=tuple(deploy_order(touched - present)),
        reason=reason,
        paths=paths,
    )


def _git(root: Path, *args: str) -> str:
    """`git()`, its GitError re-raised as ChangesError (the `ci` verbs' error type)."""
    try:
        return git(root, *args)
    except ChangesError:
        raise
    except GitError as exc:
        raise ChangesError(str(exc)) from None


def stacks_at(root: Path, ref: str) -> list[str]:
    """Stacks whose `Pulumi.<stack>.yaml` exists at the repo root at `ref`."""
    names = _git(root, "ls-tree", "--name-only", "-z", f"{ref}^{{tree}}").split("\0")
    return deploy_order(stack for name in names if (stack := stack_of(name)))


def changed_stacks(root: Path, base: str | None, head: str = "HEAD") -> StackChanges:
    """The stacks `head` changes relative to its merge base with `base`, in deploy order.

    `base` None, empty or the null commit (first push of a branch) means every stack: with
    nothing to compare, deploying every stack from git is the state git describes.
    Renames count as a deletion plus an addition. Raises ChangesError when git cannot
    resolve a ref (a shallow clone without the base: fetch it with depth 0).
    """
    present = stacks_at(root, head)
    if not base or base.strip("0") == "":
        return StackChanges(tuple(present), reason="no base commit to compare with: every stack")
    try:
        _git(root, "rev-parse", "--verify", "--quiet", f"{base}^{{commit}}")
    except ChangesError:
        raise ChangesError(
            f"base {base!r} is not a commit of this clone (shallow clone? fetch with depth 0)"
        ) from None
    out = _git(root, "diff", "--name-only", "--no-renames", "-z", f"{base}...{head}")
    return stacks_touched([path for path in out.split("\0") if path], present)


def tree_changes(root: Path, commit: str) -> dict[str, str]:
    """{path: git status letter} of every file the working tree at `root` changes against
    `commit`: committed, staged, unstaged (`M`, `A`, `D`, `T`, ...) and untracked but not
    ignored (`A`). Paths are relative to `root` (the folder holding `Pulumi.yaml`). A
    worktree of this repository inside the tree (`base-checkout/`, where the pipelines check
    the base out) is not part of it; any other nested repository is (`dir/`).

    Raises GitError when git cannot compare (e.g. `commit` is not in the repository).
    """
    found: dict[str, str] = {}
    out = git(root, "diff", "--name-status", "--no-renames", "--relative", "-z", commit)
    fields = [field for field in out.split("\0") if field]
    for status, path in zip(fields[::2], fields[1::2], strict=False):
        found[path] = status[:1]
    untracked = [
        p for p in git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0") if p
    ]
    worktrees = _worktrees(root) if any(path.endswith("/") for path in untracked) else set()
    for path in untracked:
        if path.endswith("/") and (root / path).resolve() in worktrees:
            continue
        found.setdefault(path, "A")
    return found


def _worktrees(root: Path) -> set[Path]:
    """The folders of the repository's worktrees (`git worktree list`)."""
    out = git(root, "worktree", "list", "--porcelain", "-z")
    return {
        Path(field.removeprefix("worktree ")).resolve()
        for field in out.split("\0")
        if field.startswith("worktree ")
    }
