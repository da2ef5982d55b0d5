"""Placement policy: accelerator pods run on their own pool and only there.

Each pool's nodes carry the label and the taint `<poolLabel>=<pool>:NoSchedule`
(`components/node_pools.py`). A pod requesting an accelerator resource (`nvidia.com/gpu`,
`huawei.com/Ascend910`) must select its pool with `nodeSelector` and tolerate that taint, or it
stays Pending or lands on the wrong hardware. Kubernetes toleration matching (kubernetes.io,
"Taints and Tolerations"): an empty effect matches every effect; `operator: Exists` matches any
value of the key; `operator: Exists` with no key tolerates every taint.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ReportViolation,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from policies.common import (
    ConfigError,
    config_errors_are_violations,
    config_str,
    config_value,
    containers,
    describe,
    kind_of,
    mapping,
    pod_template_spec,
    sequence,
)

DEFAULT_POOL_LABEL = "pool"
"""Node label and taint key of the pools (`components.naming.POOL_LABEL`)."""
DEFAULT_ACCELERATOR_POOLS = {"nvidia.com/gpu": "nvidia", "huawei.com/Ascend910": "ascend"}
"""Extended resource -> pool name, as in `components/settings/model.py`'s defaults."""


def accelerator_pools(config: Mapping[str, Any]) -> dict[str, str]:
    """Config `acceleratorPools` (extended resource -> pool name), default
    `DEFAULT_ACCELERATOR_POOLS`. Raises ConfigError unless it maps names to non-empty strings."""
    raw = config_value(config, "acceleratorPools", DEFAULT_ACCELERATOR_POOLS)
    pools = mapping(raw)
    if not pools or not all(isinstance(v, str) and v for v in pools.values()):
        raise ConfigError(
            f"acceleratorPools = {raw!r} must map resources to pool names, "
            'e.g. {"nvidia.com/gpu": "nvidia"}'
        )
    return {str(k): str(v) for k, v in pools.items()}


def _positive(quantity: Any) -> bool:
    """True unless the quantity is a clear zero (`0`, "0"); unreadable counts as requested."""
    if isinstance(quantity, int | float) and not isinstance(quantity, bool):
        return quantity > 0
    try:
        return float(str(quantity)) > 0
    except ValueError:
        return True


def requested_accelerators(spec: Mapping[str, Any], pools: Mapping[str, str]) -> set[str]:
    """Accelerator resources (keys of `pools`) any container requests or limits above zero."""
    found = set()
    for container in containers(spec):
        resources = mapping(container.get("resources"))
        for section in ("requests", "limits"):
            for name, quantity in mapping(resources.get(section)).items():
                if name in pools and _positive(quantity):
                    found.add(name)
    return found


def tolerates(toleration: Mapping[str, Any], key: str, value: str) -> bool:
    """True when `toleration` tolerates the taint `<key>=<value>:NoSchedule`.

    Kubernetes' matching rules (kubernetes.io/docs/concepts/scheduling-eviction/
    taint-and-toleration): the operator defaults to Equal; Exists with no key matches every
    taint; an empty effect matches every effect."""
    if toleration.get("effect") not in (None, "", "NoSchedule"):
        return False
    exists = toleration.get("operator") == "Exists"  # any other operator, or none, is Equal
    if not toleration.get("key"):
        return exists
    if toleration.get("key") != key:
        return False
    return exists or toleration.get("value") == value


def tolerated_pools(spec: Mapping[str, Any], key: str, pools: set[str]) -> set[str]:
    """The pools whose taint some toleration of the pod spec tolerates."""
    tolerations = [mapping(t) for t in sequence(spec.get("tolerations"))]
    return {pool for pool in pools if any(tolerates(t, key, pool) for t in tolerations)}


def _accelerator_placement(args: ResourceValidationArgs, report_violation: ReportViolation) -> None:
    """A pod requesting an accelerator selects its pool (nodeSelector) and tolerates its taint;
    no pod requests two accelerator kinds; no pod tolerates a pool it does not select; a pod
    selecting an accelerator pool requests that pool's accelerator (a resource the pool's
    nodes do not offer keeps it Pending, and the pool's capacity check would not count it)."""
    props = mapping(args.props)
    spec = pod_template_spec(kind_of(args.resource_type), props)
    if spec is None:
        return
    config = args.get_config()
    pools = accelerator_pools(config)
    key = config_str(config, "poolLabel", DEFAULT_POOL_LABEL)
    where = describe(args.resource_type, props)
    requested = requested_accelerators(spec, pools)
    selected = mapping(spec.get("nodeSelector")).get(key)
    wanted = sorted({pools[name] for name in requested})
    if len(wanted) > 1:
        report_violation(
            f"{where} requests {' and '.join(sorted(requested))}: a pod may use one accelerator "
            "kind only; split it into one workload per pool",
            None,
        )
    elif wanted:
        pool = wanted[0]
        resource = next(iter(requested))
        if selected != pool:
            report_violation(
                f"{where} requests {resource} but its nodeSelector {key}={selected!r} does not "
                f"pin it to pool {pool!r}; set nodeSelector {key}: {pool}",
                None,
            )
        if pool not in tolerated_pools(spec, key, {pool}):
            report_violation(
                f"{where} requests {resource} but does not tolerate its pool's taint "
                f"{key}={pool}:NoSchedule, so its pods stay Pending; add the toleration",
                None,
            )
    if selected in pools.values() and not wanted:
        offered = sorted(name for name, pool in pools.items() if pool == selected)
        report_violation(
            f"{where} selects pool {selected!r} but requests none of its accelerators "
            f"({', '.join(offered)}); request them, or do not pin the pod to the pool",
            None,
        )
    for other in sorted(tolerated_pools(spec, key, set(pools.values())) - {selected}):
        report_violation(
            f"{where} tolerates the taint of pool {other!r} ({key}={other}:NoSchedule) but "
            f"selects {key}={selected!r}; remove the toleration so it cannot take {other} nodes",
            None,
        )


accelerator_placement_validator = config_errors_are_violations(_accelerator_placement)
"""`_accelerator_placement` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


POLICIES = [
    ResourceValidationPolicy(
        name="accelerator-placement",
        description="Pods requesting an accelerator are pinned to its pool (nodeSelector and "
        "matching toleration); no pod requests both kinds or tolerates a pool it does not select.",
        validate=accelerator_placement_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={
                "acceleratorPools": {
                    "type": "object",
                    "additionalProperties": {"type": "string"},
                    "default": DEFAULT_ACCELERATOR_POOLS,
                    "description": "Extended resource name -> pool name.",
                },
                "poolLabel": {
                    "type": "string",
                    "default": DEFAULT_POOL_LABEL,
                    "description": "Node label and taint key that names the pool.",
                },
            }
        ),
    )
]
"""The placement policies, in report order."""
