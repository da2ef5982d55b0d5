"""Names and labels shared by the components, the policies and the tooling (pure functions).

Label scheme from the seed article: every pod carries `app=<service>`, `version=<blue|green>`
and `hardware=<nvidia|ascend>`. The Deployment selects on `app` + `version`; the Istio subsets
and the direct Services select on `app` + `hardware`.
"""

from components.settings import Hardware, Settings, names

POOL_LABEL = "pool"
"""Node label and taint key that pins a pod to its accelerator pool."""

SPLIT_RULE = "nvidia-ascend-split"
"""Name of the weighted rule of either router (HTTPRoute rule, VirtualService route)."""

VERIFIED_IMAGE_ANNOTATION = "dualstack.io/verified-ascend-image"
"""Annotation of the Ascend Deployment: the image whose precision check passed (stack config
`verifiedAscendImage`). The policy pack reads it to allow a weight increase."""


def pod_labels(settings: Settings, hardware: Hardware) -> dict[str, str]:
    """Labels of the pods of one backend: {app, version, hardware}."""
    return {
        "app": settings.service.name,
        "version": settings.hardware(hardware).version,
        "hardware": hardware,
    }


def selector_labels(settings: Settings, hardware: Hardware) -> dict[str, str]:
    """The Deployment's immutable selector: {app, version}."""
    labels = pod_labels(settings, hardware)
    return {"app": labels["app"], "version": labels["version"]}


def subset_labels(settings: Settings, hardware: Hardware) -> dict[str, str]:
    """Labels an Istio subset and a direct Service select on: {app, hardware}."""
    return {"app": settings.service.name, "hardware": hardware}


def direct_service_name(settings: Settings, hardware: Hardware) -> str:
    """Service that reaches one backend only, bypassing the split: `inference-service-ascend`
    (the rule: `components.settings.names`)."""
    return names.direct_service_name(settings.service.name, hardware)


def pin_rule_name(hardware: Hardware) -> str:
    """`pin-ascend`: the rule (or VirtualService route) that pins testers to one backend."""
    return f"pin-{hardware}"


def service_host(settings: Settings, name: str) -> str:
    """Cluster-local DNS name of a Service: `<name>.<namespace>.svc.cluster.local`."""
    return f"{name}.{settings.namespace}.svc.cluster.local"


def pool_taint(pool_name: str) -> dict[str, str]:
    """The taint of a pool's nodes: `pool=<name>:NoSchedule`."""
    return {"key": POOL_LABEL, "value": pool_name, "effect": "NoSchedule"}


def pool_toleration(pool_name: str) -> dict[str, str]:
    """The toleration that matches `pool_taint(pool_name)` exactly."""
    return {"key": POOL_LABEL, "operator": "Equal", "value": pool_name, "effect": "NoSchedule"}


def service_account_name(settings: Settings, hardware: Hardware) -> str:
    """The ServiceAccount of one backend's pods (and its mesh identity): its Deployment's name."""
    return settings.hardware(hardware).deployment_name


def precision_labels(settings: Settings) -> dict[str, str]:
    """Labels of every object and pod of the precision check. Deliberately no `app` label: the
    shared Service selects pods by `app`, and the check's pod must not receive inference
    traffic."""
    return {
        "app.kubernetes.io/name": "precision-check",
        "app.kubernetes.io/part-of": settings.service.name,
    }
