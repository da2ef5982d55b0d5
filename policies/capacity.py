"""Capacity policies: an emergency rollback must land on a pool sized for all traffic, and
every pool must hold the pods its workloads run at the peak of a rollout.

`rollback-capacity`. The failure this guards against (REFERENCE.md, the seed article's
errors; a known failure of progressive-delivery controllers): NVIDIA is scaled down while
traffic moves, then a rollback to 0% sends everything to a pool sized for less. So while the
Ascend weight is below 100, the NVIDIA backend keeps `totalReplicas` pods (the count that serves
100% of traffic), and the Ascend backend has enough pods for its share:

    ascend_replicas * ascendCapacityRatio >= totalReplicas * weight / 100

The weight is where traffic really goes (`policies.traffic_share`): NVIDIA may shrink only when
every route surely sends everything to Ascend pods, and each Ascend workload is sized for the
largest share any route sends it.

`pool-capacity`. Replica counts are only numbers until the scheduler places them: a pod asking
for an accelerator its pool no longer has stays Pending (and a rolling update with
`maxUnavailable: 0` then never finishes). So for each pool, every pod-bearing workload taking
its accelerator counts at its peak (`policies.pod_counts`):

    sum(peak pods x accelerators per pod) <= nodes x acceleratorsPerNode

A Deployment surges only when its pod template changes. The policy sees only the new objects,
so the deployed templates come in as policy config `previousPodTemplates` (their digests, from
the base's objects); a Deployment whose template matches only scales and counts no surge. That
keeps a rollback (the weight, hence the replicas, moving back) possible on a shrunk pool.

Only the pool's nodes offer its extended resource (`acceleratorPools`), so a workload counts by
the accelerator it requests, pinned or not (`accelerator-placement` demands the pinning).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.common import (
    SHARE_SCHEMAS,
    SUBSET_SCHEMAS,
    ConfigError,
    as_int,
    config_errors_are_violations,
    config_value,
    mapping,
    path,
)
from policies.members import SERVICES_SCHEMA, per_service
from policies.placement import DEFAULT_ACCELERATOR_POOLS, accelerator_pools
from policies.pod_counts import (
    PodCount,
    PodCountError,
    accelerators_per_pod,
    pack,
    peak_pods,
    template_hash,
)
from policies.stack_view import Item, StackView, replicas
from policies.traffic_share import ascend_shares, nvidia_backend, percent

DEFAULT_TOTAL_REPLICAS = 4
"""NVIDIA pods that serve 100% of traffic (the article's 4); `capacity.totalReplicas`."""
DEFAULT_ASCEND_CAPACITY_RATIO = 1.0
"""Throughput of one Ascend pod relative to one NVIDIA pod; `capacity.ascendCapacityRatio`."""
DEFAULT_ACCELERATORS_PER_NODE = 8
"""Devices per node when a `poolSizes` entry has no `acceleratorsPerNode` (the settings')."""
DEFAULT_POOL_SIZES = {
    "nvidia": {"nodes": 3, "acceleratorsPerNode": DEFAULT_ACCELERATORS_PER_NODE},
    "ascend": {"nodes": 2, "acceleratorsPerNode": DEFAULT_ACCELERATORS_PER_NODE},
}
"""Pool name -> size, as in `components/settings/model.py`'s defaults (nvidia-01..03,
ascend-01..02)."""


def ascend_pods_needed(total_replicas: int, weight: int, ratio: float) -> int:
    """Fewest Ascend pods that serve `weight` % of the traffic `total_replicas` NVIDIA pods serve.

    `ceil(total * weight / 100 / ratio)`, rounded first so float noise cannot add a pod.
    """
    return math.ceil(round(total_replicas * weight / 100 / ratio, 9))


def _config(args: StackValidationArgs) -> tuple[int, float]:
    config = args.get_config()
    raw_total = config_value(config, "totalReplicas", DEFAULT_TOTAL_REPLICAS)
    total = as_int(raw_total)
    if total is None or total < 1:
        raise ConfigError(f"totalReplicas = {raw_total!r} is not a positive integer")
    ratio = config_value(config, "ascendCapacityRatio", DEFAULT_ASCEND_CAPACITY_RATIO)
    if isinstance(ratio, bool) or not isinstance(ratio, int | float) or not ratio > 0:
        raise ConfigError(f"ascendCapacityRatio = {ratio!r} is not a positive number")
    return total, float(ratio)


def _replicas_or_report(workload: Item, report_violation: ReportViolation) -> int | None:
    count = replicas(workload)
    if count is None:
        report_violation(
            f"{workload.label} has replicas {path(workload.props, 'spec', 'replicas')!r}, "
            "not an integer",
            workload.urn,
        )
    return count


def _rollback_capacity(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """While some route may send traffic elsewhere than Ascend (the share it surely sends to
    Ascend pods is below 100), the NVIDIA backend has `totalReplicas` pods; each Ascend
    workload a route reaches has pods for the largest share any route sends it, at
    `ascendCapacityRatio`. Shares are where traffic really goes (`policies.traffic_share`); a
    destination reaching no known pod is reported (fail closed)."""
    total, ratio = _config(args)
    config = args.get_config()
    view = StackView.of(args.resources)
    shares = ascend_shares(view, config)
    if not shares.routes:
        args.not_applicable("no VirtualService or HTTPRoute routes traffic")
    for message, urn in shares.problems:
        report_violation(f"cannot check the capacity: {message}", urn)
    least = shares.least
    if least < 100:
        nvidia, why = nvidia_backend(shares, config)
        if nvidia is None:
            report_violation(
                f"cannot check the rollback capacity while Ascend takes {percent(least)}: {why}",
                None,
            )
        elif (count := _replicas_or_report(nvidia, report_violation)) is not None and (
            count < total
        ):
            report_violation(
                f"{nvidia.label} has {count} replicas while Ascend takes {percent(least)}: "
                f"NVIDIA must keep totalReplicas={total} pods (all traffic) until the weight is "
                f"100, so a rollback to 0% lands on a full pool; keep {total} replicas",
                nvidia.urn,
            )
    for ascend, share in shares.ascend_workloads():
        needed = ascend_pods_needed(total, share, ratio)
        if (count := _replicas_or_report(ascend, report_violation)) is not None and (
            count < needed
        ):
            report_violation(
                f"{ascend.label} has {count} replicas for {percent(share)} of traffic: at "
                f"ascendCapacityRatio={ratio:g} its share of totalReplicas={total} needs at "
                f"least {needed}; raise its replicas or lower the weight",
                ascend.urn,
            )


rollback_capacity_validator = per_service(config_errors_are_violations(_rollback_capacity))
"""`_rollback_capacity` wrapped by `per_service` and `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


@dataclass(frozen=True)
class PoolSize:
    """One accelerator pool as policy config `poolSizes` describes it."""

    nodes: int
    accelerators_per_node: int

    @property
    def supply(self) -> int:
        """Accelerators the pool offers: nodes x acceleratorsPerNode."""
        return self.nodes * self.accelerators_per_node


def pool_sizes(config: Mapping[str, Any], pools: Iterable[str]) -> dict[str, PoolSize]:
    """`poolSizes` (default `DEFAULT_POOL_SIZES`) for each of `pools`.

    An entry without `acceleratorsPerNode` gets `DEFAULT_ACCELERATORS_PER_NODE` (the SDK applies
    no schema defaults). Raises ConfigError naming the key when a pool has no entry or an entry
    has no whole `nodes` >= 0 or no whole `acceleratorsPerNode` >= 1.
    """
    raw = config_value(config, "poolSizes", DEFAULT_POOL_SIZES)
    entries = mapping(raw)
    sizes = {}
    for pool in sorted(set(pools)):
        entry = entries.get(pool)
        if not isinstance(entry, Mapping):
            raise ConfigError(
                f"poolSizes has no entry for pool {pool!r} ({raw!r}); give its size, e.g. "
                f'{{"{pool}": {{"nodes": 2, "acceleratorsPerNode": 8}}}}'
            )
        nodes = as_int(entry.get("nodes"))
        if nodes is None or nodes < 0:
            raise ConfigError(
                f"poolSizes.{pool}.nodes = {entry.get('nodes')!r} is not a node count >= 0"
            )
        raw_per_node = config_value(entry, "acceleratorsPerNode", DEFAULT_ACCELERATORS_PER_NODE)
        per_node = as_int(raw_per_node)
        if per_node is None or per_node < 1:
            raise ConfigError(
                f"poolSizes.{pool}.acceleratorsPerNode = {raw_per_node!r} is not an integer >= 1"
            )
        sizes[pool] = PoolSize(nodes, per_node)
    return sizes


SHA256_HEX = re.compile(r"[0-9a-f]{64}")


def previous_pod_templates(config: Mapping[str, Any]) -> dict[str, str] | None:
    """Config `previousPodTemplates` ({Deployment name: sha256 hex of its deployed pod
    template}); None when absent (a first deploy, or unknown: every rollout counts its surge).

    Raises ConfigError naming the first entry that is not a name -> 64 lowercase hex digits.
    """
    raw = config.get("previousPodTemplates")
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise ConfigError(
            f"previousPodTemplates = {raw!r} is not a map of Deployment name -> sha256 hex"
        )
    for name, digest in raw.items():
        if not isinstance(digest, str) or not SHA256_HEX.fullmatch(digest):
            raise ConfigError(
                f"previousPodTemplates.{name} = {digest!r} is not a sha256 hex digest (64 "
                "lowercase hex digits)"
            )
    return {str(name): str(digest) for name, digest in raw.items()}


def template_changes(workload: Item, previous: Mapping[str, str] | None) -> bool:
    """False only for a Deployment whose pod template hashes to its `previousPodTemplates`
    entry (the change scales it, no rollout); True otherwise (unknown counts as a change)."""
    if previous is None or workload.kind != "Deployment":
        return True
    name = path(workload.props, "metadata", "name")
    digest = previous.get(str(name)) if name else None
    return digest is None or digest != template_hash(path(workload.props, "spec", "template"))


def _pool_capacity(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """For each pool of `acceleratorPools`: the accelerators every workload requesting it takes
    at the peak of a rollout (replicas + maxSurge, x accelerators per pod, summed) fit in
    nodes x acceleratorsPerNode (`poolSizes`). A Deployment whose pod template equals the
    deployed one (`previousPodTemplates`) only scales: it counts its replicas, no surge, so a
    rollback (a change of replicas alone) onto a shrunk pool is not blocked."""
    config = args.get_config()
    resources_of: dict[str, set[str]] = {}
    for resource, pool in accelerator_pools(config).items():
        resources_of.setdefault(pool, set()).add(resource)
    sizes = pool_sizes(config, resources_of)
    previous = previous_pod_templates(config)
    demand: dict[str, list[tuple[Item, PodCount, int]]] = {}
    unreadable = False
    for workload in StackView.of(args.resources).workloads:
        for pool, resources in sorted(resources_of.items()):
            try:
                each = accelerators_per_pod(workload.pod_spec or {}, resources)
                if each:
                    changes = template_changes(workload, previous)
                    count = peak_pods(workload, sizes[pool].nodes, changes)
                    demand.setdefault(pool, []).append((workload, count, each))
            except PodCountError as exc:
                unreadable = True
                report_violation(
                    f"cannot count what {workload.label} takes from pool {pool!r}: {exc}",
                    workload.urn,
                )
    if not demand and not unreadable:
        args.not_applicable("no workload requests an accelerator of acceleratorPools")
    for pool, users in sorted(demand.items()):
        size = sizes[pool]
        needed = sum(count.pods * each for _workload, count, each in users)
        kinds = ", ".join(sorted(resources_of[pool]))
        parts = "; ".join(f"{w.label}: ({c.how}) x {each}" for w, c, each in users)
        if needed <= size.supply:
            if not _fits_node_by_node(users, size):
                report_violation(
                    f"pool {pool!r} cannot place its pods node by node: a rollout takes up to "
                    f"{needed} {kinds} ({parts}), within the pool's {size.supply}, but a pod's "
                    f"accelerators all come from one node and {size.nodes} nodes x "
                    f"{size.accelerators_per_node} acceleratorsPerNode leave no node with room "
                    "for some pod, so it would stay Pending; run fewer or smaller pods, or add "
                    "nodes to the pool",
                    users[0][0].urn if len(users) == 1 else None,
                )
            continue
        report_violation(
            f"pool {pool!r} is too small: a rollout takes up to {needed} {kinds} ({parts}) "
            f"but the pool has {size.supply} ({size.nodes} nodes x {size.accelerators_per_node} "
            "acceleratorsPerNode), so pods would stay Pending; run fewer pods "
            "(capacity.totalReplicas, or a lower weight for Ascend) or add nodes to the pool "
            "(<backend>.pool.nodes; <backend>.pool.acceleratorsPerNode if its nodes hold more)",
            users[0][0].urn if len(users) == 1 else None,
        )


pool_capacity_validator = config_errors_are_violations(_pool_capacity)
"""`_pool_capacity` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


def _fits_node_by_node(users: list[tuple[Item, PodCount, int]], size: PoolSize) -> bool:
    """Whether the peak pods of `users` ((workload, pods, accelerators per pod)) pack onto the
    pool's nodes (`policies.pod_counts.pack`); a DaemonSet's pods take one slot on every node
    first (one pod per node), any surge beyond that packs like the rest."""
    reserved = sum(each for w, _count, each in users if w.kind == "DaemonSet")
    if reserved > size.accelerators_per_node:
        return False
    pods = []
    for workload, count, each in users:
        extra = count.pods - size.nodes if workload.kind == "DaemonSet" else count.pods
        pods += [each] * max(0, extra)
    return pack(pods, size.nodes, size.accelerators_per_node - reserved) is not None


POLICIES = [
    StackValidationPolicy(
        name="rollback-capacity",
        description="While the Ascend weight is below 100, NVIDIA replicas cover 100% of "
        "traffic; Ascend replicas cover their share at the configured capacity ratio.",
        validate=rollback_capacity_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "totalReplicas": {
                    "type": "integer",
                    "minimum": 1,
                    "default": DEFAULT_TOTAL_REPLICAS,
                    "description": "NVIDIA pods that serve 100% of traffic.",
                },
                "ascendCapacityRatio": {
                    "type": "number",
                    "exclusiveMinimum": 0,
                    "default": DEFAULT_ASCEND_CAPACITY_RATIO,
                    "description": "Throughput of one Ascend pod relative to one NVIDIA pod.",
                },
                **SUBSET_SCHEMAS,
                "ascendResource": SHARE_SCHEMAS["ascendResource"],
                "services": SERVICES_SCHEMA,
                "testerPinning": SHARE_SCHEMAS["testerPinning"],
            }
        ),
    ),
    StackValidationPolicy(
        name="pool-capacity",
        description="Each accelerator pool holds the pods its workloads run at the peak of a "
        "rollout: sum of (replicas + maxSurge when the pod template changes) x accelerators per "
        "pod <= nodes x acceleratorsPerNode.",
        validate=pool_capacity_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "poolSizes": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {
                            "nodes": {"type": "integer", "minimum": 0},
                            "acceleratorsPerNode": {
                                "type": "integer",
                                "minimum": 1,
                                "default": DEFAULT_ACCELERATORS_PER_NODE,
                            },
                        },
                        "required": ["nodes"],
                    },
                    "default": DEFAULT_POOL_SIZES,
                    "description": "Pool name -> {nodes: node count, acceleratorsPerNode: "
                    "devices each node offers}.",
                },
                "acceleratorPools": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "default": DEFAULT_ACCELERATOR_POOLS,
                    "description": "Extended resource name -> pool name.",
                },
                "previousPodTemplates": {
                    "type": "object",
                    "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
                    "description": "Deployment metadata.name -> sha256 hex of the canonical "
                    "JSON (sorted keys, separators `,` `:`, whole numbers as integers) of its "
                    "spec.template in the BASE (deployed) stack. A Deployment whose template "
                    "is unchanged only scales and counts no rollout surge; absent (first "
                    "deploy, unknown), every Deployment counts its surge. Written by "
                    "`dualstack.offline.policy_config.template_facts` from the base's objects.",
                },
            }
        ),
    ),
]
"""The capacity policies, in report order."""
