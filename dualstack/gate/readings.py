"""One measured value of the gate, and how its report shows values.

A `Reading` is a number, or None with the `problem` that says why there is none: an empty
result ("no series"), NaN (0/0 from a window without traffic), ±Inf. NO_DATA never passes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from dualstack.gate.prometheus import PrometheusClient, Sample, describe_value


@dataclass(frozen=True)
class Reading:
    """One measured value, or `problem` saying why there is none ("no series", "NaN ...")."""

    value: float | None
    problem: str | None = None

    def show(self, unit: Callable[[float], str]) -> str:
        """The value in `unit`'s format, or `no data` (the criterion's detail says why)."""
        return unit(self.value) if self.value is not None else "no data"


def read(client: PrometheusClient, promql: str, at: float, combine: str = "max") -> Reading:
    """Query `promql` at `at` and reduce the samples to one value (`max`, `min` or `sum`).

    Empty results and non-finite values become a Reading with a `problem`. Raises
    PrometheusUnavailable when Prometheus does not answer and PrometheusError when the answer
    is not a query result: the gate cannot judge, it must not report a verdict.
    """
    return reading_of(client.query(promql, at), combine)


def reading_of(samples: Sequence[Sample], combine: str = "max") -> Reading:
    """Reduce an instant query's samples to one Reading (`max`, `min` or `sum`); an empty
    result or a non-finite value is a Reading with a `problem`."""
    if not samples:
        return Reading(None, "no series")
    bad = [s.value for s in samples if not math.isfinite(s.value)]
    if bad:
        why = " from 0/0, no requests in part of the window" if math.isnan(bad[0]) else ""
        return Reading(None, f"{describe_value(bad[0])}{why}")
    values = [s.value for s in samples]
    reduce = {"max": max, "min": min, "sum": sum}[combine]
    return Reading(float(reduce(values)))


def percent(value: float) -> str:
    """A 0..1 ratio as `0.40%`."""
    return f"{value * 100:.2f}%"


def seconds(value: float) -> str:
    """Latency as `1.250 s`."""
    return f"{value:.3f} s"


def count(value: float) -> str:
    """A request count as `3,600`."""
    return f"{value:,.0f}"
