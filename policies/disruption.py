"""`serving-disruption-budget`: a voluntary disruption never leaves a serving subset without a
ready pod.

Kubernetes facts (kubernetes.io/docs/concepts/workloads/pods/disruptions/ and
/docs/tasks/run-application/configure-pdb/): a voluntary disruption (`kubectl drain`, a node
upgrade, the cluster autoscaler) evicts pods through the eviction API, which refuses an eviction
that would leave fewer of the pods a PodDisruptionBudget selects available than it allows:
`minAvailable` pods, or all but `maxUnavailable` of the workload's replicas (a percentage is of
the replicas, rounded up). A PDB selects the pods of its own namespace whose labels match its
`spec.selector.matchLabels` (a selector with `matchExpressions` is not read here and counts as
no budget). Istio sends a subset's share to its ready endpoints only; with none, `503 UH
no_healthy_upstream` (REFERENCE.md).

So a workload that takes traffic (some route sends its pods a share above 0, `policies.
traffic_share`) keeps a ready pod through any drain when it runs at least
`MIN_SERVING_REPLICAS` pods and a PDB selecting them keeps at least one available. With one
pod, or a budget that allows all of them down, a drain sends the share to no endpoint until a
new pod is ready: minutes, for a model load. A backend taking no traffic (Ascend at 0%, NVIDIA
at 100%) may run one pod.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
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
    as_int,
    config_errors_are_violations,
    describe,
    kind_of,
    mapping,
    path,
)
from policies.pins import config_pinning, pinned_hardware
from policies.routers import routes_of
from policies.stack_view import Item, StackView, by_route, replicas, selects
from policies.traffic_share import destination_shares, percent

MIN_SERVING_REPLICAS = 2
"""Fewest pods of a workload that takes traffic (`components.capacity.MIN_SERVING_REPLICAS`,
kept equal by a test: the pack imports nothing of the project)."""
SCALED_KINDS = ("Deployment", "StatefulSet", "ReplicaSet")
"""Workloads whose pod count is `spec.replicas` (a DaemonSet's is one per node)."""


@dataclass(frozen=True)
class Budget:
    """One PodDisruptionBudget: where it is, the labels it selects by (None: a selector this
    policy does not read) and its limits as written."""

    label: str
    namespace: str
    match_labels: Mapping[str, Any] | None
    min_available: Any
    max_unavailable: Any

    def kept(self, pods: int) -> int | None:
        """Pods of `pods` the budget keeps available through evictions; None when a limit is
        neither an integer nor a percentage."""
        if self.min_available is not None:
            return _scaled(self.min_available, pods)
        if self.max_unavailable is not None:
            allowed = _scaled(self.max_unavailable, pods)
            return None if allowed is None else max(0, pods - allowed)
        return 0  # neither: policy/v1 then allows every eviction


def _scaled(value: Any, pods: int) -> int | None:
    """An int-or-percent limit of `pods`, a percentage rounded up (the disruption controller's
    `GetScaledValueFromIntOrPercent(..., roundUp=true)`); None when unreadable."""
    if isinstance(value, str) and value.endswith("%"):
        digits = value[:-1]
        if not (digits.isascii() and digits.isdigit()):
            return None
        return math.ceil(pods * int(digits) / 100)
    number = as_int(value)
    return None if number is None or number < 0 else number


def budgets(resources: Iterable[Any]) -> list[Budget]:
    """Every PodDisruptionBudget of the stack."""
    found = []
    for resource in resources:
        if kind_of(resource.resource_type) != "PodDisruptionBudget":
            continue
        props = mapping(resource.props)
        selector = mapping(path(props, "spec", "selector"))
        labels = None if selector.get("matchExpressions") else mapping(selector.get("matchLabels"))
        found.append(
            Budget(
                describe(resource.resource_type, props),
                str(path(props, "metadata", "namespace") or "default"),
                dict(labels) if labels is not None else None,
                path(props, "spec", "minAvailable"),
                path(props, "spec", "maxUnavailable"),
            )
        )
    return found


def serving_workloads(
    view: StackView, pinning: Mapping[str, str] | None = None
) -> list[tuple[Item, str]]:
    """Each workload some route of a VirtualService or HTTPRoute sends a share above 0 (or an
    unknown share), with where from for messages (`VirtualService inference/inference-vs route
    'split' sends it 5%`). The share of a destination is its weight over its route's sum
    (`destination_shares`), its pods where `StackView.reach` resolves it; which pods are
    Ascend's does not matter here. A tester pin (`pinning`: config `testerPinning`, the shape
    `policies.pins` recognises) carries only requests that carry the pin header, so it makes
    no workload serving: a drain there fails a tester's request, not a user's."""
    found: dict[str, tuple[Item, str]] = {}
    for vs in view.route_objects:
        for routes in by_route(routes_of(vs)):
            if pinning is not None and pinned_hardware(vs.kind, routes[0].entry, pinning):
                continue
            shares = destination_shares(routes) or (None,) * len(routes)
            where = f"{vs.label} route {routes[0].route_name!r}"
            for route, share in zip(routes, shares, strict=True):
                if share is not None and share <= 0:
                    continue
                amount = "an unknown share" if share is None else percent(Fraction(share))
                for workload in view.reach(route).workloads:
                    found.setdefault(workload.urn, (workload, f"{where} sends it {amount}"))
    return list(found.values())


def _selecting(workload: Item, all_budgets: list[Budget]) -> list[Budget]:
    namespace = workload.namespace or "default"
    return [
        b
        for b in all_budgets
        if b.namespace == namespace
        and b.match_labels is not None
        and selects(b.match_labels, workload.pod_labels)
    ]


def _serving_disruption_budget(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """Every workload that takes traffic runs at least `MIN_SERVING_REPLICAS` pods and is
    selected by a PodDisruptionBudget that keeps at least one of them available, so a node
    drain never leaves its subset without a ready pod (module docstring)."""
    pinning = config_pinning(args.get_config())
    serving = [(w, why) for w, why in serving_workloads(StackView.of(args.resources), pinning)]
    serving = [(w, why) for w, why in serving if w.kind in SCALED_KINDS]
    if not serving:
        args.not_applicable("no Deployment takes traffic")
    all_budgets = budgets(args.resources)
    for workload, why in serving:
        count = replicas(workload)
        if count is None:
            continue  # rollback-capacity reports replicas that are not a number
        if count < MIN_SERVING_REPLICAS:
            report_violation(
                f"{workload.label} takes traffic ({why}) with {count} replica: a node drain "
                "evicts it and the subset has no ready pod (503) until a new one has loaded "
                f"its model; run at least {MIN_SERVING_REPLICAS} replicas while it serves",
                workload.urn,
            )
            continue
        selecting = _selecting(workload, all_budgets)
        kept = [(b, b.kept(count)) for b in selecting]
        if any(k is not None and k >= 1 for _b, k in kept):
            continue
        if not selecting:
            problem = "no PodDisruptionBudget (with matchLabels) selects its pods"
        else:
            problem = "; ".join(
                f"{b.label} keeps {'an unreadable number' if k is None else k} of its {count} "
                "pods available"
                for b, k in kept
            )
        report_violation(
            f"{workload.label} takes traffic ({why}) but {problem}: a node drain may evict "
            "every pod at once and leave the subset without a ready pod (503); add a "
            "PodDisruptionBudget selecting its pods with maxUnavailable: 1 (or minAvailable: 1)",
            workload.urn,
        )


serving_disruption_budget_validator = config_errors_are_violations(_serving_disruption_budget)
"""`_serving_disruption_budget` with a bad policy config reported as a violation
(applied by call, not with `@`: mutmut mutates no decorated function)."""


POLICIES = [
    StackValidationPolicy(
        name="serving-disruption-budget",
        description="A workload that takes traffic runs at least 2 pods and a "
        "PodDisruptionBudget keeps one of them available: a node drain never leaves a serving "
        "subset without a ready pod.",
        validate=serving_disruption_budget_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=PolicyConfigSchema(
            properties={"testerPinning": SHARE_SCHEMAS["testerPinning"]}
        ),
    ),
]
"""The disruption policy."""
