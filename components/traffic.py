"""The traffic split: the shared Service and the router's objects (`router` stack key).

- `router: istio` (default): Istio DestinationRule (subsets) and VirtualService, bound to the
  mesh and to `istio.gateways`.
- `router: gateway-api`: an HTTPRoute to the direct per-hardware Services
  (`components.http_route`). While `istio.gateways` is still set, the VirtualService and its
  DestinationRule stay, bound to those classic Istio gateways only (not the mesh): ingress
  through them keeps its split until its clients have moved to a Gateway API Gateway (the
  cut-over in README "Routers").

Both routers render the same three rules in the same order: a pin per backend (header
`testerPinning.header`, when enabled), then the weighted split `100 - w` / `w`, mirroring
`mirrorPercent` % of requests to Ascend at weight 0.

Istio facts (REFERENCE.md, istio.io traffic-management docs): route weights are int32; a total
of 0 is rejected and older meshes require exactly 100, so both routes are always emitted as
integers `100 - w` and `w`, including `weight: 0`. A route to an undefined subset, or a subset
whose labels select no pod, answers 503 (istioctl IST0101 / IST0173). HTTP routes are tried in
order and the first match wins, so the pins come first. Header match keys must be lowercase.
`mirror` + `mirrorPercentage.value` (0..100, a double) copy that share of the route's requests
to the mirror destination; Envoy discards the copies' responses and suffixes their Host with
`-shadow`.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.http_route import (
    GATEWAY_API_VERSION,
    SPLIT_RULE,
    http_route_spec,
    pin_rule_name,
)
from components.naming import service_host, subset_labels
from components.settings import HARDWARE, TOTAL_WEIGHT, Hardware, Settings
from components.workloads import PORT_NAME

ISTIO_API_VERSIONS = ("networking.istio.io/v1", "networking.istio.io/v1beta1")


def route_weights(ascend_weight: int) -> dict[str, int]:
    """Integer route weights {nvidia: 100 - w, ascend: w}; raises ValueError outside 0..100."""
    if isinstance(ascend_weight, bool) or not isinstance(ascend_weight, int):
        raise ValueError(f"ascend weight must be an integer, got {ascend_weight!r}")
    if not 0 <= ascend_weight <= TOTAL_WEIGHT:
        raise ValueError(f"ascend weight {ascend_weight} is outside 0..{TOTAL_WEIGHT}")
    return {"nvidia": TOTAL_WEIGHT - ascend_weight, "ascend": ascend_weight}


def shared_service_spec(settings: Settings) -> dict[str, Any]:
    """The Service clients call: selects the pods of both backends by `app`."""
    return {
        "selector": {"app": settings.service.name},
        "ports": [{"name": PORT_NAME, "port": settings.service.port, "targetPort": PORT_NAME}],
    }


def destination_rule_spec(settings: Settings) -> dict[str, Any]:
    """Subsets `nvidia` and `ascend`, each selecting its pods by {app, hardware}."""
    return {
        "host": service_host(settings, settings.service.name),
        "subsets": [{"name": hw, "labels": subset_labels(settings, hw)} for hw in HARDWARE],
    }


def renders_virtual_service(settings: Settings) -> bool:
    """The VirtualService (and DestinationRule) exist: `router: istio`, or classic Istio
    gateways still bound during a cut-over to `gateway-api`."""
    return settings.router == "istio" or bool(settings.istio.gateways)


def renders_http_route(settings: Settings) -> bool:
    """The HTTPRoute exists: `router: gateway-api`."""
    return settings.router == "gateway-api"


def split_route_index(settings: Settings) -> int:
    """Position of the weighted route in the VirtualService's `http` list (after the pins)."""
    return len(HARDWARE) if settings.tester_pinning.enabled else 0


def _istio_destination(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    return {
        "host": service_host(settings, settings.service.name),
        "subset": hardware,
        "port": {"number": settings.service.port},
    }


def _pin_routes(settings: Settings) -> list[dict[str, Any]]:
    pinning = settings.tester_pinning
    if not pinning.enabled:
        return []
    return [
        {
            "name": pin_rule_name(hw),
            "match": [{"headers": {pinning.header: {"exact": pinning.value(hw)}}}],
            "route": [{"destination": _istio_destination(settings, hw)}],
        }
        for hw in HARDWARE
    ]


def virtual_service_spec(settings: Settings) -> dict[str, Any]:
    """The pins, then one HTTP route splitting traffic between the subsets by the stack's
    Ascend weight (mirroring `mirrorPercent` % to Ascend). Bound to the mesh (implicitly, or
    next to `istio.gateways`) with `router: istio`; to `istio.gateways` only otherwise."""
    host = service_host(settings, settings.service.name)
    weights = route_weights(settings.ascend_weight)
    spec: dict[str, Any] = {"hosts": [host, *settings.istio.hosts]}
    mesh = ["mesh"] if settings.router == "istio" else []
    if settings.istio.gateways:
        # Binding a gateway replaces the implicit `mesh`; keep sidecar traffic split too.
        spec["gateways"] = [*settings.istio.gateways, *mesh]
    split: dict[str, Any] = {
        "name": SPLIT_RULE,
        "route": [
            {"destination": _istio_destination(settings, hw), "weight": weights[hw]}
            for hw in HARDWARE
        ],
    }
    if settings.mirror_percent:
        split["mirror"] = _istio_destination(settings, "ascend")
        split["mirrorPercentage"] = {"value": float(settings.mirror_percent)}
    return spec | {"http": [*_pin_routes(settings), split]}


def _other_api_versions(api_version: str, kind: str) -> list[pulumi.Alias]:
    # Changing the apiVersion changes the type token; alias it so Pulumi updates in place.
    return [
        pulumi.Alias(type_=f"kubernetes:{other}:{kind}")
        for other in ISTIO_API_VERSIONS
        if other != api_version
    ]


class TrafficSplit(pulumi.ComponentResource):
    """The shared Service and the router objects that send `ascendWeight` % to Ascend."""

    virtual_service_name: pulumi.Output[str | None]
    http_route_name: pulumi.Output[str | None]
    weights: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.TRAFFIC_TYPE, name, None, opts)
        api_version = settings.istio.api_version
        labels = {"app": settings.service.name}

        def meta(object_name: str) -> dict[str, Any]:
            return {"name": object_name, "namespace": settings.namespace, "labels": labels}

        def child(kind: str) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self, aliases=_other_api_versions(api_version, kind)
            )

        service = k8s.core.v1.Service(
            names.child(name, names.SERVICE),
            metadata=meta(settings.service.name),
            spec=shared_service_spec(settings),
            opts=pulumi.ResourceOptions(parent=self),
        )
        if renders_virtual_service(settings):
            destination_rule = k8s.apiextensions.CustomResource(
                names.child(name, names.DESTINATION_RULE),
                api_version=api_version,
                kind="DestinationRule",
                metadata=meta(settings.istio.destination_rule_name),
                spec=destination_rule_spec(settings),
                opts=child("DestinationRule"),
            )
            k8s.apiextensions.CustomResource(
                names.child(name, names.VIRTUAL_SERVICE),
                api_version=api_version,
                kind="VirtualService",
                metadata=meta(settings.istio.virtual_service_name),
                spec=virtual_service_spec(settings),
                opts=pulumi.ResourceOptions.merge(
                    child("VirtualService"),
                    pulumi.ResourceOptions(depends_on=[service, destination_rule]),
                ),
            )
        if renders_http_route(settings):
            k8s.apiextensions.CustomResource(
                names.child(name, names.HTTP_ROUTE),
                api_version=GATEWAY_API_VERSION,
                kind="HTTPRoute",
                metadata=meta(settings.gateway_api.route_name),
                spec=http_route_spec(settings, route_weights(settings.ascend_weight)),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[service]),
            )
        vs_name = settings.istio.virtual_service_name if renders_virtual_service(settings) else None
        route_name = settings.gateway_api.route_name if renders_http_route(settings) else None
        self.virtual_service_name = pulumi.Output.from_input(vs_name)
        self.http_route_name = pulumi.Output.from_input(route_name)
        self.weights = pulumi.Output.from_input(route_weights(settings.ascend_weight))
        self.service_name = service.metadata.name
        self.register_outputs(
            {
                "virtual_service_name": self.virtual_service_name,
                "http_route_name": self.http_route_name,
                "weights": self.weights,
                "service_name": self.service_name,
            }
        )
