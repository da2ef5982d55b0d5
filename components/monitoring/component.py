"""The unified monitoring component: a PrometheusRule and a Grafana dashboard ConfigMap.

The rules (`components.monitoring.prometheus_rule`) and the dashboard
(`components.monitoring.dashboard`) are pure functions of the settings; this component only
registers them. The PrometheusRule is a prometheus-operator CRD (`monitoring.coreos.com/v1`),
registered as an `apiextensions.CustomResource` whose camelCase `spec` Pulumi passes through
untouched; the ConfigMap carries the label the Grafana dashboard sidecar selects on
(`grafana_dashboard: "1"` by default).
"""

from __future__ import annotations

import json
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components import resource_names as names
from components.monitoring.dashboard import dashboard, fleet_dashboard
from components.monitoring.prometheus_rule import prometheus_rule_spec
from components.settings import Settings

PROMETHEUS_RULE_API = "monitoring.coreos.com/v1"
FOLDER_ANNOTATION = "grafana_folder"
"""Annotation the Grafana sidecar reads as the dashboard's folder (its `folderAnnotation`)."""


def rule_name(settings: Settings) -> str:
    """Name of the PrometheusRule: `<service>-dualstack`."""
    return f"{settings.service.name}-dualstack"


def dashboard_config_map_name(settings: Settings) -> str:
    """Name of the dashboard ConfigMap: `<service>-dualstack-dashboard-<namespace>`.

    The stack's namespace is part of the name because `monitoring.dashboard.namespace` may put
    every stack's dashboard in one shared namespace (`monitoring`), where equal names would
    make prod and staging overwrite each other's ConfigMap. At most 63 + 63 + 21 characters,
    within the 253 of a ConfigMap name (DNS subdomain)."""
    return f"{settings.service.name}-dualstack-dashboard-{settings.namespace}"


def fleet_dashboard_config_map_name(settings: Settings) -> str:
    """Name of a fleet's one dashboard ConfigMap: `dualstack-fleet-dashboard-<namespace>`."""
    return f"dualstack-fleet-dashboard-{settings.namespace}"


def dashboard_file_name(settings: Settings) -> str:
    """The ConfigMap key holding the dashboard JSON: `dualstack-<namespace>.json`."""
    return f"dualstack-{settings.namespace}.json"


def dashboard_metadata(settings: Settings, fleet: bool = False) -> dict[str, Any]:
    """Metadata of the dashboard ConfigMap: the sidecar's label and optional folder. A fleet's
    dashboard belongs to no one service: no `app` label."""
    board = settings.monitoring.dashboard
    labels = {} if fleet else {"app": settings.service.name}
    metadata: dict[str, Any] = {
        "name": fleet_dashboard_config_map_name(settings)
        if fleet
        else dashboard_config_map_name(settings),
        "namespace": board.namespace or settings.namespace,
        "labels": {**labels, board.label: board.label_value},
    }
    if board.folder:
        metadata["annotations"] = {FOLDER_ANNOTATION: board.folder}
    return metadata


def register_fleet_dashboard(
    name: str, settings: Settings, services: list[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.ConfigMap:
    """A fleet's one dashboard ConfigMap (`dashboard.fleet_dashboard`, with the `service`
    variable), registered as `name` under `opts`' parent (the stack: it is every service's)."""
    return k8s.core.v1.ConfigMap(
        name,
        metadata=dashboard_metadata(settings, fleet=True),
        data={
            dashboard_file_name(settings): json.dumps(
                fleet_dashboard(settings, services), indent=2, sort_keys=True
            )
        },
        opts=opts,
    )


class UnifiedMonitoring(pulumi.ComponentResource):
    """One set of accelerator and SLO series for both hardware kinds: recording and alerting
    rules in a PrometheusRule, and a Grafana dashboard comparing NVIDIA and Ascend (for a fleet
    member none of its own: the fleet has one, `register_fleet_dashboard`)."""

    rule_name: pulumi.Output[str]
    dashboard_name: pulumi.Output[str | None]

    def __init__(
        self, name: str, settings: Settings, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__(names.MONITORING_TYPE, name, None, opts)
        child = pulumi.ResourceOptions(parent=self)
        rule = k8s.apiextensions.CustomResource(
            names.child(name, names.RULES),
            api_version=PROMETHEUS_RULE_API,
            kind="PrometheusRule",
            metadata={
                "name": rule_name(settings),
                "namespace": settings.namespace,
                "labels": {"app": settings.service.name, **settings.monitoring.rule_labels},
            },
            spec=prometheus_rule_spec(settings, pulumi.get_stack()),
            opts=child,
        )
        self.rule_name = rule.metadata.apply(lambda meta: meta["name"])
        self.dashboard_name = pulumi.Output.from_input(None)
        if settings.monitoring.dashboard.enabled and settings.member is None:
            board = k8s.core.v1.ConfigMap(
                names.child(name, names.DASHBOARD),
                metadata=dashboard_metadata(settings),
                data={
                    dashboard_file_name(settings): json.dumps(
                        dashboard(settings), indent=2, sort_keys=True
                    )
                },
                opts=child,
            )
            self.dashboard_name = board.metadata.name
        self.register_outputs({"rule_name": self.rule_name, "dashboard_name": self.dashboard_name})
