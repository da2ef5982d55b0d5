"""`route-weights-valid` for HTTPRoutes: what makes a rule a valid split under the Gateway API.

Facts (REFERENCE.md "Gateway API", the vendored schema): `backendRefs[].weight` is an int32
proportion 0..1000000 (weight / sum) defaulting to 1, so an idle backend needs an explicit
`weight: 0` and a rule whose weights are all 0 has no defined behaviour (implementations
differ: kgateway#11548, kuma#18266, istio#31745). There are no subsets: a rule names its two
backends by the Services it routes to, told apart by the pods they reach.
"""

from __future__ import annotations

from policies.routers import gateway_api
from policies.stack_view import Route, StackView, by_route, destination_text

MAX_BACKEND_WEIGHT = 1_000_000
"""HTTPRoute backendRef weights are proportions 0..1000000."""


def _weights_text(routes: list[Route]) -> str:
    return ", ".join(f"{destination_text(r)}={r.weight}" for r in routes)


def http_route_problems(view: StackView, ascend: set[str]) -> list[tuple[str, str]]:
    """(message, urn) per HTTPRoute rule with a weight that is no integer 0..1000000, or that
    is weighted (several backendRefs) and sums to 0 (implementations disagree on what that
    does: kgateway#11548, kuma#18266, istio#31745) or leaves out the NVIDIA or the Ascend
    backend (the idle one needs an explicit `weight: 0`, the default weight being 1)."""
    problems = []
    for item in view.http_routes:
        for routes in by_route(gateway_api.routes(item)):
            where = f"{item.label} rule {routes[0].route_name!r}"
            bad = [r for r in routes if r.weight is None or not 0 <= r.weight <= MAX_BACKEND_WEIGHT]
            for r in bad:
                problems.append(
                    (
                        f"{where}: backendRef {r.host} has weight "
                        f"{r.weight if r.weight is not None else r.raw_weight!r}; write an "
                        f"integer 0..{MAX_BACKEND_WEIGHT} (a proportion)",
                        item.urn,
                    )
                )
            if len(routes) < 2 or bad:
                continue
            if sum(r.weight or 0 for r in routes) == 0:
                problems.append(
                    (
                        f"{where}: every backendRef has weight 0 ({_weights_text(routes)}); "
                        "what that does differs by implementation, give the serving backend "
                        "its weight",
                        item.urn,
                    )
                )
            reached = [{w.urn for w in view.reach(r).workloads} for r in routes]
            sides = {"Ascend": any(u & ascend for u in reached)}
            sides["NVIDIA"] = any(u - ascend for u in reached)
            missing = [name for name, present in sides.items() if not present]
            if missing:
                problems.append(
                    (
                        f"{where}: weights {_weights_text(routes)} name no backend of "
                        f"{' and '.join(missing)}; list both backends' Services in the split, "
                        "the idle one with an explicit `weight: 0`",
                        item.urn,
                    )
                )
    return problems
