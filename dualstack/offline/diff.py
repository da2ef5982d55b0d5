"""Object-level and line-level differences between two renders of a stack."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from dualstack.offline.render import sort_key, to_yaml

Change = Literal["create", "update", "delete", "same"]
SYMBOL = {"create": "+", "update": "~", "delete": "-", "same": " "}


@dataclass(frozen=True)
class ObjectChange:
    """One object's fate between base and head: (kind, namespace, name) and the change."""

    key: tuple[str, str, str]
    change: Change

    def describe(self) -> str:
        """`~ VirtualService inference/inference-vs`."""
        kind, namespace, name = self.key
        where = f"{namespace}/{name}" if namespace else name
        return f"{SYMBOL[self.change]} {kind} {where}"


def _index(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    return {sort_key(obj): obj for obj in objects}


def object_changes(
    base: Sequence[Mapping[str, Any]], head: Sequence[Mapping[str, Any]]
) -> list[ObjectChange]:
    """Per-object changes, sorted by (kind, namespace, name)."""
    old, new = _index(base), _index(head)
    changes = []
    for key in sorted(old.keys() | new.keys()):
        if key not in old:
            change: Change = "create"
        elif key not in new:
            change = "delete"
        else:
            change = "same" if old[key] == new[key] else "update"
        changes.append(ObjectChange(key, change))
    return changes


def unified_diff(
    base: Sequence[Mapping[str, Any]],
    head: Sequence[Mapping[str, Any]],
    base_label: str = "base",
    head_label: str = "head",
    context: int = 3,
) -> str:
    """A unified diff of the two renders' YAML, one hunk group per changed object."""
    old, new = _index(base), _index(head)
    parts = []
    for key in sorted(old.keys() | new.keys()):
        if old.get(key) == new.get(key):
            continue
        path = "/".join(part for part in key if part)
        before = to_yaml([old[key]]).splitlines(keepends=True) if key in old else []
        after = to_yaml([new[key]]).splitlines(keepends=True) if key in new else []
        parts.extend(
            difflib.unified_diff(
                before, after, f"{base_label}/{path}", f"{head_label}/{path}", n=context
            )
        )
    return "".join(parts)
