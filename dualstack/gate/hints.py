"""Where a NO_DATA criterion's data should have come from, and what to check first.

A criterion whose reading found no series says `Ascend: no series` (`dualstack.gate.readings`);
the reader then needs the selector the gate asked and, when neither backend has the series, a
hint at the usual cause: the recording rules are not loaded (the Prometheus Operator loads a
PrometheusRule only when its labels match the Prometheus `ruleSelector`:
`monitoring.ruleLabels`). Display text only: the status is never changed here.
"""

from __future__ import annotations

from dataclasses import replace

from components.monitoring.metric_names import ERROR_RATIO, LATENCY_P99, REQUEST_RATE
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.criteria import Criterion
from dualstack.gate.query_texts import series

METRIC_OF = {
    "requests": REQUEST_RATE,
    "split": REQUEST_RATE,
    "error-ratio": ERROR_RATIO,
    "p99-latency": LATENCY_P99,
}
"""The recorded series each traffic criterion reads (`dualstack.gate.query_texts`)."""

SIDES = (("Ascend", "ascend"), ("NVIDIA", "nvidia"))
NO_SERIES = "no series"


def rules_hint(settings: Settings) -> str:
    """What to check when neither backend has a recorded series of the stack."""
    labels = settings.monitoring.rule_labels
    shown = ", ".join(f"{k}: {v}" for k, v in sorted(labels.items())) or "none set"
    return (
        "neither backend has it: are the recording rules loaded? The Prometheus Operator "
        "loads the stack's PrometheusRule only when its labels match the Prometheus "
        f"ruleSelector (monitoring.ruleLabels: {shown}); `kubectl get prometheusrule -n "
        f"{settings.namespace}` and Prometheus's /rules page show what is there"
    )


def with_selectors(criterion: Criterion, settings: Settings) -> Criterion:
    """`criterion` with each `<side>: no series` of its detail naming the series asked
    (`Ascend: no series hardware:inference_requests:rate5m{hardware="ascend",namespace=...}`),
    and `rules_hint` when both sides lack it. Any other criterion is returned as it is."""
    metric = METRIC_OF.get(criterion.key)
    if metric is None or criterion.status != "NO_DATA":
        return criterion
    scope = scope_labels(settings)
    parts = criterion.detail.split("; ")
    missing = 0
    for name, hardware in SIDES:
        plain = f"{name}: {NO_SERIES}"
        if plain in parts:
            parts[parts.index(plain)] = f"{plain} {series(metric, scope, hardware)}"
            missing += 1
    if not missing:
        return criterion
    detail = "; ".join(parts)
    if missing == len(SIDES):
        detail += f" ({rules_hint(settings)})"
    return replace(criterion, detail=detail)
