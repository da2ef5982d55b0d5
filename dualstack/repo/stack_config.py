"""Locating the GitOps repo and loading a stack's config with command-line overrides."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from dualstack.errors import UsageError

# components.settings (pydantic) is imported where it is used, not here: `find_root` must stay
# cheap, since `dualstack preview` starts the base's judge before loading anything heavy.


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above `start` (default: cwd) holding `Pulumi.yaml`.

    Raises UsageError when there is none.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise UsageError(f"no Pulumi.yaml in {here} or above; run inside the repo or pass --cwd")


CODE_BESIDE = ("components", "dualstack", "policies", "precision_check")
"""The packages a base's judge runs from beside its `Pulumi.yaml`
(`dualstack.offline.code_identity.CODE_PACKAGES`)."""


def require_code_beside(root: Path) -> None:
    """Before a judged command (`preview`, `promote`) starts a base: a project in a subfolder
    of its git repository (`-C examples/fleet`) whose folder holds no code cannot be judged
    (the base's judge runs the code beside the stack file, docs/trust-model.md). Raises
    UsageError naming the way out; a project at its repository's root (or outside git, or
    with its code beside it) passes."""
    from dualstack.repo.git import git_or_none

    top = git_or_none(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() == root.resolve():
        return
    if all((root / package).is_dir() for package in CODE_BESIDE):
        return
    where = root.resolve().relative_to(Path(top).resolve()).as_posix()
    example = (
        "`make example` previews this example from a scratch repository holding the code; "
        if where == "examples/fleet"
        else ""
    )
    raise UsageError(
        f"the base's judge runs the code beside the stack's Pulumi.yaml, but {where} holds "
        f"stack files only (the code is at the repository's root): {example}a stack of your "
        "own needs a repository of its own with the code beside its Pulumi.yaml "
        "(docs/trust-model.md); `render` works from here"
    )


_PATH_INTEGER = re.compile(r"-?(0|[1-9][0-9]{0,18})")


def _value(text: str, nested: bool) -> Any:
    """A `--set` value: JSON for lists and mappings (`["a","b"]`), otherwise as `pulumi config
    set` stores it: a string at the top level; under a path (`nested`) `true` / `false` a
    boolean and decimal digits an integer, everything else a string
    (pulumi.com/docs/iac/cli/commands/pulumi_config_set)."""
    from components.settings.scalars import shown

    if text[:1] and text[0] in "[{":
        try:
            return json.loads(text)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deep"
            raise UsageError(f"--set value {shown(text)} is not valid JSON: {why}") from None
    if nested and text in ("true", "false"):
        return text == "true"
    if nested and _PATH_INTEGER.fullmatch(text):
        return int(text)
    return text


def apply_overrides(config: dict[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Config with `key=value` overrides applied; `a.b=v` sets one field of a structured key.

    Like `pulumi config set --path`: a nested assignment changes that field only, and the
    settings model merges the rest onto its defaults. Scalars are stored as `pulumi config
    set` stores them (see `_value`); values starting with `[` or `{` are JSON
    (`ascend.pool.nodes=["a-1"]`).
    Raises UsageError on an assignment without `=`, an empty key or malformed JSON.
    """
    from components.settings import PROJECT
    from components.settings.scalars import shown

    result = copy.deepcopy(config)
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {shown(assignment)}: expected KEY=VALUE, e.g. ascendWeight=20")
        top, *path = key.strip().split(".")
        if not all([top, *path]):
            raise UsageError(
                f"--set {shown(assignment)}: key {shown(key.strip())} has an empty part; "
                "expected KEY or KEY.FIELD, e.g. capacity.totalReplicas=6"
            )
        full = f"{PROJECT}:{top}"
        value = _value(text, nested=bool(path))
        if not path:
            result[full] = value
            continue
        node = result.setdefault(full, {})
        if isinstance(node, str) and node[:1] == "{":
            try:
                node = result[full] = json.loads(node)
            except json.JSONDecodeError:
                node = None
        if not isinstance(node, dict):
            raise UsageError(f"--set {shown(assignment)}: {top} is not a structured key")
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise UsageError(f"--set {shown(assignment)}: {part} is not a structured key")
        node[path[-1]] = value
    return result


def load_stack_config(root: Path, stack: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """`Pulumi.<stack>.yaml`'s config with `--set` overrides applied."""
    from dualstack.repo.stackfile import read_config

    return apply_overrides(read_config(root, stack), overrides)
