"""The Grafana dashboard comparing NVIDIA and Ascend side by side (pure: settings -> JSON dict).

Every query reads a series the recording rules produce (`components.monitoring.metric_names`)
for the stack's namespace, or, for chip health, the npu-exporter series itself; nothing else.
Panels: migration progress against the configured weight, error ratio / latency / request rate per
hardware, accelerator utilisation / memory / temperature / power, accelerator-hours and cost.
Grafana dashboard JSON model, schemaVersion 39 (grafana.com/docs/grafana/latest/dashboards/
build-dashboards/view-dashboard-json-model/).
"""

from __future__ import annotations

import hashlib
from typing import Any

from components.monitoring import metric_names as m
from components.monitoring.accelerators import prices
from components.monitoring.promql import selector
from components.settings import HARDWARE, Settings

SCHEMA_VERSION = 39
PANEL_WIDTH, PANEL_HEIGHT = 8, 8
HARDWARE_COLOURS = {"nvidia": "#76B900", "ascend": "#C7000B"}
"""Fixed series colours so a hardware keeps its colour in every panel."""
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}


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


def panels(settings: Settings) -> list[dict[str, Any]]:
    """The dashboard's rows and panels in reading order, without ids or positions."""
    ns = {"namespace": settings.namespace}

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
            [
                (
                    selector(npu.health, {npu.namespace_label: settings.namespace}),
                    "chip {{" + npu.chip_label + "}}",
                )
            ],
            "none",
            "npu-exporter health status per chip: 1 healthy, 0 unhealthy.",
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
