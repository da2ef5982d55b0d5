"""The traffic split: the shared Service, the one weight rule, and the router's objects
(`router` stack key; one module per router in `components/routers/`).

- `router: istio` (default): Istio DestinationRule (subsets) and VirtualService, bound to the
  mesh and to `istio.gateways` (`components.routers.istio`).
- `router: gateway-api`: an HTTPRoute to the direct per-hardware Services
  (`components.routers.gateway_api`). While `istio.gateways` is still set, the VirtualService
  and its DestinationRule stay, bound to those classic Istio gateways only (the cut-over in
  README "Routers").

Both routers render the same three rules in the same order: a pin per backend (header
`testerPinning.header`, when enabled), then the weighted split `100 - w` / `w`
(`route_weights`), mirroring `mirrorPercent` % of requests to Ascend at weight 0.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.routers import gateway_api, istio
from components.settings import TOTAL_WEIGHT, Settings
from components.workloads import PORT_NAME


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


def _other_api_versions(api_version: str, kind: str) -> list[pulumi.Alias]:
    # Changing the apiVersion changes the type token; alias it so Pulumi updates in place.
    return [
        pulumi.Alias(type_=f"kubernetes:{other}:{kind}")
        for other in istio.API_VERSIONS
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
        weights = route_weights(settings.ascend_weight)
        if istio.renders(settings):
            destination_rule = k8s.apiextensions.CustomResource(
                names.child(name, names.DESTINATION_RULE),
                api_version=api_version,
                kind="DestinationRule",
                metadata=meta(settings.istio.destination_rule_name),
                spec=istio.destination_rule_spec(settings),
                opts=child("DestinationRule"),
            )
            k8s.apiextensions.CustomResource(
                names.child(name, istio.ROLE),
                api_version=api_version,
                kind=istio.KIND,
                metadata=meta(istio.object_name(settings)),
                spec=istio.spec(settings, weights),
                opts=pulumi.ResourceOptions.merge(
                    child(istio.KIND),
                    pulumi.ResourceOptions(depends_on=[service, destination_rule]),
                ),
            )
        if gateway_api.renders(settings):
            k8s.apiextensions.CustomResource(
                names.child(name, gateway_api.ROLE),
                api_version=gateway_api.API_VERSION,
                kind=gateway_api.KIND,
                metadata=meta(gateway_api.object_name(settings)),
                spec=gateway_api.spec(settings, weights),
                opts=pulumi.ResourceOptions(parent=self, depends_on=[service]),
            )
        vs_name = istio.object_name(settings) if istio.renders(settings) else None
        route_name = gateway_api.object_name(settings) if gateway_api.renders(settings) else None
        self.virtual_service_name = pulumi.Output.from_input(vs_name)
        self.http_route_name = pulumi.Output.from_input(route_name)
        self.weights = pulumi.Output.from_input(weights)
        self.service_name = service.metadata.name
        self.register_outputs(
            {
                "virtual_service_name": self.virtual_service_name,
                "http_route_name": self.http_route_name,
                "weights": self.weights,
                "service_name": self.service_name,
            }
        )
