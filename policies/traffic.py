"""Traffic policies: the Ascend share sits on the ladder, rises one step at a time, and the
routes are valid: a VirtualService's integers summing to 100, every weighted route naming both
backends' subsets; an HTTPRoute's weighted rules never all zero and naming both backends'
Services; every destination reaching pods of the stack. Both routers are judged alike: the
share is computed from either (`policies.traffic_share`).

The Ascend share is where traffic really goes (`policies.traffic_share`): every destination of
every route is resolved to the pods it reaches, and the share judged is the largest any route
gives to Ascend pods, so a route to the Ascend Service's host without a subset, or a catch-all
route placed first, counts like the split itself. A destination that reaches no known pod fails
(its traffic could go anywhere).

A policy sees only the new inputs, never the deployed state (REFERENCE.md, CrossGuard), so the
deployed weight comes in as policy config `previousWeight`, written by `dualstack policy-config`
from `pulumi stack output ascendWeight` (online) or taken from the base ref's stack config by
`dualstack preview --base` (offline). The step limit of `no-unsafe-weight-jump` (its `ladder`
and `maxStep`) comes from the BASE stack config whenever there is one, never from the change
being judged: a PR that edits the ladder or `maxStep` cannot widen its own step.
"""

from __future__ import annotations

from collections.abc import Mapping
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
    LADDER_SCHEMA,
    PREVIOUS_WEIGHT_SCHEMA,
    SHARE_SCHEMAS,
    SUBSET_SCHEMAS,
    ConfigError,
    config_errors_are_violations,
    config_int,
    config_ladder,
    subset_name,
)
from policies.http_route_checks import http_route_problems
from policies.members import SERVICES_SCHEMA, per_service
from policies.routers import all_routes, istio
from policies.stack_view import (
    Route,
    StackView,
    by_route,
    destination_text,
    rule_host,
    rule_subsets,
)
from policies.traffic_share import (
    AscendShares,
    RouteShare,
    ascend_shares,
    ascend_workload_urns,
    percent,
)

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


def _shares(args: StackValidationArgs, report_violation: ReportViolation) -> AscendShares:
    """The stack's Ascend shares; each destination or route whose share cannot be known is
    reported (fail closed: its traffic might all go to Ascend)."""
    shares = ascend_shares(StackView.of(args.resources), args.get_config())
    for message, urn in shares.problems:
        report_violation(f"cannot judge the Ascend share: {message}", urn)
    return shares


def steps_text(ladder: tuple[int, ...]) -> str:
    """`0, 5, 20, 50, 80, 100`."""
    return ", ".join(str(step) for step in ladder)


def _ascend_weight_on_ladder(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Every route of every VirtualService gives Ascend pods a share (in %) that is one of the
    `ladder` steps."""
    ladder = config_ladder(args.get_config())
    for route in _shares(args, report_violation).routes:
        if route.most is not None and route.most not in ladder:
            report_violation(
                f"{route.where} sends {percent(route.most)} to Ascend pods ({route.reached}), "
                f"which is not a ladder step ({steps_text(ladder)}); set ascendWeight to one "
                "of them",
                route.route_object.urn,
            )


ascend_weight_on_ladder_validator = config_errors_are_violations(_ascend_weight_on_ladder)
"""`_ascend_weight_on_ladder` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


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


def _no_unsafe_weight_jump(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """An increase of the Ascend share goes at most to the next ladder step above the deployed
    weight (`previousWeight`), or at most `maxStep` points when that is configured. Any
    decrease is allowed at once: a rollback is never blocked. Without `previousWeight` (first
    deploy) only 0 or the first ladder step is allowed. Every route counts: the share judged
    is the largest any route gives to Ascend pods.

    `ladder` and `maxStep` here are the BASE (deployed) config's, written so by
    `dualstack policy-config --base` and `dualstack preview --base`: the head's own ladder is
    checked by `ascend-weight-on-ladder`, but it cannot widen the step."""
    config = args.get_config()
    ladder = config_ladder(config)
    previous = config_int(config, "previousWeight", 0, 100)
    max_step = config_int(config, "maxStep", 1, 100)
    limit = allowed_increase(previous, ladder, max_step)
    for route in _shares(args, report_violation).routes:
        share = route.most
        if share is None or (previous is not None and share <= previous):
            continue  # unreadable (reported above), unchanged or a rollback: always allowed
        if share > limit:
            report_violation(
                _jump_message(route, share, previous, limit, max_step), route.route_object.urn
            )


no_unsafe_weight_jump_validator = per_service(config_errors_are_violations(_no_unsafe_weight_jump))
"""`_no_unsafe_weight_jump` wrapped by `per_service` and `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


def _jump_message(
    route: RouteShare, share: Fraction, previous: int | None, limit: int, max_step: int | None
) -> str:
    where = route.route_object.label
    via = f"; route {route.name!r} sends it to {route.reached}"
    if previous is None:
        return (
            f"{where} sends {percent(share)} to Ascend with no previousWeight in the policy "
            f"config (a first deploy): only 0% or the first ladder step {limit}% is allowed. If "
            "the stack is deployed, write the config with `dualstack policy-config "
            f"--from-stack-output`{via}"
        )
    rule = f"at most maxStep={max_step} points" if max_step is not None else "the next ladder step"
    return (
        f"{where} raises the Ascend weight from {previous}% to {percent(share)}: an increase may "
        f"go only to {rule}, {limit}%. Set ascendWeight to {limit} (decreases are always "
        f"allowed){via}"
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
        for routes in by_route(istio.routes(vs)):
            where = f"{vs.label} route {routes[0].route_name!r}"
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
    """(message, urn) for destinations that reach no pod of the stack (an unknown host, an
    undefined subset, a selector or subset matching nothing) and for subsets not selecting
    exactly one workload."""
    problems = []
    for route in all_routes(view):
        reach = view.reach(route)
        if reach.problem:
            problems.append(
                (
                    f"{route.route_object.label} route {route.route_name!r} destination "
                    f"{destination_text(route)}: {reach.problem}",
                    route.route_object.urn,
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


def _route_weights_valid(args: StackValidationArgs, report_violation: ReportViolation) -> None:
    """Routes carry integer weights 0..`totalWeight` summing to exactly `totalWeight` (100);
    every weighted route names both `nvidiaSubset` and `ascendSubset`; every destination
    reaches pods of the stack (its host is a Service of the stack selecting pods, its subset is
    defined for that host and selects some of them); every subset's labels select the pods of
    exactly one workload. A malformed config is one violation (fail closed)."""
    config = args.get_config()
    total = config_total_weight(config)
    required = required_subsets(config)
    view = StackView.of(args.resources)
    ascend = ascend_workload_urns(view, config)
    problems = _route_problems(view, total, required) + http_route_problems(view, ascend)
    for message, urn in problems + _subset_problems(view):
        report_violation(message, urn)


route_weights_valid_validator = config_errors_are_violations(_route_weights_valid)
"""`_route_weights_valid` wrapped by `config_errors_are_violations`
(applied by call, not with `@`: mutmut mutates no decorated function)."""


CONFIG_ON_LADDER = PolicyConfigSchema(properties={"ladder": LADDER_SCHEMA, **SHARE_SCHEMAS})
CONFIG_JUMP = PolicyConfigSchema(
    properties={
        "ladder": {
            **LADDER_SCHEMA,
            "description": "Allowed Ascend weights in %, rising strictly from 0 to 100, of the "
            "BASE (deployed) stack config: an increase goes at most to its next step above "
            "previousWeight. Written from the base, so a change cannot widen its own step.",
        },
        "previousWeight": PREVIOUS_WEIGHT_SCHEMA,
        "services": SERVICES_SCHEMA,
        "maxStep": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "description": "If set, an increase may be at most this many points instead of "
            "going to the next ladder step. Taken from the BASE (deployed) stack config.",
        },
        **SHARE_SCHEMAS,
    }
)
CONFIG_ROUTES = PolicyConfigSchema(
    properties={
        "totalWeight": TOTAL_WEIGHT_SCHEMA,
        **SUBSET_SCHEMAS,
        "ascendResource": SHARE_SCHEMAS["ascendResource"],
    }
)

POLICIES = [
    StackValidationPolicy(
        name="ascend-weight-on-ladder",
        description="The Ascend share of every route (where its destinations really send "
        "traffic) is one of the configured ladder steps.",
        validate=ascend_weight_on_ladder_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_ON_LADDER,
    ),
    StackValidationPolicy(
        name="no-unsafe-weight-jump",
        description="The Ascend share (the largest any route sends to Ascend pods) rises at "
        "most one ladder step above the deployed weight (or maxStep points); decreases "
        "(rollbacks) are always allowed.",
        validate=no_unsafe_weight_jump_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_JUMP,
    ),
    StackValidationPolicy(
        name="route-weights-valid",
        description="VirtualService route weights are integers 0..100 summing to 100 "
        "(totalWeight), every weighted route names both backends' subsets (an explicit "
        "`weight: 0`); HTTPRoute weights are proportions 0..1000000, never all zero, every "
        "weighted rule naming both backends' Services; every destination reaches pods of the "
        "stack, and each subset selects the pods of exactly one workload.",
        validate=route_weights_valid_validator,
        enforcement_level=EnforcementLevel.MANDATORY,
        config_schema=CONFIG_ROUTES,
    ),
]
"""The traffic policies, in report order."""
