"""The Gateway API router (`router: gateway-api`): one HTTPRoute
(`gateway.networking.k8s.io/v1`) splitting traffic between the direct per-hardware Services
(pure functions: settings -> spec dicts, and the patch of a live HTTPRoute).

Gateway API facts (REFERENCE.md "Gateway API", checked against the vendored schema
`dualstack/offline/crd_schemas/gateway.networking.k8s.io/httproute_v1.json`, v1.6.1):
- `backendRefs[].weight` is an int32 proportion 0..1000000 (weight / sum), DEFAULT 1: an
  omitted weight sends traffic, so both backends always carry an explicit weight, the idle
  one `weight: 0`. They are emitted as `100 - w` and `w`, never both 0 (what an all-zero rule
  does differs by implementation: kgateway#11548, kuma#18266, istio#31745).
- DestinationRule subsets cannot be named from an HTTPRoute: each backend is its own Service
  (`components.workloads`, `inference-service-nvidia` / `-ascend`, selecting {app, hardware},
  the same pods the Istio subsets select).
- A parentRef of kind Gateway routes north-south traffic through that Gateway; a parentRef to
  a Service (group "", kind Service; GAMMA, GEP-1426) routes mesh traffic sent to it.
- Rule precedence is not list order: among the rules whose matches fit a request, the one
  with more header matches wins over one with the same path and fewer (HTTPRoute spec,
  "matches"). The pin rules (one header match) therefore beat the split (no match, i.e.
  PathPrefix `/`), and they are also listed first, as in the VirtualService.
- `filters[].requestMirror {backendRef, percent}` (GEP-3171) copies that share of the rule's
  requests to the backend; the copies' responses are discarded.
- Named rules (GEP-995) and `percent` are in the standard channel of recent releases; older
  CRDs drop or reject them, so install a current Gateway API.

Same interface as `components.routers.istio`: `KIND`, `ROLE`, `renders`, `type_token`,
`object_name`, `spec`, `patch`, `kubectl_patch`.
"""

from __future__ import annotations

from typing import Any

from components import resource_names as names
from components.naming import SPLIT_RULE, direct_service_name, pin_rule_name
from components.routers.json_patch import kubectl_patch_command, weight_patch
from components.settings import HARDWARE, Hardware, Settings

API_VERSION = "gateway.networking.k8s.io/v1"
GATEWAY_GROUP = "gateway.networking.k8s.io"
KIND = "HTTPRoute"
ROLE = names.HTTP_ROUTE
"""Role of the HTTPRoute under the TrafficSplit (`inference-traffic-http-route`)."""


def renders(settings: Settings) -> bool:
    """The HTTPRoute exists: `router: gateway-api`."""
    return settings.router == "gateway-api"


def type_token(settings: Settings) -> str:
    """`kubernetes:gateway.networking.k8s.io/v1:HTTPRoute` (`resource_names.HTTP_ROUTE_TOKEN`;
    `settings` only for the same call as the Istio router's, whose version is configurable)."""
    return names.HTTP_ROUTE_TOKEN


def object_name(settings: Settings) -> str:
    """The HTTPRoute's name (`gatewayApi.routeName`)."""
    return settings.gateway_api.route_name


def backend_ref(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """The direct Service of one backend as a backendRef (no weight: callers add it)."""
    return {
        "group": "",
        "kind": "Service",
        "name": direct_service_name(settings, hardware),
        "port": settings.service.port,
    }


def parent_refs(settings: Settings) -> list[dict[str, Any]]:
    """The configured Gateways, then the shared Service (GAMMA) when `gatewayApi.mesh`."""
    parents: list[dict[str, Any]] = []
    for gateway in settings.gateway_api.gateways:
        ref: dict[str, Any] = {"group": GATEWAY_GROUP, "kind": "Gateway", "name": gateway.name}
        if gateway.namespace:
            ref["namespace"] = gateway.namespace
        if gateway.section_name:
            ref["sectionName"] = gateway.section_name
        parents.append(ref)
    if settings.gateway_api.mesh:
        parents.append({"group": "", "kind": "Service", "name": settings.service.name})
    return parents


def pin_rules(settings: Settings) -> list[dict[str, Any]]:
    """One rule per backend: header `testerPinning.header` = its value -> 100% that backend."""
    pinning = settings.tester_pinning
    if not pinning.enabled:
        return []
    return [
        {
            "name": pin_rule_name(hw),
            "matches": [
                {"headers": [{"type": "Exact", "name": pinning.header, "value": pinning.value(hw)}]}
            ],
            "backendRefs": [backend_ref(settings, hw)],
        }
        for hw in HARDWARE
    ]


def split_rule(settings: Settings, weights: dict[str, int]) -> dict[str, Any]:
    """The weighted rule: both backends with explicit weights (`weights` from
    `components.traffic.route_weights`), plus the mirror to Ascend when `mirrorPercent` > 0."""
    rule: dict[str, Any] = {
        "name": SPLIT_RULE,
        "backendRefs": [backend_ref(settings, hw) | {"weight": weights[hw]} for hw in HARDWARE],
    }
    if settings.mirror_percent:
        rule["filters"] = [
            {
                "type": "RequestMirror",
                "requestMirror": {
                    "backendRef": backend_ref(settings, "ascend"),
                    "percent": settings.mirror_percent,
                },
            }
        ]
    return rule


def spec(settings: Settings, weights: dict[str, int]) -> dict[str, Any]:
    """The HTTPRoute's spec: parentRefs, optional hostnames, pin rules, then the split by
    `weights` ({nvidia, ascend} in %, `components.traffic.route_weights`)."""
    found: dict[str, Any] = {"parentRefs": parent_refs(settings)}
    if settings.gateway_api.hostnames:
        found["hostnames"] = list(settings.gateway_api.hostnames)
    found["rules"] = [*pin_rules(settings), split_rule(settings, weights)]
    return found


def patch(settings: Settings, weights: dict[str, int]) -> list[dict]:
    """JSON patch setting the live HTTPRoute's split rule to `weights`, guarded by `test` ops
    that check each backendRef still names the Service we expect. The split is the rule after
    the pins, as `spec` writes it."""
    backend_refs = f"/spec/rules/{len(pin_rules(settings))}/backendRefs"
    services = {hw: direct_service_name(settings, hw) for hw in HARDWARE}
    return weight_patch(backend_refs, "name", services, weights)


def kubectl_patch(settings: Settings, weights: dict[str, int]) -> str:
    """`kubectl -n NS patch httproutes.gateway.networking.k8s.io NAME --type json -p '<patch>'`."""
    return kubectl_patch_command(
        settings.namespace,
        "httproutes.gateway.networking.k8s.io",
        object_name(settings),
        patch(settings, weights),
    )
