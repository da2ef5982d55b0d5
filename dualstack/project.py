"""Locating the GitOps repo and loading a stack's config with command-line overrides."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from components.settings import PROJECT
from dualstack.stackfile import read_config


class UsageError(ValueError):
    """A command-line value is malformed (e.g. `--set` without `=`)."""


def find_root(start: Path | None = None) -> Path:
    """The nearest folder at or above `start` (default: cwd) holding `Pulumi.yaml`.

    Raises UsageError when there is none.
    """
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "Pulumi.yaml").is_file():
            return folder
    raise UsageError(f"no Pulumi.yaml in {here} or above; run inside the repo or pass --cwd")


def apply_overrides(config: dict[str, Any], assignments: Iterable[str]) -> dict[str, Any]:
    """Config with `key=value` overrides applied; `a.b=v` sets a field of a structured key.

    Values stay strings, as `pulumi config set` stores them; the settings model converts them.
    Raises UsageError on an assignment without `=` or with an empty key.
    """
    result = copy.deepcopy(config)
    for assignment in assignments:
        key, sep, value = assignment.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"--set {assignment!r}: expected KEY=VALUE, e.g. ascendWeight=20")
        top, *path = key.strip().split(".")
        full = f"{PROJECT}:{top}"
        if not path:
            result[full] = value
            continue
        node = result.setdefault(full, {})
        if not isinstance(node, dict):
            raise UsageError(f"--set {assignment!r}: {top} is not a structured key")
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return result


def load_stack_config(root: Path, stack: str, overrides: Iterable[str] = ()) -> dict[str, Any]:
    """`Pulumi.<stack>.yaml`'s config with `--set` overrides applied."""
    return apply_overrides(read_config(root, stack), overrides)
