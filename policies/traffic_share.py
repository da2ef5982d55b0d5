"""The Ascend share of a stack's traffic, from where each route really sends it.

Names decide nothing here: every destination of every route of every VirtualService (any match,
http, tcp and tls) and every backendRef of every HTTPRoute rule is resolved to the workloads
whose pods it reaches (`StackView.reach`: a subset through its host's DestinationRule labels, a
host, or a backendRef's Service, through its Service's selector), and a
workload is an Ascend one when its pods request the Ascend accelerator (`ascendResource`) or the
Ascend subset (`ascendSubset`) of some DestinationRule selects them: either is enough, so a name
can add Ascend pods but never hide one.

Any route may carry all traffic (a match that fits every request, a route placed first), so
what is judged is the worst case: the largest share any route gives to Ascend pods. A
destination's share is its weight over the sum of its route's weights (Istio splits by
weight/sum, and so does an HTTPRoute, whose backendRef weight defaults to 1; a route with one
destination sends it everything, REFERENCE.md). A destination
whose pods are a mix of Ascend and other workloads counts wholly as Ascend traffic for the
upper bound (`most`) and not at all for the lower bound (`least`): the policies that guard
Ascend (the step, the capacity, the precision check) judge `most`; the one that lets NVIDIA
shrink (only when every route sends everything to Ascend) judges `least`.

Two things are no served traffic and are left out: mirror destinations (Istio `mirror`, the
HTTPRoute `RequestMirror` filter: copies whose responses are discarded), and tester pins, the
rules that send one header value to one backend (`policies.pins`, recognised precisely;
`AscendShares.pins` keeps them for messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from policies.common import DEFAULT_ASCEND_RESOURCE, config_str, subset_name
from policies.pins import config_pinning, pinned_hardware, reaches_only
from policies.placement import requested_accelerators
from policies.routers import routes_of
from policies.stack_view import Item, Reach, Route, StackView, by_route, destination_text


@dataclass(frozen=True)
class RouteShare:
    """The Ascend share of one route (`http[0]`, `rules[0]`) of one VirtualService or
    HTTPRoute, in %."""

    route_object: Item
    name: str
    reaches: tuple[Reach, ...]
    shares: tuple[Fraction, ...] | None
    """Each destination's share of the route in %, in `reaches` order; None when a weight is
    not a whole number >= 0 (the split cannot be known)."""
    most: Fraction | None
    """% that may land on Ascend pods (destinations reaching any Ascend pod, or unknown)."""
    least: Fraction | None
    """% that surely lands on Ascend pods (destinations reaching only Ascend pods)."""
    ascend: tuple[Item, ...]
    """The Ascend workloads the route reaches."""
    unknown: bool = False
    """True when a destination carrying traffic reaches no known pod (counted in `most`)."""
    pin: str | None = None
    """`nvidia` / `ascend` for a tester pin (`policies.pins`), left out of the share."""

    @property
    def reached(self) -> str:
        """For messages: `Deployment inference/inference-green`, `pods the stack does not
        know`, or `no Ascend pod`."""
        parts = [w.label for w in self.ascend]
        if self.unknown:
            parts.append("pods the stack does not know")
        return ", ".join(parts) or "no Ascend pod"

    @property
    def where(self) -> str:
        """`VirtualService inference/inference-vs route 'split'`."""
        return f"{self.route_object.label} route {self.name!r}"

    def to(self, workload: Item) -> Fraction:
        """% of this route that reaches `workload`'s pods (whole destinations, worst case)."""
        return sum(
            (
                share
                for reach, share in zip(self.reaches, self.shares or (), strict=False)
                if workload.urn in {w.urn for w in reach.workloads}
            ),
            Fraction(0),
        )


@dataclass(frozen=True)
class AscendShares:
    """The Ascend share of every route of the stack, and what kept one from being known."""

    ascend_urns: frozenset[str] = frozenset()
    """URNs of the workloads that run Ascend pods (`ascend_workload_urns`)."""
    routes: list[RouteShare] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    """(message, urn) per destination that carries traffic but reaches no known pod, and per
    route whose weights are not whole numbers: the share cannot be judged (fail closed)."""
    pins: list[RouteShare] = field(default_factory=list)
    """The tester pins, not in `routes`: they carry only requests with the pin header."""

    @property
    def most(self) -> Fraction:
        """The effective Ascend share in %: the largest any route may send to Ascend pods."""
        return max((r.most for r in self.routes if r.most is not None), default=Fraction(0))

    @property
    def least(self) -> Fraction:
        """The smallest share in % a route surely sends to Ascend pods (0 when unknown)."""
        known = [r.least for r in self.routes if r.least is not None]
        if len(known) < len(self.routes):
            return Fraction(0)
        return min(known, default=Fraction(0))

    def ascend_workloads(self) -> list[tuple[Item, Fraction]]:
        """Each Ascend workload some route reaches, with the largest share in % a route sends
        to its pods (its worst case), in first-reached order."""
        found: dict[str, tuple[Item, Fraction]] = {}
        for route in self.routes:
            for workload in route.ascend:
                share = route.to(workload)
                if workload.urn not in found or share > found[workload.urn][1]:
                    found[workload.urn] = (workload, share)
        return list(found.values())


def percent(share: Fraction | int) -> str:
    """`20%`, or `33.33%` for a share that is no whole number."""
    share = Fraction(share)
    return f"{share.numerator}%" if share.denominator == 1 else f"{float(share):.4g}%"


def ascend_resource(config: Mapping[str, Any]) -> str:
    """Config `ascendResource`: the extended resource Ascend pods request."""
    return config_str(config, "ascendResource", DEFAULT_ASCEND_RESOURCE)


def ascend_workload_urns(view: StackView, config: Mapping[str, Any]) -> set[str]:
    """URNs of the workloads that run Ascend pods: requesting `ascendResource`, or selected
    by the `ascendSubset` subset of any DestinationRule."""
    resource = ascend_resource(config)
    by_request = {
        w.urn for w in view.workloads if requested_accelerators(w.pod_spec or {}, {resource: ""})
    }
    return by_request | {w.urn for w in view.backends(subset_name(config, "ascend"))}


def destination_shares(routes: list[Route]) -> tuple[Fraction, ...] | None:
    """Each destination's share of its route in %; None when a weight is unreadable."""
    if len(routes) == 1:
        return (Fraction(100),)
    weights = [r.weight for r in routes]
    if any(w is None or w < 0 for w in weights):
        return None
    total = sum(weights)  # type: ignore[arg-type]
    if total == 0:
        return tuple(Fraction(0) for _ in routes)
    return tuple(Fraction(100 * w, total) for w in weights)  # type: ignore[operator]


def _weights_text(routes: list[Route]) -> str:
    return ", ".join(f"{destination_text(r)}={r.raw_weight!r}" for r in routes)


def ascend_shares(view: StackView, config: Mapping[str, Any]) -> AscendShares:
    """The Ascend share of every route of every VirtualService and HTTPRoute in `view`; tester
    pins go to `pins`.

    Raises ConfigError (through `config_str`/`subset_name`/`config_pinning`) for a malformed
    `ascendResource`, `ascendSubset` or `testerPinning`.
    """
    ascend = ascend_workload_urns(view, config)
    pinning = config_pinning(config)
    result = AscendShares(frozenset(ascend))
    for vs in view.route_objects:
        for routes in by_route(routes_of(vs)):
            reaches = tuple(view.reach(r) for r in routes)
            shares = destination_shares(routes)
            share = RouteShare(vs, routes[0].route_name, reaches, shares, None, None, ())
            if shares is None:
                result.problems.append(
                    (
                        f"{share.where} has weights {_weights_text(routes)}: not whole numbers "
                        ">= 0, so its Ascend share cannot be judged",
                        vs.urn,
                    )
                )
            most = least = Fraction(0)
            unknown = False
            reached: dict[str, Item] = {}
            for reach, each in zip(reaches, shares or [None] * len(reaches), strict=True):
                if reach.problem:
                    if each != 0:  # a destination carrying no traffic sends nothing anywhere
                        result.problems.append(
                            (
                                f"{share.where} destination {destination_text(reach.route)}: "
                                f"{reach.problem}",
                                vs.urn,
                            )
                        )
                    most += each or 0  # unknown pods may be Ascend pods
                    unknown = unknown or each != 0
                    continue
                hits = [w for w in reach.workloads if w.urn in ascend]
                for workload in hits:
                    reached.setdefault(workload.urn, workload)
                if hits:
                    most += each or 0
                if hits and len(hits) == len(reach.workloads):
                    least += each or 0
            pin = pinned_hardware(vs.kind, routes[0].entry, pinning)
            if pin and not reaches_only(
                pin, [w.urn for w in reaches[0].workloads], result.ascend_urns
            ):
                pin = None  # a pin's shape, but it sends its requests elsewhere: judge it
            judged = RouteShare(
                vs,
                share.name,
                reaches,
                shares,
                most if shares is not None else None,
                least if shares is not None else None,
                tuple(reached.values()),
                unknown,
                pin,
            )
            (result.pins if pin else result.routes).append(judged)
    return result


def nvidia_backend(shares: AscendShares, config: Mapping[str, Any]) -> tuple[Item | None, str]:
    """The one workload a rollback sends traffic back to, or (None, why not).

    It is the non-Ascend workload the destinations naming the `nvidiaSubset` subset reach
    (resolved under their own host), else the one non-Ascend workload any destination reaches
    (a split by per-backend hosts). Raises ConfigError for a malformed `nvidiaSubset`.
    """
    name = subset_name(config, "nvidia")

    def others(named_only: bool) -> dict[str, Item]:
        found: dict[str, Item] = {}
        for route in shares.routes:
            for reach in route.reaches:
                if named_only and reach.route.subset != name:
                    continue
                for workload in reach.workloads:
                    if workload.urn not in shares.ascend_urns:
                        found.setdefault(workload.urn, workload)
        return found

    found = others(named_only=True) or others(named_only=False)
    if len(found) == 1:
        return next(iter(found.values())), ""
    if not found:
        return None, f"no route reaches the pods of a workload other than Ascend (subset {name!r})"
    names = ", ".join(sorted(w.label for w in found.values()))
    return None, f"the routes reach several non-Ascend workloads: {names}"


def backend_workload(
    view: StackView, config: Mapping[str, Any], hardware: str
) -> tuple[Item | None, str]:
    """The one workload serving `hardware` (`nvidia` | `ascend`), or (None, why not), under
    either router: the workload behind its subset (`StackView.backend`); in a stack without
    DestinationRules (an HTTPRoute to the per-backend Services) the one the routes reach:
    Ascend's by the Ascend pods it reaches, NVIDIA's as the one other workload
    (`nvidia_backend`). Raises ConfigError for a malformed subset, resource or pin config."""
    workload, why = view.backend(subset_name(config, hardware))
    if workload is not None or view.destination_rules:
        return workload, why
    shares = ascend_shares(view, config)
    if hardware == "nvidia":
        return nvidia_backend(shares, config)
    found = [workload for workload, _share in shares.ascend_workloads()]
    if len(found) == 1:
        return found[0], ""
    if not found:
        return None, "no route reaches the pods of an Ascend workload"
    return None, f"the routes reach several Ascend workloads: {', '.join(w.label for w in found)}"
