"""Accelerator, usage and cost recording rules (pure functions: settings -> rule dicts).

The series cover the devices the exporters report as assigned to pods of the stack's namespace
(exporter label `namespaceLabel`); for a fleet member, to the pods of its own Deployments
(exporter label `podLabel`, `pod_pattern`), so each service's accelerator-hours and cost are
its own. The exporters' real metric names (REFERENCE.md
"Exporter metric names"): DCGM memory % is used / (used + free) since dcgm-exporter has no
default FB_TOTAL, and DCGM's blank sentinels (~9.22e18 and smaller) are dropped.

Accelerator-hours integrate the device count over 24 h as `avg_over_time(...[24h:1m]) * 24`
on a zero-filled count read from the raw exporter series: an hour without devices counts 0, and
a new rule needs no warm-up. (The seed article's `sum_over_time(...[24h:1m]) * 60` gives
minutes x 60 where hours = minutes / 60: REFERENCE.md "Errors in the seed article".)
"""

from __future__ import annotations

from components.monitoring import metric_names as m
from components.monitoring.promql import Matcher, number, selector
from components.monitoring.rules import Rule, record, static_labels
from components.settings import Hardware, Settings

USAGE_WINDOW_HOURS = 24
"""Window of accelerator-hours and cost, in hours."""
USAGE_INTERVAL = "5m"
"""Evaluation interval of the 24 h usage group (its subqueries are the costly rules)."""


POD_SUFFIX = "-[a-z0-9]+-[a-z0-9]+"
"""What a Deployment's pods add to its name: `-<pod-template-hash>-<random suffix>` (both
lowercase alphanumerics; kubernetes.io/docs/concepts/workloads/controllers/deployment,
"Pod-template-hash label"). A PromQL regex is anchored at both ends, so `chat-blue` + this
matches `chat-blue-7d9f8c6b5-x2k4q` and not `chat-blue-blue-7d9f8c6b5-x2k4q` (service
`chat-blue`'s). Pod names are cut to 63 characters: a Deployment name of more than 47 would
lose the suffix's shape."""


def pod_pattern(settings: Settings, hardware: Hardware) -> str:
    """Regex of the pod names of one backend's Deployment (`POD_SUFFIX`)."""
    return f"{settings.hardware(hardware).deployment_name}{POD_SUFFIX}"


def device_scope(settings: Settings, hardware: Hardware) -> list[Matcher]:
    """Matchers keeping the devices assigned to pods of the stack's namespace; for a fleet
    member, to the pods of its own Deployment of `hardware` (`pod_pattern`)."""
    mon = settings.monitoring
    exporter = mon.dcgm if hardware == "nvidia" else mon.npu
    scope: list[Matcher] = [(exporter.namespace_label, "=", settings.namespace)]
    if settings.member is not None:
        scope.append((exporter.pod_label, "=~", pod_pattern(settings, hardware)))
    return scope


def device_metric(settings: Settings, hardware: Hardware) -> tuple[str, str]:
    """(metric with one series per device, its model label): the series devices are counted
    by. Chip level for Ascend at either npu-exporter level (container series are per
    container, not per chip)."""
    mon = settings.monitoring
    if hardware == "nvidia":
        return mon.dcgm.utilization, mon.dcgm.model_label
    return mon.npu.chip_utilization, mon.npu.model_label


def device_count(settings: Settings, hardware: Hardware, *extra: Matcher) -> str:
    """Zero-filled count of assigned devices: `count(U{...}) or vector(0)`."""
    metric, _model = device_metric(settings, hardware)
    return f"count({selector(metric, [*device_scope(settings, hardware), *extra])}) or vector(0)"


def prices(settings: Settings, hardware: Hardware) -> dict[str, float]:
    """Configured price per accelerator-hour by model name for one hardware (maybe empty)."""
    return dict(getattr(settings.monitoring.prices, hardware))


def _nvidia_gauges(settings: Settings) -> dict[str, str]:
    dcgm = settings.monitoring.dcgm
    scope = device_scope(settings, "nvidia")
    floor = number(dcgm.blank_floor)

    def valid(metric: str) -> str:  # drops DCGM's blank sentinels
        return f"{selector(metric, scope)} < {floor}"

    used, free = valid(dcgm.memory_used), valid(dcgm.memory_free)
    return {
        m.ACCELERATOR_UTILISATION: f"avg({valid(dcgm.utilization)})",
        # A GPU counts only when both its used and free memory are valid.
        m.ACCELERATOR_MEMORY_USED: f"100 * sum(({used}) and ({free}))\n/\nsum(({used}) + ({free}))",
        m.ACCELERATOR_TEMPERATURE: f"max({valid(dcgm.temperature)})",
        m.ACCELERATOR_POWER: f"sum({valid(dcgm.power)})",
    }


def _ascend_gauges(settings: Settings) -> dict[str, str]:
    npu = settings.monitoring.npu
    scope = device_scope(settings, "ascend")
    used, total = (selector(metric, scope) for metric in npu.memory)
    return {
        m.ACCELERATOR_UTILISATION: f"avg({selector(npu.utilization, scope)})",
        # Chips without HBM report a total of 0: leave them out of both sums.
        m.ACCELERATOR_MEMORY_USED: f"100 * sum({used} and ({total} > 0))\n/\nsum({total} > 0)",
        m.ACCELERATOR_TEMPERATURE: f"max({selector(npu.temperature, scope)})",
        m.ACCELERATOR_POWER: f"sum({selector(npu.power, scope)})",
    }


def accelerator_rules(settings: Settings, hardware: Hardware) -> list[Rule]:
    """Utilisation %, memory used %, max temperature °C, power W and device count."""
    gauges = _nvidia_gauges(settings) if hardware == "nvidia" else _ascend_gauges(settings)
    rules = [record(name, expr, settings, hardware) for name, expr in gauges.items()]
    rules.append(record(m.ACCELERATORS, device_count(settings, hardware), settings, hardware))
    return rules


def _model_cost(settings: Settings, hardware: Hardware, model: str, price: float) -> str:
    _metric, model_label = device_metric(settings, hardware)
    return f"({device_count(settings, hardware, (model_label, '=', model))}) * {number(price)}"


def cost_rules(settings: Settings, hardware: Hardware) -> list[Rule]:
    """Cost per hour by priced model (label `model`) and in total; [] without prices.

    Devices of a model without a price are left out (the AcceleratorUnpriced alert names them).
    """
    priced = sorted(prices(settings, hardware).items())
    rules = [
        record(
            m.ACCELERATOR_COST_PER_HOUR_BY_MODEL,
            _model_cost(settings, hardware, model, price),
            settings,
            hardware,
            model=model,
        )
        for model, price in priced
    ]
    if rules:
        by_model = selector(m.ACCELERATOR_COST_PER_HOUR_BY_MODEL, static_labels(settings, hardware))
        rules.append(record(m.ACCELERATOR_COST_PER_HOUR, f"sum({by_model})", settings, hardware))
    return rules


def usage_rules(settings: Settings, hardware: Hardware) -> list[Rule]:
    """Accelerator-hours over 24 h and, when priced, the cost over 24 h.

    avg_over_time over a 1-minute subquery times the window in hours (REFERENCE.md: range
    selectors include both ends, so a sum_over_time would count one extra minute).
    """
    window = f"[{USAGE_WINDOW_HOURS}h:1m]"
    count = device_count(settings, hardware)
    rules = [
        record(
            m.ACCELERATOR_HOURS,
            f"avg_over_time(({count}){window}) * {USAGE_WINDOW_HOURS}",
            settings,
            hardware,
        )
    ]
    priced = sorted(prices(settings, hardware).items())
    if priced:
        per_hour = "\n+\n".join(_model_cost(settings, hardware, mod, p) for mod, p in priced)
        rules.append(
            record(
                m.ACCELERATOR_COST,
                f"avg_over_time((\n{per_hour}\n){window}) * {USAGE_WINDOW_HOURS}",
                settings,
                hardware,
            )
        )
    return rules
