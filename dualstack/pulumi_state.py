"""Read a deployed stack's state (`pulumi stack export`) for the emergency rollback.

`pulumi up --target URN` needs the URN of the deployed VirtualService. It is read from the
state rather than rebuilt from names, because the deployed type token (apiVersion) and parent
chain are what count. Export format (pulumi.com/docs, `pulumi stack export`): `{"version": 3,
"deployment": {"resources": [{"urn", "type", "custom", "delete"?, ...}]}}`; resources marked
`delete` are pending deletions and are ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any


class StateError(ValueError):
    """The export is malformed, or holds no (or several) resources of the kind asked for."""


def resources(export: Any) -> list[dict[str, Any]]:
    """The live resources of an export (pending deletions dropped). Raises StateError."""
    try:
        listed = export["deployment"].get("resources") or []
    except (TypeError, KeyError, AttributeError):
        raise StateError("not a `pulumi stack export` document (no `deployment`)") from None
    if not isinstance(listed, list):
        raise StateError("`deployment.resources` is not a list")
    return [r for r in listed if isinstance(r, dict) and not r.get("delete")]


def kubernetes_urn(export: Any, kind: str) -> str:
    """The URN of the one Kubernetes resource of `kind` (any apiVersion) in the export.

    E.g. kind "VirtualService" matches type `kubernetes:networking.istio.io/v1:VirtualService`.
    Raises StateError when there is none (never deployed?) or more than one.
    """
    pattern = re.compile(rf"^kubernetes:[^:]+:{re.escape(kind)}$")
    urns = sorted(r["urn"] for r in resources(export) if pattern.match(str(r.get("type", ""))))
    if not urns:
        raise StateError(f"no {kind} in the stack's state: was the stack ever deployed?")
    if len(urns) > 1:
        raise StateError(f"{len(urns)} resources of kind {kind}: {', '.join(urns)}")
    return urns[0]


def parse_export(text: str) -> Any:
    """The JSON document `pulumi stack export` printed. Raises StateError on bad JSON."""
    try:
        return json.loads(text)
    except ValueError as exc:
        raise StateError(f"`pulumi stack export` output is not JSON: {exc}") from None
