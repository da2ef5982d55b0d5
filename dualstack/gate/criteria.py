"""The promotion gate: may a stack take its next ladder step? Decided on Prometheus data.

The gate reads only the recorded series named in `components.monitoring.metric_names` (labels
`hardware` = nvidia|ascend and `namespace` = the stack's namespace), over a window ending at
an explicit time, and judges four criteria against the stack's `slo` settings:

- `requests`: each backend served at least `slo.minRequests` requests in the window
  (Σ over 1-minute steps of the recorded 5-minute request rate × 60 s).
- `error-ratio`: Ascend's time-averaged 5xx ratio ≤ NVIDIA's + `slo.errorRatioMargin`.
- `p99-latency`: Ascend's time-averaged p99 ≤ NVIDIA's × `slo.p99Factor`, or ≤
  `slo.p99SloSeconds` when that absolute objective is set.
- `precision`: the served Ascend image is `verifiedAscendImage`, and the pushed
  `precision_check_passed{ascend_image=..., namespace=<stack namespace>}` gauge, when
  Prometheus has it, is 1.

Every criterion is PASS, FAIL or NO_DATA. An empty result, NaN (0/0 from a window without
traffic), ±Inf, or a series that is stale or covers too little of the window
(`dualstack.gate.data`) is NO_DATA, and NO_DATA never passes. While the stack is at weight 0
(in its file and in the recorded route weight), Ascend serves no traffic to compare: the three
traffic criteria are still shown but not required, and the first step rests on precision.
An unreachable Prometheus (`PrometheusUnavailable`) or an answer that is not a Prometheus
query result (`PrometheusError`: HTTP error, HTML page, redirect, malformed JSON) is raised:
nothing can be judged, which is an error (exit 2), not a failed check.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

from components.monitoring.metric_names import (
    ERROR_RATIO,
    LATENCY_P99,
    PRECISION_PASSED,
    REQUEST_RATE,
)
from components.monitoring.promql import selector
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.data import (
    DEFAULT_BOUNDS,
    DataBounds,
    Scope,
    coverage_query,
    judge_data,
    newest_sample_query,
    scope_of,
    weight_queries,
    weight_range,
)
from dualstack.gate.data import STEP_SECONDS as SLOT_SECONDS
from dualstack.gate.prometheus import PrometheusClient, Sample, describe_value
from dualstack.gate.queries import QUERY_WORKERS, Progress, run_queries

Status = Literal["PASS", "FAIL", "NO_DATA"]
STEP_SECONDS = 60
"""Resolution of the request-count subquery, s."""
MIN_WINDOW_SECONDS = 5 * 60
"""The recorded series are 5-minute rates: a shorter window judges less than one of them."""
MAX_WINDOW_SECONDS = 7 * 24 * 3600
_UNITS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}
_DURATION = re.compile(r"(\d+)(ms|s|m|h|d|w|y)")


@dataclass(frozen=True)
class Reading:
    """One measured value, or `problem` saying why there is none ("no series", "NaN ...")."""

    value: float | None
    problem: str | None = None

    def show(self, unit: Callable[[float], str]) -> str:
        """The value in `unit`'s format, or `no data` (the criterion's detail says why)."""
        return unit(self.value) if self.value is not None else "no data"


@dataclass(frozen=True)
class Criterion:
    """One line of the gate: what was measured on each side, the threshold and the verdict."""

    key: str
    title: str
    status: Status
    ascend: str
    nvidia: str
    threshold: str
    detail: str
    required: bool = True
    ascend_value: float | None = None
    nvidia_value: float | None = None
    """The measured numbers behind `ascend` / `nvidia` (requests, 0..1 ratio, seconds), None
    when there is none (no data, or the precision criterion)."""


@dataclass(frozen=True)
class GateReport:
    """Every criterion of one gate run. `passed` is True only when each required one passed.

    `weight` is the stack file's Ascend weight (%); `recorded_weight` the (lowest, highest)
    route weight (%) the deployed rules recorded over the window, i.e. the weight the data
    was taken at, or None when Prometheus records none.
    """

    stack: str
    namespace: str
    weight: int
    window: str
    at: float
    prometheus: str
    criteria: Sequence[Criterion]
    recorded_weight: tuple[int, int] | None = None
    bounds: DataBounds = DEFAULT_BOUNDS
    notes: tuple[str, ...] = ()
    """Lines the report adds after the table (the judged step; what mirrored data shows)."""
    step: tuple[int, int | None] | None = None
    """(from, to) weight in % of the step judged (`dualstack.gate.promotion`)."""
    service: str | None = None
    """The fleet member judged (`--service`), None for a single-service stack."""

    @property
    def where(self) -> str:
        """`stack prod`, or `stack fleet, service chat`."""
        member = f", service {self.service}" if self.service is not None else ""
        return f"stack {self.stack}{member}"

    @property
    def passed(self) -> bool:
        """True when every required criterion is PASS (NO_DATA and FAIL both block)."""
        return all(c.status == "PASS" for c in self.criteria if c.required)


def parse_duration(text: str, option: str = "--window") -> float:
    """A Prometheus duration (`30s`, `30m`, `1h30m`) in seconds.

    Raises ValueError naming `option` when the text is not a duration.
    """
    text = text.strip()
    if not text or _DURATION.sub("", text) != "":
        raise ValueError(f"{option} {text!r}: expected a duration such as 30m, 2h or 1h30m")
    return sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(text))


def parse_window(text: str) -> int:
    """A Prometheus duration (`30m`, `1h30m`, `2h`) in whole seconds, 5m..7d.

    Raises ValueError naming `--window` when the text is not a duration or out of range.
    """
    text = text.strip()
    seconds = parse_duration(text, "--window")
    if not MIN_WINDOW_SECONDS <= seconds <= MAX_WINDOW_SECONDS:
        raise ValueError(f"--window {text!r}: must be between 5m and 7d (the series are 5m rates)")
    return int(seconds)


MAX_UNIX_TIME = 253402300799
"""9999-12-31T23:59:59Z: the last second a report can print as a date (Python datetime)."""


def parse_time(text: str) -> float:
    """`--at`: unix seconds (`1700000000`, digits with an optional fraction) or RFC 3339 with
    a zone (`2023-11-14T22:13:20Z`), up to the year 9999.

    Raises ValueError naming `--at` otherwise, before any query is sent.
    """
    shown = repr(text[:60] + ("…" if len(text) > 60 else ""))
    if re.fullmatch(r"[0-9]{1,20}(\.[0-9]{1,9})?", text):
        value = float(text)
        if not 0 < value <= MAX_UNIX_TIME:
            raise ValueError(
                f"--at {shown}: expected a unix time in seconds from 1 to {MAX_UNIX_TIME} "
                "(9999-12-31T23:59:59Z)"
            )
        return value
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(
            f"--at {shown}: expected unix seconds or RFC 3339 with a zone, e.g. "
            "2024-05-01T12:00:00Z"
        ) from None
    value = moment.timestamp()
    if not 0 < value <= MAX_UNIX_TIME:
        raise ValueError(f"--at {shown}: expected a time after 1970 and before the year 10000")
    return value


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
    return f"sum_over_time({rate}[{span}s:{STEP_SECONDS}s]) * {STEP_SECONDS}"


def average_query(metric: str, namespace: Scope, hardware: str, window_seconds: int) -> str:
    """PromQL for the time average of a recorded series over the window (NaN stays NaN)."""
    return f"avg_over_time({series(metric, namespace, hardware)}[{window_seconds}s])"


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


def requests_criterion(ascend: Reading, nvidia: Reading, minimum: int) -> Criterion:
    """PASS when both backends served at least `minimum` requests; NO_DATA if either is unknown."""
    sides = {"Ascend": ascend, "NVIDIA": nvidia}
    missing = [name for name, r in sides.items() if r.value is None]
    negative = [name for name, r in sides.items() if r.value is not None and r.value < 0]
    low = [name for name, r in sides.items() if r.value is not None and 0 <= r.value < minimum]
    if missing or negative:
        status: Status = "NO_DATA"
        detail = "; ".join(
            [f"{n}: {sides[n].problem}" for n in missing]
            + [f"{n}: negative count" for n in negative]
        )
    elif low:
        status = "FAIL"
        detail = f"too few requests on {' and '.join(low)} to judge"
    else:
        status, detail = "PASS", "enough traffic on both backends"
    return Criterion(
        "requests",
        "Requests in window",
        status,
        ascend.show(count),
        nvidia.show(count),
        f">= {minimum:,} each",
        detail,
        ascend_value=ascend.value,
        nvidia_value=nvidia.value,
    )


def error_ratio_criterion(ascend: Reading, nvidia: Reading, margin: float) -> Criterion:
    """PASS when Ascend's 5xx ratio ≤ NVIDIA's + `margin` (absolute); ratios must be 0..1."""
    threshold = f"<= NVIDIA + {margin * 100:.2f} pp"
    status: Status
    if ascend.value is None or nvidia.value is None:
        status, detail = "NO_DATA", _why_missing(Ascend=ascend, NVIDIA=nvidia)
    elif not (0 <= ascend.value <= 1 and 0 <= nvidia.value <= 1):
        status, detail = "NO_DATA", "a value outside 0..1 is not an error ratio"
    else:
        limit = nvidia.value + margin
        threshold = f"<= {percent(limit)} (NVIDIA + {margin * 100:.2f} pp)"
        ok = ascend.value <= limit + 1e-12
        status = "PASS" if ok else "FAIL"
        excess = (ascend.value - nvidia.value) * 100
        detail = (
            "within the margin" if ok else f"Ascend's 5xx ratio exceeds NVIDIA's by {excess:.2f} pp"
        )
    return Criterion(
        "error-ratio",
        "5xx error ratio",
        status,
        ascend.show(percent),
        nvidia.show(percent),
        threshold,
        detail,
        ascend_value=ascend.value,
        nvidia_value=nvidia.value,
    )


def latency_criterion(
    ascend: Reading, nvidia: Reading, factor: float, slo_seconds: float | None
) -> Criterion:
    """PASS when Ascend's p99 ≤ NVIDIA's × `factor`, or ≤ `slo_seconds` when that is set."""
    objective = f" or <= {seconds(slo_seconds)} SLO" if slo_seconds is not None else ""
    threshold = f"<= {factor:g} x NVIDIA{objective}"
    status: Status
    if ascend.value is None or ascend.value < 0:
        status, detail = "NO_DATA", _why_missing(Ascend=ascend) or "negative latency"
    elif slo_seconds is not None and ascend.value <= slo_seconds:
        status, detail = "PASS", f"under the absolute p99 objective of {seconds(slo_seconds)}"
    elif nvidia.value is None or nvidia.value < 0:
        status, detail = "NO_DATA", _why_missing(NVIDIA=nvidia) or "negative latency"
    else:
        limit = nvidia.value * factor
        threshold = f"<= {seconds(limit)} ({factor:g} x NVIDIA{objective})"
        ok = ascend.value <= limit + 1e-12
        status = "PASS" if ok else "FAIL"
        ratio = ascend.value / nvidia.value if nvidia.value > 0 else math.inf
        detail = "within the factor" if ok else f"Ascend's p99 is {ratio:.2f} x NVIDIA's"
    return Criterion(
        "p99-latency",
        "p99 latency",
        status,
        ascend.show(seconds),
        nvidia.show(seconds),
        threshold,
        detail,
        ascend_value=ascend.value,
        nvidia_value=nvidia.value,
    )


def precision_criterion(settings: Settings, pushed: Reading) -> Criterion:
    """PASS when the served image pair is recorded as verified (`verifiedImages`, or the
    Ascend image is `verifiedAscendImage`) and no pushed result for that image in the stack's
    namespace says otherwise. `pushed` is the min of `precision_check_passed{ascend_image=,
    namespace=}` (the Job pushes `namespace` as a grouping label); "no series" means nothing
    was pushed (the stack config alone decides)."""
    image = settings.ascend.image
    verified = settings.verified_ascend_image
    status: Status
    matches = "verifiedAscendImage matches" if verified == image else "a verified pair records it"
    if not settings.ascend_image_verified:
        status = "FAIL"
        detail = f"served {image} is not the verified image ({verified or 'none recorded'})"
    elif pushed.value is None and pushed.problem == "no series":
        status, detail = "PASS", f"{matches}; no pushed result in Prometheus"
    elif pushed.value is None:
        status, detail = "NO_DATA", f"{PRECISION_PASSED}: {pushed.problem}"
    elif pushed.value == 1:
        status, detail = "PASS", f"{matches} and {PRECISION_PASSED} is 1"
    else:
        status = "FAIL"
        detail = f"the latest pushed {PRECISION_PASSED} for {image} is {pushed.value:g}"
    return Criterion(
        "precision",
        "Precision check",
        status,
        image,
        "",
        "served image = verifiedAscendImage",
        detail,
    )


def _why_missing(**sides: Reading) -> str:
    """`Ascend: no series; NVIDIA: NaN ...` for the sides without a value."""
    return "; ".join(f"{name}: {r.problem}" for name, r in sides.items() if r.value is None)


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
    image = settings.ascend.image
    queries[("pushed",)] = selector(PRECISION_PASSED, {"ascend_image": image, **ns})
    low, high = weight_queries(ns, window_seconds)
    queries[("weight", "low")], queries[("weight", "high")] = low, high
    return queries


def evaluate(
    settings: Settings,
    stack: str,
    client: PrometheusClient,
    window: str,
    at: float,
    bounds: DataBounds = DEFAULT_BOUNDS,
    workers: int = QUERY_WORKERS,
    progress: Progress | None = None,
) -> GateReport:
    """Run every query (`gate_queries`) at unix time `at`, at most `workers` at once, and
    judge the criteria for `stack`. `progress(done, total)` follows the answers.

    A traffic series that is stale or too sparse by `bounds` makes its criterion NO_DATA.
    Raises ValueError for a bad `window`, PrometheusUnavailable when Prometheus does not
    answer and PrometheusError when an answer is unusable (the first such query stops the
    run: nothing else could be judged either).
    """
    window_seconds = parse_window(window)
    slo = settings.slo
    slot = max(SLOT_SECONDS, int(parse_duration(settings.monitoring.evaluation_interval)))
    answers = run_queries(
        client, gate_queries(settings, window_seconds, slot), at, workers, progress
    )

    def checked(metric: str, hardware: str, combine: str) -> Reading:
        reading = reading_of(answers[("value", metric, hardware)], combine)
        if reading.value is None:
            return reading
        problem = judge_data(
            answers[("newest", metric, hardware)],
            answers[("coverage", metric, hardware)],
            at,
            window_seconds,
            slot,
            bounds,
        )
        return reading if problem is None else Reading(None, problem)

    def both(metric: str, combine: str) -> tuple[Reading, Reading]:
        return checked(metric, "ascend", combine), checked(metric, "nvidia", combine)

    pushed = reading_of(answers[("pushed",)], "min")
    recorded = weight_range(answers[("weight", "low")], answers[("weight", "high")])
    traffic_required = settings.ascend_weight > 0 or (recorded is not None and recorded[1] > 0)
    traffic = [
        requests_criterion(*both(REQUEST_RATE, "sum"), slo.min_requests),
        error_ratio_criterion(*both(ERROR_RATIO, "max"), slo.error_ratio_margin),
        latency_criterion(*both(LATENCY_P99, "max"), slo.p99_factor, slo.p99_slo_seconds),
    ]
    if not traffic_required:
        traffic = [replace(c, required=False) for c in traffic]
    criteria = [*traffic, precision_criterion(settings, pushed)]
    return GateReport(
        stack,
        settings.namespace,
        settings.ascend_weight,
        window,
        at,
        client.base_url,
        criteria,
        recorded,
        bounds,
        service=settings.member,
    )
