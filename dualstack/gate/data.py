"""Is the gate's data fit to judge on? Freshness, coverage, and the weight it was taken at.

An average or a sum over a window says nothing about how much of the window had data: a
series that stopped 11 minutes ago, or that has one sample in an hour, still averages to a
clean number. So before a criterion uses a recorded series, the gate asks Prometheus two
more things about it (the series are rule outputs, one sample per rule evaluation):

- freshness: the time of its newest sample at or before the window end
  (`timestamp(S) or max_over_time(timestamp(S)[W:step])`: exact within the 5-minute lookback,
  at most one step early beyond it); older than `max_staleness_s` is stale;
- coverage: the share of the window's `step`-long slots holding at least one sample
  (`count_over_time(last_over_time(S[step])[W:step])` over W/step slots); below
  `min_coverage` is too sparse.

`step` is 60 s, or the rule group's evaluation interval when that is longer, so a healthy
rule output fills every slot. Prometheus 2.x ranges include both ends (REFERENCE.md), so a
full window can count one slot more than W/step; coverage is capped at 100%.

The recorded route weight (`namespace:inference_ascend_weight:ratio`, written by the
deployed PrometheusRule) tells the weight the traffic data was taken at, which is the
deployed weight and not necessarily the stack file's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from components.monitoring.metric_names import ASCEND_WEIGHT
from components.monitoring.promql import selector
from dualstack.gate.prometheus import PrometheusClient

STEP_SECONDS = 60
"""Shortest coverage slot, s: the test data and most rule groups sample once a minute."""


@dataclass(frozen=True)
class DataBounds:
    """How fresh and complete a series must be to be judged on.

    `max_staleness_s`: the newest sample may be at most this many seconds older than the
    window end. `min_coverage`: the share (0..1] of the window's slots that must hold a
    sample.
    """

    max_staleness_s: int = 5 * 60
    min_coverage: float = 0.9


DEFAULT_BOUNDS = DataBounds()


def newest_sample_query(series: str, window_seconds: int, step: int) -> str:
    """PromQL: the unix time of the newest sample of `series` in the window ending now."""
    return f"timestamp({series}) or max_over_time(timestamp({series})[{window_seconds}s:{step}s])"


def coverage_query(series: str, window_seconds: int, step: int) -> str:
    """PromQL: how many `step`-long slots of the window hold a sample of `series`."""
    return f"count_over_time(last_over_time({series}[{step}s])[{window_seconds}s:{step}s])"


def duration_text(seconds: float) -> str:
    """`11m 0s`, `45s`, `2h 5m`: an age for a message."""
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def _single(client: PrometheusClient, promql: str, at: float, reduce: str) -> float | None:
    values = [s.value for s in client.query(promql, at) if math.isfinite(s.value)]
    if not values:
        return None
    return max(values) if reduce == "max" else min(values)


def data_problem(
    client: PrometheusClient,
    series: str,
    at: float,
    window_seconds: int,
    step: int,
    bounds: DataBounds,
) -> str | None:
    """Why `series` cannot be judged over the window ending at `at`, or None when it can.

    `stale: newest sample 11m 0s before the window end (bound 5m 0s)` or `sparse: samples in
    63% of the window (bound 90%)`. With several matching series the worst one counts.
    Raises PrometheusError / PrometheusUnavailable like any query.
    """
    newest = _single(client, newest_sample_query(series, window_seconds, step), at, "min")
    if newest is None:
        return f"stale: no sample in the {duration_text(window_seconds)} window"
    age = max(0.0, at - newest)
    if age > bounds.max_staleness_s:
        return (
            f"stale: newest sample {duration_text(age)} before the window end "
            f"(bound {duration_text(bounds.max_staleness_s)})"
        )
    slots = _single(client, coverage_query(series, window_seconds, step), at, "min") or 0.0
    share = min(1.0, slots / (window_seconds / step))
    if share + 1e-9 < bounds.min_coverage:
        return (
            f"sparse: samples in {share * 100:.0f}% of the window "
            f"(bound {bounds.min_coverage * 100:.0f}%)"
        )
    return None


def recorded_weight(
    client: PrometheusClient, namespace: str, window_seconds: int, at: float
) -> tuple[int, int] | None:
    """(lowest, highest) Ascend route weight in % recorded over the window, or None when the
    deployed rules record none (monitoring off, or not deployed yet)."""
    weight = selector(ASCEND_WEIGHT, {"namespace": namespace})
    low = _single(client, f"min_over_time({weight}[{window_seconds}s])", at, "min")
    high = _single(client, f"max_over_time({weight}[{window_seconds}s])", at, "max")
    if low is None or high is None or not 0 <= low <= high <= 1:
        return None
    return round(low * 100), round(high * 100)
