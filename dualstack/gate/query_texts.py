"""Every PromQL text the gate asks Prometheus, in one place, built with
`components.monitoring.promql` (selectors, numbers, range functions and subqueries).

The gate reads only the recorded series of `components.monitoring.metric_names`, of one
service (`Scope`: its `namespace`, plus `service` for a fleet member) and one backend
(`hardware`). Ranges are whole seconds ending at the query time; Prometheus 2.x ranges include
both ends (REFERENCE.md). Subqueries step every STEP_SECONDS; a recorded series holds one
sample per rule evaluation, so its slots (freshness and coverage, `dualstack.gate.data`) are
`slot_seconds(settings)` long. tests/dualstack/gate pins these texts: a changed text is a
changed gate.
"""

from __future__ import annotations

from collections.abc import Mapping

from components.monitoring.metric_names import (
    ASCEND_WEIGHT,
    ERROR_RATIO,
    LATENCY_P99,
    PRECISION_PASSED,
    REQUEST_RATE,
)
from components.monitoring.promql import number, over_time, selector
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.durations import parse_duration

STEP_SECONDS = 60
"""The gate's step, s: the resolution of its subqueries and the shortest slot of a series (the
test data and most rule groups sample once a minute)."""
SAME_RATIO = 0.0005
"""Two recorded ratios closer than this are the same rung (weights are whole %)."""

Scope = str | Mapping[str, str]
"""Which service's series: a namespace, or the labels `components.monitoring.rules.
scope_labels` gives (a fleet member's `{namespace, service}`)."""


def slot_seconds(settings: Settings) -> int:
    """Seconds between two samples of a recorded series: one evaluation interval of the rules
    (`monitoring.evaluationInterval`), at least one STEP_SECONDS step."""
    return max(STEP_SECONDS, int(parse_duration(settings.monitoring.evaluation_interval)))


def scope_of(where: Scope) -> dict[str, str]:
    """`where` as selector labels: a namespace string is `{namespace}`."""
    return {"namespace": where} if isinstance(where, str) else dict(where)


def service_series(metric: str, scope: Scope) -> str:
    """`metric{namespace="..."}` (plus `service` for a fleet member): a recorded series of the
    service without a backend (the route weight, the mirror)."""
    return selector(metric, scope_of(scope))


def series(metric: str, namespace: Scope, hardware: str) -> str:
    """`metric{hardware="...",namespace="..."}` (plus `service` for a fleet member): one
    recorded series of one backend."""
    return selector(metric, {"hardware": hardware, **scope_of(namespace)})


def request_count_query(namespace: Scope, hardware: str, window_seconds: int) -> str:
    """PromQL for the requests a backend served in the window ending at the query time.

    The recorded rate (req/s) sampled every STEP_SECONDS over the window, each sample times
    STEP_SECONDS. The subquery range is one step shorter than the window because Prometheus
    2.x ranges include both ends (REFERENCE.md): the count errs low, never high.
    """
    span = window_seconds - STEP_SECONDS
    rate = series(REQUEST_RATE, namespace, hardware)
    return f"{over_time('sum_over_time', rate, span, STEP_SECONDS)} * {STEP_SECONDS}"


def average_query(metric: str, namespace: Scope, hardware: str, window_seconds: int) -> str:
    """PromQL for the time average of a recorded series over the window (NaN stays NaN)."""
    return over_time("avg_over_time", series(metric, namespace, hardware), window_seconds)


def newest_sample_query(series: str, window_seconds: int, step: int) -> str:
    """PromQL: the unix time of the newest sample of `series` in the window ending now
    (exact within the 5-minute lookback, at most one `step` early beyond it)."""
    stamp = f"timestamp({series})"
    return f"{stamp} or {over_time('max_over_time', stamp, window_seconds, step)}"


def coverage_query(series: str, window_seconds: int, step: int) -> str:
    """PromQL: how many `step`-long slots of the window hold a sample of `series`."""
    slot = over_time("last_over_time", series, step)
    return over_time("count_over_time", slot, window_seconds, step)


def over_window(function: str, metric: str, scope: Scope, window_seconds: int) -> str:
    """PromQL: `function` (`min_over_time`, `max_over_time`, `last_over_time`) of the service's
    recorded `metric` (a 0..1 ratio: the route weight, the mirror) over the window."""
    return over_time(function, service_series(metric, scope), window_seconds)


def weight_queries(namespace: Scope, window_seconds: int) -> tuple[str, str]:
    """PromQL for the lowest and the highest recorded Ascend route weight (0..1) in the
    window ending at the query time, of `namespace` (a scope: a fleet member's too)."""
    return (
        over_window("min_over_time", ASCEND_WEIGHT, namespace, window_seconds),
        over_window("max_over_time", ASCEND_WEIGHT, namespace, window_seconds),
    )


def first_sample_query(metric: str, scope: Scope, span: int) -> str:
    """PromQL: the unix time of the first sample of the recorded `metric` in the last `span`
    seconds (to STEP_SECONDS)."""
    stamp = f"timestamp({service_series(metric, scope)})"
    return over_time("min_over_time", stamp, span, STEP_SECONDS)


def last_other_query(metric: str, scope: Scope, percent: int, span: int) -> str:
    """PromQL: the unix time of the last sample of the recorded `metric` in the last `span`
    seconds at another value than `percent` % (more than SAME_RATIO away)."""
    distance = f"abs({service_series(metric, scope)} - {number(percent / 100)})"
    other = f"timestamp({distance} > {SAME_RATIO})"
    return over_time("max_over_time", other, span, STEP_SECONDS)


def pushed_query(image: str, scope: Scope) -> str:
    """PromQL: the pushed precision result of the Ascend `image` in the service's scope (the
    Job pushes `namespace` as a grouping label)."""
    return selector(PRECISION_PASSED, {"ascend_image": image, **scope_of(scope)})


def gate_queries(settings: Settings, window_seconds: int, slot: int) -> dict[tuple[str, ...], str]:
    """Every query the gate asks, by key: per (metric, hardware) the value (`value`), the
    newest sample's time (`newest`) and the coverage (`coverage`); the pushed precision
    result (`pushed`) and the recorded route weight's low and high (`weight`). 21 queries."""
    ns = scope_labels(settings)
    values = {
        REQUEST_RATE: lambda hw: request_count_query(ns, hw, window_seconds),
        ERROR_RATIO: lambda hw: average_query(ERROR_RATIO, ns, hw, window_seconds),
        LATENCY_P99: lambda hw: average_query(LATENCY_P99, ns, hw, window_seconds),
    }
    queries: dict[tuple[str, ...], str] = {}
    for metric, make in values.items():
        for hw in ("ascend", "nvidia"):
            one = series(metric, ns, hw)
            queries[("value", metric, hw)] = make(hw)
            queries[("newest", metric, hw)] = newest_sample_query(one, window_seconds, slot)
            queries[("coverage", metric, hw)] = coverage_query(one, window_seconds, slot)
    queries[("pushed",)] = pushed_query(settings.ascend.image, ns)
    low, high = weight_queries(ns, window_seconds)
    queries[("weight", "low")], queries[("weight", "high")] = low, high
    return queries
