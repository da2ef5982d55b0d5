"""Traffic policies: the Ascend weight sits on the ladder, rises one step at a time, and the
VirtualService's routes are valid integers summing to 100 over subsets that select pods, every
weighted route naming both backends' subsets.

A policy sees only the new inputs, never the deployed state (REFERENCE.md, CrossGuard), so the
deployed weight comes in as policy config `previousWeight`, written by `dualstack policy-config`
from `pulumi stack output ascendWeight` (online) or taken from the base ref's stack config by
`dualstack preview --base` (offline). The step limit of `no-unsafe-weight-jump` (its `ladder`
and `maxStep`) comes from the BASE stack config whenever there is one, never from the change
being judged: a PR that edits the ladder or `maxStep` cannot widen its own step.
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
    StackValidationArgs,
    StackValidationPolicy,
)

from policies.common import (
    LADDER_SCHEMA,
    PREVIOUS_WEIGHT_SCHEMA,
    SUBSET_SCHEMAS,
    ConfigError,
    config_errors_are_violations,
    config_int,
    config_ladder,
    describe,
    kind_of,
    mapping,
    subset_name,
)
from policies.stack_view import Item, Route, StackView, routes_of, rule_host, rule_subsets

DEFAULT_TOTAL_WEIGHT = 100
"""Sum of the weights of one weighted route in %, used when config has no `totalWeight`."""
MAX_ROUTE_WEIGHT = 2**31 - 1
"""Istio route weights are int32 (REFERENCE.md)."""
TOTAL_WEIGHT_SCHEMA = {
    "type": "integer",
    "minimum": 1,
    "maximum": MAX_ROUTE_WEIGHT,
    "default": DEFAULT_TOTAL_WEIGHT,
    "description": "Sum the weights of every weighted route must reach; each weight is an "
    "integer 0..totalWeight. 100 because weights are % (the ladder's unit); Istio rejects a "
    "total of 0 and older meshes require exactly 100 (REFERENCE.md).",
}


def _ascend_routes(args: ResourceValidationArgs) -> list[Route]:
    """The routes of the VirtualService under validation that name the Ascend subset."""
    props = mapping(args.props)
    vs = Item(
        args.resource_type,
        props,
        args.urn,
        "VirtualService",
        str(mapping(props.get("metadata")).get("namespace") or ""),
        describe(args.resource_type, props),
    )
    ascend = subset_name(args.get_config(), "ascend")
    return [route for route in routes_of(vs) if route.subset == ascend]


def _weight_text(route: Route) -> str:
    return f"{route.weight}%" if route.weight is not None else f"weight {route.raw_weight!r}"


def steps_text(ladder: tuple[int, ...]) -> str:
    """`0, 5, 20, 50, 80, 100`."""
    return ", ".join(str(step) for step in ladder)


@config_errors_are_violations
def ascend_weight_on_ladder_validator(
    args: ResourceValidationArgs, report_violation: ReportViolation
) -> None:
    """Every route to the Ascend subset carries a weight that is one of the `ladder` steps."""
    if kind_of(args.resource_type) != "VirtualService":
        return
    ladder = config_ladder(args.get_config())
    for route in _ascend_routes(args):
        if route.weight not in ladder:
            report_violation(
                f"{route.virtual_service.label} route {route.route_name!r} sends "
                f"{_weight_text(route)} to subset {route.subset!r}, which is not a ladder step "
                f"({steps_text(ladder)}); set ascendWeight to one of them",
                None,
            )


def allowed_increase(previous: int | None, ladder: tuple[int, ...], max_step: int | None) -> int:
    """The highest weight in % a step from `previous` may reach.

    - `previous` None (first deploy): the first step above 0.
    - `max_step` set: `previous + max_step` (capped at 100).
    - otherwise: the next ladder step above `previous` (100 when none is above).
    """
    if previous is None:
        return ladder[1]
    if max_step is not None:
        return min(100, previous + max_step)
    above = [step for step in ladder if step > previous]
    return above[0] if above else 100


@config_errors_are_violations
def no_unsafe_weight_jump_validator(
    args: ResourceValidationArgs, report_violation: ReportViolation
) -> None:
    """An increase of the Ascend weight goes at most to the next ladder step above the deployed
    weight (`previousWeight`), or at most `maxStep` points when that is configured. Any
    decrease is allowed at once: a rollback is never blocked. Without `previousWeight` (first
    deploy) only 0 or the first ladder step is allowed.

    `ladder` and `maxStep` here are the BASE (deployed) config's, written so by
    `dualstack policy-config --base` and `dualstack preview --base`: the head's own ladder is
    checked by `ascend-weight-on-ladder`, but it cannot widen the step."""
    if kind_of(args.resource_type) != "VirtualService":
        return
    config = args.get_config()
    ladder = config_ladder(config)
    previous = config_int(config, "previousWeight", 0, 100)
    max_step = config_int(config, "maxStep", 1, 100)
    limit = allowed_increase(previous, ladder, max_step)
    for route in _ascend_routes(args):
        weight = route.weight
        if weight is None:
            report_violation(
                f"{route.virtual_service.label} sends {_weight_text(route)} to subset "
                f"{route.subset!r}: not an integer, so the step cannot be judged",
                None,
            )
        elif previous is not None and weight <= previous:
            continue  # unchanged or a rollback: always allowed
        elif weight > limit:
            report_violation(_jump_message(route, weight, previous, limit, max_step), None)


def _jump_message(
    route: Route, weight: int, previous: int | None, limit: int, max_step: int | None
) -> str:
    where = route.virtual_service.label
    if previous is None:
        return (
            f"{where} sends {weight}% to Ascend with no previousWeight in the policy config "
            f"(a first deploy): only 0% or the first ladder step {limit}% is allowed. If the "
            "stack is deployed, write the config with `dualstack policy-config --from-stack-output`"
        )
    rule = f"at most maxStep={max_step} points" if max_step is not None else "the next ladder step"
    return (
        f"{where} raises the Ascend weight from {previous}% to {weight}%: an increase may go "
        f"only to {rule}, {limit}%. Set ascendWeight to {limit} (decreases are always allowed)"
    )


def config_total_weight(config: Mapping[str, Any]) -> int:
    """The `totalWeight` key (default 100). Raises ConfigError unless an integer 1..2^31-1."""
    total = config_int(config, "totalWeight", 1, MAX_ROUTE_WEIGHT)
    return DEFAULT_TOTAL_WEIGHT if total is None else total


def required_subsets(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The subsets every weighted route must name: config `nvidiaSubset`, `ascendSubset`.

    Raises ConfigError when a name is not a non-empty string or both name the same subset.
    """
    names = (subset_name(config, "nvidia"), subset_name(config, "ascend"))
    if names[0] == names[1]:
        raise ConfigError(f"nvidiaSubset and ascendSubset both name subset {names[0]!r}")
    return names


def _weights_text(routes: list[Route]) -> str:
    return ", ".join(f"{r.subset or r.host}={r.weight}" for r in routes)


def _route_problems(
    view: StackView, total: int, required: tuple[str, ...]
) -> list[tuple[str, str]]:
    """(message, urn) per HTTP route whose weights are not integers 0..`total` summing to
    `total`, or, when weighted, that leaves out a `required` subset.

    A route is weighted when any destination carries a `weight`: a split, which must list both
    backends, the idle one with `weight: 0` (REFERENCE.md: a dropped zero has broken
    validators). One destination without a weight takes all traffic (a pin, e.g. a
    header-matched debug route) and needs no other subset.
    """
    problems = []
    for vs in view.virtual_services:
        by_route: dict[str, list[Route]] = {}
        for route in routes_of(vs):
            by_route.setdefault(route.route_name, []).append(route)
        for name, routes in by_route.items():
            where = f"{vs.label} route {name!r}"
            bad = [r for r in routes if r.weight is None or not 0 <= r.weight <= total]
            for r in bad:
                problems.append(
                    (
                        f"{where}: destination {r.subset or r.host} has weight {r.raw_weight!r}; "
                        f"write an integer 0..{total} (including an explicit `weight: 0`)",
                        vs.urn,
                    )
                )
            weight_sum = sum(r.weight or 0 for r in routes)
            if not bad and weight_sum != total:
                problems.append(
                    (
                        f"{where}: weights {_weights_text(routes)} sum to {weight_sum}, "
                        f"not {total}; fix them",
                        vs.urn,
                    )
                )
            weighted = any(r.raw_weight is not None for r in routes)
            missing = [s for s in required if s not in {r.subset for r in routes}]
            if weighted and missing:
                names = ", ".join(repr(s) for s in missing)
                problems.append(
                    (
                        f"{where}: weights {_weights_text(routes)} name no destination of "
                        f"subset {names}; list every backend's subset in the split, the idle "
                        "one with an explicit `weight: 0`",
                        vs.urn,
                    )
                )
    return problems


def _subset_problems(view: StackView) -> list[tuple[str, str]]:
    """(message, urn) for routes to undefined subsets and subsets not selecting one workload."""
    problems = []
    for route in view.routes():
        if route.subset and route.subset not in view.subsets(route.host):
            problems.append(
                (
                    f"{route.virtual_service.label} routes to subset {route.subset!r} of "
                    f"{route.host}, which no DestinationRule in the stack defines (503 for "
                    "that share); define the subset or fix the route",
                    route.virtual_service.urn,
                )
            )
    for rule in view.destination_rules:
        host = rule_host(rule)
        for name, labels in rule_subsets(rule).items():
            selected = view.selected_workloads(rule.namespace, labels, host)
            if len(selected) == 1:
                continue
            shown = ", ".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(no labels)"
            if not selected:
                why = (
                    "select no pod of any workload in the stack: requests to it fail with "
                    "503 UH no_healthy_upstream; make the labels match the pod template"
                )
            else:
                names = ", ".join(sorted(w.label for w in selected))
                why = f"select the pods of several workloads ({names}); make them select one"
            problems.append((f"{rule.label} subset {name!r} labels {shown} {why}", rule.urn))
    return problems


@config_errors_are_violations
def route_weights_valid_validator(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """Routes carry integer weights 0..`totalWeight` summing to exactly `totalWeight` (100);
    every weighted route names both `nvidiaSubset` and `ascendSubset`; every route names a
    subset a DestinationRule defines; every subset's labels select the pods of exactly one
    workload. A malformed config is one violation (fail closed)."""
    config = args.get_config()
    total = config_total_weight(config)
    required = required_subsets(config)
    view = StackView.of(args.resources)
    for message, urn in _route_problems(view, total, required) + _subset_problems(view):
        report_violation(message, urn)


CONFIG_ON_LADDER = PolicyConfigSchema(
    properties={"ladder": LADDER_SCHEMA, "ascendSubset": SUBSET_SCHEMAS["ascendSubset"]}
)
CONFIG_JUMP = PolicyConfigSchema(
    properties={
        "ladder": {
            **LADDER_SCHEMA,
            "description": "Allowed Ascend weights in %, rising strictly from 0 to 100, of the "
            "BASE (deployed) stack config: an increase goes at most to its next step above "
            "previousWeight. Written from the base, so a change cannot widen its own step.",
        },
        "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
        "maxStep": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "If set, an increase may be at most this many points instead of "
            "going to the next ladder step. Taken from the BASE (deployed) stack config.",
        },
        "ascendSubset": SUBSET_SCHEMAS["ascendSubset"],
    }
)
CONFIG_ROUTES = PolicyConfigSchema(
    properties={"totalWeight": TOTAL_WEIGHT_SCHEMA, **SUBSET_SCHEMAS}
)

POLICIES = [
    ResourceValidationPolicy(
        name="ascend-weight-on-ladder",
        description="The VirtualService's Ascend weight is one of the configured ladder steps.",
        validate=ascend_weight_on_ladder_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_ON_LADDER,
    ),
    ResourceValidationPolicy(
        name="no-unsafe-weight-jump",
        description="An Ascend weight increase goes at most one ladder step above the deployed "
        "weight (or maxStep points); decreases (rollbacks) are always allowed.",
        validate=no_unsafe_weight_jump_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_JUMP,
    ),
    StackValidationPolicy(
        name="route-weights-valid",
        description="VirtualService route weights are integers 0..100 summing to 100 "
        "(totalWeight), every weighted route names both backends' subsets (an explicit "
        "`weight: 0`), each route names a defined subset, and each subset selects the pods of "
        "exactly one workload.",
        validate=route_weights_valid_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_ROUTES,
    ),
]
"""The traffic policies, in report order."""
