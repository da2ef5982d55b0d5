"""The untrusted job's render of a head that changes the program, read as untrusted input.

The pull request's own job renders the head with the head's code (`dualstack render --stack
S`, multi-document YAML) and uploads it; the trusted judge reads it here, strictly and
bounded, and never runs anything of the head. What the file claims is only a claim: the
program change itself is an envelope change the owners must approve
(`dualstack.offline.envelope`); these objects let the pack judge what the head says it deploys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

MAX_BYTES = 16 * 1024 * 1024
"""Largest file accepted (bytes); a stack renders to well under 1 MiB."""

MAX_OBJECTS = 5000
"""Most objects accepted in one file."""

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class HeadObjectsError(ValueError):
    """The untrusted render is not a bounded list of Kubernetes objects (one line why)."""


def read_head_objects(path: Path) -> list[dict[str, Any]]:
    """The objects in `path`: a regular file of at most `MAX_BYTES`, UTF-8 multi-document
    YAML without anchors, aliases or tags, at most `MAX_OBJECTS` documents, each a mapping
    with string `apiVersion`, `kind` and `metadata.name`.

    Raises HeadObjectsError naming the first cause.
    """
    if path.is_symlink() or not path.is_file():
        raise HeadObjectsError(f"{path}: not a regular file (the untrusted render is missing)")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise HeadObjectsError(f"{path}: {size} bytes, over the {MAX_BYTES} accepted")
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise HeadObjectsError(f"{path}: not UTF-8 text") from None
    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise HeadObjectsError(f"{path}: YAML anchors and aliases are refused")
            if isinstance(event, yaml.NodeEvent) and getattr(event, "tag", None) is not None:
                raise HeadObjectsError(f"{path}: YAML tag {event.tag} is refused")
        docs = [doc for doc in yaml.load_all(text, Loader=_Loader) if doc is not None]
    except yaml.YAMLError as exc:
        raise HeadObjectsError(f"{path}: not YAML ({str(exc).splitlines()[0]})") from None
    if len(docs) > MAX_OBJECTS:
        raise HeadObjectsError(f"{path}: {len(docs)} objects, over the {MAX_OBJECTS} accepted")
    for index, doc in enumerate(docs):
        _check_object(path, index, doc)
    return docs


def _check_object(path: Path, index: int, doc: Any) -> None:
    where = f"{path}: document {index + 1}"
    if not isinstance(doc, dict):
        raise HeadObjectsError(f"{where} is not a mapping")
    metadata = doc.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    facts = (
        ("apiVersion", doc.get("apiVersion")),
        ("kind", doc.get("kind")),
        ("metadata.name", name),
    )
    for key, value in facts:
        if not isinstance(value, str) or not value:
            raise HeadObjectsError(f"{where} has no string {key}")
