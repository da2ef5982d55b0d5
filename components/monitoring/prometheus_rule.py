"""The whole PrometheusRule spec of a stack: every recording and alerting group (pure).

`prometheus_rule_spec(settings, stack)` is what the monitoring component registers, what
`promtool check rules` / `promtool test rules` read (a PrometheusRule's `spec` is exactly
promtool's rule-file format, REFERENCE.md), and what the promotion gate loads into a real
Prometheus.
"""

from __future__ import annotations

from typing import Any

import yaml

from components.monitoring.accelerators import (
    USAGE_INTERVAL,
    accelerator_rules,
    cost_rules,
    usage_rules,
)
from components.monitoring.alerts import alert_rules
from components.monitoring.rules import migration_rules, request_rules
from components.settings import HARDWARE, Settings


def group_name(settings: Settings, part: str) -> str:
    """`dualstack.<namespace>.<part>`: tells the stacks apart in Prometheus's rule list; a
    fleet member's `dualstack.<namespace>.<service>.<part>`."""
    if settings.member is not None:
        return f"dualstack.{settings.namespace}.{settings.member}.{part}"
    return f"dualstack.{settings.namespace}.{part}"


def recording_groups(settings: Settings) -> list[dict[str, Any]]:
    """The recording-rule groups: requests and migration, accelerators and cost, 24 h usage."""
    interval = settings.monitoring.evaluation_interval
    requests = [r for hw in HARDWARE for r in request_rules(settings, hw)]
    accelerators = [r for hw in HARDWARE for r in accelerator_rules(settings, hw)]
    accelerators += [r for hw in HARDWARE for r in cost_rules(settings, hw)]
    return [
        {
            "name": group_name(settings, "requests"),
            "interval": interval,
            # ASCEND_SHARE reads REQUEST_RATE: the rules of a group run in order.
            "rules": requests + migration_rules(settings),
        },
        {"name": group_name(settings, "accelerators"), "interval": interval, "rules": accelerators},
        {
            "name": group_name(settings, "usage"),
            "interval": USAGE_INTERVAL,
            "rules": [r for hw in HARDWARE for r in usage_rules(settings, hw)],
        },
    ]


def prometheus_rule_spec(settings: Settings, stack: str) -> dict[str, Any]:
    """The PrometheusRule `spec`: {"groups": [{name, interval, rules: [...]}, ...]}.

    `stack` is the Pulumi stack named in the alerts' SOP commands (`dualstack rollback
    --stack prod`).
    """
    alerts = {
        "name": group_name(settings, "alerts"),
        "interval": settings.monitoring.evaluation_interval,
        "rules": alert_rules(settings, stack),
    }
    return {"groups": [*recording_groups(settings), alerts]}


class _Dumper(yaml.SafeDumper):
    """Multi-line expressions as literal blocks, as a reviewer reads them."""


_Dumper.add_representer(
    str,
    lambda dumper, data: dumper.represent_scalar(
        "tag:yaml.org,2002:str", data, style="|" if "\n" in data else None
    ),
)


def rule_file(spec: dict[str, Any]) -> str:
    """The spec as a promtool / Prometheus rule file (YAML text)."""
    return yaml.dump(spec, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=1000)


def recorded_names(spec: dict[str, Any]) -> set[str]:
    """Every `record` name in a rule spec."""
    return {r["record"] for g in spec["groups"] for r in g["rules"] if "record" in r}


def alert_names(spec: dict[str, Any]) -> set[str]:
    """Every `alert` name in a rule spec."""
    return {r["alert"] for g in spec["groups"] for r in g["rules"] if "alert" in r}
