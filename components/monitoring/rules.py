"""Request and migration recording rules (pure functions: settings -> rule dicts).

Every recorded series (names in `components.monitoring.metric_names`) carries the static labels
`hardware` (`nvidia` | `ascend`) and `namespace` (the stack's namespace), and a fleet member's
also `service` (`services.<name>`: the member's name), so the services of one namespace record
apart (`scope_labels`; a single-service stack's series carry no `service`). Each hardware has its
own rule with `hardware` as a static label, never `label_replace`, so `promtool check rules
--lint-fatal` finds no duplicate rules (REFERENCE.md "Prometheus tooling").

Semantics the promotion gate relies on:
- REQUEST_RATE is requests/s; ERROR_RATIO is 5xx / all in 0..1 and ABSENT without traffic (a
  0/0 never becomes a 0 that would pass); latencies are seconds, absent (never NaN) without
  traffic; a hardware that never answered 5xx has ERROR_RATIO 0, not absent.
- Counters go through `rate()`, which handles resets.
"""

from __future__ import annotations

from typing import Any

from components.monitoring import metric_names as m
from components.monitoring.promql import Matcher, number, selector
from components.settings import Hardware, Settings
from components.settings.monitoring import MonitoringSettings

RATE_WINDOW = "5m"
"""The window of every `rate()`; the recorded names end in `rate5m`/`_5m`."""

Rule = dict[str, Any]


SERVICE_LABEL = "service"
"""The label naming a fleet member on its recorded series and alerts."""


def scope_labels(settings: Settings) -> dict[str, str]:
    """The labels telling one service's series from any other's: {namespace}, plus {service}
    for a fleet member. The gate, the alerts and the dashboard select by these."""
    scope = {"namespace": settings.namespace}
    if settings.member is not None:
        scope[SERVICE_LABEL] = settings.member
    return scope


def static_labels(settings: Settings, hardware: Hardware) -> dict[str, str]:
    """The labels every rule of one hardware carries: {hardware, namespace[, service]}."""
    return {"hardware": hardware, **scope_labels(settings)}


def record(name: str, expr: str, settings: Settings, hardware: Hardware, **labels: str) -> Rule:
    """A recording rule dict (promtool / PrometheusRule format) with the static labels."""
    return {"record": name, "expr": expr, "labels": {**static_labels(settings, hardware), **labels}}


# --- requests ---------------------------------------------------------------------------


def request_matchers(settings: Settings, hardware: Hardware) -> list[Matcher]:
    """Matchers selecting one hardware's request series in the configured source.

    Istio: the destination workload is the hardware's Deployment in the stack's namespace,
    counted by one reporter. App: the pods' `hardware` label (and the service name).
    """
    mon = settings.monitoring
    if mon.request_source == "istio":
        istio = mon.istio
        return [
            ("reporter", "=", istio.reporter),
            (istio.namespace_label, "=", settings.namespace),
            (istio.workload_label, "=", settings.hardware(hardware).deployment_name),
        ]
    app = mon.app
    matchers: list[Matcher] = [
        (app.namespace_label, "=", settings.namespace),
        (app.hardware_label, "=", hardware),
    ]
    if app.service_label:
        matchers.append((app.service_label, "=", settings.service.name))
    return matchers


def _source(mon: MonitoringSettings) -> tuple[str, str, str, int]:
    """(requests metric, duration bucket metric, status label, bucket units per second)."""
    if mon.request_source == "istio":  # Istio's histogram is in milliseconds
        return mon.istio.requests, mon.istio.duration_bucket, mon.istio.status_label, 1000
    return mon.app.requests, mon.app.duration_bucket, mon.app.status_label, 1


def request_rules(settings: Settings, hardware: Hardware) -> list[Rule]:
    """REQUEST_RATE, ERROR_RATIO, LATENCY_P50 and LATENCY_P99 of one hardware."""
    requests, buckets, status, per_second = _source(settings.monitoring)
    match = request_matchers(settings, hardware)
    all_requests = f"rate({selector(requests, match)}[{RATE_WINDOW}])"
    errors = f"rate({selector(requests, [*match, (status, '=~', '5..')])}[{RATE_WINDOW}])"
    rules = [
        record(m.REQUEST_RATE, f"sum({all_requests})", settings, hardware),
        # No 5xx series yet means 0 errors; no traffic (0 or no series) means absent.
        record(
            m.ERROR_RATIO,
            f"(sum({errors}) or vector(0))\n/\n(sum({all_requests}) > 0)",
            settings,
            hardware,
        ),
    ]
    histogram = f"sum by (le) (rate({selector(buckets, match)}[{RATE_WINDOW}]))"
    for name, q in ((m.LATENCY_P50, 0.5), (m.LATENCY_P99, 0.99)):
        quantile = f"histogram_quantile({q}, {histogram})"
        if per_second != 1:
            quantile = f"{quantile} / {per_second}"
        # No request in the window gives NaN; `>= 0` is false for NaN and drops it.
        rules.append(record(name, f"{quantile} >= 0", settings, hardware))
    return rules


def migration_rules(settings: Settings) -> list[Rule]:
    """ASCEND_WEIGHT (the configured route weight), ASCEND_MIRROR (the configured mirrored
    share) and ASCEND_SHARE (the share of requests Ascend handled, mirrored ones included)."""
    ns = scope_labels(settings)
    share = (
        f"(sum({selector(m.REQUEST_RATE, {'hardware': 'ascend', **ns})}) or vector(0))\n"
        f"/\n(sum({selector(m.REQUEST_RATE, ns)}) > 0)"
    )
    return [
        record(
            m.ASCEND_WEIGHT, f"vector({number(settings.ascend_weight / 100)})", settings, "ascend"
        ),
        record(
            m.ASCEND_MIRROR, f"vector({number(settings.mirror_percent / 100)})", settings, "ascend"
        ),
        record(m.ASCEND_SHARE, share, settings, "ascend"),
    ]
