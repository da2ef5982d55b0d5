"""The ComponentResources of one stack: each registers the manifests its pure builder made
(`components.manifests`), with the options only the engine needs (parents, `depends_on`,
aliases) and its typed outputs.

Only the Pulumi program imports this module (`pulumi up`, `pulumi preview`, and the mocked
run the offline render is checked against); the offline render walks the same builders
without it (`dualstack.offline.direct`).
"""

from __future__ import annotations

import re

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.manifests import Manifest
from components.monitoring.component import monitoring_manifests
from components.node_pools import node_patch_manifests
from components.precision import precision_manifests
from components.routers import gateway_api, istio
from components.settings import Hardware, PoolSettings, Settings
from components.traffic import route_weights, traffic_manifests
from components.workloads import workload_manifests

TYPED = {
    "kubernetes:core/v1:ConfigMap": k8s.core.v1.ConfigMap,
    "kubernetes:core/v1:NodePatch": k8s.core.v1.NodePatch,
    "kubernetes:core/v1:Service": k8s.core.v1.Service,
    "kubernetes:core/v1:ServiceAccount": k8s.core.v1.ServiceAccount,
    "kubernetes:apps/v1:Deployment": k8s.apps.v1.Deployment,
    "kubernetes:batch/v1:CronJob": k8s.batch.v1.CronJob,
    "kubernetes:batch/v1:Job": k8s.batch.v1.Job,
    "kubernetes:networking.k8s.io/v1:NetworkPolicy": k8s.networking.v1.NetworkPolicy,
    "kubernetes:policy/v1:PodDisruptionBudget": k8s.policy.v1.PodDisruptionBudget,
}
"""The typed pulumi_kubernetes class of each built-in type token the program registers (the
class sets `apiVersion` and `kind`); any other object is an `apiextensions.CustomResource`."""


def _argument(key: str) -> str:
    """A top-level field as the typed classes take it: `automountServiceAccountToken` ->
    `automount_service_account_token` (the SDK camelCases it back on registration)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def register(manifest: Manifest, opts: pulumi.ResourceOptions) -> pulumi.CustomResource:
    """Register `manifest` under its logical name with `opts`: by its typed class, or as a
    CustomResource of its apiVersion and kind (Istio, Gateway API, prometheus-operator)."""
    fields = {
        _argument(key): value
        for key, value in manifest.body.items()
        if key not in ("apiVersion", "kind")
    }
    typed = TYPED.get(manifest.type_)
    if typed is not None:
        return typed(manifest.name, **fields, opts=opts)
    return k8s.apiextensions.CustomResource(
        manifest.name, api_version=manifest.api_version, kind=manifest.kind, **fields, opts=opts
    )


class AcceleratorNodePool(pulumi.ComponentResource):
    """The NodePatches of one accelerator pool (`components.node_pools`): labels
    `pool=<name>` plus the pool's labels, and taints `pool=<name>:NoSchedule` plus
    `extraTaints`, on each node of the pool."""

    node_names: pulumi.Output[list[str]]

    def __init__(
        self, name: str, pool: PoolSettings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.NODE_POOL_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        self.patches = [register(patch, child) for patch in node_patch_manifests(name, pool)]
        self.node_names = pulumi.Output.from_input(list(pool.nodes))
        self.register_outputs({"node_names": self.node_names})


class InferenceWorkload(pulumi.ComponentResource):
    """One backend (`nvidia` or `ascend`, `components.workloads`): its Deployment, a
    PodDisruptionBudget allowing one pod down at a time, the direct Service
    `<service>-<hardware>`, the pods' ServiceAccount and, unless
    `security.networkPolicy.enabled` is false, their NetworkPolicy."""

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
        manifests = workload_manifests(name, settings, hardware)
        account = register(manifests.pop(names.SERVICE_ACCOUNT), child)
        deployment = register(
            manifests.pop(names.DEPLOYMENT),
            pulumi.ResourceOptions(parent=self, depends_on=[account]),
        )
        registered = {role: register(manifest, child) for role, manifest in manifests.items()}
        service = registered[names.SERVICE]
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


def _other_api_versions(api_version: str, kind: str) -> list[pulumi.Alias]:
    # Changing the apiVersion changes the type token; alias it so Pulumi updates in place.
    return [
        pulumi.Alias(type_=f"kubernetes:{other}:{kind}")
        for other in istio.API_VERSIONS
        if other != api_version
    ]


class TrafficSplit(pulumi.ComponentResource):
    """The shared Service and the router objects that send `ascendWeight` % to Ascend
    (`components.traffic`)."""

    virtual_service_name: pulumi.Output[str | None]
    http_route_name: pulumi.Output[str | None]
    weights: pulumi.Output[dict[str, int]]

    def __init__(
        self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.TRAFFIC_TYPE, name, None, opts)
        api_version = settings.istio.api_version
        manifests = traffic_manifests(name, settings)

        def child(kind: str) -> pulumi.ResourceOptions:
            return pulumi.ResourceOptions(
                parent=self, aliases=_other_api_versions(api_version, kind)
            )

        service = register(manifests[names.SERVICE], pulumi.ResourceOptions(parent=self))
        if names.DESTINATION_RULE in manifests:
            destination_rule = register(manifests[names.DESTINATION_RULE], child("DestinationRule"))
            register(
                manifests[istio.ROLE],
                pulumi.ResourceOptions.merge(
                    child(istio.KIND),
                    pulumi.ResourceOptions(depends_on=[service, destination_rule]),
                ),
            )
        if gateway_api.ROLE in manifests:
            register(
                manifests[gateway_api.ROLE],
                pulumi.ResourceOptions(parent=self, depends_on=[service]),
            )
        weights = route_weights(settings.ascend_weight)
        vs_name = istio.object_name(settings) if istio.renders(settings) else None
        route_name = gateway_api.object_name(settings) if gateway_api.renders(settings) else None
        self.virtual_service_name = pulumi.Output.from_input(vs_name)
        self.http_route_name = pulumi.Output.from_input(route_name)
        self.weights = pulumi.Output.from_input(weights)
        self.service_name = service.metadata.name
        self.register_outputs(
            {
                "virtual_service_name": self.virtual_service_name,
                "http_route_name": self.http_route_name,
                "weights": self.weights,
                "service_name": self.service_name,
            }
        )


class PrecisionCheck(pulumi.ComponentResource):
    """The precision check of one service (`components.precision`): ConfigMap (prompts), a
    Job named by the hash of what it checks, a CronJob when `precisionCheck.schedule` is set,
    the pods' ServiceAccount and (unless `security.networkPolicy.enabled` is false)
    NetworkPolicy. The Job waits for the rest and for `checker`, the stack's checker
    ConfigMap it mounts."""

    config_map_name: pulumi.Output[str]
    job_name: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        settings: Settings,
        opts: pulumi.ResourceOptions | None = None,
        checker: pulumi.Resource | None = None,
    ) -> None:
        super().__init__(names.PRECISION_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        manifests = precision_manifests(name, settings)
        config_map = register(manifests.pop("config"), child)
        ready = [config_map, register(manifests.pop("service-account"), child)]
        if checker is not None:  # the stack's checker ConfigMap, which the Job mounts
            ready.append(checker)
        if "network-policy" in manifests:
            ready.append(register(manifests.pop("network-policy"), child))
        after_config = pulumi.ResourceOptions(parent=self, depends_on=ready)
        job = register(manifests.pop("job"), after_config)
        for manifest in manifests.values():  # the CronJob
            register(manifest, after_config)
        self.config_map_name = config_map.metadata.name
        self.job_name = job.metadata.name
        self.register_outputs({"config_map_name": self.config_map_name, "job_name": self.job_name})


class UnifiedMonitoring(pulumi.ComponentResource):
    """One set of accelerator and SLO series for both hardware kinds
    (`components.monitoring`): recording and alerting rules in a PrometheusRule, and a Grafana
    dashboard comparing NVIDIA and Ascend (for a fleet member none of its own: the fleet has
    one, `fleet_dashboard_manifest`)."""

    rule_name: pulumi.Output[str]
    dashboard_name: pulumi.Output[str | None]

    def __init__(
        self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.MONITORING_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        manifests = monitoring_manifests(name, settings, pulumi.get_stack())
        rule = register(manifests[names.RULES], child)
        self.rule_name = rule.metadata.apply(lambda meta: meta["name"])
        self.dashboard_name = pulumi.Output.from_input(None)
        if names.DASHBOARD in manifests:
            self.dashboard_name = register(manifests[names.DASHBOARD], child).metadata.name
        self.register_outputs({"rule_name": self.rule_name, "dashboard_name": self.dashboard_name})
