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

The queries' texts are `dualstack.gate.query_texts`'s, the measured values and their formats
`dualstack.gate.readings`'s, and `--window` / `--at` are parsed by `dualstack.gate.durations`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from components.monitoring.metric_names import (
    ERROR_RATIO,
    LATENCY_P99,
    PRECISION_PASSED,
    REQUEST_RATE,
)
from components.settings import Settings
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds, judge_data, weight_range
from dualstack.gate.durations import parse_window
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.queries import QUERY_WORKERS, Progress, run_queries
from dualstack.gate.query_texts import gate_queries, slot_seconds
from dualstack.gate.readings import Reading, count, percent, reading_of, seconds

Status = Literal["PASS", "FAIL", "NO_DATA"]


@dataclass(frozen=True, kw_only=True)
class Criterion:
    """One line of the gate: what was measured on each side, the threshold and the verdict
    (built by keyword: `Criterion(key="split", title="Split landed", status="PASS", ...)`)."""

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
        key="requests",
        title="Requests in window",
        status=status,
        ascend=ascend.show(count),
        nvidia=nvidia.show(count),
        threshold=f">= {minimum:,} each",
        detail=detail,
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
        key="error-ratio",
        title="5xx error ratio",
        status=status,
        ascend=ascend.show(percent),
        nvidia=nvidia.show(percent),
        threshold=threshold,
        detail=detail,
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
        key="p99-latency",
        title="p99 latency",
        status=status,
        ascend=ascend.show(seconds),
        nvidia=nvidia.show(seconds),
        threshold=threshold,
        detail=detail,
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
        key="precision",
        title="Precision check",
        status=status,
        ascend=image,
        nvidia="",
        threshold="served image = verifiedAscendImage",
        detail=detail,
    )


def _why_missing(**sides: Reading) -> str:
    """`Ascend: no series; NVIDIA: NaN ...` for the sides without a value."""
    return "; ".join(f"{name}: {r.problem}" for name, r in sides.items() if r.value is None)


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
    slot = slot_seconds(settings)
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
