"""The traffic split of a stack as the stack policies see it: routes, subsets, backends, and
where each route destination really sends its traffic. Each router's objects are read by its
own reader (`policies.routers.istio`, `policies.routers.gateway_api`) into `Route`s; this
module resolves a route's destination to the pods it reaches, under either router.

Istio facts used (istio.io traffic-management reference, VirtualService and DestinationRule;
istioctl analyze IST0101/IST0173): a short host name in a rule means
`<host>.<rule namespace>.svc.cluster.local`; a destination host is a Service (its pods are the
Service's endpoints); a subset is the part of its HOST's endpoints whose labels match the
subset's labels in a DestinationRule of that host; a route to a subset that no DestinationRule
of its host defines answers 503; a subset whose labels select no pod answers
`503 UH no_healthy_upstream`. Kubernetes facts (kubernetes.io, "Service"): a Service's
endpoints are the pods in its namespace whose labels match its `selector`; a Service without a
selector (or of type ExternalName) has no pod endpoints the cluster manages. An HTTPRoute's
backendRefs name Services, so they resolve like a host without a subset.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from policies.common import (
    as_int,
    describe,
    kind_of,
    mapping,
    path,
    pod_labels,
    pod_template_spec,
    sequence,
)

CLUSTER_DOMAIN = "svc.cluster.local"


@dataclass(frozen=True)
class Item:
    """One resource of the stack with what the policies ask of it."""

    resource_type: str
    props: Mapping[str, Any]
    urn: str
    kind: str
    namespace: str
    label: str
    """How messages name it: `Deployment inference/inference-green`."""

    @functools.cached_property
    def pod_labels(self) -> Mapping[str, Any]:
        """Labels of the pods it runs ({} for non-workloads), as a plain dict read once: the
        props are the engine's proxies, slow to read again for every destination matched."""
        return dict(pod_labels(self.kind, self.props))

    @functools.cached_property
    def pod_spec(self) -> Mapping[str, Any] | None:
        """Its pod spec, or None when it runs no pods."""
        return pod_template_spec(self.kind, self.props)


@dataclass(frozen=True)
class Route:
    """One weighted destination of one route of a route object (a VirtualService route's
    destination, an HTTPRoute rule's backendRef), as the router's reader gives it
    (`policies.routers`)."""

    route_object: Item
    """The VirtualService or HTTPRoute the route belongs to."""
    route_name: str
    """How messages name the route: its `name`, else `http[0]` (`tcp[0]`, `rules[0]`)."""
    route_key: str
    """The route's place in its object, unique within it: `http[0]`, `tcp[1]`, `rules[0]`."""
    host: str
    """Fully qualified destination host."""
    subset: str | None
    weight: int | None
    """Integer weight in %; None when the value is not an integer (or is missing beside others)."""
    raw_weight: Any
    entry: Mapping[str, Any] = field(default_factory=dict, compare=False)
    """The whole route entry (a VirtualService `http` entry, an HTTPRoute rule)."""


@dataclass(frozen=True)
class Reach:
    """Where one destination sends its traffic (`StackView.reach`)."""

    route: Route
    workloads: tuple[Item, ...]
    """The workloads whose pods receive the destination's traffic; () when none is known."""
    problem: str = ""
    """Why the destination reaches no known pod, for messages; "" when it reaches some."""


def by_route(destinations: Iterable[Route]) -> list[list[Route]]:
    """`destinations` (a router reader's `routes(item)` of one object) grouped into its routes:
    one list per `route_key`, routes and their destinations in the object's order."""
    grouped: dict[str, list[Route]] = {}
    for route in destinations:
        grouped.setdefault(route.route_key, []).append(route)
    return list(grouped.values())


def fqdn(host: str, namespace: str) -> str:
    """`inference-service` in `inference` -> `inference-service.inference.svc.cluster.local`."""
    if "." not in host:
        return f"{host}.{namespace or 'default'}.{CLUSTER_DOMAIN}"
    if host.count(".") == 1:
        return f"{host}.{CLUSTER_DOMAIN}"
    return host


def selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """True when every `selector` label is in `labels` with the same value (empty selects all)."""
    return all(labels.get(key) == value for key, value in selector.items())


def _item(resource: Any) -> Item:
    props = mapping(resource.props)
    return Item(
        resource_type=resource.resource_type,
        props=props,
        urn=resource.urn,
        kind=kind_of(resource.resource_type),
        namespace=str(path(props, "metadata", "namespace") or ""),
        label=describe(resource.resource_type, props),
    )


def destination_text(route: Route) -> str:
    """How messages name a destination: `<host> subset 'ascend'`, or the host alone."""
    return f"{route.host} subset {route.subset!r}" if route.subset else route.host


def rule_host(rule: Item) -> str:
    """The fully qualified host of a DestinationRule item."""
    return fqdn(str(path(rule.props, "spec", "host") or ""), rule.namespace)


def rule_subsets(rule: Item) -> dict[str, Mapping[str, Any]]:
    """Subset name -> labels of one DestinationRule item."""
    found: dict[str, Mapping[str, Any]] = {}
    for entry in sequence(path(rule.props, "spec", "subsets")):
        entry = mapping(entry)
        if entry.get("name"):
            found[str(entry["name"])] = mapping(entry.get("labels"))
    return found


@dataclass
class StackView:
    """The stack's workloads, Services and Istio objects, indexed once per validation."""

    workloads: list[Item] = field(default_factory=list)
    services: list[Item] = field(default_factory=list)
    virtual_services: list[Item] = field(default_factory=list)
    destination_rules: list[Item] = field(default_factory=list)
    _memo: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)
    """Answers already worked out ((question, key) -> answer): a fleet's views are asked the
    same hosts and Services for every route, and the props are the engine's slow proxies."""
    http_routes: list[Item] = field(default_factory=list)

    @classmethod
    def of(cls, resources: Iterable[Any]) -> StackView:
        """Index `PolicyResource`s (anything with resource_type, props and urn)."""
        view = cls()
        for resource in resources:
            kind = kind_of(resource.resource_type)
            if (
                kind in ("VirtualService", "DestinationRule", "Service", "HTTPRoute")
                or pod_template_spec(kind, mapping(resource.props)) is not None
            ):
                item = _item(resource)
                {
                    "VirtualService": view.virtual_services,
                    "DestinationRule": view.destination_rules,
                    "Service": view.services,
                    "HTTPRoute": view.http_routes,
                }.get(kind, view.workloads).append(item)
        return view

    @property
    def route_objects(self) -> list[Item]:
        """Every object that routes traffic: the VirtualServices, then the HTTPRoutes (read by
        their router's reader, `policies.routers`)."""
        return [*self.virtual_services, *self.http_routes]

    def subset_labels(self, host: str, subset: str) -> list[Mapping[str, Any]]:
        """The labels `subset` has in each DestinationRule whose host is `host` (FQDN): one
        entry per rule defining it, none when no rule of THAT host does (a subset of the same
        name under another host is another subset)."""
        return [
            labels
            for subsets in self._rules_by_host().get(host, ())
            if (labels := subsets.get(subset)) is not None
        ]

    def _rules_by_host(self) -> dict[str, list[dict[str, Mapping[str, Any]]]]:
        """{host (FQDN): each DestinationRule of that host's subsets}, in rule order: read once
        per view (a fleet's routes ask it once per destination)."""
        if ("rules", "") not in self._memo:
            index: dict[str, list[dict[str, Mapping[str, Any]]]] = {}
            for rule in self.destination_rules:
                index.setdefault(rule_host(rule), []).append(rule_subsets(rule))
            self._memo[("rules", "")] = index
        return self._memo[("rules", "")]

    def service(self, host: str) -> Item | None:
        """The stack's Service whose cluster-local name is `host` (FQDN), or None."""
        if ("service", host) not in self._memo:
            self._memo[("service", host)] = self._find_service(host)
        return self._memo[("service", host)]

    def _find_service(self, host: str) -> Item | None:
        for service in self.services:
            name = path(service.props, "metadata", "name")
            if name and fqdn(str(name), service.namespace) == host:
                return service
        return None

    def service_pods(self, service: Item) -> list[Item]:
        """Workloads whose pods are endpoints of `service`: in its namespace, carrying every
        label of its selector; [] for a Service without a selector or of type ExternalName (no
        pod endpoints)."""
        if ("pods", service.urn) not in self._memo:
            self._memo[("pods", service.urn)] = self._find_service_pods(service)
        return self._memo[("pods", service.urn)]

    def _find_service_pods(self, service: Item) -> list[Item]:
        spec = mapping(service.props.get("spec"))
        selector = dict(mapping(spec.get("selector")))
        if not selector or spec.get("type") == "ExternalName":
            return []
        namespace = service.namespace or "default"
        return [
            w
            for w in self.workloads
            if (w.namespace or "default") == namespace and selects(selector, w.pod_labels)
        ]

    def selected_workloads(
        self, namespace: str, labels: Mapping[str, Any], host: str | None = None
    ) -> list[Item]:
        """Workloads whose pods carry `labels`: among the endpoints of the stack's Service
        behind `host` when there is one, else among the workloads in `namespace`."""
        service = self.service(host) if host else None
        if service is not None:
            return [w for w in self.service_pods(service) if selects(labels, w.pod_labels)]
        return [
            w
            for w in self.workloads
            if (w.namespace or "default") == (namespace or "default")
            and selects(labels, w.pod_labels)
        ]

    def reach(self, route: Route) -> Reach:
        """Where one destination sends its traffic: the workloads whose pods it reaches.

        A host must be a Service of the stack (else nothing is known of where it goes); a
        subset must be defined by a DestinationRule of that host; the pods are the Service's
        endpoints, narrowed by the subset's labels (by each defining rule's labels when several
        rules of the host define it: any of them may apply). `problem` says why a destination
        reaches no known pod ("" when it reaches some).
        """
        service = self.service(route.host)
        if service is None:
            return Reach(
                route,
                (),
                f"{route.host} is no Service of the stack: where it sends traffic cannot be "
                "known; route to a Service the stack defines",
            )
        pods = self.service_pods(service)
        if not pods:
            return Reach(
                route,
                (),
                f"{service.label} selects no pod of any workload in the stack (503 UH "
                "no_healthy_upstream); make its selector match a pod template",
            )
        if route.subset is None:
            return Reach(route, tuple(pods))
        definitions = self.subset_labels(route.host, route.subset)
        if not definitions:
            return Reach(
                route,
                (),
                f"subset {route.subset!r} of {route.host}, which no DestinationRule in the "
                "stack defines (503 for that share); define the subset or fix the route",
            )
        found: dict[str, Item] = {}
        for labels in definitions:
            for workload in pods:
                if selects(labels, workload.pod_labels):
                    found.setdefault(workload.urn, workload)
        if not found:
            return Reach(
                route,
                (),
                f"subset {route.subset!r} of {route.host} selects no pod of {service.label} "
                "(503 UH no_healthy_upstream); make the subset's labels match a pod template",
            )
        return Reach(route, tuple(found.values()))

    def backends(self, subset: str) -> list[Item]:
        """Workloads behind `subset` in any DestinationRule defining it (no duplicates), each
        rule's subset resolved among the endpoints of that rule's own host."""
        found: dict[str, Item] = {}
        for rule in self.destination_rules:
            labels = rule_subsets(rule).get(subset)
            if labels is not None:
                for workload in self.selected_workloads(rule.namespace, labels, rule_host(rule)):
                    found.setdefault(workload.urn, workload)
        return list(found.values())

    def backend(self, subset: str) -> tuple[Item | None, str]:
        """The one workload behind `subset`, or (None, why not) when there are none or several."""
        found = self.backends(subset)
        if len(found) == 1:
            return found[0], ""
        if not found:
            return None, f"no workload in the stack runs the pods of subset {subset!r}"
        names = ", ".join(sorted(w.label for w in found))
        return None, f"subset {subset!r} selects the pods of several workloads: {names}"


def replicas(workload: Item) -> int | None:
    """`spec.replicas` as an int (Kubernetes default 1 when unset); None when not a number."""
    raw = path(workload.props, "spec", "replicas")
    return 1 if raw is None else as_int(raw)


def container_images(workload: Item) -> list[tuple[str, Any]]:
    """(container name, image) of the workload's app containers (not init containers)."""
    spec = workload.pod_spec or {}
    return [
        (str(mapping(c).get("name") or "?"), mapping(c).get("image"))
        for c in sequence(spec.get("containers"))
    ]
