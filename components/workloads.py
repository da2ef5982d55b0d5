"""One backend of the service: Deployment, PodDisruptionBudget and direct Service.

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
    subset_labels,
)
from components.settings import Hardware, Settings

CONTAINER_NAME = "inference"
PORT_NAME = "http"  # Istio picks the protocol from the port name
RUN_AS_USER = 1000
DRIVER_VOLUME = "accelerator-driver"


def replicas_for(settings: Settings, hardware: Hardware) -> int:
    """Pods of one backend at the stack's weight (formula in `components.capacity`)."""
    capacity = settings.capacity
    if hardware == "ascend":
        return ascend_replicas(
            capacity.total_replicas,
            settings.ascend_weight,
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
    """The inference container: image, port, accelerator request, probes, hardened context."""
    hw = settings.hardware(hardware)
    res = hw.resources
    accelerators = str(hw.accelerators_per_pod)
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": hw.image,
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
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "capabilities": {"drop": ["ALL"]},
            "runAsNonRoot": True,
        },
    }
    if hw.driver_host_path:
        container["volumeMounts"] = [
            {"name": DRIVER_VOLUME, "mountPath": hw.driver_host_path, "readOnly": True}
        ]
    return container


def pod_spec(settings: Settings, hardware: Hardware) -> dict[str, Any]:
    """Pod spec pinned to the backend's pool: nodeSelector + the toleration of its taint."""
    hw = settings.hardware(hardware)
    spec: dict[str, Any] = {
        "nodeSelector": {POOL_LABEL: hw.pool.name},
        "tolerations": [pool_toleration(hw.pool.name)],
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS_USER,
            "runAsGroup": RUN_AS_USER,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "containers": [container_spec(settings, hardware)],
    }
    if hw.driver_host_path:
        spec["volumes"] = [
            {"name": DRIVER_VOLUME, "hostPath": {"path": hw.driver_host_path, "type": "Directory"}}
        ]
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
    pod down at a time, and the direct Service `<service>-<hardware>`."""

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

        deployment_meta = meta(hw.deployment_name)
        if annotations := deployment_annotations(settings, hardware):
            deployment_meta["annotations"] = annotations
        deployment = k8s.apps.v1.Deployment(
            names.child(name, names.DEPLOYMENT),
            metadata=deployment_meta,
            spec=deployment_spec(settings, hardware),
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
