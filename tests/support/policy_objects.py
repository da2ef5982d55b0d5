"""Hand-built objects and validation args for the policy tests (no render, no bridge).

Props are shaped the way the Pulumi engine sends them to a pack: camelCase, every number a
float, wrapped in pulumi_policy's unknown-checking proxies. `good_stack()` is a clean dual
stack at a given weight that every policy passes; tests copy it and break one thing. Both
routers: `good_stack(weight, router="gateway-api")` splits with an HTTPRoute to the direct
Services instead of a VirtualService and DestinationRule.
"""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    StackValidationArgs,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import unknown_checking_proxy

from policies import POLICIES

POLICY = {policy.name: policy for policy in POLICIES}
NAMESPACE = "inference"
HOST = f"inference-service.{NAMESPACE}.svc.cluster.local"
NVIDIA_IMAGE = "registry/inference-service:v1.2.3-cuda"
ASCEND_IMAGE = "registry/inference-service:v1.2.3-npu"
VERIFIED = "dualstack.io/verified-ascend-image"
HARDWARE = ("nvidia", "ascend")
TOKENS = {
    "Deployment": "kubernetes:apps/v1:Deployment",
    "StatefulSet": "kubernetes:apps/v1:StatefulSet",
    "DaemonSet": "kubernetes:apps/v1:DaemonSet",
    "ReplicaSet": "kubernetes:apps/v1:ReplicaSet",
    "Job": "kubernetes:batch/v1:Job",
    "CronJob": "kubernetes:batch/v1:CronJob",
    "Pod": "kubernetes:core/v1:Pod",
    "Service": "kubernetes:core/v1:Service",
    "ConfigMap": "kubernetes:core/v1:ConfigMap",
    "VirtualService": "kubernetes:networking.istio.io/v1:VirtualService",
    "DestinationRule": "kubernetes:networking.istio.io/v1:DestinationRule",
    "PodDisruptionBudget": "kubernetes:policy/v1:PodDisruptionBudget",
    "HTTPRoute": "kubernetes:gateway.networking.k8s.io/v1:HTTPRoute",
}
ROUTERS = ("istio", "gateway-api")
ROUTE_OBJECT = {
    "istio": "VirtualService inference/inference-vs",
    "gateway-api": "HTTPRoute inference/inference-route",
}
"""How policy messages name each router's route object."""
PIN_HEADER = "x-dualstack-hardware"
NOT_APPLICABLE = "not applicable"
JUDGED = {
    "safety-envelope-unchanged": {"envelopeChanges": []},
    "precision-verified-before-promotion": {
        "verifiedImages": [{"nvidia": NVIDIA_IMAGE, "ascend": ASCEND_IMAGE}]
    },
}
"""The pack config a judge writes for a plain step off a base that verified the v1.2.3 pair:
no envelope change. Merge the keys a test needs on top."""


def floats(value: Any) -> Any:
    """Numbers as the engine sends them: floats (bools untouched)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: floats(v) for k, v in value.items()}
    if isinstance(value, list):
        return [floats(v) for v in value]
    return value


def container(hardware: str, image: str) -> dict[str, Any]:
    """The hardened inference container requesting one accelerator."""
    resource = "nvidia.com/gpu" if hardware == "nvidia" else "huawei.com/Ascend910"
    return {
        "name": "inference",
        "image": image,
        "resources": {
            "requests": {"cpu": "4", "memory": "32Gi", resource: "1"},
            "limits": {"cpu": "8", "memory": "64Gi", resource: "1"},
        },
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
        },
    }


def deployment(hardware: str, replicas: int, image: str) -> dict[str, Any]:
    """A backend Deployment pinned to its pool, labelled {app, version, hardware}."""
    version = "blue" if hardware == "nvidia" else "green"
    labels = {"app": "inference-service", "version": version, "hardware": hardware}
    spec: dict[str, Any] = {
        "nodeSelector": {"pool": hardware},
        "tolerations": [
            {"key": "pool", "operator": "Equal", "value": hardware, "effect": "NoSchedule"}
        ],
        "securityContext": {"runAsNonRoot": True, "runAsUser": 1000},
        "containers": [container(hardware, image)],
    }
    if hardware == "ascend":
        spec["volumes"] = [
            {
                "name": "driver",
                "hostPath": {"path": "/usr/local/Ascend/driver", "type": "Directory"},
            }
        ]
        spec["containers"][0]["volumeMounts"] = [
            {"name": "driver", "mountPath": "/usr/local/Ascend/driver", "readOnly": True}
        ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": f"inference-{version}", "namespace": NAMESPACE, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "inference-service", "version": version}},
            "template": {"metadata": {"labels": labels}, "spec": spec},
        },
    }


def destination_rule() -> dict[str, Any]:
    """Subsets nvidia and ascend selecting {app, hardware}."""
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "DestinationRule",
        "metadata": {"name": "inference-dr", "namespace": NAMESPACE},
        "spec": {
            "host": HOST,
            "subsets": [
                {"name": hw, "labels": {"app": "inference-service", "hardware": hw}}
                for hw in ("nvidia", "ascend")
            ],
        },
    }


def virtual_service(ascend_weight: Any, nvidia_weight: Any = None) -> dict[str, Any]:
    """One HTTP route splitting nvidia (100 - w unless given) and ascend (w)."""
    nvidia = 100 - ascend_weight if nvidia_weight is None else nvidia_weight
    return {
        "apiVersion": "networking.istio.io/v1",
        "kind": "VirtualService",
        "metadata": {"name": "inference-vs", "namespace": NAMESPACE},
        "spec": {
            "hosts": [HOST],
            "http": [
                {
                    "name": "split",
                    "route": [
                        {"destination": {"host": HOST, "subset": "nvidia"}, "weight": nvidia},
                        {
                            "destination": {"host": HOST, "subset": "ascend"},
                            "weight": ascend_weight,
                        },
                    ],
                }
            ],
        },
    }


def service() -> dict[str, Any]:
    """The shared Service selecting both backends by `app`."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "inference-service", "namespace": NAMESPACE},
        "spec": {"selector": {"app": "inference-service"}, "ports": [{"port": 8000}]},
    }


def direct_service(hardware: str) -> dict[str, Any]:
    """The program's per-backend Service `inference-service-<hardware>`, selecting {app,
    hardware}: its host reaches that backend's pods without any subset."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": f"inference-service-{hardware}", "namespace": NAMESPACE},
        "spec": {
            "selector": {"app": "inference-service", "hardware": hardware},
            "ports": [{"port": 8000}],
        },
    }


DIRECT_HOST = {hw: f"inference-service-{hw}.{NAMESPACE}.svc.cluster.local" for hw in HARDWARE}
"""Hosts of the per-backend Services of `direct_service`."""


def disruption_budget(hardware: str) -> dict[str, Any]:
    """The program's PodDisruptionBudget of one backend: `maxUnavailable: 1` over its pods."""
    version = "blue" if hardware == "nvidia" else "green"
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": f"inference-{version}-pdb", "namespace": NAMESPACE},
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": {"app": "inference-service", "version": version}},
        },
    }


def backend_ref(hardware: str, weight: Any = None) -> dict[str, Any]:
    """A backendRef to the direct Service of `hardware` (with `weight` unless None)."""
    ref: dict[str, Any] = {
        "group": "",
        "kind": "Service",
        "name": f"inference-service-{hardware}",
        "port": 8000,
    }
    return ref if weight is None else ref | {"weight": weight}


def http_route(ascend_weight: Any, nvidia_weight: Any = None) -> dict[str, Any]:
    """The HTTPRoute of `router: gateway-api`: one rule splitting the direct Services nvidia
    (100 - w unless given) and ascend (w), attached to the shared Service (GAMMA)."""
    nvidia = 100 - ascend_weight if nvidia_weight is None else nvidia_weight
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": "inference-route", "namespace": NAMESPACE},
        "spec": {
            "parentRefs": [{"group": "", "kind": "Service", "name": "inference-service"}],
            "rules": [
                {
                    "name": "split",
                    "backendRefs": [
                        backend_ref("nvidia", nvidia),
                        backend_ref("ascend", ascend_weight),
                    ],
                }
            ],
        },
    }


def route_object(router: str, ascend_weight: Any, nvidia_weight: Any = None) -> dict[str, Any]:
    """The split of one router: `virtual_service` or `http_route`."""
    if router == "istio":
        return virtual_service(ascend_weight, nvidia_weight)
    return http_route(ascend_weight, nvidia_weight)


def pin_rule(router: str, hardware: str, value: str | None = None) -> dict[str, Any]:
    """The tester pin the program renders ahead of the split: header `x-dualstack-hardware`
    = `value` (default: the hardware's name) -> 100% to `hardware`."""
    value = value or hardware
    if router == "istio":
        return {
            "name": f"pin-{hardware}",
            "match": [{"headers": {PIN_HEADER: {"exact": value}}}],
            "route": [{"destination": {"host": HOST, "subset": hardware}}],
        }
    return {
        "name": f"pin-{hardware}",
        "matches": [{"headers": [{"type": "Exact", "name": PIN_HEADER, "value": value}]}],
        "backendRefs": [backend_ref(hardware)],
    }


def rules_of(route: dict[str, Any]) -> list[dict[str, Any]]:
    """The route entries of a route object, for editing: `http` or `rules`."""
    spec = route["spec"]
    return spec["http"] if route["kind"] == "VirtualService" else spec["rules"]


def with_pins(route: dict[str, Any], router: str) -> dict[str, Any]:
    """`route` with both tester pins ahead of its split, as the program renders them."""
    rules = rules_of(route)
    rules[:0] = [pin_rule(router, hw) for hw in HARDWARE]
    return route


def good_stack(
    weight: int = 20, ascend_replicas: int | None = None, router: str = "istio"
) -> list[dict[str, Any]]:
    """A clean stack at `weight`: NVIDIA 4 pods, Ascend enough for its share (two at least
    while it serves), verified image; split by `router` (`istio`: DestinationRule +
    VirtualService; `gateway-api`: an HTTPRoute to the direct Services); each backend's
    PodDisruptionBudget last."""
    if ascend_replicas is None:
        ascend_replicas = max(2, -(-4 * weight // 100)) if weight else 1
    ascend = deployment("ascend", ascend_replicas, ASCEND_IMAGE)
    ascend["metadata"]["annotations"] = {VERIFIED: ASCEND_IMAGE}
    workloads = [deployment("nvidia", 4, NVIDIA_IMAGE), ascend]
    budgets = [disruption_budget("nvidia"), disruption_budget("ascend")]
    if router == "istio":
        return [*workloads, destination_rule(), virtual_service(weight), service(), *budgets]
    routes = [*(direct_service(hw) for hw in HARDWARE), http_route(weight), service()]
    return [*workloads, *routes, *budgets]


def with_route(objects: list[dict[str, Any]], route: dict[str, Any]) -> list[dict[str, Any]]:
    """`objects` with their route object (VirtualService or HTTPRoute) replaced by `route`."""
    kinds = ("VirtualService", "HTTPRoute")
    return [obj for obj in objects if obj["kind"] not in kinds] + [route]


def find(objects: list[dict[str, Any]], kind: str, hardware: str | None = None) -> dict[str, Any]:
    """The object of `kind` (and backend `hardware`) in a hand-built stack, for editing."""
    for obj in objects:
        labels = obj["metadata"].get("labels", {})
        if obj["kind"] == kind and (hardware is None or labels.get("hardware") == hardware):
            return obj
    raise AssertionError(f"no {kind} {hardware or ''}")


_OPTIONS = PolicyResourceOptions(False, [], None, [], PolicyCustomTimeouts(0, 0, 0), [])


def urn(obj: dict[str, Any]) -> str:
    """A URN naming the object's kind and name."""
    name = obj["metadata"].get("name", "unnamed")
    return f"urn:pulumi:test::dualstack-inference::{TOKENS[obj['kind']]}::{name}"


def resource_args(
    obj: dict[str, Any], config: dict[str, Any] | None = None
) -> ResourceValidationArgs:
    """ResourceValidationArgs for one hand-built object, config numbers as floats."""
    props = unknown_checking_proxy(floats(copy.deepcopy(obj)))
    token = TOKENS[obj["kind"]]
    name = obj["metadata"].get("name", "unnamed")
    return ResourceValidationArgs(token, props, urn(obj), name, _OPTIONS, None, floats(config))


def stack_args(
    objects: list[dict[str, Any]], config: dict[str, Any] | None = None
) -> StackValidationArgs:
    """StackValidationArgs over hand-built objects, config numbers as floats."""
    resources = [
        PolicyResource(
            TOKENS[o["kind"]],
            unknown_checking_proxy(floats(copy.deepcopy(o))),
            urn(o),
            o["metadata"].get("name", "unnamed"),
            _OPTIONS,
            None,
            None,
            [],
            {},
        )
        for o in objects
    ]
    return StackValidationArgs(resources, floats(config))


def violations(policy: str, args: Any) -> list[str] | str:
    """Messages the policy reports for `args`; NOT_APPLICABLE when it declares itself so."""
    found: list[str] = []
    try:
        POLICY[policy].validate(args, lambda message, urn=None: found.append(message))
    except _NotApplicableError:
        return NOT_APPLICABLE
    return found


def stack_reports(
    policy: str, objects: list[dict[str, Any]], config: dict | None = None
) -> list[tuple[str, str | None]] | str:
    """(message, urn) of each violation a stack policy reports over hand-built objects (urn
    None: the stack); `not applicable: <reason>` when the policy declares itself so."""
    found: list[tuple[str, str | None]] = []
    try:
        POLICY[policy].validate(
            stack_args(objects, config), lambda message, urn=None: found.append((message, urn))
        )
    except _NotApplicableError as declared:
        return f"{NOT_APPLICABLE}: {declared.reason}"
    return found


def stack_violations(policy: str, objects: list[dict[str, Any]], config: dict | None = None):
    """`violations` of a stack policy over hand-built objects."""
    return violations(policy, stack_args(objects, config))


def resource_violations(policy: str, objects: list[dict[str, Any]], config: dict | None = None):
    """`violations` of a resource policy over each hand-built object, concatenated."""
    found: list[str] = []
    for obj in objects:
        result = violations(policy, resource_args(obj, config))
        assert isinstance(result, list)
        found += result
    return found
