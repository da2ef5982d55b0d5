"""Node pools: labels and a taint on every node of one accelerator pool (NodePatch), as pure
functions; `components.resources.AcceleratorNodePool` registers them."""

from __future__ import annotations

from components.manifests import Manifest, manifest
from components.naming import pool_taint
from components.settings import PoolSettings

PATCH_FORCE = {"pulumi.com/patchForce": "true"}
"""Force a server-side apply patch over field-manager conflicts (Pulumi Kubernetes provider
docs, "Patch resources"). Only with `forcePatch`: `Node.spec.taints` is an atomic list, so a
forced patch replaces the node's whole taint list with the one the patch sends."""


def node_taints(pool: PoolSettings) -> list[dict[str, str]]:
    """The whole taint list the patch sends: the pool taint, then `extraTaints` in order."""
    return [pool_taint(pool.name), *(taint.as_taint() for taint in pool.extra_taints)]


def node_metadata(pool: PoolSettings, node: str) -> dict[str, object]:
    """`metadata` of one node's patch: name, labels, and `PATCH_FORCE` with `forcePatch`."""
    metadata: dict[str, object] = {"name": node, "labels": pool.node_labels}
    if pool.force_patch:
        metadata["annotations"] = dict(PATCH_FORCE)
    return metadata


def node_patch_manifests(name: str, pool: PoolSettings) -> list[Manifest]:
    """One NodePatch per node of the pool, named `<name>-<node>`: labels `pool=<name>` plus
    the pool's labels, and taints `pool=<name>:NoSchedule` plus `extraTaints`, so only pods
    that select and tolerate the pool run there. Not forced unless `forcePatch`: a conflict
    with `kubectl label`/`taint` then fails the update instead of wiping the other owner's
    fields."""
    return [
        manifest(
            f"{name}-{node}",
            "v1",
            "Node",
            node_metadata(pool, node),
            {"spec": {"taints": node_taints(pool)}},
            patch=True,
        )
        for node in pool.nodes
    ]
