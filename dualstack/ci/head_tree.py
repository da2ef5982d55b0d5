"""The head as git objects, for the trusted judge job: the tree it judges.

The trusted job fetches the head's commit into the base's clone and never checks it out where
anything runs, and judges git's merge of it into the base (`dualstack ci merge-result`,
`dualstack.repo.merge_result`): what the merge would deploy. `classify` compares
two trees: a **step** changes only stack files (`Pulumi.<stack>.yaml`, regular files) and
inert paths (`dualstack.repo.changes.INERT_PATHS`); anything else, a symlink or a mode change
included, is a **program** change. `build_head_tree` lays out the folder the judge reads:
- step: the BASE's files (a detached worktree of the base) with the head's stack files
  written over them from their blobs: the base's program renders the head's stack config, so
  no byte of the head runs;
- program: a worktree of the merge result with symlinks checked out as plain files, read as
  data only (its objects come from the untrusted job, `dualstack.ci.head_objects`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dualstack.repo.atomic import write_file
from dualstack.repo.changes import ChangesError, stack_of, touches_program
from dualstack.repo.git import GitError, git

REGULAR_MODES = ("100644", "100755")
"""Git modes of a regular file; a stack file of any other mode (symlink 120000, submodule
160000) is a program change."""

ABSENT_MODE = "000000"

Kind = Literal["step", "program"]


@dataclass(frozen=True)
class TreeChange:
    """One path `git diff --raw` lists: modes and blob ids before and after, git's letter."""

    path: str
    old_mode: str
    new_mode: str
    new_blob: str
    status: str


@dataclass(frozen=True)
class HeadChanges:
    """`kind` of the change; `stack_files`: the stack-file changes a step carries;
    `program`: the paths that make it a program change (empty for a step)."""

    kind: Kind
    stack_files: tuple[TreeChange, ...]
    program: tuple[str, ...]


def _git(root: Path, *args: str) -> str:
    try:
        return git(root, *args)
    except GitError as exc:
        raise ChangesError(str(exc)) from None


def tree_changes_between(root: Path, base: str, head: str) -> list[TreeChange]:
    """Every path whose entry differs between the trees of `base` and `head` (no renames)."""
    out = _git(root, "diff", "--raw", "--no-renames", "--no-abbrev", "-z", base, head, "--")
    fields = out.split("\0")
    changes = []
    for meta, path in zip(fields[0::2], fields[1::2], strict=False):
        if not meta.startswith(":"):
            continue
        old_mode, new_mode, _old_blob, new_blob, status = meta[1:].split()
        changes.append(TreeChange(path, old_mode, new_mode, new_blob, status[:1]))
    return changes


def _is_stack_file(change: TreeChange) -> bool:
    modes_ok = all(
        mode in (*REGULAR_MODES, ABSENT_MODE) for mode in (change.old_mode, change.new_mode)
    )
    return stack_of(change.path) is not None and modes_ok


def classify(root: Path, base: str, head: str) -> HeadChanges:
    """A step (stack files and inert paths only) or a program change (see the module doc)."""
    changes = tree_changes_between(root, base, head)
    stack_files = tuple(change for change in changes if _is_stack_file(change))
    program = tuple(
        change.path
        for change in changes
        if change not in stack_files and (touches_program(change.path) or stack_of(change.path))
    )
    kind: Kind = "program" if program else "step"
    return HeadChanges(kind, stack_files if kind == "step" else (), program)


def build_head_tree(
    root: Path, base: str, head: str, output: Path, venv: Path | None = None
) -> HeadChanges:
    """Lay out the tree the judge reads as the head at `output` (absent or empty), a worktree
    of `root`'s repository (see the module doc). Returns the classification. For a step,
    `venv` (the base's virtualenv) is linked as `output/.venv`, the interpreter
    `Pulumi.yaml` names, and kept out of git's view (`info/exclude`): it is the base's.

    Raises ChangesError when git cannot compare or check out the commits.
    """
    found = classify(root, base, head)
    if found.kind == "program":
        _git(
            root,
            "-c",
            "core.symlinks=false",
            "worktree",
            "add",
            "-q",
            "--detach",
            str(output),
            head,
        )
        return found
    _git(root, "worktree", "add", "-q", "--detach", str(output), base)
    for change in found.stack_files:
        target = output / change.path
        if change.new_mode == ABSENT_MODE:
            target.unlink(missing_ok=True)
            continue
        blob = _git_bytes(root, change.new_blob)
        write_file(target, blob)
    if venv is not None:
        (output / ".venv").symlink_to(venv, target_is_directory=True)
        exclude = Path(_git(output, "rev-parse", "--git-path", "info/exclude").strip())
        exclude = exclude if exclude.is_absolute() else output / exclude
        exclude.parent.mkdir(parents=True, exist_ok=True)
        known = exclude.read_text(encoding="utf-8").splitlines() if exclude.exists() else []
        if "/.venv" not in known:
            write_file(exclude, "".join(f"{line}\n" for line in [*known, "/.venv"]))
    return found


def _git_bytes(root: Path, blob: str) -> bytes:
    """The bytes of blob `blob` (stack files are text, so the text runner suffices)."""
    return _git(root, "cat-file", "blob", blob).encode("utf-8")
