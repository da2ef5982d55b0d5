"""The Kubernetes objects of the program as plain data: what a component registers with the
engine (`components.resources`) and what the offline render dumps without it
(`dualstack.offline.direct`), built once by the spec builders beside each component.

Like a cdk8s construct's `toJson()`: a `Manifest` is the object in its final form, so neither
side converts it. Its body is what the Kubernetes provider receives as inputs: `apiVersion`,
`kind`, `metadata`, then the kind's own fields, camelCase, no `None` values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from components.resource_names import kubernetes_type


@dataclass(frozen=True)
class Manifest:
    """One object the program registers: its logical name (URNs, `--target`: see
    `components.resource_names`), its body, and whether it is a server-side apply patch of an
    object the program does not own (`NodePatch`: type token `...:NodePatch`, kind `Node`)."""

    name: str
    body: dict[str, Any]
    patch: bool = False

    @property
    def api_version(self) -> str:
        """The body's `apiVersion`."""
        return self.body["apiVersion"]

    @property
    def kind(self) -> str:
        """The body's `kind` (`Node` for a NodePatch)."""
        return self.body["kind"]

    @property
    def type_(self) -> str:
        """The Pulumi type token: `kubernetes:apps/v1:Deployment`, `...:core/v1:NodePatch`."""
        return kubernetes_type(self.api_version, self.kind + ("Patch" if self.patch else ""))


def manifest(
    name: str,
    api_version: str,
    kind: str,
    metadata: Mapping[str, Any],
    fields: Mapping[str, Any],
    patch: bool = False,
) -> Manifest:
    """The Manifest named `name` of the object {apiVersion, kind, metadata, **fields}."""
    body = {"apiVersion": api_version, "kind": kind, "metadata": dict(metadata), **fields}
    return Manifest(name, body, patch)


def object_metadata(name: str, namespace: str, labels: Mapping[str, str]) -> dict[str, Any]:
    """`metadata` of a namespaced object: {name, namespace, labels} (a fresh dict each call)."""
    return {"name": name, "namespace": namespace, "labels": dict(labels)}
