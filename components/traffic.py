"""The traffic split: shared Service, Istio DestinationRule (subsets) and VirtualService.

Istio facts (REFERENCE.md, istio.io traffic-management docs): route weights are int32; a total
of 0 is rejected and older meshes require exactly 100, so both routes are always emitted as
integers `100 - w` and `w`, including `weight: 0`. A route to an undefined subset, or a subset
whose labels select no pod, answers 503 (istioctl IST0101 / IST0173).
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.naming import service_host, subset_labels
from components.settings import HARDWARE, TOTAL_WEIGHT, Settings
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


def virtual_service_spec(settings: Settings) -> dict[str, Any]:
    """One HTTP route splitting traffic between the subsets by the stack's Ascend weight."""
    host = service_host(settings, settings.service.name)
    weights = route_weights(settings.ascend_weight)
    spec: dict[str, Any] = {"hosts": [host, *settings.istio.hosts]}
    if settings.istio.gateways:
        # Binding a gateway replaces the implicit `mesh`; keep sidecar traffic split too.
        spec["gateways"] = [*settings.istio.gateways, "mesh"]
    return spec | {
        "http": [
            {
                "name": "nvidia-ascend-split",
                "route": [
                    {
                        "destination": {
                            "host": host,
                            "subset": hw,
                            "port": {"number": settings.service.port},
                        },
                        "weight": weights[hw],
                    }
                    for hw in HARDWARE
                ],
            }
        ],
    }


def _other_api_versions(api_version: str, kind: str) -> list[pulumi.Alias]:
    # Changing the apiVersion changes the type token; alias it so Pulumi updates in place.
    return [
        pulumi.Alias(type_=f"kubernetes:{other}:{kind}")
        for other in ISTIO_API_VERSIONS
        if other != api_version
    ]


class TrafficSplit(pulumi.ComponentResource):
    """The shared Service and the Istio objects that send `ascendWeight` % to Ascend."""

    virtual_service_name: pulumi.Output[str]
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
        self.virtual_service_name = pulumi.Output.from_input(settings.istio.virtual_service_name)
        self.weights = pulumi.Output.from_input(route_weights(settings.ascend_weight))
        self.service_name = service.metadata.name
        self.register_outputs(
            {
                "virtual_service_name": self.virtual_service_name,
                "weights": self.weights,
                "service_name": self.service_name,
            }
        )
