"""The traffic split of a stack as the stack policies see it: routes, subsets and backends.

Istio facts used (istio.io traffic-management reference; istioctl analyze IST0101/IST0173):
a short host name in a rule means `<host>.<rule namespace>.svc.cluster.local`; a route to a
subset that no DestinationRule of its host defines answers 503; a subset whose labels select no
pod answers `503 UH no_healthy_upstream`; a route with one destination and no weight takes all
traffic, and an omitted weight beside other destinations counts as 0.
"""

from __future__ import annotations

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

    @property
    def pod_labels(self) -> Mapping[str, Any]:
        """Labels of the pods it runs ({} for non-workloads)."""
        return pod_labels(self.kind, self.props)

    @property
    def pod_spec(self) -> Mapping[str, Any] | None:
        """Its pod spec, or None when it runs no pods."""
        return pod_template_spec(self.kind, self.props)


@dataclass(frozen=True)
class Route:
    """One weighted destination of one HTTP route of a VirtualService."""

    virtual_service: Item
    route_name: str
    host: str
    """Fully qualified destination host."""
    subset: str | None
    weight: int | None
    """Integer weight in %; None when the value is not an integer (or is missing beside others)."""
    raw_weight: Any
    siblings: int
    """Number of destinations in the same route (1 = takes all traffic)."""


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


def routes_of(vs: Item) -> list[Route]:
    """Every weighted destination of every HTTP route of a VirtualService item."""
    found = []
    for index, http in enumerate(sequence(path(vs.props, "spec", "http"))):
        http = mapping(http)
        destinations = [mapping(r) for r in sequence(http.get("route"))]
        name = str(http.get("name") or f"http[{index}]")
        for dest in destinations:
            raw = dest.get("weight")
            # No weight: all traffic when alone; beside others we demand an explicit integer.
            alone = 100 if len(destinations) == 1 else None
            weight = alone if raw is None else as_int(raw)
            host = path(dest, "destination", "host")
            subset = path(dest, "destination", "subset")
            found.append(
                Route(
                    virtual_service=vs,
                    route_name=name,
                    host=fqdn(str(host or ""), vs.namespace),
                    subset=str(subset) if subset else None,
                    weight=weight,
                    raw_weight=raw,
                    siblings=len(destinations),
                )
            )
    return found


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

    @classmethod
    def of(cls, resources: Iterable[Any]) -> StackView:
        """Index `PolicyResource`s (anything with resource_type, props and urn)."""
        view = cls()
        for resource in resources:
            kind = kind_of(resource.resource_type)
            if (
                kind in ("VirtualService", "DestinationRule", "Service")
                or pod_template_spec(kind, mapping(resource.props)) is not None
            ):
                item = _item(resource)
                {
                    "VirtualService": view.virtual_services,
                    "DestinationRule": view.destination_rules,
                    "Service": view.services,
                }.get(kind, view.workloads).append(item)
        return view

    def routes(self) -> list[Route]:
        """Every weighted destination of every VirtualService."""
        return [route for vs in self.virtual_services for route in routes_of(vs)]

    def routes_to(self, subset: str) -> list[Route]:
        """The destinations that name `subset`."""
        return [route for route in self.routes() if route.subset == subset]

    def subsets(self, host: str) -> dict[str, Mapping[str, Any]]:
        """Subset name -> labels, over every DestinationRule whose host is `host` (FQDN)."""
        found: dict[str, Mapping[str, Any]] = {}
        for rule in self.destination_rules:
            if rule_host(rule) == host:
                for name, labels in rule_subsets(rule).items():
                    found.setdefault(name, labels)
        return found

    def service_selector(self, host: str) -> Mapping[str, Any] | None:
        """The selector of the stack's Service behind `host`, or None when it is not here."""
        for service in self.services:
            name = path(service.props, "metadata", "name")
            if name and fqdn(str(name), service.namespace) == host:
                return mapping(path(service.props, "spec", "selector"))
        return None

    def selected_workloads(
        self, namespace: str, labels: Mapping[str, Any], host: str | None = None
    ) -> list[Item]:
        """Workloads in `namespace` whose pods carry `labels` (and the host Service's selector)."""
        service = self.service_selector(host) if host else None
        return [
            w
            for w in self.workloads
            if w.namespace == namespace
            and selects(labels, w.pod_labels)
            and (service is None or selects(service, w.pod_labels))
        ]

    def backends(self, subset: str) -> list[Item]:
        """Workloads behind `subset` in any DestinationRule defining it (no duplicates)."""
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
