"""Bake time: a promotion needs the current rung deployed and steady for `bakeTime`.

Proved from Prometheus, never from a clock or a date in the pull request: the recorded weight
(ASCEND_WEIGHT, and ASCEND_MIRROR when the rules record it) must have held the rung the step
starts from over the whole bake window `[at - bakeTime, at]`:

- `held since`: the later of the first sample in the window, and one evaluation interval (at
  least one 60 s step) after the last sample at another value, when the next sample was
  recorded (`max_over_time(timestamp(abs(S - w) > 0.0005)[B:step])`); the rung
  is baked when it held for at least `bakeTime` (a window that started too recently FAILs);
- the series is fresh at the window end and covers it (`dualstack.gate.data`: a gap could
  hide a change): else NO_DATA;
- enough requests in the bake window: `slo.minRequests` in all, and on Ascend too when the
  rung sends it any (a weight, or a mirror); else FAIL.

A decrease (or no raise: the top of the ladder) is never held by bake time: rolling back must
never wait. `bakeTime: 0s` asks for no bake.
"""

from __future__ import annotations

import math

from components.monitoring.metric_names import ASCEND_MIRROR, ASCEND_WEIGHT
from components.monitoring.rules import scope_labels
from components.settings import Settings
from components.settings.routing import duration_seconds
from dualstack.gate.criteria import Criterion, Status
from dualstack.gate.data import DataBounds, data_problem, duration_text
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.query_texts import (
    STEP_SECONDS,
    Scope,
    first_sample_query,
    last_other_query,
    request_count_query,
    service_series,
    slot_seconds,
)
from dualstack.gate.readings import count, read
from dualstack.gate.rung import Rung


def _one(client: PrometheusClient, promql: str, at: float, reduce=max) -> float | None:
    values = [s.value for s in client.query(promql, at) if math.isfinite(s.value)]
    return reduce(values) if values else None


def held_since(
    client: PrometheusClient,
    metric: str,
    scope: Scope,
    percent: int,
    at: float,
    span: int,
    interval: int,
) -> tuple[float | None, bool]:
    """(since when the recorded `metric` holds `percent` within the last `span` seconds, and
    whether it held the whole span). (None, False) when nothing was recorded in the span.

    `interval` is the seconds between two recorded samples (the rules' evaluation interval,
    at least one 60 s step): after the last sample at another value, the rung holds from the
    next sample on. With rules every 3m, a change 12m ago holds for 9m, not 11m.
    """
    first = _one(client, first_sample_query(metric, scope, span), at, min)
    if first is None:
        return None, False
    last_other = _one(client, last_other_query(metric, scope, percent, span), at)
    if last_other is not None:
        return last_other + interval, False
    return first, first <= at - span + STEP_SECONDS


def _requests(settings: Settings, client: PrometheusClient, hardware: str, span: int, at: float):
    return read(
        client, request_count_query(scope_labels(settings), hardware, span), at, "sum"
    ).value


def bake_criterion(
    settings: Settings,
    client: PrometheusClient,
    step: tuple[int, int | None],
    mirror: int,
    live: Rung,
    at: float,
    bounds: DataBounds,
) -> Criterion:
    """PASS when the rung `step[0]` (with `mirror` % mirrored) held for `bakeTime` before
    `at` with enough requests, or when `step` is not a raise. `live` is the rung recorded at
    the end of the gate's window: a step from another rung has not even been deployed."""
    start, target = step
    bake = settings.bake_time
    span = int(duration_seconds(bake))
    rung = f"{start}% with {mirror}% mirrored" if mirror else f"{start}%"
    threshold = f">= {bake} at {rung}"
    status: Status
    held_text = ""
    if target is None or target <= start:
        status = "PASS"
        detail = "no raise to hold: a decrease is never held by bake time"
        if target is None:
            detail = "the top of the ladder: nothing to promote"
    elif span == 0:
        status, detail = "PASS", "bakeTime is 0s: no bake required"
    elif live.recorded and (live.weight, live.mirror) != (start, mirror):
        status = "FAIL"
        detail = (
            f"the deployed rules record {live.text}, not the {rung} this step starts from: "
            "deploy that rung and let it bake"
        )
    else:
        status, detail, held_text = _judge(settings, client, start, mirror, at, span, bounds)
    return Criterion(
        key="bake",
        title="Bake time",
        status=status,
        ascend=held_text or "-",
        nvidia="",
        threshold=threshold,
        detail=detail,
    )


def _judge(
    settings: Settings,
    client: PrometheusClient,
    weight: int,
    mirror: int,
    at: float,
    span: int,
    bounds: DataBounds,
) -> tuple[Status, str, str]:
    ns, bake = scope_labels(settings), settings.bake_time
    slot = slot_seconds(settings)
    since, whole = held_since(client, ASCEND_WEIGHT, ns, weight, at, span, slot)
    if since is None:
        return "NO_DATA", f"no recorded weight in the {bake} bake window", ""
    mirror_since, mirror_whole = held_since(client, ASCEND_MIRROR, ns, mirror, at, span, slot)
    if mirror_since is None and mirror:
        return "NO_DATA", f"no recorded mirror in the {bake} bake window", ""
    if mirror_since is not None:
        since, whole = max(since, mirror_since), whole and mirror_whole
    held = max(0.0, at - since)
    held_text = f"held >= {bake}" if whole else f"held {duration_text(held)}"
    if not whole:
        left = duration_text(max(0.0, span - held))
        rung = f"{weight}%" + (f" with {mirror}% mirrored" if mirror else "")
        return (
            "FAIL",
            f"the recorded rung is {rung} only for the last {duration_text(held)}; the bake "
            f"time is {bake}: {left} left",
            held_text,
        )
    weight_series = service_series(ASCEND_WEIGHT, ns)
    problem = data_problem(client, weight_series, at, span, slot, bounds)
    if problem is not None:
        return "NO_DATA", f"recorded weight over the bake window: {problem}", held_text
    ascend = _requests(settings, client, "ascend", span, at) or 0.0
    nvidia = _requests(settings, client, "nvidia", span, at) or 0.0
    minimum = settings.slo.min_requests
    sends_ascend = weight > 0 or mirror > 0
    if ascend + nvidia < minimum or (sends_ascend and ascend < minimum):
        where = "on Ascend" if ascend + nvidia >= minimum else "in all"
        return (
            "FAIL",
            f"too few requests {where} in the bake window to call it steady ({count(ascend)} "
            f"on Ascend, {count(nvidia)} on NVIDIA; at least {minimum:,})",
            held_text,
        )
    return "PASS", f"held for the whole {bake} with {count(ascend + nvidia)} requests", held_text
