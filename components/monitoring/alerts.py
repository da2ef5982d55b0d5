"""Alerting rules of the unified monitoring (pure functions: settings -> rule dicts).

Thresholds come from `Settings.slo`, the same numbers the promotion gate uses: Ascend's error
ratio may exceed NVIDIA's by `errorRatioMargin`; Ascend's p99 may be `p99Factor` x NVIDIA's,
or anything under `p99SloSeconds` when set. Every summary names the SOP to follow (the seed
article's SOP 1, roll back to NVIDIA; SOP 2, the precision check) with the command to run.

Cross-hardware comparisons use `on (namespace) group_left` so the alert keeps Ascend's labels
(`A > on () B` would drop them: REFERENCE.md "Prometheus tooling"); a fleet member's alerts
match `on (namespace, service)`, select its own series (`scope_labels`) and carry its `service`
label, and their SOP names it (`--service`).
"""

from __future__ import annotations

from components.monitoring import metric_names as m
from components.monitoring.accelerators import device_metric, device_scope, prices
from components.monitoring.promql import number, selector
from components.monitoring.rules import Rule, scope_labels, static_labels
from components.settings import HARDWARE, Hardware, Settings
from components.settings.monitoring import AlertSettings


def sop_rollback(stack: str, member: str | None = None) -> str:
    """The SOP 1 instruction (docs/operations.md): `dualstack rollback` (of the fleet
    member `member`), then the targeted `pulumi up` it prints, which moves the traffic split
    before anything else."""
    service = f" --service {member}" if member is not None else ""
    return (
        f"SOP 1, roll back to NVIDIA: run `dualstack rollback --stack {stack}{service}`, then "
        f"the targeted `pulumi up --stack {stack} --target ...` it prints"
    )


def _sop(settings: Settings, stack: str) -> str:
    return sop_rollback(stack, settings.member)


def _on(settings: Settings) -> str:
    """The labels two backends' series are matched on: `namespace` (and `service`)."""
    return ", ".join(scope_labels(settings))


def _where(settings: Settings) -> str:
    """`inference`, or `service chat in inference-fleet` for a fleet member."""
    if settings.member is None:
        return settings.namespace
    return f"service {settings.member} in {settings.namespace}"


def _alert(
    name: str,
    expr: str,
    settings: Settings,
    config: AlertSettings,
    hardware: Hardware,
    summary: str,
    description: str,
) -> Rule:
    annotations = {"summary": summary, "description": description}
    if settings.monitoring.alerts.runbook_url:
        annotations["runbook_url"] = settings.monitoring.alerts.runbook_url
    return {
        "alert": name,
        "expr": expr,
        "for": config.duration,
        "labels": {"severity": config.severity, **static_labels(settings, hardware)},
        "annotations": annotations,
    }


def _series(name: str, settings: Settings, hardware: Hardware) -> str:
    return selector(name, static_labels(settings, hardware))


def error_ratio_alert(settings: Settings, stack: str) -> Rule:
    """Ascend's 5xx ratio above NVIDIA's + margin; above the margin alone when NVIDIA has no
    traffic (at weight 100 the baseline is 0)."""
    ascend = _series(m.ERROR_RATIO, settings, "ascend")
    nvidia = _series(m.ERROR_RATIO, settings, "nvidia")
    margin = number(settings.slo.error_ratio_margin)
    pp = round(settings.slo.error_ratio_margin * 100, 6)
    points = f"{pp:g} percentage point{'' if pp == 1 else 's'}"
    on = _on(settings)
    expr = (
        f"{ascend}\n  > on ({on}) group_left ()\n({nvidia} + {margin})\n"
        f"or\n{ascend} > {margin}\n  unless on ({on})\n{nvidia}"
    )
    return _alert(
        "AscendErrorRatioAboveNvidia",
        expr,
        settings,
        settings.monitoring.alerts.ascend_error_ratio,
        "ascend",
        f"Ascend 5xx ratio exceeds NVIDIA's by more than {points} in {_where(settings)}: "
        f"{_sop(settings, stack)}.",
        "Ascend answers {{ $value | humanizePercentage }} of requests with 5xx "
        f"(allowed: NVIDIA's ratio, 0 without NVIDIA traffic, + {points}).",
    )


def latency_alert(settings: Settings, stack: str) -> Rule:
    """Ascend's p99 above `p99Factor` x NVIDIA's and, when `p99SloSeconds` is set, above it
    (with no NVIDIA traffic the objective alone decides)."""
    ascend = _series(m.LATENCY_P99, settings, "ascend")
    nvidia = _series(m.LATENCY_P99, settings, "nvidia")
    factor = number(settings.slo.p99_factor)
    on = _on(settings)
    expr = f"{ascend}\n  > on ({on}) group_left ()\n({nvidia} * {factor})"
    allowed = f"{factor} x NVIDIA's p99"
    if settings.slo.p99_slo_seconds is not None:
        slo = number(settings.slo.p99_slo_seconds)
        expr = f"(\n{expr}\nor\n{ascend}\n  unless on ({on})\n{nvidia}\n) > {slo}"
        allowed += f" or {slo} s"
    return _alert(
        "AscendLatencyAboveNvidia",
        expr,
        settings,
        settings.monitoring.alerts.ascend_latency,
        "ascend",
        f"Ascend p99 latency is above {allowed} in {_where(settings)}: {_sop(settings, stack)}.",
        "Ascend p99 latency is {{ $value | humanizeDuration }}" + f" (allowed: {allowed}).",
    )


def precision_alert(settings: Settings, stack: str) -> Rule:
    """The precision check of the served Ascend image, pushed for this stack's namespace (the
    Job's Pushgateway grouping label `namespace`), completed and reported a failure. A run
    that could not complete pushes passed=0 with completed=0: that is no precision verdict."""
    image = settings.ascend.image
    scope = {"ascend_image": image, **scope_labels(settings)}
    passed = selector(m.PRECISION_PASSED, scope)
    completed = selector(m.PRECISION_COMPLETED, scope)
    expr = f"{passed} == 0\n  and\n{completed} == 1"
    return _alert(
        "AscendPrecisionCheckFailed",
        expr,
        settings,
        settings.monitoring.alerts.precision_check_failed,
        "ascend",
        f"Precision check (SOP 2) failed for the served Ascend image {image}: do not promote; "
        f"while Ascend serves traffic, {_sop(settings, stack)}.",
        "Ascend answers differ from NVIDIA's for the same requests; see the precision-check "
        "report of this image.",
    )


def _no_traffic_checks(settings: Settings) -> str:
    if settings.router == "gateway-api":
        backend, route = f"Service `{settings.service.name}-ascend`", "HTTPRoute"
    else:
        backend, route = "DestinationRule subset `ascend`", "VirtualService"
    return (
        f"Check that the {backend} selects ready pods (istioctl analyze IST0101/IST0173) and "
        f"that the {route} was applied. After a break-glass `kubectl patch` of the {route}, "
        "apply the rollback commit so this rule's configured weight follows."
    )


def no_traffic_alert(settings: Settings, stack: str) -> Rule:
    """Requests are served but none by Ascend while its configured weight is above 0."""
    weight = selector(m.ASCEND_WEIGHT, scope_labels(settings))
    share = selector(m.ASCEND_SHARE, scope_labels(settings))
    return _alert(
        "AscendNoTraffic",
        f"{weight} > 0\n  and on ({_on(settings)})\n{share} == 0",
        settings,
        settings.monitoring.alerts.ascend_no_traffic,
        "ascend",
        f"No request reaches Ascend in {_where(settings)} although its configured weight is "
        "{{ $value | humanizePercentage }}: " + f"{_sop(settings, stack)}.",
        _no_traffic_checks(settings),
    )


def chip_alert(settings: Settings, stack: str) -> Rule:
    """An NPU chip used by the namespace's pods (a fleet member's: its Ascend pods) reports
    health_status != 1."""
    npu = settings.monitoring.npu
    health = selector(npu.health, device_scope(settings, "ascend"))
    return _alert(
        "NpuChipUnhealthy",
        f"{health} != 1",
        settings,
        settings.monitoring.alerts.npu_chip_unhealthy,
        "ascend",
        f"An NPU chip used by {_where(settings)} is unhealthy: if Ascend errors rise, "
        f"{_sop(settings, stack)}.",
        f"Chip {{{{ $labels.{npu.chip_label} }}}} ({{{{ $labels.{npu.model_label} }}}}) "
        "reports health status {{ $value }} (1 = healthy); check it with `npu-smi info`.",
    )


def unpriced_alert(settings: Settings, hardware: Hardware) -> Rule | None:
    """Assigned devices of a model without a price (cost understated); None without prices."""
    priced = sorted(prices(settings, hardware))
    if not priced:
        return None
    metric, model_label = device_metric(settings, hardware)
    matchers = [*device_scope(settings, hardware), *((model_label, "!=", p) for p in priced)]
    return _alert(
        "AcceleratorUnpriced",
        f"count by ({model_label}) ({selector(metric, matchers)})",
        settings,
        settings.monitoring.alerts.accelerator_unpriced,
        hardware,
        f"{hardware} accelerators of a model without a price: cost is understated; add the "
        f"model to `monitoring.prices.{hardware}`.",
        "{{ $value }} devices of model " + f"{{{{ $labels.{model_label} }}}} have no price.",
    )


def alert_rules(settings: Settings, stack: str) -> list[Rule]:
    """Every alerting rule of the stack; `stack` is named in the SOP commands."""
    rules = [
        error_ratio_alert(settings, stack),
        latency_alert(settings, stack),
        precision_alert(settings, stack),
        no_traffic_alert(settings, stack),
        chip_alert(settings, stack),
    ]
    return rules + [r for hw in HARDWARE if (r := unpriced_alert(settings, hw)) is not None]
