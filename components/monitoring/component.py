"""The unified monitoring objects: a PrometheusRule and a Grafana dashboard ConfigMap.

The rules (`components.monitoring.prometheus_rule`) and the dashboard
(`components.monitoring.dashboard`) are pure functions of the settings, and so are their
manifests here; `components.resources.UnifiedMonitoring` only registers them. The
PrometheusRule is a prometheus-operator CRD (`monitoring.coreos.com/v1`), registered as an
`apiextensions.CustomResource` whose camelCase `spec` Pulumi passes through untouched; the
ConfigMap carries the label the Grafana dashboard sidecar selects on
(`grafana_dashboard: "1"` by default).
"""

from __future__ import annotations

import json
from typing import Any

from components import resource_names as names
from components.manifests import Manifest, manifest
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


def dashboard_data(settings: Settings, board: dict[str, Any]) -> dict[str, str]:
    """The dashboard ConfigMap's data: `dashboard_file_name` -> the dashboard as JSON."""
    return {dashboard_file_name(settings): json.dumps(board, indent=2, sort_keys=True)}


def fleet_dashboard_manifest(name: str, settings: Settings, services: list[str]) -> Manifest:
    """A fleet's one dashboard ConfigMap named `name` (`dashboard.fleet_dashboard`, with the
    `service` variable): it is every service's, so the stack registers it."""
    return manifest(
        name,
        "v1",
        "ConfigMap",
        dashboard_metadata(settings, fleet=True),
        {"data": dashboard_data(settings, fleet_dashboard(settings, services))},
    )


def rule_metadata(settings: Settings) -> dict[str, Any]:
    """`metadata` of the PrometheusRule: `rule_name`, labelled `app=<service>` and
    `monitoring.ruleLabels` (what the Prometheus's ruleSelector matches)."""
    return {
        "name": rule_name(settings),
        "namespace": settings.namespace,
        "labels": {"app": settings.service.name, **settings.monitoring.rule_labels},
    }


def monitoring_manifests(name: str, settings: Settings, stack: str) -> dict[str, Manifest]:
    """The monitoring objects by role (`components.resource_names`), each named
    `<name>-<role>`, in the order they are registered: `rules` (the PrometheusRule of stack
    `stack`) and, for a stack without `services` whose dashboard is enabled, `dashboard` (a
    fleet's members have the fleet's one, `fleet_dashboard_manifest`)."""
    found = {
        names.RULES: manifest(
            names.child(name, names.RULES),
            PROMETHEUS_RULE_API,
            "PrometheusRule",
            rule_metadata(settings),
            {"spec": prometheus_rule_spec(settings, stack)},
        )
    }
    if settings.monitoring.dashboard.enabled and settings.member is None:
        found[names.DASHBOARD] = manifest(
            names.child(name, names.DASHBOARD),
            "v1",
            "ConfigMap",
            dashboard_metadata(settings),
            {"data": dashboard_data(settings, dashboard(settings))},
        )
    return found
