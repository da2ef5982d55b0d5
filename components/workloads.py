"""One backend of the service: Deployment, PodDisruptionBudget, direct Service, ServiceAccount
and NetworkPolicy.

The manifests are built by pure functions (`deployment_spec`, ..., `workload_manifests`)
returning camelCase dicts, so tests, the offline render and the tooling read them without
Pulumi; `components.resources.InferenceWorkload` only registers them.
"""

from __future__ import annotations

import math
from typing import Any

from components import resource_names as names
from components.capacity import ascend_replicas, nvidia_replicas
from components.manifests import Manifest, manifest, object_metadata
from components.naming import (
    POOL_LABEL,
    VERIFIED_IMAGE_ANNOTATION,
    direct_service_name,
    pod_labels,
    pool_toleration,
    selector_labels,
    service_account_name,
    subset_labels,
)
from components.network_policy import workload_policy_spec
from components.security import (
    container_security_context,
    pod_security_context,
    pull_policy,
    scratch_env,
    scratch_mounts,
    scratch_volumes,
    service_account_fields,
)
from components.settings import Hardware, Settings

CONTAINER_NAME = "inference"
PORT_NAME = "http"  # Istio picks the protocol from the port name
DRIVER_VOLUME = "accelerator-driver"


def replicas_for(settings: Settings, hardware: Hardware) -> int:
    """Pods of one backend at the stack's weight (formula in `components.capacity`). Ascend is
    sized for its load: the weight, or at weight 0 the mirrored share (`mirrorPercent`).

    Raises ValueError for a `hardware` other than "nvidia" or "ascend" (never a silent
    NVIDIA count).
    """
    capacity = settings.capacity
    if hardware not in ("nvidia", "ascend"):
        raise ValueError(f"hardware {hardware!r} is not nvidia or ascend")
    if hardware == "ascend":
        return ascend_replicas(
            capacity.total_replicas,
            settings.ascend_load_percent,
            capacity.headroom,
            capacity.ascend_capacity_ratio,
        )
    return nvidia_replicas(
        capacity.total_replicas, settings.ascend_weight, capacity.retired_nvidia_replicas
    )


def _probe(settings: Settings, initial_delay_seconds: int = 0) -> dict[str, Any]:
    probes = settings.probes
    return {
        "httpGet": {"path": probes.path, "port": PORT_NAME},
        "initialDelaySeconds": initial_delay_seconds,
        "periodSeconds": probes.period_seconds,
        "timeoutSeconds": probes.timeout_seconds,
        "failureThreshold": probes.failure_threshold,
    }


def startup_probe(settings: Settings) -> dict[str, Any]:
    """The startup probe: up to `probes.startupTimeoutSeconds` to load the model.

    Readiness and liveness start only once it succeeds, so a slow model load (minutes for a
    large model or a CANN graph compile) is never killed by the liveness probe.
    """
    probes = settings.probes
    return {
        **_probe(settings),
        "failureThreshold": max(
            1, math.ceil(probes.startup_timeout_seconds / probes.period_seconds)
        ),
    }


def container_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """The inference container: image and its pull policy, port, accelerator request, probes,
    hardened context (read-only root), and the scratch volumes with the variables naming them."""
    hw = settings.hardware(hardware)
    res = hw.resources
    accelerators = str(hw.accelerators_per_pod)
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": hw.image,
        "imagePullPolicy": pull_policy(hw.image),
        "ports": [{"name": PORT_NAME, "containerPort": settings.service.port}],
        "resources": {
            "requests": {
                "cpu": res.cpu_request,
                "memory": res.memory_request,
                hw.accelerator_resource: accelerators,
            },
            "limits": {
                "cpu": res.cpu_limit,
                "memory": res.memory_limit,
                hw.accelerator_resource: accelerators,
            },
        },
        "startupProbe": startup_probe(settings),
        "readinessProbe": _probe(settings, settings.probes.initial_delay_seconds),
        "livenessProbe": _probe(settings),
        "securityContext": container_security_context(),
    }
    if env := scratch_env(hw.scratch):
        container["env"] = env
    mounts = scratch_mounts(hw.scratch)
    if hw.driver_host_path:
        mounts.append({"name": DRIVER_VOLUME, "mountPath": hw.driver_host_path, "readOnly": True})
    if mounts:
        container["volumeMounts"] = mounts
    return container


def pod_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """Pod spec pinned to the backend's pool (nodeSelector + the toleration of its taint),
    under its own ServiceAccount with no API token mounted, as `security.runAsUser`."""
    hw = settings.hardware(hardware)
    security = settings.security
    spec: dict[str, Any] = {
        "serviceAccountName": service_account_name(settings, hardware),
        "automountServiceAccountToken": False,
        "nodeSelector": {POOL_LABEL: hw.pool.name},
        "tolerations": [pool_toleration(hw.pool.name)],
        "securityContext": pod_security_context(
            security.run_as_user, security.run_as_group, hw.supplemental_groups
        ),
        "containers": [container_spec(settings, hardware)],
    }
    volumes = scratch_volumes(hw.scratch)
    if hw.driver_host_path:
        volumes.append(
            {"name": DRIVER_VOLUME, "hostPath": {"path": hw.driver_host_path, "type": "Directory"}}
        )
    if volumes:
        spec["volumes"] = volumes
    return spec


def deployment_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """Deployment spec: computed replicas; rolling updates never drop below the replica count."""
    return {
        "replicas": replicas_for(settings, hardware),
        "selector": {"matchLabels": selector_labels(settings, hardware)},
        "strategy": {
            "type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},
        },
        "template": {
            "metadata": {"labels": pod_labels(settings, hardware)},
            "spec": pod_spec(settings, hardware),
        },
    }


def deployment_annotations(settings: Settings, hardware: Hardware) -> dict[str, str]:
    """Annotations of a backend's Deployment: the Ascend one records the precision-verified
    image (`dualstack.io/verified-ascend-image`) so the policy pack sees it; {} otherwise.

    Deployment metadata, not the pod template: changing it restarts no pod.
    """
    if hardware == "ascend" and settings.verified_ascend_image:
        return {VERIFIED_IMAGE_ANNOTATION: settings.verified_ascend_image}
    return {}


def direct_service_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """Service selecting one backend's pods only (the precision check calls these)."""
    return {
        "selector": subset_labels(settings, hardware),
        "ports": [{"name": PORT_NAME, "port": settings.service.port, "targetPort": PORT_NAME}],
    }


def workload_metadata(settings: Settings, hardware: Hardware, object_name: str) -> dict[str, Any]:
    """`metadata` of one of a backend's objects: `object_name` in the stack's namespace, with
    the backend's pod labels."""
    return object_metadata(object_name, settings.namespace, pod_labels(settings, hardware))


def disruption_budget_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """PodDisruptionBudget spec: one pod of the backend down at a time (drains, evictions)."""
    return {"maxUnavailable": 1, "selector": {"matchLabels": selector_labels(settings, hardware)}}


def workload_manifests(name: str, settings: Settings, hardware: Hardware) -> dict[str, Manifest]:
    """The objects of one backend by role (`components.resource_names`), each named
    `<name>-<role>`, in the order they are registered: `service-account`, `deployment`,
    `network-policy` (unless `security.networkPolicy.enabled` is false), `pdb`, `service`."""
    hw = settings.hardware(hardware)
    deployment_meta = workload_metadata(settings, hardware, hw.deployment_name)
    if annotations := deployment_annotations(settings, hardware):
        deployment_meta["annotations"] = annotations
    found = {
        names.SERVICE_ACCOUNT: manifest(
            names.child(name, names.SERVICE_ACCOUNT),
            "v1",
            "ServiceAccount",
            workload_metadata(settings, hardware, service_account_name(settings, hardware)),
            service_account_fields(),
        ),
        names.DEPLOYMENT: manifest(
            names.child(name, names.DEPLOYMENT),
            "apps/v1",
            "Deployment",
            deployment_meta,
            {"spec": deployment_spec(settings, hardware)},
        ),
    }
    if settings.security.network_policy.enabled:
        found[names.NETWORK_POLICY] = manifest(
            names.child(name, names.NETWORK_POLICY),
            "networking.k8s.io/v1",
            "NetworkPolicy",
            workload_metadata(settings, hardware, hw.deployment_name),
            {"spec": workload_policy_spec(settings, selector_labels(settings, hardware))},
        )
    found[names.PDB] = manifest(
        names.child(name, names.PDB),
        "policy/v1",
        "PodDisruptionBudget",
        workload_metadata(settings, hardware, f"{hw.deployment_name}-pdb"),
        {"spec": disruption_budget_spec(settings, hardware)},
    )
    found[names.SERVICE] = manifest(
        names.child(name, names.SERVICE),
        "v1",
        "Service",
        workload_metadata(settings, hardware, direct_service_name(settings, hardware)),
        {"spec": direct_service_spec(settings, hardware)},
    )
    return found
