"""Traffic policies: the Ascend weight sits on the ladder, rises one step at a time, and the
VirtualService's routes are valid integers summing to 100 over subsets that select pods.

A policy sees only the new inputs, never the deployed state (REFERENCE.md, CrossGuard), so the
deployed weight comes in as policy config `previousWeight`, written by `dualstack policy-config`
from `pulumi stack output ascendWeight` (online) or taken from the base ref's stack config by
`dualstack preview --base` (offline).
"""

from __future__ import annotations

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
    config_errors_are_violations,
    config_int,
    config_ladder,
    describe,
    kind_of,
    mapping,
    subset_name,
)
from policies.stack_view import Item, Route, StackView, routes_of, rule_host, rule_subsets


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
    deploy) only 0 or the first ladder step is allowed."""
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


def _route_problems(view: StackView) -> list[tuple[str, str]]:
    """(message, urn) for weights that are not integers 0..100 summing to 100 per route."""
    problems = []
    for vs in view.virtual_services:
        by_route: dict[str, list[Route]] = {}
        for route in routes_of(vs):
            by_route.setdefault(route.route_name, []).append(route)
        for name, routes in by_route.items():
            where = f"{vs.label} route {name!r}"
            bad = [r for r in routes if r.weight is None or not 0 <= r.weight <= 100]
            for r in bad:
                problems.append(
                    (
                        f"{where}: destination {r.subset or r.host} has weight {r.raw_weight!r}; "
                        "write an integer 0..100 (including an explicit `weight: 0`)",
                        vs.urn,
                    )
                )
            total = sum(r.weight or 0 for r in routes)
            if not bad and total != 100:
                weights = ", ".join(f"{r.subset or r.host}={r.weight}" for r in routes)
                problems.append(
                    (f"{where}: weights {weights} sum to {total}, not 100; fix them", vs.urn)
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


def route_weights_valid_validator(
    args: StackValidationArgs, report_violation: ReportViolation
) -> None:
    """Routes carry integer weights 0..100 summing to exactly 100; every route names a subset a
    DestinationRule defines; every subset's labels select the pods of exactly one workload."""
    view = StackView.of(args.resources)
    for message, urn in _route_problems(view) + _subset_problems(view):
        report_violation(message, urn)


CONFIG_ON_LADDER = PolicyConfigSchema(
    properties={"ladder": LADDER_SCHEMA, "ascendSubset": SUBSET_SCHEMAS["ascendSubset"]}
)
CONFIG_JUMP = PolicyConfigSchema(
    properties={
        "ladder": LADDER_SCHEMA,
        "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
        "maxStep": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "If set, an increase may be at most this many points instead of "
            "going to the next ladder step.",
        },
        "ascendSubset": SUBSET_SCHEMAS["ascendSubset"],
    }
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
        description="VirtualService route weights are integers 0..100 summing to 100, each route "
        "names a defined subset, and each subset selects the pods of exactly one workload.",
        validate=route_weights_valid_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
    ),
]
"""The traffic policies, in report order."""
