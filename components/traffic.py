"""The traffic split: the shared Service, the one weight rule, and the router's objects
(`router` stack key; one module per router in `components/routers/`).

- `router: istio` (default): Istio DestinationRule (subsets) and VirtualService, bound to the
  mesh and to `istio.gateways` (`components.routers.istio`).
- `router: gateway-api`: an HTTPRoute to the direct per-hardware Services
  (`components.routers.gateway_api`). While `istio.gateways` is still set, the VirtualService
  and its DestinationRule stay, bound to those classic Istio gateways only (the cut-over in
  docs/routers.md).

Both routers render the same three rules in the same order: a pin per backend (header
`testerPinning.header`, when enabled), then the weighted split `100 - w` / `w`
(`route_weights`), mirroring `mirrorPercent` % of requests to Ascend at weight 0.

Pure functions; `components.resources.TrafficSplit` registers `traffic_manifests`.
"""

from __future__ import annotations

from typing import Any

from components import resource_names as names
from components.manifests import Manifest, manifest, object_metadata
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


def traffic_metadata(settings: Settings, object_name: str) -> dict[str, Any]:
    """`metadata` of a traffic object: `object_name` in the stack's namespace, labelled
    `app=<service>`."""
    return object_metadata(object_name, settings.namespace, {"app": settings.service.name})


def traffic_manifests(name: str, settings: Settings) -> dict[str, Manifest]:
    """The traffic objects by role (`components.resource_names`), each named `<name>-<role>`,
    in the order they are registered: `service` (shared), and as the router renders them
    `destination-rule` and `virtual-service` (`components.routers.istio`), `http-route`
    (`components.routers.gateway_api`), split by `route_weights(ascendWeight)`."""
    weights = route_weights(settings.ascend_weight)
    found = {
        names.SERVICE: manifest(
            names.child(name, names.SERVICE),
            "v1",
            "Service",
            traffic_metadata(settings, settings.service.name),
            {"spec": shared_service_spec(settings)},
        )
    }
    if istio.renders(settings):
        api_version = settings.istio.api_version
        found[names.DESTINATION_RULE] = manifest(
            names.child(name, names.DESTINATION_RULE),
            api_version,
            "DestinationRule",
            traffic_metadata(settings, settings.istio.destination_rule_name),
            {"spec": istio.destination_rule_spec(settings)},
        )
        found[istio.ROLE] = manifest(
            names.child(name, istio.ROLE),
            api_version,
            istio.KIND,
            traffic_metadata(settings, istio.object_name(settings)),
            {"spec": istio.spec(settings, weights)},
        )
    if gateway_api.renders(settings):
        found[gateway_api.ROLE] = manifest(
            names.child(name, gateway_api.ROLE),
            gateway_api.API_VERSION,
            gateway_api.KIND,
            traffic_metadata(settings, gateway_api.object_name(settings)),
            {"spec": gateway_api.spec(settings, weights)},
        )
    return found
