"""Capacity policy: an emergency rollback must land on a pool sized for all traffic.

The failure this guards against (REFERENCE.md, the seed article's errors; a known failure of
progressive-delivery controllers): NVIDIA is scaled down while traffic moves, then a rollback
to 0% sends everything to a pool sized for less. So while the Ascend weight is below 100, the
NVIDIA backend keeps `totalReplicas` pods (the count that serves 100% of traffic), and the
Ascend backend has enough pods for its share:

    ascend_replicas * ascendCapacityRatio >= totalReplicas * weight / 100
"""

from __future__ import annotations

import math

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.common import (
    SUBSET_SCHEMAS,
    ConfigError,
    as_int,
    config_errors_are_violations,
    config_value,
    path,
    subset_name,
)
from policies.stack_view import Item, StackView, replicas

DEFAULT_TOTAL_REPLICAS = 4
"""NVIDIA pods that serve 100% of traffic (the article's 4); `capacity.totalReplicas`."""
DEFAULT_ASCEND_CAPACITY_RATIO = 1.0
"""Throughput of one Ascend pod relative to one NVIDIA pod; `capacity.ascendCapacityRatio`."""


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


@config_errors_are_violations
def rollback_capacity_validator(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """While the Ascend weight is below 100, the NVIDIA backend has `totalReplicas` pods; the
    Ascend backend has pods for its share at `ascendCapacityRatio`."""
    total, ratio = _config(args)
    config = args.get_config()
    view = StackView.of(args.resources)
    ascend_subset = subset_name(config, "ascend")
    weights = {r.weight for r in view.routes_to(ascend_subset) if r.weight is not None}
    if not weights:
        args.not_applicable(f"no VirtualService routes to subset {ascend_subset!r}")
    weight = max(weights)
    if min(weights) < 100:
        nvidia, why = view.backend(subset_name(config, "nvidia"))
        if nvidia is None:
            report_violation(f"cannot check the rollback capacity at {weight}%: {why}", None)
        elif (count := _replicas_or_report(nvidia, report_violation)) is not None and (
            count < total
        ):
            report_violation(
                f"{nvidia.label} has {count} replicas while Ascend takes {min(weights)}%: NVIDIA "
                f"must keep totalReplicas={total} pods (all traffic) until the weight is 100, so "
                f"a rollback to 0% lands on a full pool; keep {total} replicas",
                nvidia.urn,
            )
    if weight > 0:
        ascend, why = view.backend(ascend_subset)
        needed = ascend_pods_needed(total, weight, ratio)
        if ascend is None:
            report_violation(f"cannot check the Ascend capacity at {weight}%: {why}", None)
        elif (count := _replicas_or_report(ascend, report_violation)) is not None and (
            count < needed
        ):
            report_violation(
                f"{ascend.label} has {count} replicas for {weight}% of traffic: at "
                f"ascendCapacityRatio={ratio:g} its share of totalReplicas={total} needs at "
                f"least {needed}; raise its replicas or lower the weight",
                ascend.urn,
            )


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
            }
        ),
    )
]
"""The capacity policies, in report order."""
