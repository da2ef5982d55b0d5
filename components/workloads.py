"""One backend of the service: Deployment, PodDisruptionBudget, direct Service, ServiceAccount
and NetworkPolicy.

The manifests are built by pure functions (`deployment_spec`, ...) returning camelCase dicts, so
tests and policies can read them without Pulumi; `InferenceWorkload` only registers them.
"""

from __future__ import annotations

import math
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.capacity import ascend_replicas, nvidia_replicas
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
    service_account,
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


class InferenceWorkload(pulumi.ComponentResource):
    """One backend (`nvidia` or `ascend`): its Deployment, a PodDisruptionBudget allowing one
    pod down at a time, the direct Service `<service>-<hardware>`, the pods' ServiceAccount
    and, unless `security.networkPolicy.enabled` is false, their NetworkPolicy (both named
    like the Deployment)."""

    deployment_name: pulumi.Output[str]
    replicas: pulumi.Output[int]
    direct_service_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: Settings,
        hardware: Hardware,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(names.WORKLOAD_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        hw = settings.hardware(hardware)
        labels = pod_labels(settings, hardware)

        def meta(object_name: str) -> dict[str, Any]:
            return {"name": object_name, "namespace": settings.namespace, "labels": labels}

        account = k8s.core.v1.ServiceAccount(
            names.child(name, names.SERVICE_ACCOUNT),
            **service_account(service_account_name(settings, hardware), settings.namespace, labels),
            opts=child,
        )
        deployment_meta = meta(hw.deployment_name)
        if annotations := deployment_annotations(settings, hardware):
            deployment_meta["annotations"] = annotations
        deployment = k8s.apps.v1.Deployment(
            names.child(name, names.DEPLOYMENT),
            metadata=deployment_meta,
            spec=deployment_spec(settings, hardware),
            opts=pulumi.ResourceOptions(parent=self, depends_on=[account]),
        )
        if settings.security.network_policy.enabled:
            k8s.networking.v1.NetworkPolicy(
                names.child(name, names.NETWORK_POLICY),
                metadata=meta(hw.deployment_name),
                spec=workload_policy_spec(settings, selector_labels(settings, hardware)),
                opts=child,
            )
        k8s.policy.v1.PodDisruptionBudget(
            names.child(name, names.PDB),
            metadata=meta(f"{hw.deployment_name}-pdb"),
            spec={
                "maxUnavailable": 1,
                "selector": {"matchLabels": selector_labels(settings, hardware)},
            },
            opts=child,
        )
        service = k8s.core.v1.Service(
            names.child(name, names.SERVICE),
            metadata=meta(direct_service_name(settings, hardware)),
            spec=direct_service_spec(settings, hardware),
            opts=child,
        )
        self.deployment_name = deployment.metadata.name
        self.replicas = deployment.spec.replicas.apply(int)
        self.direct_service_name = service.metadata.name
        self.register_outputs(
            {
                "deployment_name": self.deployment_name,
                "replicas": self.replicas,
                "direct_service_name": self.direct_service_name,
            }
        )
