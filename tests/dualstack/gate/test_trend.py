"""The Mermaid charts of the gate's Markdown: both backends at the times both have data, NVIDIA
first; a gap is left out and counted, never drawn as 0; a failed range query is a note."""

from __future__ import annotations

from components.monitoring.metric_names import ERROR_RATIO, LATENCY_P99
from components.settings import load_settings
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.trend import (
    Trend,
    build_chart,
    fetch_trend,
    limits,
    mermaid_chart,
    step_for,
    trend_markdown,
)
from tests.conftest import cfg
from tests.support.precision_servers import refused_url

T0 = 1_700_000_040  # 22:14 UTC


def test_times_without_data_on_one_backend_are_left_out_and_counted():
    by_hw = {
        "nvidia": {T0: 0.002, T0 + 60: 0.002, T0 + 120: 0.003},
        "ascend": {T0: 0.004, T0 + 120: 0.05},  # no traffic at T0 + 60: no sample, not 0
    }
    chart = build_chart("5xx error ratio", "%", lambda v: v * 100, by_hw)
    assert chart.times == [T0, T0 + 120] and chart.dropped == 1
    assert chart.lines == {"nvidia": [0.2, 0.3], "ascend": [0.4, 5.0]}
    assert mermaid_chart(chart).splitlines() == [
        "```mermaid",
        "xychart-beta",
        '    title "5xx error ratio (%): NVIDIA 1st line, Ascend 2nd"',
        '    x-axis "UTC" ["22:14", "22:16"]',
        '    y-axis "%" 0 --> 5.5',
        "    line [0.2, 0.3]",
        "    line [0.4, 5]",
        "```",
    ]
    text = trend_markdown(Trend([chart]))
    assert "_5xx error ratio: 1 time(s) without data on one backend left out._" in text


def test_at_most_30_points_and_never_finer_than_a_minute():
    for window in (600, 1800, 1740, 3600, 7 * 86400):
        step = step_for(window)
        assert step >= 60
        assert window // step + 1 <= 30  # query_range includes both ends of the window
    assert step_for(600) == 60  # 11 points: a minute apart, never finer
    assert step_for(1740) == 60  # 29 minutes: 30 points


def test_a_failed_range_query_leaves_a_note_not_an_error():
    settings = load_settings(cfg(ascendWeight="20"))
    client = PrometheusClient(refused_url(), timeout=2)
    trend = fetch_trend(client, settings, 1800, T0)
    assert trend.charts == []
    assert trend.problem.startswith(f"Prometheus at {client.base_url} is unreachable: ")
    assert trend_markdown(trend).startswith("#### Over the window\n\n_No chart: Prometheus at ")


def test_the_limit_line_follows_nvidia_as_the_gate_judges():
    """5xx: NVIDIA + errorRatioMargin; p99: NVIDIA x p99Factor, or p99SloSeconds when higher."""
    settings = load_settings(cfg(ascendWeight="20", slo={"p99SloSeconds": 1.0}))
    limit = limits(settings)
    by_hw = {"nvidia": {T0: 0.5, T0 + 60: 0.9}, "ascend": {T0: 0.9, T0 + 60: 1.1}}
    chart = build_chart("p99 latency", "s", lambda v: v, by_hw, limit[LATENCY_P99])
    assert chart.limit == [1.0, 1.35]  # the 1 s objective, then 0.9 s x 1.5
    lines = mermaid_chart(chart).splitlines()
    assert (
        lines[2] == '    title "p99 latency (s): NVIDIA 1st line, Ascend 2nd, Ascend\'s limit 3rd"'
    )
    assert lines[-2] == "    line [1, 1.35]"
    errors = build_chart("5xx", "%", lambda v: v * 100, by_hw, limit[ERROR_RATIO])
    assert errors.limit == [51.0, 91.0]  # ratio + 0.01, as %
