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

`step` is 60 s, or the rule group's evaluation interval when that is longer
(`dualstack.gate.query_texts.slot_seconds`, which also writes both queries), so a healthy
rule output fills every slot. Prometheus 2.x ranges include both ends (REFERENCE.md), so a
full window can count one slot more than W/step; coverage is capped at 100%.

The recorded route weight (`namespace:inference_ascend_weight:ratio`, written by the
deployed PrometheusRule) tells the weight the traffic data was taken at, which is the
deployed weight and not necessarily the stack file's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from dualstack.gate.prometheus import PrometheusClient, Sample
from dualstack.gate.query_texts import coverage_query, newest_sample_query


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


def duration_text(seconds: float) -> str:
    """`11m 0s`, `45s`, `2h 5m`: an age for a message."""
    seconds = round(seconds)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes}m"
    return f"{minutes}m {secs}s" if minutes else f"{secs}s"


def single(samples: Sequence[Sample], reduce: str) -> float | None:
    """The max or min (`reduce`: "max" or "min") of the finite sample values, or None when
    there is none. Raises ValueError for another `reduce`."""
    if reduce not in ("max", "min"):
        raise ValueError(f"reduce must be 'max' or 'min', not {reduce!r}")
    values = [s.value for s in samples if math.isfinite(s.value)]
    if not values:
        return None
    return max(values) if reduce == "max" else min(values)


def judge_data(
    newest: Sequence[Sample],
    coverage: Sequence[Sample],
    at: float,
    window_seconds: int,
    step: int,
    bounds: DataBounds,
) -> str | None:
    """Why a series cannot be judged, from the answers of `newest_sample_query` and
    `coverage_query` at `at`, or None when it can.

    `stale: newest sample 11m 0s before the window end (bound 5m 0s)` or `sparse: samples in
    63% of the window (bound 90%)`. With several matching series the worst one counts.
    """
    newest_time = single(newest, "min")
    if newest_time is None:
        return f"stale: no sample in the {duration_text(window_seconds)} window"
    # A sample after the window end has a negative age: fresh, and never shown.
    age = at - newest_time
    if age > bounds.max_staleness_s:
        return (
            f"stale: newest sample {duration_text(age)} before the window end "
            f"(bound {duration_text(bounds.max_staleness_s)})"
        )
    slots = single(coverage, "min") or 0.0
    # Both range ends count, so a full window holds W/step + 1 slots: a share above 1 passes
    # any bound (0..1], and only a share below the bound is shown.
    share = slots / (window_seconds / step)
    if share + 1e-9 < bounds.min_coverage:
        return (
            f"sparse: samples in {share * 100:.0f}% of the window "
            f"(bound {bounds.min_coverage * 100:.0f}%)"
        )
    return None


def data_problem(
    client: PrometheusClient,
    series: str,
    at: float,
    window_seconds: int,
    step: int,
    bounds: DataBounds,
) -> str | None:
    """`judge_data` with both queries asked of `client` now, one after the other.

    Raises PrometheusError / PrometheusUnavailable like any query.
    """
    newest = client.query(newest_sample_query(series, window_seconds, step), at)
    coverage = client.query(coverage_query(series, window_seconds, step), at)
    return judge_data(newest, coverage, at, window_seconds, step, bounds)


def weight_range(low: Sequence[Sample], high: Sequence[Sample]) -> tuple[int, int] | None:
    """(lowest, highest) Ascend route weight in % from the answers of
    `dualstack.gate.query_texts.weight_queries`, or
    None when the deployed rules record none (monitoring off, or not deployed yet)."""
    low_value, high_value = single(low, "min"), single(high, "max")
    if low_value is None or high_value is None or not 0 <= low_value <= high_value <= 1:
        return None
    return round(low_value * 100), round(high_value * 100)
