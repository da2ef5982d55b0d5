"""The gate's window as charts: Ascend and NVIDIA 5xx ratio and p99 over time, for the PR.

Mermaid `xychart-beta` (mermaid.js.org/syntax/xyChart.html; GitHub and GitLab render
```mermaid blocks in comments and descriptions): one chart per series, one x-axis category
per sampled time, one `line` per backend. The chart type has no legend, so the title says
which line is which: NVIDIA is always the first line, Ascend the second, and the gate's limit
for Ascend at each time the third (the 5xx ratio NVIDIA + `slo.errorRatioMargin`, the p99
NVIDIA x `slo.p99Factor` or `slo.p99SloSeconds` when higher: Ascend passes below it).

Data: `query_range` of the recorded series (`hardware:inference_request_errors:ratio_rate5m`,
`hardware:inference_request_duration_seconds:p99_5m`) over the gate's window, at most
`POINTS` points. A time at which either backend has no value (no traffic: the series is
absent, never 0) is left out of both lines and counted in the caption, so no gap is drawn as
a zero. The charts illustrate; they decide nothing, so a failed range query leaves a note in
their place and the gate's verdict stands.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

from components.monitoring.metric_names import ERROR_RATIO, LATENCY_P99
from components.monitoring.rules import scope_labels
from components.settings import Settings
from dualstack.gate.prometheus import PrometheusClient, PrometheusError, RangeSeries
from dualstack.gate.query_texts import series

POINTS = 30
"""Most points per line: readable in a PR comment, one small range query per series."""
MIN_STEP_SECONDS = 60
HARDWARE = ("nvidia", "ascend")


@dataclass(frozen=True)
class Chart:
    """One chart: a title, the y unit, per backend the values at `times` (unix s), and the
    gate's limit for Ascend at each of those times (`limit`, empty when not drawn)."""

    title: str
    unit: str
    times: list[float]
    lines: Mapping[str, list[float]]
    dropped: int = 0
    limit: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class Trend:
    """The charts of one gate run, or `problem` saying why there are none."""

    charts: list[Chart] = field(default_factory=list)
    problem: str | None = None


SERIES: tuple[tuple[str, str, str, Callable[[float], float]], ...] = (
    (ERROR_RATIO, "5xx error ratio", "%", lambda v: v * 100),
    (LATENCY_P99, "p99 latency", "s", lambda v: v),
)


def step_for(window_seconds: int, points: int = POINTS) -> int:
    """Seconds between points, at least one minute: `query_range` includes both ends of the
    window, so `points` points span `points - 1` steps (30 points over 30m: 63 s apart, 29
    of them; one a minute would be 31)."""
    return max(MIN_STEP_SECONDS, math.ceil(window_seconds / (points - 1)))


def _points(found: Sequence[RangeSeries]) -> dict[float, float]:
    """time -> value of the series (the worst value when several match), finite values only."""
    merged: dict[float, float] = {}
    for one in found:
        for t, v in one.points:
            if math.isfinite(v):
                merged[t] = max(v, merged.get(t, v))
    return merged


def build_chart(
    title: str,
    unit: str,
    scale: Callable[[float], float],
    by_hw: Mapping[str, dict[float, float]],
    limit: Callable[[float], float] | None = None,
) -> Chart:
    """A chart of the times at which both backends have a value; the others are counted.
    `limit(nvidia)`: the gate's limit for Ascend given NVIDIA's value at a time (both in the
    series' own unit, before `scale`), drawn as a third line."""
    every = sorted(set().union(*(set(points) for points in by_hw.values())))
    shared = [t for t in every if all(t in by_hw[hw] for hw in HARDWARE)]
    lines = {hw: [round(scale(by_hw[hw][t]), 4) for t in shared] for hw in HARDWARE}
    limits = [round(scale(limit(by_hw["nvidia"][t])), 4) for t in shared] if limit else []
    return Chart(title, unit, shared, lines, len(every) - len(shared), limits)


def limits(settings: Settings) -> dict[str, Callable[[float], float]]:
    """{metric: the gate's limit for Ascend from NVIDIA's value}, as `dualstack.gate.criteria`
    judges them: the 5xx ratio NVIDIA + `slo.errorRatioMargin`; the p99 NVIDIA x
    `slo.p99Factor`, or `slo.p99SloSeconds` when that is higher (under it Ascend passes)."""
    slo = settings.slo
    objective = slo.p99_slo_seconds

    def latency(nvidia: float) -> float:
        scaled = nvidia * slo.p99_factor
        return scaled if objective is None else max(scaled, objective)

    return {ERROR_RATIO: lambda nvidia: nvidia + slo.error_ratio_margin, LATENCY_P99: latency}


def fetch_trend(
    client: PrometheusClient, settings: Settings, window_seconds: int, at: float
) -> Trend:
    """Range-query both recorded series of both backends over the window ending at `at`.

    Never raises for Prometheus trouble: a failed query gives `Trend(problem=...)`.
    """
    step = step_for(window_seconds)
    start = at - window_seconds
    scope = scope_labels(settings)
    charts = []
    limit = limits(settings)
    try:
        for metric, title, unit, scale in SERIES:
            by_hw = {
                hw: _points(client.query_range(series(metric, scope, hw), start, at, step))
                for hw in HARDWARE
            }
            charts.append(build_chart(title, unit, scale, by_hw, limit[metric]))
    except PrometheusError as exc:
        return Trend(problem=str(exc).splitlines()[0])
    return Trend(charts)


def _label(t: float, span: float) -> str:
    moment = datetime.fromtimestamp(t, UTC)
    return moment.strftime("%m-%d %H:%M" if span > 86400 else "%H:%M")


def _number(value: float) -> str:
    return f"{value:.4f}".rstrip("0").rstrip(".") or "0"


def mermaid_chart(chart: Chart) -> str:
    """A ```mermaid xychart-beta block of `chart` (NVIDIA first line, Ascend second, the
    gate's limit for Ascend third when there is one)."""
    span = chart.times[-1] - chart.times[0] if chart.times else 0
    labels = ", ".join(f'"{_label(t, span)}"' for t in chart.times)
    drawn = [*(chart.lines[hw] for hw in HARDWARE), *([chart.limit] if chart.limit else [])]
    top = max((v for values in drawn for v in values), default=0.0)
    ceiling = top * 1.1 if top > 0 else 1.0
    third = ", Ascend's limit 3rd" if chart.limit else ""
    lines = [
        "```mermaid",
        "xychart-beta",
        f'    title "{chart.title} ({chart.unit}): NVIDIA 1st line, Ascend 2nd{third}"',
        f'    x-axis "UTC" [{labels}]',
        f'    y-axis "{chart.unit}" 0 --> {_number(ceiling)}',
    ]
    lines += [f"    line [{', '.join(_number(v) for v in values)}]" for values in drawn]
    lines.append("```")
    return "\n".join(lines)


def trend_markdown(trend: Trend) -> str:
    """The `#### Over the window` part of the gate's Markdown: both charts with captions."""
    lines = ["#### Over the window", ""]
    if trend.problem is not None:
        return "\n".join([*lines, f"_No chart: {trend.problem}_"]) + "\n"
    for chart in trend.charts:
        if not chart.times:
            lines += [f"_{chart.title}: no time in the window with data on both backends._", ""]
            continue
        lines += [mermaid_chart(chart), ""]
        if chart.dropped:
            lines += [
                f"_{chart.title}: {chart.dropped} time(s) without data on one backend left out._",
                "",
            ]
    return "\n".join(lines).rstrip("\n") + "\n"
