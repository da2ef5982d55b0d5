"""Node pools: labels and a taint on every node of one accelerator pool (NodePatch)."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from components.naming import pool_taint
from components.settings import PoolSettings

PATCH_FORCE = {"pulumi.com/patchForce": "true"}
"""Take over labels first set by `kubectl label` (server-side apply field-manager conflict)."""


class AcceleratorNodePool(pulumi.ComponentResource):
    """Labels `pool=<name>` plus the pool's labels, and taints `pool=<name>:NoSchedule`, on
    each node of the pool, so only pods that select and tolerate the pool run there."""

    node_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, pool: PoolSettings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("dualstack:index:AcceleratorNodePool", name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.patches = [
            k8s.core.v1.NodePatch(
                f"{name}-{node}",
                metadata={"name": node, "labels": pool.node_labels, "annotations": PATCH_FORCE},
                spec={"taints": [pool_taint(pool.name)]},
                opts=child,
            )
            for node in pool.nodes
        ]
        self.node_names = pulumi.Output.from_input(list(pool.nodes))
        self.register_outputs({"node_names": self.node_names})
