"""The Istio router (`router: istio`, the default): a DestinationRule (subsets) and a
VirtualService splitting traffic between them, bound to the mesh and to `istio.gateways`
(pure functions: settings -> spec dicts, and the patch of a live VirtualService).

With `router: gateway-api` the VirtualService and its DestinationRule stay while
`istio.gateways` is still set, bound to those classic Istio gateways only (not the mesh):
ingress through them keeps its split until its clients have moved to a Gateway API Gateway (the
cut-over in docs/routers.md).

Istio facts (REFERENCE.md, istio.io traffic-management docs): route weights are int32; a total
of 0 is rejected and older meshes require exactly 100, so both routes are always emitted as
integers `100 - w` and `w`, including `weight: 0`. A route to an undefined subset, or a subset
whose labels select no pod, answers 503 (istioctl IST0101 / IST0173). HTTP routes are tried in
order and the first match wins, so the pins come first. Header match keys must be lowercase.
`mirror` + `mirrorPercentage.value` (0..100, a double) copy that share of the route's requests
to the mirror destination; Envoy discards the copies' responses and suffixes their Host with
`-shadow`.

Same interface as `components.routers.gateway_api`: `KIND`, `ROLE`, `renders`, `type_token`,
`object_name`, `spec`, `patch`, `kubectl_patch`.
"""

from __future__ import annotations

from typing import Any

from components import resource_names as names
from components.naming import SPLIT_RULE, pin_rule_name, service_host, subset_labels
from components.routers.json_patch import kubectl_patch_command, weight_patch
from components.settings import HARDWARE, Hardware, Settings

API_VERSIONS = ("networking.istio.io/v1", "networking.istio.io/v1beta1")
"""The Istio networking versions a stack may render (`istio.apiVersion`); the others are
aliases of the registered one, so a change of version updates in place."""
KIND = "VirtualService"
ROLE = names.VIRTUAL_SERVICE
"""Role of the VirtualService under the TrafficSplit (`inference-traffic-virtual-service`)."""


def renders(settings: Settings) -> bool:
    """The VirtualService (and DestinationRule) exist: `router: istio`, or classic Istio
    gateways still bound during a cut-over to `gateway-api`."""
    return settings.router == "istio" or bool(settings.istio.gateways)


def type_token(settings: Settings) -> str:
    """`kubernetes:networking.istio.io/v1:VirtualService` (of `istio.apiVersion`)."""
    return f"kubernetes:{settings.istio.api_version}:{KIND}"


def object_name(settings: Settings) -> str:
    """The VirtualService's name (`istio.virtualServiceName`)."""
    return settings.istio.virtual_service_name


def destination_rule_spec(settings: Settings) -> dict[str, Any]:
    """Subsets `nvidia` and `ascend`, each selecting its pods by {app, hardware}."""
    return {
        "host": service_host(settings, settings.service.name),
        "subsets": [{"name": hw, "labels": subset_labels(settings, hw)} for hw in HARDWARE],
    }


def _destination(settings: Settings, hardware: Hardware) -> dict[str, Any]:
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
            "route": [{"destination": _destination(settings, hw)}],
        }
        for hw in HARDWARE
    ]


def spec(settings: Settings, weights: dict[str, int]) -> dict[str, Any]:
    """The VirtualService's spec: the pins, then one HTTP route splitting traffic between the
    subsets by `weights` ({nvidia, ascend} in %, `components.traffic.route_weights`),
    mirroring `mirrorPercent` % to Ascend. Bound to the mesh (implicitly, or next to
    `istio.gateways`) with `router: istio`; to `istio.gateways` only otherwise."""
    host = service_host(settings, settings.service.name)
    found: dict[str, Any] = {"hosts": [host, *settings.istio.hosts]}
    mesh = ["mesh"] if settings.router == "istio" else []
    if settings.istio.gateways:
        # Binding a gateway replaces the implicit `mesh`; keep sidecar traffic split too.
        found["gateways"] = [*settings.istio.gateways, *mesh]
    split: dict[str, Any] = {
        "name": SPLIT_RULE,
        "route": [
            {"destination": _destination(settings, hw), "weight": weights[hw]} for hw in HARDWARE
        ],
    }
    if settings.mirror_percent:
        split["mirror"] = _destination(settings, "ascend")
        split["mirrorPercentage"] = {"value": float(settings.mirror_percent)}
    return found | {"http": [*_pin_routes(settings), split]}


def patch(settings: Settings, weights: dict[str, int]) -> list[dict]:
    """JSON patch setting the live VirtualService's split to `weights`, guarded by `test` ops
    that check each route still points at the subset we expect (else kubectl changes
    nothing). The split is the `http` route after the pins, as `spec` writes it."""
    routes = f"/spec/http/{len(_pin_routes(settings))}/route"
    return weight_patch(routes, "destination/subset", {hw: hw for hw in HARDWARE}, weights)


def kubectl_patch(settings: Settings, weights: dict[str, int]) -> str:
    """`kubectl -n NS patch virtualservices.networking.istio.io NAME --type json -p '<patch>'`."""
    return kubectl_patch_command(
        settings.namespace,
        "virtualservices.networking.istio.io",
        object_name(settings),
        patch(settings, weights),
    )
