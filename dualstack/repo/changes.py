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
from dualstack.repo.stack_names import stack_of

__all__ = ["stack_of"]  # the stack-file name rule is `dualstack.repo.stack_names`'s

LINK = "L"
"""Appended to a git status letter (`AL`, `TL`, `DL`) when the path is a symlink on either
side (git mode 120000): a symlink makes one name read another file's bytes, so it is the
program whatever its name (`touches_program`)."""

_LINK_MODE = "120000"

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


def is_link(status: str) -> bool:
    """True for a status of `tree_changes` / `raw_changes` marking a symlink (`LINK`)."""
    return status[1:] == LINK


def touches_program(path: str, status: str = "") -> bool:
    """True when `path` is part of what every stack runs: any symlink (`status` marked
    `LINK`), and every other path but a stack file (`Pulumi.<stack>.yaml`) and the inert ones
    (`INERT_PATHS`, less `OWNED_INERT`)."""
    if is_link(status):
        return True
    if stack_of(path) is not None:
        return False
    return path in OWNED_INERT or not _under(path, INERT_PATHS)


def stacks_touched(
    paths: Iterable[str], stacks_at_head: Iterable[str], links: Iterable[str] = ()
) -> StackChanges:
    """The stacks a set of changed paths touches.

    `paths`: repo-relative paths changed between base and head (old and new names of a
    rename). `stacks_at_head`: the stacks whose file exists at head. `links`: those of
    `paths` that are a symlink on either side (the program, whatever their name).
    """
    paths = tuple(sorted(set(paths)))
    present = set(stacks_at_head)
    linked = set(links)
    program = [path for path in paths if path in linked or touches_program(path)]
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
    out = _git(root, "diff", "--raw", "--no-renames", "-z", f"{base}...{head}")
    changes = raw_changes(out)
    links = [path for path, status in changes.items() if is_link(status)]
    return stacks_touched(changes, present, links)


def raw_changes(out: str) -> dict[str, str]:
    """{path: status} of `git diff --raw -z` output: git's status letter, `LINK` appended when
    either side's mode is 120000 (git's own view of a symlink, not the file system's)."""
    fields = [field for field in out.split("\0") if field]
    found = {}
    for meta, path in zip(fields[::2], fields[1::2], strict=False):
        old_mode, new_mode, *_shas, status = meta.lstrip(":").split(" ")
        link = _LINK_MODE in (old_mode, new_mode)
        found[path] = status[:1] + (LINK if link else "")
    return found


def tree_changes(root: Path, commit: str) -> dict[str, str]:
    """{path: git status letter} of every file the working tree at `root` changes against
    `commit`: committed, staged, unstaged (`M`, `A`, `D`, `T`, ...) and untracked but not
    ignored (`A`); `LINK` appended for a symlink on either side (`raw_changes`). Paths are
    relative to `root` (the folder holding `Pulumi.yaml`). A worktree of this repository
    inside the tree (`base-checkout/`, where the pipelines check the base out) is not part of
    it; any other nested repository is (`dir/`).

    Raises GitError when git cannot compare (e.g. `commit` is not in the repository).
    """
    out = git(root, "diff", "--raw", "--no-renames", "--relative", "-z", commit)
    found = raw_changes(out)
    untracked = [
        p for p in git(root, "ls-files", "--others", "--exclude-standard", "-z").split("\0") if p
    ]
    worktrees = _worktrees(root) if any(path.endswith("/") for path in untracked) else set()
    for path in untracked:
        if path.endswith("/") and (root / path).resolve() in worktrees:
            continue
        found.setdefault(path, "A" + (LINK if (root / path).is_symlink() else ""))
    return found


def _worktrees(root: Path) -> set[Path]:
    """The folders of the repository's worktrees (`git worktree list`)."""
    out = git(root, "worktree", "list", "--porcelain", "-z")
    return {
        Path(field.removeprefix("worktree ")).resolve()
        for field in out.split("\0")
        if field.startswith("worktree ")
    }
