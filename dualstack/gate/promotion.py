"""The promotion gate as `gate` and `promote` run it: the traffic and precision criteria of
`dualstack.gate.criteria`, plus whether the split landed (`split`) and whether the rung baked
(`bake`), both judged from what the deployed rules recorded (`rung`).

At the shadow rung (weight 0, `mirrorPercent` > 0) Ascend's 5xx ratio and p99 are measured on
the mirrored copies, so the traffic criteria are required there, and the report says what
that evidence does and does not show (`MIRROR_NOTE`).
"""

from __future__ import annotations

from dataclasses import replace

from dualstack.gate.bake import bake_criterion
from dualstack.gate.criteria import GateReport, evaluate
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.durations import parse_window
from dualstack.gate.hints import with_selectors
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.queries import Progress
from dualstack.gate.rung import Rung, judged_step, window_rung
from dualstack.gate.split import request_counts, split_criterion

TRAFFIC_KEYS = ("requests", "error-ratio", "p99-latency")

MIRROR_NOTE = (
    "Ascend's numbers come from mirrored copies of {mirror}% of the requests; their responses "
    "were discarded. The gate can conclude that Ascend, on the image and pods deployed now, "
    "took that production-shaped load without more 5xx than NVIDIA and within the latency "
    "bound. It cannot conclude that the answers were right (nobody compared them: that is the "
    "precision check), how clients fare when they wait for Ascend (timeouts, retries, "
    "streaming were not exercised; a mirror is sent without waiting and carries a Host "
    "header ending in -shadow), nor anything about a larger share than the mirrored one."
)


def evaluate_promotion(
    settings,
    stack: str,
    client: PrometheusClient,
    window: str,
    at: float,
    bounds: DataBounds = DEFAULT_BOUNDS,
    step: tuple[int, int | None] | None = None,
    progress: Progress | None = None,
) -> GateReport:
    """Every criterion for `stack` at unix time `at`, the split and the bake included.

    `step` (from, to) in %: the step to judge (promote passes the stack file's weight and its
    next step); default: from the recorded live rung (`dualstack.gate.rung.judged_step`).
    Raises like `criteria.evaluate`.
    """
    report = evaluate(settings, stack, client, window, at, bounds, progress=progress)
    window_seconds = parse_window(window)
    rung = window_rung(settings, client, window_seconds, at)
    judged = judged_step(settings, rung, step)
    start_mirror = settings.mirror_percent if step is not None else rung.mirror
    split = split_criterion(
        settings, rung, request_counts(settings, client, window_seconds, at, bounds)
    )
    bake = bake_criterion(settings, client, judged, start_mirror, rung, at, bounds)
    mirrored = rung.mirror or (settings.mirror_percent if not rung.recorded else 0)
    criteria = [
        replace(c, required=True) if mirrored and c.key in TRAFFIC_KEYS else c
        for c in report.criteria
    ]
    precision = [c for c in criteria if c.key == "precision"]
    others = [c for c in criteria if c.key != "precision"]
    notes = [f"Judged step: {judged[0]}% -> {_to(judged[1])}."]
    if mirrored:
        notes.append(MIRROR_NOTE.format(mirror=mirrored))
    return replace(
        report, criteria=[*others, split, bake, *precision], notes=tuple(notes), step=judged
    )


def _to(target: int | None) -> str:
    return "none (top of the ladder)" if target is None else f"{target}%"


def traffic_status(
    settings, client: PrometheusClient, window: str, at: float, bounds: DataBounds = DEFAULT_BOUNDS
) -> dict[str, object]:
    """What `dualstack status` shows of the traffic: the recorded rung (and whether it differs
    from the stack file's: a step written but not deployed), whether the split landed
    (observed against expected Ascend share) and how long the rung has held, as plain data.
    Raises PrometheusUnavailable / PrometheusError like the gate."""
    window_seconds = parse_window(window)
    rung = window_rung(settings, client, window_seconds, at)
    split = split_criterion(
        settings, rung, request_counts(settings, client, window_seconds, at, bounds)
    )
    judged = judged_step(settings, rung)
    bake = bake_criterion(settings, client, judged, rung.mirror, rung, at, bounds)
    split = with_selectors(split, settings)
    file_rung = Rung(settings.ascend_weight, settings.mirror_percent, recorded=False)
    return {
        "window": window,
        "rung": rung.text if rung.recorded else None,
        "stackFileRung": file_rung.text,
        "rungDiffers": rung.recorded and rung.text != file_rung.text,
        "split": {
            "status": split.status,
            "observed": split.ascend,
            "expected": split.threshold,
            "detail": split.detail,
        },
        "bake": {
            "status": bake.status,
            "held": bake.ascend,
            "bakeTime": settings.bake_time,
            "detail": bake.detail,
        },
    }
