"""The Grafana dashboard comparing NVIDIA and Ascend side by side (pure: settings -> JSON dict).

Every query reads a series the recording rules produce (`components.monitoring.metric_names`)
for the stack's namespace, or, for chip health, the npu-exporter series itself (a fleet
member's: those of its own Ascend pods); nothing else.
Panels: migration progress against the configured weight, error ratio / latency / request rate per
hardware, accelerator utilisation / memory / temperature / power, accelerator-hours and cost.
A fleet stack has one dashboard (`fleet_dashboard`) with a `service` variable: the panels above
show the chosen service's series (label `service`), and a "Fleet" row shows the accelerators,
accelerator-hours and cost of every service per hardware.
Grafana dashboard JSON model, schemaVersion 39 (grafana.com/docs/grafana/latest/dashboards/
build-dashboards/view-dashboard-json-model/).
"""

from __future__ import annotations

import hashlib
from typing import Any

from components.monitoring import metric_names as m
from components.monitoring.accelerators import POD_SUFFIX, prices
from components.monitoring.promql import Matcher, selector
from components.monitoring.rules import SERVICE_LABEL
from components.settings import HARDWARE, Settings
from components.settings.fleet import member_names

SCHEMA_VERSION = 39
PANEL_WIDTH, PANEL_HEIGHT = 8, 8
HARDWARE_COLOURS = {"nvidia": "#76B900", "ascend": "#C7000B"}
"""Fixed series colours so a hardware keeps its colour in every panel."""
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
SERVICE_VARIABLE = "$service"
"""The fleet dashboard's variable naming the service its panels show."""


def dashboard_uid(namespace: str) -> str:
    """`dualstack-<namespace>`, hashed down to Grafana's 40-character uid limit if needed."""
    uid = f"dualstack-{namespace}"
    if len(uid) <= 40:
        return uid
    return f"dualstack-{hashlib.sha256(namespace.encode()).hexdigest()[:30]}"


def _target(expr: str, legend: str, ref: str) -> dict[str, Any]:
    return {"datasource": DATASOURCE, "expr": expr, "legendFormat": legend, "refId": ref}


def _overrides() -> list[dict[str, Any]]:
    return [
        {
            "matcher": {"id": "byRegexp", "options": f".*{hw}.*"},
            "properties": [{"id": "color", "value": {"mode": "fixed", "fixedColor": colour}}],
        }
        for hw, colour in HARDWARE_COLOURS.items()
    ]


def _panel(
    title: str,
    targets: list[tuple[str, str]],
    unit: str,
    description: str,
    kind: str = "timeseries",
    **limits: float,
) -> dict[str, Any]:
    return {
        "type": kind,
        "title": title,
        "description": description,
        "datasource": DATASOURCE,
        "targets": [
            _target(expr, legend, chr(ord("A") + i)) for i, (expr, legend) in enumerate(targets)
        ],
        "fieldConfig": {"defaults": {"unit": unit, **limits}, "overrides": _overrides()},
        "options": {"legend": {"displayMode": "list", "placement": "bottom"}},
    }


def _row(title: str) -> dict[str, Any]:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _chips(settings: Settings, fleet: bool) -> list[Matcher]:
    """The npu-exporter series of the namespace's chips; with `fleet`, of the chips assigned
    to the Ascend pods of the service the `service` variable names (its Deployment is named
    after it, `components.settings.fleet.member_names`)."""
    npu = settings.monitoring.npu
    chips: list[Matcher] = [(npu.namespace_label, "=", settings.namespace)]
    if fleet:
        deployment = member_names(SERVICE_VARIABLE)["ascend"]["deploymentName"]
        chips.append((npu.pod_label, "=~", f"{deployment}{POD_SUFFIX}"))
    return chips


def panels(settings: Settings, fleet: bool = False) -> list[dict[str, Any]]:
    """The dashboard's rows and panels in reading order, without ids or positions; with
    `fleet`, of the service the `service` variable names."""
    ns = {"namespace": settings.namespace}
    if fleet:
        ns[SERVICE_LABEL] = SERVICE_VARIABLE

    def per_hw(name: str) -> tuple[str, str]:
        return selector(name, ns), "{{hardware}}"

    npu = settings.monitoring.npu
    result = [
        _row("Migration"),
        _panel(
            "Ascend share of requests vs configured weight",
            [
                (selector(m.ASCEND_SHARE, ns), "served by ascend"),
                (selector(m.ASCEND_WEIGHT, ns), "configured ascend weight"),
            ],
            "percentunit",
            "Share of requests Ascend actually served (5 min rate) against the route weight.",
            min=0,
            max=1,
        ),
        _panel(
            "Error ratio (5xx / all)",
            [per_hw(m.ERROR_RATIO)],
            "percentunit",
            "Per hardware; no line means no traffic, not zero errors.",
            min=0,
        ),
        _panel(
            "Latency p99 and p50",
            [
                (selector(m.LATENCY_P99, ns), "p99 {{hardware}}"),
                (selector(m.LATENCY_P50, ns), "p50 {{hardware}}"),
            ],
            "s",
            "Request latency quantiles per hardware, seconds.",
            min=0,
        ),
        _panel("Request rate", [per_hw(m.REQUEST_RATE)], "reqps", "Requests/s per hardware."),
        _row("Accelerators"),
        _panel(
            "Utilisation",
            [per_hw(m.ACCELERATOR_UTILISATION)],
            "percent",
            "Mean utilisation of the accelerators assigned to the namespace.",
            min=0,
            max=100,
        ),
        _panel(
            "Memory used",
            [per_hw(m.ACCELERATOR_MEMORY_USED)],
            "percent",
            "Device memory used / device memory, over all assigned accelerators.",
            min=0,
            max=100,
        ),
        _panel(
            "Hottest accelerator",
            [per_hw(m.ACCELERATOR_TEMPERATURE)],
            "celsius",
            "Maximum temperature per hardware.",
        ),
        _panel("Power", [per_hw(m.ACCELERATOR_POWER)], "watt", "Total power draw, W."),
        _panel(
            "NPU chip health",
            [(selector(npu.health, _chips(settings, fleet)), "chip {{" + npu.chip_label + "}}")],
            "none",
            "npu-exporter health status per chip: 1 healthy, 0 unhealthy"
            + (" (the chips of the chosen service's Ascend pods)." if fleet else "."),
            kind="stat",
        ),
        _row("Usage and cost"),
        _panel(
            "Accelerators assigned",
            [per_hw(m.ACCELERATORS)],
            "none",
            "Devices assigned to the namespace's pods.",
            min=0,
        ),
        _panel(
            "Accelerator-hours, last 24 h",
            [per_hw(m.ACCELERATOR_HOURS)],
            "h",
            "Assigned devices integrated over 24 h (hours, not minutes).",
            kind="stat",
        ),
    ]
    if any(prices(settings, hw) for hw in HARDWARE):
        currency = f"suffix: {settings.monitoring.prices.currency}"
        result += [
            _panel(
                "Cost per hour",
                [per_hw(m.ACCELERATOR_COST_PER_HOUR)],
                currency,
                "Assigned devices x configured price per accelerator-hour.",
                min=0,
            ),
            _panel(
                "Cost, last 24 h",
                [per_hw(m.ACCELERATOR_COST)],
                currency,
                "Cost of the priced devices over the last 24 h.",
                kind="stat",
            ),
        ]
    return result


def _layout(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ids and grid positions: rows span the width, panels three to a line."""
    laid_out, x, y = [], 0, 0
    for panel_id, item in enumerate(items, start=1):
        if item["type"] == "row":
            y += PANEL_HEIGHT if x else 0
            x = 0
            laid_out.append({**item, "id": panel_id, "gridPos": {"h": 1, "w": 24, "x": 0, "y": y}})
            y += 1
            continue
        if x + PANEL_WIDTH > 24:
            x, y = 0, y + PANEL_HEIGHT
        grid = {"h": PANEL_HEIGHT, "w": PANEL_WIDTH, "x": x, "y": y}
        laid_out.append({**item, "id": panel_id, "gridPos": grid})
        x += PANEL_WIDTH
    return laid_out


def fleet_panels(settings: Settings) -> list[dict[str, Any]]:
    """The "Fleet" row: every service's accelerators, accelerator-hours and (when priced) cost
    over the last 24 h, per service and hardware, summed from the recorded series."""
    ns = {"namespace": settings.namespace}
    legend = "{{service}} {{hardware}}"

    def by_service(name: str) -> tuple[str, str]:
        return f"sum by ({SERVICE_LABEL}, hardware) ({selector(name, ns)})", legend

    result = [
        _row("Fleet: every service"),
        _panel(
            "Accelerators assigned, per service",
            [by_service(m.ACCELERATORS)],
            "none",
            "Devices assigned to each service's pods, per hardware.",
            min=0,
        ),
        _panel(
            "Accelerator-hours, last 24 h, per service",
            [by_service(m.ACCELERATOR_HOURS)],
            "h",
            "Each service's assigned devices integrated over 24 h, per hardware.",
            kind="bargauge",
        ),
        _panel(
            "Accelerator-hours, last 24 h, per hardware",
            [(f"sum by (hardware) ({selector(m.ACCELERATOR_HOURS, ns)})", "{{hardware}}")],
            "h",
            "Every service's accelerator-hours together, per hardware.",
            kind="stat",
        ),
    ]
    if any(prices(settings, hw) for hw in HARDWARE):
        result.append(
            _panel(
                "Cost, last 24 h, per service",
                [by_service(m.ACCELERATOR_COST)],
                f"suffix: {settings.monitoring.prices.currency}",
                "Each service's priced devices over the last 24 h, per hardware.",
                kind="bargauge",
            )
        )
    return result


def dashboard(settings: Settings) -> dict[str, Any]:
    """The dashboard JSON model (a dict), uid `dualstack-<namespace>`."""
    return {
        "uid": dashboard_uid(settings.namespace),
        "title": f"Dual-stack inference: {settings.service.name} ({settings.namespace})",
        "description": "NVIDIA vs Ascend during the migration; series from dualstack's rules.",
        "tags": ["dualstack", "nvidia", "ascend", settings.namespace],
        "editable": False,
        "schemaVersion": SCHEMA_VERSION,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "1m",
        "timezone": "browser",
        "templating": {
            "list": [
                {
                    "name": "datasource",
                    "label": "Prometheus",
                    "type": "datasource",
                    "query": "prometheus",
                }
            ]
        },
        "annotations": {"list": []},
        "panels": _layout(panels(settings)),
    }


def fleet_dashboard(settings: Settings, services: list[str]) -> dict[str, Any]:
    """A fleet's one dashboard (uid `dualstack-<namespace>`): the `service` variable (a custom
    list of `services`, the first chosen) picks whose series the panels show; the "Fleet" row
    shows every service. `settings` is any member's: monitoring and namespace are shared."""
    board = dashboard(settings)
    variable = {
        "name": SERVICE_LABEL,
        "label": "Service",
        "type": "custom",
        "query": ",".join(services),
        "current": {"text": services[0], "value": services[0]},
        "options": [
            {"text": name, "value": name, "selected": index == 0}
            for index, name in enumerate(services)
        ],
    }
    board["title"] = f"Dual-stack inference: fleet of {len(services)} ({settings.namespace})"
    board["templating"]["list"].append(variable)
    board["panels"] = _layout([*fleet_panels(settings), *panels(settings, fleet=True)])
    return board
