"""Node pools: labels and a taint on every node of one accelerator pool (NodePatch)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
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


class AcceleratorNodePool(pulumi.ComponentResource):
    """Labels `pool=<name>` plus the pool's labels, and taints `pool=<name>:NoSchedule` plus
    `extraTaints`, on each node of the pool, so only pods that select and tolerate the pool
    run there. Not forced unless `forcePatch`: a conflict with `kubectl label`/`taint` then
    fails the update instead of wiping the other owner's fields."""

    node_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, pool: PoolSettings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.NODE_POOL_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.patches = [
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata=node_metadata(pool, node),
                spec={"taints": node_taints(pool)},
                opts=child,
            )
            for node in pool.nodes
        ]
        self.node_names = pulumi.Output.from_input(list(pool.nodes))
        self.register_outputs({"node_names": self.node_names})
