"""The rendered NetworkPolicies admit the mesh, the precision Job and the scrape, and nothing else.

A small evaluator of NetworkPolicy semantics (kubernetes.io/docs/concepts/services-networking/
network-policies) judges connections between hand-described pods against the policies the
program renders: a pod selected by a policy listing a direction is isolated in it and admits
only what some rule allows; a connection needs the sender's egress and the receiver's ingress.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.conftest import cfg, find

NS = "inference"
TLS = {"security.istio.io/tlsMode": "istio"}  # what Istio's injector puts on a sidecar pod


@dataclass(frozen=True)
class Pod:
    """A pod as a NetworkPolicy sees it: namespace (and its labels), labels, address."""

    namespace: str
    labels: dict[str, str] = field(default_factory=dict)
    ip: str = "10.1.0.1"

    @property
    def namespace_labels(self) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": self.namespace}


def external(ip: str) -> Pod:
    """An address outside the cluster (no pod): only an ipBlock can admit it."""
    return Pod(namespace="", ip=ip)


def selects(selector: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """A LabelSelector: every matchLabels pair and every matchExpression holds."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key, operator, values = expression["key"], expression["operator"], expression.get("values")
        holds = {
            "In": key in labels and labels[key] in values,
            "NotIn": key not in labels or labels[key] not in values,
            "Exists": key in labels,
            "DoesNotExist": key not in labels,
        }[operator]
        if not holds:
            return False
    return True


def peer_admits(peer: dict[str, Any], policy_namespace: str, pod: Pod) -> bool:
    if "ipBlock" in peer:
        address = ipaddress.ip_address(pod.ip)
        block = peer["ipBlock"]
        inside = address in ipaddress.ip_network(block["cidr"])
        return inside and not any(
            address in ipaddress.ip_network(c) for c in block.get("except", [])
        )
    if not pod.namespace:
        return False  # selectors only ever match pods
    namespace_selector = peer.get("namespaceSelector")
    if namespace_selector is None:
        namespace_ok = pod.namespace == policy_namespace
    else:
        namespace_ok = selects(namespace_selector, pod.namespace_labels)
    pod_selector = peer.get("podSelector")
    return namespace_ok and (pod_selector is None or selects(pod_selector, pod.labels))


def port_open(ports: list[dict[str, Any]] | None, port: int, protocol: str) -> bool:
    if not ports:
        return True
    return any(p["port"] == port and p.get("protocol", "TCP") == protocol for p in ports)


def direction_allows(
    policies: list[dict[str, Any]], pod: Pod, other: Pod, port: int, protocol: str, kind: str
) -> bool:
    """Whether `pod` may receive from (Ingress) / send to (Egress) `other` on port."""
    selecting = [
        p
        for p in policies
        if p["metadata"]["namespace"] == pod.namespace
        and selects(p["spec"]["podSelector"], pod.labels)
        and kind in p["spec"]["policyTypes"]
    ]
    if not selecting:
        return True  # not isolated in this direction
    rules_key, peers_key = ("ingress", "from") if kind == "Ingress" else ("egress", "to")
    for policy in selecting:
        for rule in policy["spec"].get(rules_key, []):
            peers = rule.get(peers_key)
            peer_ok = not peers or any(
                peer_admits(p, policy["metadata"]["namespace"], other) for p in peers
            )
            if peer_ok and port_open(rule.get("ports"), port, protocol):
                return True
    return False


def allowed(policies, source: Pod, target: Pod, port: int, protocol: str = "TCP") -> bool:
    """The connection source -> target:port passes both sides' policies."""
    sends = not source.namespace or direction_allows(
        policies, source, target, port, protocol, "Egress"
    )
    receives = not target.namespace or direction_allows(
        policies, target, source, port, protocol, "Ingress"
    )
    return sends and receives


def policies_of(objects) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == "NetworkPolicy"]


BLUE = Pod(NS, {"app": "inference-service", "version": "blue", "hardware": "nvidia", **TLS})
GREEN = Pod(NS, {"app": "inference-service", "version": "green", "hardware": "ascend", **TLS})
JOB = Pod(
    NS,
    {
        "app.kubernetes.io/name": "precision-check",
        "app.kubernetes.io/part-of": "inference-service",
        "sidecar.istio.io/inject": "false",
        "job-name": "inference-service-precision-0123456789",
    },
)
MESH_CLIENT = Pod("shop", {"app": "shop", **TLS})
MESH_NEIGHBOUR = Pod(NS, {"app": "batch", **TLS})
PLAIN_CLIENT = Pod("shop", {"app": "legacy"})
PLAIN_NEIGHBOUR = Pod(NS, {"app": "debug"})
PROMETHEUS = Pod("monitoring", {"app.kubernetes.io/name": "prometheus"})
GATEWAY = Pod("istio-system", {"istio": "ingressgateway", "app": "istio-ingressgateway"})
COREDNS = Pod("kube-system", {"k8s-app": "kube-dns"})
ISTIOD = Pod("istio-system", {"app": "istiod", "istio": "pilot"})
PUSHGATEWAY = Pod("monitoring", {"app.kubernetes.io/name": "prometheus-pushgateway"})
OTHER_KUBE_SYSTEM = Pod("kube-system", {"k8s-app": "metrics-server"})
OBJECT_STORE = external("10.20.3.4")
INTERNET = external("203.0.113.10")
BACKENDS = (BLUE, GREEN)


@pytest.fixture
def default_policies(render_objects):
    return policies_of(render_objects(cfg(ascendWeight="5")))


def test_one_policy_per_workload_and_one_for_the_job(default_policies):
    by_name = {p["metadata"]["name"]: p["spec"]["podSelector"] for p in default_policies}
    assert by_name == {
        "inference-blue": {"matchLabels": {"app": "inference-service", "version": "blue"}},
        "inference-green": {"matchLabels": {"app": "inference-service", "version": "green"}},
        "inference-service-precision-check": {
            "matchLabels": {
                "app.kubernetes.io/name": "precision-check",
                "app.kubernetes.io/part-of": "inference-service",
            }
        },
    }
    assert all(p["spec"]["policyTypes"] == ["Ingress", "Egress"] for p in default_policies)


def test_the_serving_port_admits_the_exact_peers_a_reviewer_checks(render_objects):
    green = find(render_objects(cfg(ascendWeight="5")), "NetworkPolicy", "inference-green")
    serving, scrape = green["spec"]["ingress"]
    assert serving == {
        "from": [
            {"namespaceSelector": {}, "podSelector": {"matchLabels": TLS}},
            {
                "podSelector": {
                    "matchLabels": {
                        "app.kubernetes.io/name": "precision-check",
                        "app.kubernetes.io/part-of": "inference-service",
                    }
                }
            },
        ],
        "ports": [{"port": 8000, "protocol": "TCP"}],
    }
    assert scrape == {
        "from": [
            {
                "namespaceSelector": {
                    "matchExpressions": [
                        {
                            "key": "kubernetes.io/metadata.name",
                            "operator": "In",
                            "values": ["monitoring"],
                        }
                    ]
                }
            }
        ],
        "ports": [{"port": 15020, "protocol": "TCP"}, {"port": 15090, "protocol": "TCP"}],
    }


@pytest.mark.parametrize("backend", BACKENDS, ids=["nvidia", "ascend"])
def test_the_mesh_and_the_job_reach_the_serving_port_and_nobody_else(default_policies, backend):
    for client in (MESH_CLIENT, MESH_NEIGHBOUR, JOB):
        assert allowed(default_policies, client, backend, 8000), client
    for stranger in (PLAIN_CLIENT, PLAIN_NEIGHBOUR, GATEWAY, OTHER_KUBE_SYSTEM, PROMETHEUS):
        assert not allowed(default_policies, stranger, backend, 8000), stranger
    assert not allowed(default_policies, INTERNET, backend, 8000)


@pytest.mark.parametrize("backend", BACKENDS, ids=["nvidia", "ascend"])
def test_prometheus_scrapes_the_sidecar_ports_only(default_policies, backend):
    for port in (15020, 15090):
        assert allowed(default_policies, PROMETHEUS, backend, port)
        assert not allowed(default_policies, MESH_CLIENT, backend, port)
        assert not allowed(default_policies, JOB, backend, port)
    assert not allowed(default_policies, PROMETHEUS, backend, 15000)  # Envoy's admin port


@pytest.mark.parametrize("backend", BACKENDS, ids=["nvidia", "ascend"])
def test_backends_reach_dns_and_istiod_only(default_policies, backend):
    assert allowed(default_policies, backend, COREDNS, 53, "UDP")
    assert allowed(default_policies, backend, COREDNS, 53, "TCP")
    assert allowed(default_policies, backend, ISTIOD, 15012)
    assert not allowed(default_policies, backend, ISTIOD, 15010)  # plaintext xDS stays shut
    assert not allowed(default_policies, backend, OTHER_KUBE_SYSTEM, 53, "UDP")
    for destination in (INTERNET, OBJECT_STORE):
        assert not allowed(default_policies, backend, destination, 443)
    other = GREEN if backend is BLUE else BLUE
    assert not allowed(default_policies, backend, other, 8000)  # no lateral hop


def test_the_job_reaches_both_direct_backends_and_dns_only(default_policies):
    for backend in BACKENDS:
        assert allowed(default_policies, JOB, backend, 8000)
    assert allowed(default_policies, JOB, COREDNS, 53, "UDP")
    for destination, port in [
        (ISTIOD, 15012),  # no sidecar, no istiod
        (PUSHGATEWAY, 9091),  # no pushgatewayUrl
        (MESH_CLIENT, 8000),
        (INTERNET, 443),
    ]:
        assert not allowed(default_policies, JOB, destination, port), destination
    for source in (MESH_CLIENT, MESH_NEIGHBOUR, PROMETHEUS, BLUE):
        assert not allowed(default_policies, source, JOB, 8080)  # the Job serves nothing


def test_configured_gateways_destinations_and_job_extras(render_objects):
    objects = render_objects(
        cfg(
            ascendWeight="5",
            istio={"gateways": ["istio-system/public"], "hosts": ["inference.example.com"]},
            precisionCheck={
                "pushgatewayUrl": "http://pushgateway.monitoring:9091",
                "istioSidecar": True,
            },
            security={
                "networkPolicy": {
                    "egress": [
                        {
                            "cidr": "10.20.0.0/16",
                            "except": ["10.20.9.0/24"],
                            "ports": [{"port": 443}],
                        }
                    ]
                }
            },
        )
    )
    policies = policies_of(objects)
    for backend in BACKENDS:
        assert allowed(policies, GATEWAY, backend, 8000)
        assert allowed(policies, backend, OBJECT_STORE, 443)
        assert not allowed(policies, backend, OBJECT_STORE, 80)
        assert not allowed(policies, backend, external("10.20.9.9"), 443)  # the except block
        assert not allowed(policies, backend, INTERNET, 443)
    assert allowed(policies, JOB, PUSHGATEWAY, 9091)
    assert allowed(policies, JOB, ISTIOD, 15012)
    assert not allowed(policies, JOB, OBJECT_STORE, 443)  # model stores are the servers' only


def test_without_the_precision_check_the_job_peer_is_gone(render_objects):
    objects = render_objects(cfg(ascendWeight="5", precisionCheck={"enabled": False}))
    policies = policies_of(objects)
    assert [p["metadata"]["name"] for p in policies] == ["inference-blue", "inference-green"]
    assert not allowed(policies, JOB, GREEN, 8000)
    assert allowed(policies, MESH_CLIENT, GREEN, 8000)


def test_network_policies_can_be_switched_off(render_objects):
    objects = render_objects(cfg(ascendWeight="5", security={"networkPolicy": {"enabled": False}}))
    assert policies_of(objects) == []


def test_gateway_api_gateways_reach_the_backends(render_objects):
    """With `router: gateway-api`, the pods Istio deploys for each attached Gateway (label
    `gateway.networking.k8s.io/gateway-name`) reach the serving port; other gateways do not."""
    gateway_api = {"gateways": [{"name": "public", "namespace": "gateways"}, {"name": "local"}]}
    objects = render_objects(cfg(ascendWeight="5", router="gateway-api", gatewayApi=gateway_api))
    policies = policies_of(objects)
    label = "gateway.networking.k8s.io/gateway-name"
    public = Pod("gateways", {label: "public"}, "10.1.7.1")
    local = Pod(NS, {label: "local"}, "10.1.7.2")
    other = Pod("gateways", {label: "other"}, "10.1.7.3")
    misplaced = Pod("elsewhere", {label: "public"}, "10.1.7.4")
    for backend in BACKENDS:
        assert allowed(policies, public, backend, 8000)
        assert allowed(policies, local, backend, 8000)
        assert not allowed(policies, other, backend, 8000)
        assert not allowed(policies, misplaced, backend, 8000)
        assert not allowed(policies, GATEWAY, backend, 8000)  # no classic gateway bound
        assert allowed(policies, MESH_CLIENT, backend, 8000)  # GAMMA: mesh clients as before
