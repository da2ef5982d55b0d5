"""The base's render, cached by (base commit, stack, protocol, environment).

A base commit's render never changes: its code and its stack file are fixed by the commit, and
the interpreter and the pulumi / pulumi-kubernetes / pydantic versions are part of the key. So
the base's judge (`dualstack ci judge --cache DIR`, always the base's own code) keeps the
objects it rendered in `DIR/<commit>-<stack>-p<protocol>-<env>.json` and, on the next preview
against the same base, skips the render: the expensive part of a cold judge. The preview
passes `DIR` = `<git common dir>/dualstack/judge-cache`, local to the clone; the pipelines'
`--head` path does not use it.
"""

from __future__ import annotations

import hashlib
import json
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

from dualstack.repo.atomic import write_file

KEYED_DISTRIBUTIONS = ("pulumi", "pulumi-kubernetes", "pydantic")
"""Distributions whose version changes what a render produces."""


def environment_key() -> str:
    """12 hex digits over the interpreter and `KEYED_DISTRIBUTIONS`' versions."""
    versions = []
    for name in KEYED_DISTRIBUTIONS:
        try:
            versions.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{name}=none")
    text = "|".join([sys.version, *versions])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def entry(cache: Path, commit: str, stack: str, protocol: int) -> Path:
    """The cache file of one base render."""
    return cache / f"{commit}-{stack}-p{protocol}-{environment_key()}.json"


def load(cache: Path, commit: str, stack: str, protocol: int) -> list[dict[str, Any]] | None:
    """The cached objects, or None when absent or unreadable (then the base renders)."""
    try:
        data = json.loads(entry(cache, commit, stack, protocol).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    objects = data.get("objects") if isinstance(data, dict) else None
    return objects if isinstance(objects, list) else None


def store(
    cache: Path, commit: str, stack: str, protocol: int, objects: list[dict[str, Any]]
) -> None:
    """Write the objects atomically (a rename); a cache that cannot be written is skipped."""
    try:
        cache.mkdir(parents=True, exist_ok=True)
        document = {"commit": commit, "stack": stack, "objects": objects}
        write_file(entry(cache, commit, stack, protocol), json.dumps(document))
    except OSError:
        return
