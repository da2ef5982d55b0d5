"""Is the code running now byte for byte the base's? Then it may judge in-process.

The judge must be the base's code (`dualstack.offline.judge`). When every file of the
project's packages (`CODE_PACKAGES`) that this process imports from is identical to the base
commit's, and neither side has a file the other lacks, and the head's tree changes no other
program file either (`dualstack.repo.changes.touches_program`: this process may have the
head's folder on `sys.path`, `python -m dualstack` from it, where a root-level `yaml.py` or
`pulumi_policy.py` would shadow the library the judge imports), running the judge here IS
running the base's code, and the temporary worktree and second interpreter are not needed
(`make preview` on a fresh clone, and every test repository copied from this tree). Anything
else (a changed, added or removed file, an install that is not a plain copy of the sources)
means a worktree.

Identity is git's own: a file's blob id is `sha1("blob <size>\\0" + content)`, compared with
`git ls-tree -r <commit>`.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dualstack.repo.changes import touches_program, tree_changes
from dualstack.repo.git import GitError, git

CODE_PACKAGES = ("components", "dualstack", "policies", "precision_check")
"""The packages the judge imports: the program (it renders the base), the CLI, the pack and
the checker (the program ships its source)."""

SKIPPED_PARTS = frozenset({"__pycache__"})
SKIPPED_SUFFIXES = (".pyc", ".pyo")


def running_code_root() -> Path:
    """The folder holding the packages this process imports (`dualstack/..`)."""
    return Path(__file__).resolve().parents[2]


def blob_id(data: bytes) -> str:
    """git's object id of a file with content `data`."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _running_files(code_root: Path) -> dict[str, str] | None:
    """{path relative to `code_root`: blob id} of the code packages; None when a package
    folder is missing (an install that does not mirror the repository)."""
    found: dict[str, str] = {}
    for package in CODE_PACKAGES:
        folder = code_root / package
        if not folder.is_dir():
            return None
        for path in folder.rglob("*"):
            relative = path.relative_to(code_root)
            if (
                path.is_dir()
                or SKIPPED_PARTS & set(relative.parts)
                or path.suffix in SKIPPED_SUFFIXES
            ):
                continue
            found[relative.as_posix()] = blob_id(path.read_bytes())
    return found


def _base_files(root: Path, commit: str) -> dict[str, str]:
    """{path relative to `root`: blob id} of the code packages at `commit`."""
    out = git(root, "ls-tree", "-r", "-z", commit, "--", *CODE_PACKAGES)
    found = {}
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, _, path = entry.partition("\t")
        _mode, kind, object_id = meta.split()
        if kind == "blob":
            found[path] = object_id
    return found


def require_own_code(root: Path) -> None:
    """Raise JudgeError unless the code running now is the code of the checkout at `root`
    (the folder holding `Pulumi.yaml`): the same folder, or its code packages byte for byte.
    The base's judge must be the base's code, never an installed copy it fell back on because
    the base's tree has none (e.g. a base before the code existed) or holds another version."""
    from dualstack.offline.protocol import JudgeError

    running = running_code_root()
    if running == root.resolve():
        return
    try:
        own = _running_files(root)
        here = _running_files(running)
    except OSError as error:
        raise JudgeError(
            f"the judge cannot read the code at {root}: {error} (fail closed)"
        ) from None
    if own is None:
        raise JudgeError(
            f"the judge at {root} runs the code at {running}, not the base's own: the base "
            "has no code to judge with (fail closed)"
        )
    if here != own:
        raise JudgeError(
            f"the judge at {root} runs the code at {running}, which differs from the base's "
            f"own: run the base checkout's own interpreter (fail closed)"
        )


def running_code_is(root: Path, commit: str) -> bool:
    """True when the packages this process runs are exactly those of `commit` in the
    repository at `root` (the folder holding `Pulumi.yaml`) and the tree at `root` changes no
    program file against `commit` (only stack files, docs and tests); False on any difference,
    or when git or the files cannot be read."""
    try:
        base = _base_files(root, commit)
        running = _running_files(running_code_root())
        changed = tree_changes(root, commit)
    except (GitError, OSError, ValueError):
        return False
    if any(touches_program(path, status) for path, status in changed.items()):
        return False
    return running is not None and running == base
