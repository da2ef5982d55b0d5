"""`dualstack.gate.data`: is a series fit to judge on, and at which recorded weight?

The pure judgement (`judge_data`, `single`, `weight_range`) is driven with hand-written
samples; `data_problem` and the PromQL it asks are driven against a real Prometheus over
backfilled history, since only a real server tells whether the queries mean what the
judgement assumes (freshness within and beyond the lookback, slots counted with both range
ends included).
"""

from __future__ import annotations

import math

import pytest

from dualstack.gate.data import (
    DEFAULT_BOUNDS,
    DataBounds,
    data_problem,
    duration_text,
    judge_data,
    single,
    weight_range,
)
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.query_texts import coverage_query, newest_sample_query, scope_of, weight_queries
from tests.support.prometheus_server import Series, constant, prometheus_over
from tests.support.promql_answers import AT, samples

HOUR = 3600


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (45, "45s"),
        (59.6, "1m 0s"),
        (60, "1m 0s"),
        (660, "11m 0s"),
        (3599, "59m 59s"),
        (3600, "1h 0m"),
        (7500, "2h 5m"),
        (7530, "2h 5m"),
    ],
)
def test_duration_text_reads_as_an_age(seconds, text):
    assert duration_text(seconds) == text


def test_the_freshness_and_coverage_queries_read_one_series_in_slots_of_one_step():
    series = 'm{hardware="ascend"}'
    assert newest_sample_query(series, 1800, 120) == (
        'timestamp(m{hardware="ascend"}) or '
        'max_over_time(timestamp(m{hardware="ascend"})[1800s:120s])'
    )
    assert coverage_query(series, 1800, 120) == (
        'count_over_time(last_over_time(m{hardware="ascend"}[120s])[1800s:120s])'
    )


def test_the_default_bounds_are_five_minutes_and_ninety_percent():
    assert (DEFAULT_BOUNDS.max_staleness_s, DEFAULT_BOUNDS.min_coverage) == (300, 0.9)
    assert DataBounds() == DEFAULT_BOUNDS


@pytest.mark.parametrize(
    ("values", "reduce", "expected"),
    [
        ([3.0, 1.0, 2.0], "max", 3.0),
        ([3.0, 1.0, 2.0], "min", 1.0),
        ([math.nan, 2.0, math.inf, 5.0, -math.inf], "max", 5.0),
        ([math.nan, 2.0, math.inf, 5.0, -math.inf], "min", 2.0),
        ([], "max", None),
        ([math.nan, math.inf], "min", None),
    ],
)
def test_single_reduces_the_finite_values_only(values, reduce, expected):
    assert single(samples(*values), reduce) == expected


@pytest.mark.parametrize("reduce", ["median", "MIN", "", None])
def test_single_refuses_a_reduction_it_does_not_know(reduce):
    with pytest.raises(ValueError, match="reduce must be 'max' or 'min', not "):
        single(samples(1.0, 2.0), reduce)


class TestJudgeData:
    """Window 30 min, 1-minute slots (30 of them), default bounds (5 min, 90%)."""

    WINDOW = 1800

    def judge(self, newest, coverage, bounds=DEFAULT_BOUNDS, step=60):
        return judge_data(samples(*newest), samples(*coverage), AT, self.WINDOW, step, bounds)

    def test_a_fresh_full_series_can_be_judged(self):
        assert self.judge([AT - 60], [30]) is None

    def test_no_newest_sample_is_stale_for_the_whole_window(self):
        assert self.judge([], [30]) == "stale: no sample in the 30m 0s window"
        assert self.judge([math.nan], [30]) == "stale: no sample in the 30m 0s window"

    def test_a_series_that_stopped_eleven_minutes_ago_is_stale(self):
        assert self.judge([AT - 660], [30]) == (
            "stale: newest sample 11m 0s before the window end (bound 5m 0s)"
        )

    def test_the_staleness_bound_is_inclusive(self):
        assert self.judge([AT - 300], [30]) is None
        assert self.judge([AT - 301], [30]) == (
            "stale: newest sample 5m 1s before the window end (bound 5m 0s)"
        )

    def test_a_sample_after_the_window_end_is_fresh(self):
        assert self.judge([AT + 600], [30]) is None

    def test_the_stalest_of_several_series_counts(self):
        assert self.judge([AT, AT - 900, AT - 30], [30, 30, 30]) == (
            "stale: newest sample 15m 0s before the window end (bound 5m 0s)"
        )

    def test_the_staleness_bound_is_read_from_the_bounds(self):
        bounds = DataBounds(max_staleness_s=900, min_coverage=0.9)
        assert self.judge([AT - 900], [30], bounds) is None
        assert self.judge([AT - 960], [30], bounds) == (
            "stale: newest sample 16m 0s before the window end (bound 15m 0s)"
        )

    def test_a_series_in_two_thirds_of_the_slots_is_sparse(self):
        assert self.judge([AT], [20]) == "sparse: samples in 67% of the window (bound 90%)"

    def test_the_coverage_bound_is_inclusive(self):
        assert self.judge([AT], [27]) is None  # 27 of 30 slots: exactly 90%
        assert self.judge([AT], [26]) == "sparse: samples in 87% of the window (bound 90%)"

    def test_the_coverage_allowance_of_1e_9_is_inclusive(self):
        # 27 of 30 slots is 0.9; a bound exactly 1e-9 above it still passes, one more fails.
        share = 27 / 30
        assert self.judge([AT], [27], DataBounds(300, share + 1e-9)) is None
        assert self.judge([AT], [27], DataBounds(300, share + 2e-9)) == (
            "sparse: samples in 90% of the window (bound 90%)"
        )

    def test_a_zero_staleness_bound_takes_only_a_sample_at_the_window_end(self):
        assert self.judge([AT], [30], DataBounds(0, 0.9)) is None
        assert self.judge([AT - 1], [30], DataBounds(0, 0.9)) == (
            "stale: newest sample 1s before the window end (bound 0s)"
        )

    def test_the_sparsest_of_several_series_counts(self):
        assert self.judge([AT, AT], [31, 12]) == (
            "sparse: samples in 40% of the window (bound 90%)"
        )

    def test_no_coverage_answer_is_an_empty_window(self):
        assert self.judge([AT], []) == "sparse: samples in 0% of the window (bound 90%)"

    def test_one_slot_more_than_the_window_holds_is_full_not_more(self):
        """Both range ends count in Prometheus 2.x: a full window has W/step + 1 slots."""
        full = DataBounds(max_staleness_s=300, min_coverage=1.0)
        assert self.judge([AT], [31], full) is None
        assert self.judge([AT], [29], full) == ("sparse: samples in 97% of the window (bound 100%)")

    def test_slots_are_counted_in_steps_of_the_evaluation_interval(self):
        """A 2-minute rule interval: 15 slots in 30 minutes; 14 is 93%, 13 is 87%."""
        assert self.judge([AT], [14], step=120) is None
        assert self.judge([AT], [13], step=120) == (
            "sparse: samples in 87% of the window (bound 90%)"
        )

    def test_a_stale_series_is_reported_as_stale_before_sparse(self):
        assert self.judge([AT - 900], [3]) == (
            "stale: newest sample 15m 0s before the window end (bound 5m 0s)"
        )


def test_scope_of_a_namespace_or_a_fleet_member():
    assert scope_of("prod") == {"namespace": "prod"}
    member = {"namespace": "fleet", "service": "chat"}
    scoped = scope_of(member)
    assert scoped == {"namespace": "fleet", "service": "chat"}
    scoped["service"] = "other"
    assert member["service"] == "chat"  # a copy: the caller's labels stay as they were


def test_the_weight_queries_read_the_lowest_and_highest_recorded_weight_of_one_scope():
    assert weight_queries("prod", 1800) == (
        'min_over_time(namespace:inference_ascend_weight:ratio{namespace="prod"}[1800s])',
        'max_over_time(namespace:inference_ascend_weight:ratio{namespace="prod"}[1800s])',
    )
    low, high = weight_queries({"namespace": "fleet", "service": "chat"}, 600)
    assert low == (
        "min_over_time(namespace:inference_ascend_weight:ratio"
        '{namespace="fleet", service="chat"}[600s])'
    )
    assert high.startswith("max_over_time(") and high.endswith("[600s])")


@pytest.mark.parametrize(
    ("low", "high", "expected"),
    [
        ([0.05], [0.2], (5, 20)),
        ([0.0], [0.0], (0, 0)),
        ([1.0], [1.0], (100, 100)),
        ([0.2, 0.05], [0.2, 0.5], (5, 50)),  # several series: the lowest low, the highest high
        ([0.049999], [0.2], (5, 20)),  # whole percent
        ([], [0.2], None),  # nothing recorded
        ([0.05], [], None),
        ([math.nan], [0.2], None),
        ([0.5], [0.2], None),  # low above high: not an answer to trust
        ([-0.1], [0.2], None),  # outside 0..1
        ([0.2], [1.5], None),
    ],
)
def test_weight_range_in_whole_percent_or_none(low, high, expected):
    assert weight_range(samples(*low), samples(*high)) == expected


class TestDataProblemAgainstPrometheus:
    """`data_problem` asks a real Prometheus both questions about one recorded series."""

    END = 1_700_000_040.0  # a whole minute
    START = END - 2 * HOUR

    @pytest.fixture(scope="class")
    @classmethod
    def client(cls, tmp_path_factory):
        end, start = cls.END, cls.START
        history = [
            Series("fresh", {"pod": "a"}, constant(1.0, start, end)),
            Series("stopped", {"pod": "a"}, constant(1.0, start, end - 660)),
            # 10 samples missing in the last 30 minutes: 9 of the 31 slot ends (both range
            # ends count) see no sample in the minute before them, so 22 of 30 slots, 73%
            Series(
                "gap",
                {"pod": "a"},
                [(t, v) for t, v in constant(1.0, start, end) if not end - 1500 <= t < end - 900],
            ),
            # one pod fresh, one stopped 15 minutes ago: the stalest counts
            Series("two", {"pod": "a"}, constant(1.0, start, end)),
            Series("two", {"pod": "b"}, constant(1.0, start, end - 900)),
        ]
        workdir = tmp_path_factory.mktemp("data-problem")
        with prometheus_over(history, workdir) as url:
            yield PrometheusClient(url, timeout=10)

    def problem(self, client, series, bounds=DEFAULT_BOUNDS):
        return data_problem(client, series, self.END, 1800, 60, bounds)

    def test_a_series_sampled_every_minute_to_the_end_can_be_judged(self, client):
        assert self.problem(client, "fresh") is None

    def test_a_full_window_is_full_by_the_strictest_bound(self, client):
        assert self.problem(client, "fresh", DataBounds(60, 1.0)) is None

    def test_a_series_that_stopped_is_stale_by_its_age(self, client):
        assert self.problem(client, "stopped") == (
            "stale: newest sample 11m 0s before the window end (bound 5m 0s)"
        )

    def test_a_gap_in_the_window_is_sparse(self, client):
        assert self.problem(client, "gap") == "sparse: samples in 73% of the window (bound 90%)"
        assert self.problem(client, "gap", DataBounds(300, 0.73)) is None
        assert self.problem(client, "gap", DataBounds(300, 0.74)) == (
            "sparse: samples in 73% of the window (bound 74%)"
        )

    def test_the_stalest_pod_counts(self, client):
        assert self.problem(client, "two") == (
            "stale: newest sample 15m 0s before the window end (bound 5m 0s)"
        )

    def test_a_series_prometheus_never_saw_is_stale_for_the_whole_window(self, client):
        assert self.problem(client, "absent") == "stale: no sample in the 30m 0s window"
