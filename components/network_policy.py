"""NetworkPolicies of the inference pods and of the precision Job (pure functions).

Semantics (kubernetes.io/docs/concepts/services-networking/network-policies): a pod selected
by a policy listing `Ingress` (`Egress`) in `policyTypes` is isolated in that direction, and
then admits only what some rule of some policy selecting it allows; rules add up, nothing
subtracts. A peer with only `namespaceSelector` admits every pod of those namespaces, with
`podSelector` too only those pods; `namespaceSelector: {}` is every namespace. Traffic to and
from the pod's own node is always allowed (so are the kubelet's probes). Policies are defined
on pods, not Services: the plugins judge a connection to a ClusterIP on the pod behind it,
after kube-proxy translated the address (projectcalico/calico#2088,
cloudnativelabs/kube-router#934), so rules name pods and their own ports.

One policy per backend (`inference-blue`, `inference-green`), selecting its pods:
- ingress on the serving port from `security.networkPolicy.clients` (default: the mesh, every
  pod with an Istio sidecar), the gateway pods when `istio.gateways` is set, the pods of each
  Gateway API Gateway the HTTPRoute attaches to (`router: gateway-api`, `gatewayApi.gateways`),
  and the precision Job's pods (the direct Services `<service>-<hardware>` stay reachable by
  the Job);
- ingress on `scrapePorts` from the Prometheus peer;
- egress to DNS, istiod (the sidecar's configuration and certificates) and `egress`.
One policy for the precision Job (ConfigMap/Job/CronJob pods): no ingress; egress to DNS,
both backends' pods on the serving port, the Pushgateway when `pushgatewayUrl` is set, and
istiod when the Job has a sidecar.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from components.naming import precision_labels
from components.settings import HARDWARE, Settings
from components.settings.routing import GatewayRef
from components.settings.security import ALL_NAMESPACES, PeerSettings, PortSettings

NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
"""Label the API server sets on every namespace to its name (Kubernetes >= 1.21)."""
GATEWAY_NAME_LABEL = "gateway.networking.k8s.io/gateway-name"
"""Label Istio's Gateway controller puts on what it deploys for a Gateway API Gateway, its
Deployment's pods included (istio.io/latest/docs/reference/config/labels)."""


def peer(settings: PeerSettings) -> dict[str, Any]:
    """One `NetworkPolicyPeer` from a peer setting.

    `{cidr: 10.0.0.0/8}` -> `{ipBlock: {cidr}}`; `{namespaces: ["*"], podLabels: {a: b}}` ->
    `{namespaceSelector: {}, podSelector: {matchLabels: {a: b}}}`; `{namespaces: [monitoring]}`
    -> `{namespaceSelector: {matchExpressions: [kubernetes.io/metadata.name In [monitoring]]}}`.
    """
    if settings.cidr is not None:
        block: dict[str, Any] = {"cidr": settings.cidr}
        if settings.except_cidrs:
            block["except"] = list(settings.except_cidrs)
        return {"ipBlock": block}
    namespaces = settings.namespaces or ()
    if tuple(namespaces) == (ALL_NAMESPACES,):
        selector: dict[str, Any] = {}
    else:
        selector = {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": list(namespaces)}
            ]
        }
    found: dict[str, Any] = {"namespaceSelector": selector}
    if settings.pod_labels:
        found["podSelector"] = {"matchLabels": dict(settings.pod_labels)}
    return found


def local_pods(labels: dict[str, str]) -> dict[str, Any]:
    """A peer of the pods carrying `labels` in the policy's own namespace."""
    return {"podSelector": {"matchLabels": dict(labels)}}


def ports(values: Iterable[PortSettings]) -> list[dict[str, Any]]:
    """`NetworkPolicyPort`s, in the given order."""
    return [value.as_port() for value in values]


def serving_port(settings: Settings) -> list[dict[str, Any]]:
    """The container port the inference server listens on, TCP."""
    return [{"port": settings.service.port, "protocol": "TCP"}]


def gateway_api_pods(settings: Settings, gateway: GatewayRef) -> dict[str, Any]:
    """A peer of the pods Istio deploys for one Gateway API Gateway."""
    namespace = gateway.namespace or settings.namespace
    return {
        "namespaceSelector": {
            "matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": [namespace]}
            ]
        },
        "podSelector": {"matchLabels": {GATEWAY_NAME_LABEL: gateway.name}},
    }


def serving_clients(settings: Settings) -> list[dict[str, Any]]:
    """Peers admitted on the serving port: clients, gateways (if bound), the precision Job."""
    policy = settings.security.network_policy
    found = [peer(client) for client in policy.clients]
    if settings.istio.gateways:
        found += [peer(gateway) for gateway in policy.gateway_clients]
    if settings.router == "gateway-api":
        found += [gateway_api_pods(settings, gateway) for gateway in settings.gateway_api.gateways]
    if settings.precision_check.enabled:
        found.append(local_pods(precision_labels(settings)))
    return found


def workload_policy_spec(settings: Settings, selector: dict[str, str]) -> dict[str, Any]:
    """The NetworkPolicy spec of one backend whose pods carry `selector`."""
    policy = settings.security.network_policy
    egress = [
        {"to": [peer(policy.dns)], "ports": ports(policy.dns.ports)},
        {"to": [peer(policy.mesh_control_plane)], "ports": ports(policy.mesh_control_plane.ports)},
        *({"to": [peer(rule)], "ports": ports(rule.ports)} for rule in policy.egress),
    ]
    return {
        "podSelector": {"matchLabels": dict(selector)},
        "policyTypes": ["Ingress", "Egress"],
        "ingress": [
            {"from": serving_clients(settings), "ports": serving_port(settings)},
            {"from": [peer(policy.prometheus)], "ports": ports(policy.scrape_ports)},
        ],
        "egress": egress,
    }


def precision_policy_spec(settings: Settings) -> dict[str, Any]:
    """The NetworkPolicy spec of the precision check's pods: no ingress, egress to the
    backends' serving port, DNS, and the Pushgateway / istiod when used."""
    policy = settings.security.network_policy
    check = settings.precision_check
    backends = [
        local_pods({"app": settings.service.name, "hardware": hardware}) for hardware in HARDWARE
    ]
    egress = [
        {"to": [peer(policy.dns)], "ports": ports(policy.dns.ports)},
        {"to": backends, "ports": serving_port(settings)},
    ]
    if check.pushgateway_url:
        egress.append({"to": [peer(policy.pushgateway)], "ports": ports(policy.pushgateway.ports)})
    if check.istio_sidecar:
        egress.append(
            {
                "to": [peer(policy.mesh_control_plane)],
                "ports": ports(policy.mesh_control_plane.ports),
            }
        )
    return {
        "podSelector": {"matchLabels": precision_labels(settings)},
        "policyTypes": ["Ingress", "Egress"],
        "egress": egress,
    }
