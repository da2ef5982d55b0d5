"""Did the split land? The observed Ascend share of requests against the configured rung.

A route that says 20% is not traffic at 20% (argoproj/argo-rollouts#4347: Envoy had not
caught up with the spec; #4741: the weight was never applied while the status advanced), and
clients that bypass the mesh are balanced by pod count, not by the route. So the gate counts
the requests each backend served in the window (REQUEST_RATE, `hardware:inference_requests:
rate5m`, one-minute steps, as the `requests` criterion) and compares

    observed = ascend / (ascend + nvidia)

with what the rung the deployed rules recorded (`dualstack.gate.rung`) should give:

    expected = weight / 100                  at a weight above 0
             = mirror / (100 + mirror)       at weight 0 with `mirror` % mirrored

(mirrored copies are counted on Ascend by its own proxy, the default `destination` reporter,
or by the app's own metrics; NVIDIA still serves every original). The split passes within

    tolerance = max(slo.splitTolerancePoints points, slo.splitToleranceRelative x expected)

(defaults ± max(2 points, 25%): 20% passes 15..25%, 5% passes 3..7%, 0% passes up to 2%).
Fails closed: too few requests (fewer than `slo.minRequests` in all), a stale or sparse
request series, or a rung that changed inside the window (two rungs' traffic mixed) are
NO_DATA. An Ascend request series that does not exist while NVIDIA's does counts as 0
requests: the rule records nothing for a backend no request reached, which is exactly a split
that never landed, so it can only fail the check (or pass it at 0%).
Tester-pinned requests are few and are counted where they went; they sit in the tolerance.
"""

from __future__ import annotations

from components.monitoring.metric_names import REQUEST_RATE
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.criteria import Criterion, Status
from dualstack.gate.data import DataBounds, data_problem
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.query_texts import request_count_query, series, slot_seconds
from dualstack.gate.readings import Reading, percent, read
from dualstack.gate.rung import Rung


def expected_share(weight: int, mirror: int) -> float:
    """The share (0..1) of counted requests Ascend should handle at a rung (formula above)."""
    if weight > 0:
        return weight / 100
    return mirror / (100 + mirror)


def tolerance(expected: float, points: float, relative: float) -> float:
    """max(points / 100, relative x expected), as a 0..1 share."""
    return max(points / 100, relative * expected)


def request_counts(
    settings: Settings,
    client: PrometheusClient,
    window_seconds: int,
    at: float,
    bounds: DataBounds,
) -> dict[str, Reading]:
    """{hardware: requests served in the window}, NO_DATA-shaped (value None) when the
    request series is stale or sparse by `bounds`."""
    ns = scope_labels(settings)
    slot = slot_seconds(settings)
    counts = {}
    for hardware in ("ascend", "nvidia"):
        reading = read(client, request_count_query(ns, hardware, window_seconds), at, "sum")
        if reading.value is not None:
            problem = data_problem(
                client, series(REQUEST_RATE, ns, hardware), at, window_seconds, slot, bounds
            )
            reading = reading if problem is None else Reading(None, problem)
        counts[hardware] = reading
    return counts


def split_criterion(settings: Settings, rung: Rung, counts: dict[str, Reading]) -> Criterion:
    """PASS when the observed Ascend share is within the tolerance of the rung's expected one."""
    slo = settings.slo
    expected = expected_share(rung.weight, rung.mirror)
    allowed = tolerance(expected, slo.split_tolerance_points, slo.split_tolerance_relative)
    threshold = f"{percent(expected)} +/- {allowed * 100:.2f} pp"
    where = f"the recorded rung {rung.text}" if rung.recorded else f"{rung.text} per the stack file"
    ascend, nvidia = counts["ascend"], counts["nvidia"]
    if ascend.value is None and ascend.problem == "no series" and nvidia.value is not None:
        ascend = Reading(0.0)  # the rule records nothing for a backend no request reached
    status: Status
    shown = ("no data", "no data")
    if rung.problem:
        status, detail = "NO_DATA", rung.problem
    elif rung.changed:
        status = "NO_DATA"
        detail = f"{rung.changed} inside the window: the data mixes two rungs; judge a window "
        detail += "that starts after the change"
    elif ascend.value is None or nvidia.value is None:
        status = "NO_DATA"
        detail = "; ".join(
            f"{name}: {r.problem}"
            for name, r in (("Ascend", ascend), ("NVIDIA", nvidia))
            if r.value is None
        )
    elif ascend.value < 0 or nvidia.value < 0 or ascend.value + nvidia.value < slo.min_requests:
        status = "NO_DATA"
        total = max(0.0, ascend.value) + max(0.0, nvidia.value)
        detail = (
            f"{total:,.0f} requests in the window; measuring the split needs at least "
            f"{slo.min_requests:,} (slo.minRequests)"
        )
    else:
        observed = ascend.value / (ascend.value + nvidia.value)
        shown = (percent(observed), percent(1 - observed))
        ok = abs(observed - expected) <= allowed + 1e-12
        status = "PASS" if ok else "FAIL"
        seen = f"observed {percent(observed)} of requests on Ascend, expected {percent(expected)}"
        if ok:
            detail = f"{seen} at {where}"
        else:
            detail = (
                f"{seen} at {where} (+/- {allowed * 100:.2f} pp): the "
                "configured split did not land; check that the route object was applied and "
                "accepted (its status), and for clients bypassing the mesh"
            )
    return Criterion(
        key="split",
        title="Split landed",
        status=status,
        ascend=shown[0],
        nvidia=shown[1],
        threshold=threshold,
        detail=detail,
    )
