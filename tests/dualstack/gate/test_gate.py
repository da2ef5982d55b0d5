"""The gate's pure parts: windows, times, readings and each criterion's verdict."""

from __future__ import annotations

import math

import pytest

from components.monitoring.metric_names import ERROR_RATIO, REQUEST_RATE
from components.settings import load_settings
from dualstack.gate.criteria import (
    Criterion,
    GateReport,
    error_ratio_criterion,
    latency_criterion,
    precision_criterion,
    requests_criterion,
)
from dualstack.gate.data import duration_text
from dualstack.gate.durations import parse_time, parse_window
from dualstack.gate.prometheus import PrometheusError, PrometheusUnavailable, Sample
from dualstack.gate.query_texts import average_query, request_count_query
from dualstack.gate.readings import Reading, read
from dualstack.gate.report import format_markdown, format_table
from tests.conftest import cfg

IMAGE = "registry/inference-service:v1.2.3-npu"


class FakeClient:
    """Answers every query with a fixed list of samples or raises a fixed error."""

    base_url = "http://127.0.0.1:1"

    def __init__(self, answer):
        self.answer = answer

    def query(self, promql, at):
        if isinstance(self.answer, Exception):
            raise self.answer
        return [Sample({"i": str(i)}, v) for i, v in enumerate(self.answer)]


@pytest.mark.parametrize(
    ("text", "seconds"), [("30m", 1800), ("5m", 300), ("1h30m", 5400), ("2h", 7200), ("7d", 604800)]
)
def test_parse_window(text, seconds):
    assert parse_window(text) == seconds


@pytest.mark.parametrize("text", ["", "30", "m", "30 m", "-5m", "1m", "4m59s", "8d", "abc", "30mm"])
def test_parse_window_rejects(text):
    with pytest.raises(ValueError, match="--window"):
        parse_window(text)


def test_parse_time():
    assert parse_time("1700000000") == 1700000000
    assert parse_time("2023-11-14T22:13:20Z") == 1700000000
    assert parse_time("2023-11-14T23:13:20+01:00") == 1700000000
    for bad in ("yesterday", "2023-11-14T22:13:20", "-5", "nan", "inf"):
        with pytest.raises(ValueError, match="--at"):
            parse_time(bad)


def test_queries_select_one_backend_of_one_namespace():
    assert request_count_query("inference", "ascend", 1800) == (
        f'sum_over_time({REQUEST_RATE}{{hardware="ascend", namespace="inference"}}[1740s:60s]) * 60'
    )
    assert average_query(ERROR_RATIO, "inference", "nvidia", 1800) == (
        f'avg_over_time({ERROR_RATIO}{{hardware="nvidia", namespace="inference"}}[1800s])'
    )


@pytest.mark.parametrize(
    ("answer", "combine", "value", "problem"),
    [
        ([0.1, 0.3], "max", 0.3, None),
        ([0.1, 0.3], "sum", 0.4, None),
        ([1.0, 0.0], "min", 0.0, None),
        ([], "max", None, "no series"),
        ([0.1, math.nan], "max", None, "NaN from 0/0, no requests in part of the window"),
        ([math.inf], "max", None, "+Inf"),
        ([-math.inf], "sum", None, "-Inf"),
    ],
)
def test_read_reduces_or_explains(answer, combine, value, problem):
    reading = read(FakeClient(answer), "q", 1.0, combine)
    assert reading.value == pytest.approx(value) if value is not None else reading.value is None
    assert reading.problem == problem


@pytest.mark.parametrize(
    "error", [PrometheusUnavailable("down"), PrometheusError("HTTP 500 Internal Server Error")]
)
def test_read_raises_when_prometheus_cannot_answer(error):
    # An unusable answer is "could not judge" (exit 2), never a NO_DATA verdict.
    with pytest.raises(type(error), match=str(error)):
        read(FakeClient(error), "q", 1.0)


def test_requests_criterion():
    assert requests_criterion(Reading(100), Reading(5000), 100).status == "PASS"
    low = requests_criterion(Reading(99), Reading(5000), 100)
    assert (low.status, low.detail) == ("FAIL", "too few requests on Ascend to judge")
    missing = requests_criterion(Reading(None, "no series"), Reading(0), 100)
    assert (missing.status, missing.detail) == ("NO_DATA", "Ascend: no series")
    assert requests_criterion(Reading(-1), Reading(500), 100).status == "NO_DATA"


def test_error_ratio_criterion_margin_is_absolute_and_inclusive():
    assert error_ratio_criterion(Reading(0.012), Reading(0.002), 0.01).status == "PASS"
    failed = error_ratio_criterion(Reading(0.0121), Reading(0.002), 0.01)
    assert failed.status == "FAIL"
    assert failed.threshold == "<= 1.20% (NVIDIA + 1.00 pp)"
    assert error_ratio_criterion(Reading(None, "no series"), Reading(0.0), 0.01).status == "NO_DATA"
    assert error_ratio_criterion(Reading(0.01), Reading(None, "NaN"), 0.01).status == "NO_DATA"
    assert error_ratio_criterion(Reading(1.5), Reading(0.0), 0.01).status == "NO_DATA"


def test_latency_criterion_factor_and_absolute_slo():
    assert latency_criterion(Reading(1.2), Reading(0.8), 1.5, None).status == "PASS"
    slow = latency_criterion(Reading(2.4), Reading(0.8), 1.5, None)
    assert (slow.status, slow.detail) == ("FAIL", "Ascend's p99 is 3.00 x NVIDIA's")
    assert latency_criterion(Reading(2.4), Reading(0.8), 1.5, 2.5).status == "PASS"
    assert latency_criterion(Reading(2.4), Reading(0.8), 1.5, 2.0).status == "FAIL"
    # Under the absolute objective, NVIDIA's data is not needed ...
    assert latency_criterion(Reading(0.5), Reading(None, "no series"), 1.5, 1.0).status == "PASS"
    # ... above it, it is.
    assert latency_criterion(Reading(1.5), Reading(None, "x"), 1.5, 1.0).status == "NO_DATA"
    assert latency_criterion(Reading(None, "NaN"), Reading(0.8), 1.5, 9.0).status == "NO_DATA"


def settings(**keys):
    return load_settings(cfg(ascendWeight="20", verifiedAscendImage=IMAGE, **keys))


def test_precision_criterion():
    assert precision_criterion(settings(), Reading(None, "no series")).status == "PASS"
    assert precision_criterion(settings(), Reading(1.0)).status == "PASS"
    assert precision_criterion(settings(), Reading(0.0)).status == "FAIL"
    assert precision_criterion(settings(), Reading(None, "query failed: x")).status == "NO_DATA"
    unverified = load_settings(cfg(ascendWeight="20"))
    failed = precision_criterion(unverified, Reading(1.0))
    assert failed.status == "FAIL"
    assert failed.detail == f"served {IMAGE} is not the verified image (none recorded)"


def test_precision_criterion_reads_the_verification_history():
    """An image rolled back to an earlier verified pair passes; the newest record aside."""
    pair = {"nvidia": "registry/inference-service:v1.2.3-cuda", "ascend": IMAGE}
    rolled_back = load_settings(
        cfg(
            ascendWeight="20",
            verifiedAscendImage="registry/inference-service:v1.2.4-npu",
            verifiedImages=[pair],
        )
    )
    passed = precision_criterion(rolled_back, Reading(None, "no series"))
    assert (passed.status, passed.detail) == (
        "PASS",
        "a verified pair records it; no pushed result in Prometheus",
    )


def report(*statuses, required=True):
    criteria = [
        Criterion(
            key=f"c{i}",
            title=f"C{i}",
            status=s,
            ascend="1",
            nvidia="2",
            threshold="<= 3",
            detail="d|x",
            required=required,
        )
        for i, s in enumerate(statuses)
    ]
    return GateReport("prod", "inference", 20, "30m", 1700000000, "http://p", criteria)


def test_report_passes_only_when_every_required_criterion_passes():
    assert report("PASS", "PASS").passed
    assert not report("PASS", "NO_DATA").passed
    assert not report("FAIL", "PASS").passed
    assert report("NO_DATA", required=False).passed


def test_markdown_report_is_a_table_fit_for_a_pr():
    text = format_markdown(report("PASS", "FAIL"))
    lines = text.splitlines()
    assert lines[0] == "### Promotion gate: FAILED"
    assert "window 30m ending 2023-11-14T22:13:20Z" in lines[2]
    assert lines[4] == "| Criterion | Result | Ascend | NVIDIA | Threshold | Detail |"
    assert lines[7] == "| C1 | FAIL | 1 | 2 | <= 3 | d\\|x |"


def test_table_report_aligns_columns():
    lines = format_table(report("PASS", "NO_DATA")).splitlines()
    header = lines[3]
    assert header.split() == ["Criterion", "Result", "Ascend", "NVIDIA", "Threshold"]
    assert lines[5].index("NO_DATA") == header.index("Result")


@pytest.mark.parametrize(
    ("seconds", "text"), [(45, "45s"), (0, "0s"), (660, "11m 0s"), (7500, "2h 5m"), (59.6, "1m 0s")]
)
def test_ages_in_messages(seconds, text):
    assert duration_text(seconds) == text
