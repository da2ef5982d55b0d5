"""The promotion gate's judgement, line by line as a reviewer reads it: each criterion's
status, required flag, shown values, threshold and detail; the queries asked; and `evaluate`'s
choices (reductions, stale or sparse series, the weight-0 rule, the evaluation-interval slot).

`evaluate` runs here against a client answering from a dict keyed by PromQL text; the real
Prometheus runs are in test_gate_prometheus.py and test_gate_several_series.py.
"""

from __future__ import annotations

import math

import pytest

from components.settings import load_fleet, load_settings
from dualstack.gate.criteria import (
    Criterion,
    GateReport,
    error_ratio_criterion,
    evaluate,
    latency_criterion,
    precision_criterion,
    requests_criterion,
)
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.durations import parse_duration, parse_time, parse_window
from dualstack.gate.prometheus import PrometheusUnavailable, Sample
from dualstack.gate.query_texts import gate_queries
from dualstack.gate.readings import Reading, count, percent, read, reading_of, seconds
from tests.conftest import cfg
from tests.support.promql_answers import AT, PromQLAnswers, samples

IMAGE = "registry/inference-service:v1.2.3-npu"
CUDA = "registry/inference-service:v1.2.3-cuda"
NEWER = "registry/inference-service:v1.2.4-npu"
URL = PromQLAnswers.base_url

REQ = "hardware:inference_requests:rate5m"
ERR = "hardware:inference_request_errors:ratio_rate5m"
P99 = "hardware:inference_request_duration_seconds:p99_5m"
WEIGHT = "namespace:inference_ascend_weight:ratio"


# --- Reading, formats --------------------------------------------------------------------


def test_reading_shows_its_value_in_the_unit_or_no_data():
    assert Reading(0.004).show(percent) == "0.40%"
    assert Reading(0.0).show(percent) == "0.00%"
    assert Reading(1.25).show(seconds) == "1.250 s"
    assert Reading(3600.0).show(count) == "3,600"
    assert Reading(None, "no series").show(percent) == "no data"


# --- parse_duration / parse_window / parse_time ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("30s", 30),
        ("30m", 1800),
        ("1h30m", 5400),
        ("500ms", 0.5),
        ("2d", 172800),
        ("1w", 604800),
        ("1y", 31536000),
        (" 2h ", 7200),
        ("1h1m1s", 3661),
    ],
)
def test_parse_duration_adds_every_unit(text, value):
    assert parse_duration(text) == value


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--window '': expected a duration such as 30m, 2h or 1h30m"),
        ("   ", "--window '': expected a duration such as 30m, 2h or 1h30m"),
        ("30", "--window '30': expected a duration such as 30m, 2h or 1h30m"),
        ("30 m", "--window '30 m': expected a duration such as 30m, 2h or 1h30m"),
        ("5mx", "--window '5mx': expected a duration such as 30m, 2h or 1h30m"),
    ],
)
def test_parse_duration_names_the_window_option_by_default(text, message):
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert str(raised.value) == message


def test_parse_duration_names_the_option_it_is_given():
    with pytest.raises(ValueError) as raised:
        parse_duration("soon", "--bake")
    assert str(raised.value) == "--bake 'soon': expected a duration such as 30m, 2h or 1h30m"


@pytest.mark.parametrize(
    ("text", "value"),
    [("5m", 300), ("300s", 300), ("7d", 604800), ("168h", 604800), (" 30m ", 1800)],
)
def test_parse_window_accepts_5m_to_7d_inclusive(text, value):
    assert parse_window(text) == value


def test_parse_window_gives_whole_seconds():
    value = parse_window("5m500ms")
    assert value == 300
    assert type(value) is int


@pytest.mark.parametrize(
    ("text", "shown"), [("4m59s", "'4m59s'"), ("7d1s", "'7d1s'"), (" 8d ", "'8d'"), ("0s", "'0s'")]
)
def test_parse_window_rejects_out_of_range_with_the_reason(text, shown):
    with pytest.raises(ValueError) as raised:
        parse_window(text)
    assert str(raised.value) == (
        f"--window {shown}: must be between 5m and 7d (the series are 5m rates)"
    )


def test_parse_window_rejects_a_non_duration_as_a_window_option():
    with pytest.raises(ValueError) as raised:
        parse_window("half an hour")
    assert str(raised.value) == (
        "--window 'half an hour': expected a duration such as 30m, 2h or 1h30m"
    )


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1", 1.0),
        ("1700000000", 1700000000.0),
        ("1700000000.5", 1700000000.5),
        ("1700000000.123456789", 1700000000.123456789),
        ("253402300799", 253402300799.0),
        ("00000000000000000001", 1.0),
        ("2023-11-14T22:13:20Z", 1700000000.0),
        ("2023-11-14T23:13:20+01:00", 1700000000.0),
        ("9999-12-31T23:59:59Z", 253402300799.0),
        ("1970-01-01T00:00:01Z", 1.0),
    ],
)
def test_parse_time_accepts_unix_seconds_and_rfc3339_with_a_zone(text, value):
    assert parse_time(text) == value


UNIX_RANGE = "expected a unix time in seconds from 1 to 253402300799 (9999-12-31T23:59:59Z)"
FORMAT = "expected unix seconds or RFC 3339 with a zone, e.g. 2024-05-01T12:00:00Z"
YEARS = "expected a time after 1970 and before the year 10000"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("0", f"--at '0': {UNIX_RANGE}"),
        ("0.0", f"--at '0.0': {UNIX_RANGE}"),
        ("253402300800", f"--at '253402300800': {UNIX_RANGE}"),
        ("99999999999999999999", f"--at '99999999999999999999': {UNIX_RANGE}"),
        # 21 digits, or 10 after the point, are not unix seconds at all.
        ("100000000000000000000", f"--at '100000000000000000000': {FORMAT}"),
        ("1.0123456789", f"--at '1.0123456789': {FORMAT}"),
        ("1700000000.", f"--at '1700000000.': {FORMAT}"),
        ("-5", f"--at '-5': {FORMAT}"),
        ("yesterday", f"--at 'yesterday': {FORMAT}"),
        ("2023-11-14T22:13:20", f"--at '2023-11-14T22:13:20': {FORMAT}"),
        ("1970-01-01T00:00:00Z", f"--at '1970-01-01T00:00:00Z': {YEARS}"),
        ("1969-12-31T23:59:59Z", f"--at '1969-12-31T23:59:59Z': {YEARS}"),
        ("9999-12-31T23:59:59-00:01", f"--at '9999-12-31T23:59:59-00:01': {YEARS}"),
        # Timezone offsets count: 00:00 at +01:00 on 0001-01-01 is still in year 0 UTC.
        ("0001-01-01T00:00:00+01:00", f"--at '0001-01-01T00:00:00+01:00': {YEARS}"),
    ],
)
def test_parse_time_rejects_with_the_reason(text, message):
    with pytest.raises(ValueError) as raised:
        parse_time(text)
    assert str(raised.value) == message


def test_parse_time_hides_the_date_parser_error():
    with pytest.raises(ValueError) as raised:
        parse_time("yesterday")
    assert raised.value.__suppress_context__ is True


def test_parse_time_shortens_a_long_text_to_60_characters():
    long = "x" * 61
    with pytest.raises(ValueError) as raised:
        parse_time(long)
    assert str(raised.value) == f"--at '{'x' * 60}…': {FORMAT}"
    just = "y" * 60
    with pytest.raises(ValueError) as raised:
        parse_time(just)
    assert str(raised.value) == f"--at '{just}': {FORMAT}"


# --- reading_of / read ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("values", "combine", "expected"),
    [
        ((2.0, 3.0, 1.0), "max", 3.0),
        ((2.0, 3.0, 1.0), "min", 1.0),
        ((2.0, 3.0, 1.0), "sum", 6.0),
        ((-4.0,), "max", -4.0),
        ((0.0, 0.0), "sum", 0.0),
    ],
)
def test_reading_of_reduces_the_samples(values, combine, expected):
    assert reading_of(samples(*values), combine) == Reading(expected, None)


def test_reading_of_takes_the_max_by_default():
    assert reading_of(samples(0.5, 0.7, 0.6)) == Reading(0.7, None)


@pytest.mark.parametrize(
    ("values", "problem"),
    [
        ((), "no series"),
        ((math.nan,), "NaN from 0/0, no requests in part of the window"),
        ((1.0, math.inf, math.nan), "+Inf"),
        ((math.nan, -math.inf), "NaN from 0/0, no requests in part of the window"),
        ((2.0, -math.inf), "-Inf"),
    ],
)
def test_reading_of_explains_no_value(values, problem):
    assert reading_of(samples(*values), "sum") == Reading(None, problem)


class RecordingClient:
    base_url = URL

    def __init__(self, *values: float):
        self.values = values
        self.asked: list[tuple[str, float]] = []

    def query(self, promql, at):
        self.asked.append((promql, at))
        return samples(*self.values)


def test_read_asks_the_query_at_the_time_and_reduces_by_max_by_default():
    client = RecordingClient(0.2, 0.9, 0.4)
    assert read(client, "up", 123.5) == Reading(0.9, None)
    assert client.asked == [("up", 123.5)]
    assert read(RecordingClient(0.2, 0.9, 0.4), "up", 1.0, "min") == Reading(0.2, None)


# --- requests_criterion -------------------------------------------------------------------


def traffic_line(key, title):
    """The expected line of one traffic criterion: (status, ascend, nvidia, threshold,
    detail, ascend value, nvidia value) -> a required Criterion titled `title`."""

    def line(status, ascend, nvidia, threshold, detail, a_value, n_value):
        return Criterion(
            key=key,
            title=title,
            status=status,
            ascend=ascend,
            nvidia=nvidia,
            threshold=threshold,
            detail=detail,
            required=True,
            ascend_value=a_value,
            nvidia_value=n_value,
        )

    return line


requests_line = traffic_line("requests", "Requests in window")


def test_requests_pass_at_exactly_the_minimum():
    assert requests_criterion(Reading(100.0), Reading(100.0), 100) == requests_line(
        "PASS", "100", "100", ">= 100 each", "enough traffic on both backends", 100.0, 100.0
    )


def test_requests_shows_counts_and_minimum_with_thousands_separators():
    assert requests_criterion(Reading(3600.0), Reading(12345.0), 1000) == requests_line(
        "PASS",
        "3,600",
        "12,345",
        ">= 1,000 each",
        "enough traffic on both backends",
        3600.0,
        12345.0,
    )


def test_requests_below_the_minimum_fail_naming_each_low_side():
    assert requests_criterion(Reading(99.0), Reading(0.0), 100) == requests_line(
        "FAIL", "99", "0", ">= 100 each", "too few requests on Ascend and NVIDIA to judge", 99, 0
    )
    assert requests_criterion(Reading(500.0), Reading(99.5), 100) == requests_line(
        "FAIL", "500", "100", ">= 100 each", "too few requests on NVIDIA to judge", 500, 99.5
    )


def test_requests_without_a_count_are_no_data_with_each_reason():
    ascend = Reading(None, "no series")
    nvidia = Reading(None, "NaN from 0/0, no requests in part of the window")
    assert requests_criterion(ascend, nvidia, 100) == requests_line(
        "NO_DATA",
        "no data",
        "no data",
        ">= 100 each",
        "Ascend: no series; NVIDIA: NaN from 0/0, no requests in part of the window",
        None,
        None,
    )


def test_requests_negative_count_is_no_data():
    assert requests_criterion(Reading(-1.0), Reading(500.0), 100) == requests_line(
        "NO_DATA", "-1", "500", ">= 100 each", "Ascend: negative count", -1.0, 500.0
    )
    assert requests_criterion(Reading(None, "no series"), Reading(-2.0), 100) == requests_line(
        "NO_DATA",
        "no data",
        "-2",
        ">= 100 each",
        "Ascend: no series; NVIDIA: negative count",
        None,
        -2.0,
    )
    # A negative count is not "too few": missing data wins over a low count.
    low_and_negative = requests_criterion(Reading(5.0), Reading(-0.5), 100)
    assert (low_and_negative.status, low_and_negative.detail) == (
        "NO_DATA",
        "NVIDIA: negative count",
    )


# --- error_ratio_criterion ----------------------------------------------------------------


error_line = traffic_line("error-ratio", "5xx error ratio")


def test_error_ratio_passes_at_exactly_nvidia_plus_the_margin():
    assert error_ratio_criterion(Reading(0.012), Reading(0.002), 0.01) == error_line(
        "PASS",
        "1.20%",
        "0.20%",
        "<= 1.20% (NVIDIA + 1.00 pp)",
        "within the margin",
        0.012,
        0.002,
    )


def test_error_ratio_margin_edge_survives_float_rounding():
    # 0.7 + 0.1 is 0.7999999999999999 in floating point: 80% is still within the margin.
    assert error_ratio_criterion(Reading(0.8), Reading(0.7), 0.1).status == "PASS"
    # The allowance for float noise is 1e-12 (inclusive): 1.0000000001 pp over still passes.
    assert error_ratio_criterion(Reading(0.010000000001), Reading(0.0), 0.01).status == "PASS"
    assert error_ratio_criterion(Reading(0.010000000002), Reading(0.0), 0.01).status == "FAIL"


def test_error_ratio_fails_just_over_the_margin_with_the_excess():
    assert error_ratio_criterion(Reading(0.0121), Reading(0.002), 0.01) == error_line(
        "FAIL",
        "1.21%",
        "0.20%",
        "<= 1.20% (NVIDIA + 1.00 pp)",
        "Ascend's 5xx ratio exceeds NVIDIA's by 1.01 pp",
        0.0121,
        0.002,
    )
    assert error_ratio_criterion(Reading(0.012000001), Reading(0.002), 0.01).status == "FAIL"


def test_error_ratio_margin_zero_and_the_ends_of_0_to_1():
    assert error_ratio_criterion(Reading(0.0), Reading(0.0), 0.0) == error_line(
        "PASS", "0.00%", "0.00%", "<= 0.00% (NVIDIA + 0.00 pp)", "within the margin", 0.0, 0.0
    )
    assert error_ratio_criterion(Reading(1.0), Reading(1.0), 0.005) == error_line(
        "PASS",
        "100.00%",
        "100.00%",
        "<= 100.50% (NVIDIA + 0.50 pp)",
        "within the margin",
        1.0,
        1.0,
    )
    assert error_ratio_criterion(Reading(0.3), Reading(0.1), 0.05) == error_line(
        "FAIL",
        "30.00%",
        "10.00%",
        "<= 15.00% (NVIDIA + 5.00 pp)",
        "Ascend's 5xx ratio exceeds NVIDIA's by 20.00 pp",
        0.3,
        0.1,
    )


@pytest.mark.parametrize(
    ("ascend", "nvidia", "shown"),
    [
        (1.5, 0.0, ("150.00%", "0.00%")),
        (0.01, 1.0001, ("1.00%", "100.01%")),
        (-0.01, 0.0, ("-1.00%", "0.00%")),
        (0.0, -0.2, ("0.00%", "-20.00%")),
    ],
)
def test_error_ratio_outside_0_to_1_is_no_data(ascend, nvidia, shown):
    assert error_ratio_criterion(Reading(ascend), Reading(nvidia), 0.01) == error_line(
        "NO_DATA",
        *shown,
        "<= NVIDIA + 1.00 pp",
        "a value outside 0..1 is not an error ratio",
        ascend,
        nvidia,
    )


def test_error_ratio_without_a_value_is_no_data_with_each_reason():
    assert error_ratio_criterion(Reading(None, "no series"), Reading(0.0), 0.02) == error_line(
        "NO_DATA", "no data", "0.00%", "<= NVIDIA + 2.00 pp", "Ascend: no series", None, 0.0
    )
    assert error_ratio_criterion(Reading(0.5), Reading(None, "+Inf"), 0.02) == error_line(
        "NO_DATA", "50.00%", "no data", "<= NVIDIA + 2.00 pp", "NVIDIA: +Inf", 0.5, None
    )
    both = error_ratio_criterion(Reading(None, "stale: x"), Reading(None, "no series"), 0.02)
    assert both.detail == "Ascend: stale: x; NVIDIA: no series"


# --- latency_criterion --------------------------------------------------------------------


latency_line = traffic_line("p99-latency", "p99 latency")


def test_latency_passes_at_exactly_the_factor():
    assert latency_criterion(Reading(1.2), Reading(0.8), 1.5, None) == latency_line(
        "PASS", "1.200 s", "0.800 s", "<= 1.200 s (1.5 x NVIDIA)", "within the factor", 1.2, 0.8
    )


def test_latency_factor_edge_survives_float_rounding():
    # 0.7 x 1.5 is 1.0499999999999998 in floating point: 1.05 s is still within the factor.
    assert latency_criterion(Reading(1.05), Reading(0.7), 1.5, None).status == "PASS"
    assert latency_criterion(Reading(1.050001), Reading(0.7), 1.5, None).status == "FAIL"
    # The allowance for float noise is 1e-12 s (inclusive).
    assert latency_criterion(Reading(2.000000000001), Reading(1.0), 2.0, None).status == "PASS"
    assert latency_criterion(Reading(2.000000000002), Reading(1.0), 2.0, None).status == "FAIL"


def test_latency_over_the_factor_fails_with_the_ratio():
    assert latency_criterion(Reading(2.4), Reading(0.8), 1.25, None) == latency_line(
        "FAIL",
        "2.400 s",
        "0.800 s",
        "<= 1.000 s (1.25 x NVIDIA)",
        "Ascend's p99 is 3.00 x NVIDIA's",
        2.4,
        0.8,
    )


def test_latency_against_a_zero_nvidia_p99():
    assert latency_criterion(Reading(0.5), Reading(0.0), 1.5, None) == latency_line(
        "FAIL",
        "0.500 s",
        "0.000 s",
        "<= 0.000 s (1.5 x NVIDIA)",
        "Ascend's p99 is inf x NVIDIA's",
        0.5,
        0.0,
    )
    assert latency_criterion(Reading(0.0), Reading(0.0), 1.5, None).status == "PASS"


def test_latency_under_the_absolute_slo_passes_without_nvidia():
    assert latency_criterion(Reading(2.0), Reading(None, "no series"), 1.5, 2.0) == latency_line(
        "PASS",
        "2.000 s",
        "no data",
        "<= 1.5 x NVIDIA or <= 2.000 s SLO",
        "under the absolute p99 objective of 2.000 s",
        2.0,
        None,
    )


def test_latency_over_the_absolute_slo_falls_back_to_the_factor():
    assert latency_criterion(Reading(2.1), Reading(1.0), 2.0, 2.0) == latency_line(
        "FAIL",
        "2.100 s",
        "1.000 s",
        "<= 2.000 s (2 x NVIDIA or <= 2.000 s SLO)",
        "Ascend's p99 is 2.10 x NVIDIA's",
        2.1,
        1.0,
    )
    assert latency_criterion(Reading(2.1), Reading(1.5), 1.5, 2.0) == latency_line(
        "PASS",
        "2.100 s",
        "1.500 s",
        "<= 2.250 s (1.5 x NVIDIA or <= 2.000 s SLO)",
        "within the factor",
        2.1,
        1.5,
    )


def test_latency_over_the_slo_without_nvidia_is_no_data():
    assert latency_criterion(Reading(2.5), Reading(None, "NaN"), 1.5, 2.0) == latency_line(
        "NO_DATA",
        "2.500 s",
        "no data",
        "<= 1.5 x NVIDIA or <= 2.000 s SLO",
        "NVIDIA: NaN",
        2.5,
        None,
    )
    assert latency_criterion(Reading(2.5), Reading(-0.1), 1.5, 2.0) == latency_line(
        "NO_DATA",
        "2.500 s",
        "-0.100 s",
        "<= 1.5 x NVIDIA or <= 2.000 s SLO",
        "negative latency",
        2.5,
        -0.1,
    )


def test_latency_without_an_ascend_value_is_no_data():
    assert latency_criterion(Reading(None, "no series"), Reading(0.8), 1.5, None) == latency_line(
        "NO_DATA", "no data", "0.800 s", "<= 1.5 x NVIDIA", "Ascend: no series", None, 0.8
    )
    # A negative p99 is not "under the objective".
    assert latency_criterion(Reading(-0.5), Reading(0.8), 1.5, 1.0) == latency_line(
        "NO_DATA",
        "-0.500 s",
        "0.800 s",
        "<= 1.5 x NVIDIA or <= 1.000 s SLO",
        "negative latency",
        -0.5,
        0.8,
    )


# --- precision_criterion ------------------------------------------------------------------


def precision_line(status, detail, image=IMAGE):
    return Criterion(
        key="precision",
        title="Precision check",
        status=status,
        ascend=image,
        nvidia="",
        threshold="served image = verifiedAscendImage",
        detail=detail,
        required=True,
        ascend_value=None,
        nvidia_value=None,
    )


def verified(**keys):
    return load_settings(cfg(ascendWeight="20", verifiedAscendImage=IMAGE, **keys))


def rolled_back():
    """The served image is an earlier verified pair, not the newest verifiedAscendImage."""
    pair = {"nvidia": CUDA, "ascend": IMAGE}
    return load_settings(cfg(ascendWeight="20", verifiedAscendImage=NEWER, verifiedImages=[pair]))


@pytest.mark.parametrize(
    ("pushed", "status", "detail"),
    [
        (
            Reading(None, "no series"),
            "PASS",
            "verifiedAscendImage matches; no pushed result in Prometheus",
        ),
        (Reading(1.0), "PASS", "verifiedAscendImage matches and precision_check_passed is 1"),
        (
            Reading(0.0),
            "FAIL",
            f"the latest pushed precision_check_passed for {IMAGE} is 0",
        ),
        (
            Reading(0.5),
            "FAIL",
            f"the latest pushed precision_check_passed for {IMAGE} is 0.5",
        ),
        (Reading(None, "NaN"), "NO_DATA", "precision_check_passed: NaN"),
        (Reading(None, None), "NO_DATA", "precision_check_passed: None"),
    ],
)
def test_precision_of_the_verified_image_follows_the_pushed_result(pushed, status, detail):
    assert precision_criterion(verified(), pushed) == precision_line(status, detail)


def test_precision_of_an_earlier_verified_pair():
    assert precision_criterion(rolled_back(), Reading(1.0)) == precision_line(
        "PASS", "a verified pair records it and precision_check_passed is 1"
    )
    assert precision_criterion(rolled_back(), Reading(None, "no series")) == precision_line(
        "PASS", "a verified pair records it; no pushed result in Prometheus"
    )


def test_precision_of_an_unverified_image_fails_whatever_was_pushed():
    other = load_settings(cfg(ascendWeight="20", verifiedAscendImage=NEWER))
    assert precision_criterion(other, Reading(1.0)) == precision_line(
        "FAIL", f"served {IMAGE} is not the verified image ({NEWER})"
    )
    none = load_settings(cfg(ascendWeight="20"))
    assert precision_criterion(none, Reading(None, "no series")) == precision_line(
        "FAIL", f"served {IMAGE} is not the verified image (none recorded)"
    )


# --- gate_queries -------------------------------------------------------------------------


def expected_queries(scope: str, image: str, window: int, span: int, slot: int):
    """The 21 queries, written out: `scope` is the label text after `hardware`."""
    queries = {}
    for metric in (REQ, ERR, P99):
        for hw in ("ascend", "nvidia"):
            one = f'{metric}{{hardware="{hw}", {scope}}}'
            if metric == REQ:
                value = f"sum_over_time({one}[{span}s:60s]) * 60"
            else:
                value = f"avg_over_time({one}[{window}s])"
            queries[("value", metric, hw)] = value
            queries[("newest", metric, hw)] = (
                f"timestamp({one}) or max_over_time(timestamp({one})[{window}s:{slot}s])"
            )
            queries[("coverage", metric, hw)] = (
                f"count_over_time(last_over_time({one}[{slot}s])[{window}s:{slot}s])"
            )
    queries[("pushed",)] = f'precision_check_passed{{ascend_image="{image}", {scope}}}'
    queries[("weight", "low")] = f"min_over_time({WEIGHT}{{{scope}}}[{window}s])"
    queries[("weight", "high")] = f"max_over_time({WEIGHT}{{{scope}}}[{window}s])"
    return queries


def test_gate_queries_of_a_single_service_stack():
    settings = load_settings(cfg(ascendWeight="20", namespace="shop"))
    queries = gate_queries(settings, 1800, 60)
    assert len(queries) == 21
    assert queries == expected_queries('namespace="shop"', IMAGE, 1800, 1740, 60)
    assert queries[("value", REQ, "ascend")] == (
        'sum_over_time(hardware:inference_requests:rate5m{hardware="ascend", '
        'namespace="shop"}[1740s:60s]) * 60'
    )


def test_gate_queries_of_a_fleet_member_select_its_service():
    fleet = load_fleet(cfg(namespace="fleet", services={"chat": {"ascendWeight": 20}}))
    queries = gate_queries(fleet.member("chat"), 3600, 180)
    assert queries == expected_queries('namespace="fleet", service="chat"', IMAGE, 3600, 3540, 180)
    assert queries[("pushed",)] == (
        f'precision_check_passed{{ascend_image="{IMAGE}", namespace="fleet", service="chat"}}'
    )


# --- evaluate -----------------------------------------------------------------------------


HEALTHY = {
    ("value", REQ, "ascend"): samples(600.0, 300.0),
    ("value", REQ, "nvidia"): samples(5000.0),
    ("value", ERR, "ascend"): samples(0.001, 0.004),
    ("value", ERR, "nvidia"): samples(0.002),
    ("value", P99, "ascend"): samples(0.9, 1.1),
    ("value", P99, "nvidia"): samples(1.0),
}


def client_for(settings, *, window=1800, slot=60, weight=(0.2, 0.2), pushed=(), **changed):
    """A client with healthy answers to the queries for `settings` (fresh, full coverage):
    `changed` replaces answers by key name, e.g. `newest_err_ascend=samples(...)`."""
    keys = gate_queries(settings, window, slot)
    by_key: dict[tuple[str, ...], list[Sample]] = dict(HEALTHY)
    for metric in (REQ, ERR, P99):
        for hw in ("ascend", "nvidia"):
            by_key[("newest", metric, hw)] = samples(AT)
            by_key[("coverage", metric, hw)] = samples(window / slot)
    by_key[("pushed",)] = samples(*pushed)
    low, high = weight
    by_key[("weight", "low")] = samples(low) if low is not None else []
    by_key[("weight", "high")] = samples(high) if high is not None else []
    names = {"req": REQ, "err": ERR, "p99": P99}
    for name, answer in changed.items():
        kind, metric, hw = name.split("_")
        by_key[(kind, names[metric], hw)] = answer
    return PromQLAnswers({keys[key]: answer for key, answer in by_key.items()})


def stack(weight="20", **keys):
    return load_settings(
        cfg(ascendWeight=weight, namespace="shop", verifiedAscendImage=IMAGE, **keys)
    )


def test_evaluate_reports_every_criterion_of_healthy_data():
    settings = stack(slo={"minRequests": 800})
    client = client_for(settings)
    report = evaluate(settings, "prod", client, "30m", AT)
    assert report == GateReport(
        "prod",
        "shop",
        20,
        "30m",
        AT,
        URL,
        [
            requests_line(
                "PASS", "900", "5,000", ">= 800 each", "enough traffic on both backends", 900, 5000
            ),
            error_line(
                "PASS",
                "0.40%",
                "0.20%",
                "<= 1.20% (NVIDIA + 1.00 pp)",
                "within the margin",
                0.004,
                0.002,
            ),
            latency_line(
                "PASS",
                "1.100 s",
                "1.000 s",
                "<= 1.500 s (1.5 x NVIDIA)",
                "within the factor",
                1.1,
                1.0,
            ),
            precision_line("PASS", "verifiedAscendImage matches; no pushed result in Prometheus"),
        ],
        (20, 20),
        DEFAULT_BOUNDS,
        (),
        None,
        None,
    )
    assert report.passed
    assert sorted(client.asked) == sorted(gate_queries(settings, 1800, 60).values())


def test_evaluate_sums_requests_over_series_but_takes_the_worst_ratio_and_p99():
    settings = stack(slo={"minRequests": 800, "errorRatioMargin": 0.0015, "p99Factor": 1.05})
    criteria = evaluate(settings, "prod", client_for(settings), "30m", AT).criteria
    # Requests 600 + 300 = 900 >= 800; the worst 5xx ratio 0.4% > 0.2% + 0.15 pp; the worst
    # p99 1.1 s > 1.05 x 1 s.
    assert [(c.status, c.ascend_value) for c in criteria[:3]] == [
        ("PASS", 900),
        ("FAIL", 0.004),
        ("FAIL", 1.1),
    ]


def test_evaluate_passes_a_p99_under_the_absolute_slo_whatever_the_factor():
    settings = stack(slo={"p99Factor": 1.05, "p99SloSeconds": 1.2})
    criterion = evaluate(settings, "prod", client_for(settings), "30m", AT).criteria[2]
    assert criterion == latency_line(
        "PASS",
        "1.100 s",
        "1.000 s",
        "<= 1.05 x NVIDIA or <= 1.200 s SLO",
        "under the absolute p99 objective of 1.200 s",
        1.1,
        1.0,
    )


def test_evaluate_takes_the_lowest_pushed_precision_result():
    settings = stack()
    report = evaluate(settings, "prod", client_for(settings, pushed=(1.0, 0.0)), "30m", AT)
    assert report.criteria[3] == precision_line(
        "FAIL", f"the latest pushed precision_check_passed for {IMAGE} is 0"
    )
    assert not report.passed


def test_evaluate_a_stale_series_is_no_data():
    settings = stack()
    client = client_for(settings, newest_err_ascend=samples(AT - 660))
    report = evaluate(settings, "prod", client, "30m", AT)
    assert report.criteria[1] == error_line(
        "NO_DATA",
        "no data",
        "0.20%",
        "<= NVIDIA + 1.00 pp",
        "Ascend: stale: newest sample 11m 0s before the window end (bound 5m 0s)",
        None,
        0.002,
    )
    assert [c.status for c in report.criteria] == ["PASS", "NO_DATA", "PASS", "PASS"]
    assert not report.passed


def test_evaluate_a_sparse_series_is_no_data():
    settings = stack()
    client = client_for(settings, coverage_p99_nvidia=samples(20))
    criterion = evaluate(settings, "prod", client, "30m", AT).criteria[2]
    assert (criterion.status, criterion.detail) == (
        "NO_DATA",
        "NVIDIA: sparse: samples in 67% of the window (bound 90%)",
    )
    assert (criterion.ascend_value, criterion.nvidia_value) == (1.1, None)


def test_evaluate_judges_freshness_and_coverage_by_the_given_bounds():
    settings = stack()
    bounds = DataBounds(max_staleness_s=60, min_coverage=0.5)
    client = client_for(
        settings, newest_req_nvidia=samples(AT - 120), coverage_p99_nvidia=samples(15)
    )
    report = evaluate(settings, "prod", client, "30m", AT, bounds)
    assert report.bounds == bounds
    assert report.criteria[0].detail == (
        "NVIDIA: stale: newest sample 2m 0s before the window end (bound 1m 0s)"
    )
    assert report.criteria[2].status == "PASS"  # 15 of 30 slots is the 50% bound


def test_evaluate_a_missing_value_says_no_series_not_stale():
    settings = stack()
    client = client_for(settings, value_req_ascend=[], newest_req_ascend=[], coverage_req_ascend=[])
    criterion = evaluate(settings, "prod", client, "30m", AT).criteria[0]
    assert (criterion.status, criterion.detail) == ("NO_DATA", "Ascend: no series")


@pytest.mark.parametrize(
    ("interval", "slot"), [("30s", 60), ("1m", 60), ("3m", 180), ("90500ms", 90)]
)
def test_evaluate_slots_are_the_evaluation_interval_but_at_least_60s(interval, slot):
    settings = stack(monitoring={"evaluationInterval": interval})
    client = client_for(settings, slot=slot)
    report = evaluate(settings, "prod", client, "30m", AT)
    assert [c.status for c in report.criteria] == ["PASS", "PASS", "PASS", "PASS"]


def test_evaluate_coverage_counts_slots_of_the_evaluation_interval():
    settings = stack(monitoring={"evaluationInterval": "3m"})
    # 8 of the 10 three-minute slots of 30m is 80%, under the 90% bound.
    client = client_for(settings, slot=180, coverage_err_ascend=samples(8))
    criterion = evaluate(settings, "prod", client, "30m", AT).criteria[1]
    assert criterion.detail == "Ascend: sparse: samples in 80% of the window (bound 90%)"


@pytest.mark.parametrize(
    ("weight", "recorded", "shown", "required"),
    [
        ("0", (0.0, 0.0), (0, 0), False),
        ("0", (None, None), None, False),
        ("0", (0.0, 0.004), (0, 0), False),
        ("0", (0.0, 0.01), (0, 1), True),
        ("0", (0.0, 0.05), (0, 5), True),
        ("5", (None, None), None, True),
        ("20", (0.0, 0.0), (0, 0), True),
    ],
)
def test_evaluate_traffic_is_optional_only_at_weight_0_in_file_and_record(
    weight, recorded, shown, required
):
    settings = stack(weight)
    client = client_for(
        settings,
        weight=recorded,
        value_req_ascend=[],
        value_err_ascend=[],
        value_p99_ascend=[],
    )
    report = evaluate(settings, "prod", client, "30m", AT)
    assert report.recorded_weight == shown
    assert [c.required for c in report.criteria] == [required, required, required, True]
    assert [c.status for c in report.criteria] == ["NO_DATA", "NO_DATA", "NO_DATA", "PASS"]
    assert report.passed is not required


def test_evaluate_weight_1_needs_traffic():
    settings = load_settings(
        cfg(ascendWeight="1", ladder="[0,1,100]", namespace="shop", verifiedAscendImage=IMAGE)
    )
    client = client_for(settings, weight=(None, None), value_req_ascend=[])
    report = evaluate(settings, "prod", client, "30m", AT)
    assert report.weight == 1
    assert [c.required for c in report.criteria] == [True, True, True, True]


def test_evaluate_names_the_fleet_member():
    fleet = load_fleet(
        cfg(
            namespace="fleet",
            services={
                "chat": {"ascendWeight": 20, "verifiedAscendImage": IMAGE},
                "embed": {"ascendWeight": 0},
            },
        )
    )
    chat = fleet.member("chat")
    report = evaluate(chat, "fleet", client_for(chat), "30m", AT)
    assert (report.stack, report.namespace, report.service) == ("fleet", "fleet", "chat")
    assert report.where == "stack fleet, service chat"
    assert report.passed


def test_evaluate_reports_progress_over_the_21_queries():
    settings = stack()
    calls = []
    evaluate(
        settings,
        "prod",
        client_for(settings, window=3600),
        "1h",
        AT,
        workers=1,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(n, 21) for n in range(22)]


def test_evaluate_window_sets_every_query_and_the_coverage():
    settings = stack()
    client = client_for(settings, window=7200, coverage_req_ascend=samples(100))
    report = evaluate(settings, "prod", client, "2h", AT)
    assert report.window == "2h"
    # 100 of 120 one-minute slots: 83%.
    assert report.criteria[0].detail == "Ascend: sparse: samples in 83% of the window (bound 90%)"


def test_evaluate_rejects_a_bad_window_before_any_query():
    settings = stack()
    client = client_for(settings)
    with pytest.raises(ValueError) as raised:
        evaluate(settings, "prod", client, "4m", AT)
    assert str(raised.value) == "--window '4m': must be between 5m and 7d (the series are 5m rates)"
    assert client.asked == []


def test_evaluate_raises_when_prometheus_does_not_answer():
    class Down:
        base_url = URL

        def query(self, promql, at):
            raise PrometheusUnavailable("connection refused")

    with pytest.raises(PrometheusUnavailable, match="connection refused"):
        evaluate(stack(), "prod", Down(), "30m", AT)
