"""Fleet-wide policies: what only the whole fleet of services shows.

- `fleet-rollback-capacity`: the NVIDIA pool holds every service at 0% at once (each service's
  NVIDIA backend at its own `totalReplicas`, at least `MIN_SERVING_REPLICAS`: it then takes all
  the traffic), node by node, so a fleet-wide emergency rollback lands on enough GPUs;
- `one-service-raised`: one pull request raises the Ascend share of at most one service; any
  number may go down.

`pool-capacity` (`policies.capacity`) packs the peak pods of every service node by node. The
services and their facts come from `policies.members`.
"""

from __future__ import annotations

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.capacity import DEFAULT_TOTAL_REPLICAS, pool_sizes
from policies.common import (
    PREVIOUS_WEIGHT_SCHEMA,
    SHARE_SCHEMAS,
    SUBSET_SCHEMAS,
    ConfigError,
    as_int,
    config_errors_are_violations,
    config_int,
)
from policies.disruption import MIN_SERVING_REPLICAS
from policies.members import SERVICES_SCHEMA, members
from policies.placement import accelerator_pools, requested_accelerators
from policies.pod_counts import PodCountError, accelerators_per_pod, pack, peak_pods
from policies.stack_view import StackView
from policies.traffic_share import ascend_shares, nvidia_backend, percent

# --- fleet-rollback-capacity --------------------------------------------------------------


def _fleet_rollback_capacity(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every service at 0% at once (a fleet-wide emergency rollback) lands on enough GPUs:
    each service's NVIDIA backend (the workload its routes send non-Ascend traffic to) at its
    own `totalReplicas` pods (at least `MIN_SERVING_REPLICAS`, as the program runs a serving
    backend), with every other workload on that pool at its replicas, packs
    onto the pool's nodes (`pack`: each pod's accelerators from one node). The backends only
    scale in a rollback (their pod templates stay), so no surge is counted."""
    config = args.get_config()
    pools = accelerator_pools(config)
    at_zero: dict[str, tuple[int, str]] = {}
    for member in members(args.resources, config):
        shares = ascend_shares(StackView.of(member.resources), member.config)
        backend, _why = nvidia_backend(shares, member.config)
        if backend is None:
            continue  # rollback-capacity reports a service with no single NVIDIA backend
        raw = member.config.get("totalReplicas", DEFAULT_TOTAL_REPLICAS)
        total = as_int(raw)
        if total is None or total < 1:
            raise ConfigError(f"totalReplicas = {raw!r} is not a positive integer")
        at_zero[backend.urn] = (max(MIN_SERVING_REPLICAS, total), member.name or "the service")
    if not at_zero:
        args.not_applicable("no route sends traffic to an NVIDIA backend")
    demand: dict[str, list[tuple[int, int, str]]] = {}  # pool -> (pods, each, for messages)
    backend_pools: set[str] = set()
    for workload in StackView.of(args.resources).workloads:
        for resource in sorted(requested_accelerators(workload.pod_spec or {}, pools)):
            pool = pools[resource]
            sizes = pool_sizes(config, [pool])
            try:
                each = accelerators_per_pod(workload.pod_spec or {}, {resource})
                count = peak_pods(workload, sizes[pool].nodes, template_changes=False).pods
            except PodCountError as exc:
                report_violation(f"cannot count {workload.label}: {exc}", workload.urn)
                return
            total, owner = at_zero.get(workload.urn, (count, ""))
            shown = f"{workload.label}: {max(count, total)} x {each}"
            if owner:
                backend_pools.add(pool)
                shown += f" ({owner} at 0%)"
            demand.setdefault(pool, []).append((max(count, total), each, shown))
    for pool in sorted(backend_pools):
        size = pool_sizes(config, [pool])[pool]
        pods = [each for count, each, _shown in demand[pool] for _ in range(count)]
        if pack(pods, size.nodes, size.accelerators_per_node) is None:
            parts = "; ".join(shown for _count, _each, shown in demand[pool])
            report_violation(
                f"pool {pool!r} cannot hold every service at 0% at once: {sum(pods)} "
                f"accelerators in pods of {parts} do not fit {size.nodes} nodes x "
                f"{size.accelerators_per_node} acceleratorsPerNode node by node, so a "
                "fleet-wide rollback would leave pods Pending; add nodes to the pool or lower "
                "some service's capacity.totalReplicas",
                None,
            )


fleet_rollback_capacity_validator = config_errors_are_violations(_fleet_rollback_capacity)
"""`_fleet_rollback_capacity` with a bad policy config reported as a violation
(applied by call, not with `@`: mutmut mutates no decorated function)."""


# --- one-service-raised --------------------------------------------------------------------


def _one_service_raised(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """At most one service's Ascend share (the largest any of its routes sends to Ascend pods)
    rises above its `previousWeight` (absent: 0, a new service) in one change; any number may
    go down or stay."""
    groups = members(args.resources, args.get_config())
    if len(groups) == 1:
        args.not_applicable("one service")
    raised = []
    for member in groups:
        share = ascend_shares(StackView.of(member.resources), member.config).most
        previous = config_int(member.config, "previousWeight", 0, 100) or 0
        if share > previous:
            raised.append(f"{member.name} {previous}% -> {percent(share)}")
    if len(raised) > 1:
        report_violation(
            f"one change raises the Ascend share of {len(raised)} services ({'; '.join(raised)}):"
            " raise one service per pull request, so each step is gated and rolled back on its "
            "own (lowering any number at once is fine)",
            None,
        )


one_service_raised_validator = config_errors_are_violations(_one_service_raised)
"""`_one_service_raised` with a bad policy config reported as a violation
(applied by call, not with `@`: mutmut mutates no decorated function)."""


POLICIES = [
    StackValidationPolicy(
        name="fleet-rollback-capacity",
        description="The NVIDIA pool holds every service at 0% at once (each NVIDIA backend "
        "at its totalReplicas), node by node: a fleet-wide rollback lands on enough GPUs.",
        validate=fleet_rollback_capacity_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "services": SERVICES_SCHEMA,
                "totalReplicas": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "NVIDIA pods that serve 100% of a service's traffic.",
                },
                "poolSizes": {
                    "type": "object",
                    "description": "Pool name -> {nodes, acceleratorsPerNode}.",
                },
                "acceleratorPools": {
                    "type": "object",
                    "description": "Extended resource name -> pool name.",
                },
                **SUBSET_SCHEMAS,
                "ascendResource": SHARE_SCHEMAS["ascendResource"],
            }
        ),
    ),
    StackValidationPolicy(
        name="one-service-raised",
        description="One change raises the Ascend share of at most one service of the fleet; "
        "any number may go down.",
        validate=one_service_raised_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "services": SERVICES_SCHEMA,
                "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
                **SHARE_SCHEMAS,
            }
        ),
    ),
]
"""The fleet-wide policies, in report order."""
