"""`dualstack.gate.bake`, line by line as a reviewer reads the bake criterion: the PromQL it
asks, since when the recorded rung held, and the Criterion it gives (status, held text,
threshold, detail) for each way a rung can fail to bake.

A client answering each exact PromQL text from a dict stands in for Prometheus; what the
queries mean against a real server (backfilled history) is in test_gate_split_bake.py.
Settings are built here (namespace `shop`, bakeTime 10m, minRequests 1,000), never read from
the committed stack files.
"""

from __future__ import annotations

import math

import pytest

from components.settings import load_fleet, load_settings
from dualstack.gate.bake import _judge, _requests, bake_criterion, held_since
from dualstack.gate.criteria import Criterion
from dualstack.gate.data import DEFAULT_BOUNDS, DataBounds
from dualstack.gate.rung import Rung
from tests.conftest import cfg
from tests.support.promql_answers import AT, PromQLAnswers, samples

NAN, INF = math.nan, math.inf

WEIGHT = "namespace:inference_ascend_weight:ratio"
MIRROR = "namespace:inference_ascend_mirror:ratio"
SHOP_WEIGHT = 'namespace:inference_ascend_weight:ratio{namespace="shop"}'
SHOP_MIRROR = 'namespace:inference_ascend_mirror:ratio{namespace="shop"}'


def stack(weight="20", **keys):
    keys = {"bakeTime": "10m", "slo": {"minRequests": 1000}, **keys}
    return load_settings(cfg(ascendWeight=weight, namespace="shop", **keys))


def first_query(series, window="600s"):
    return f"min_over_time(timestamp({series})[{window}:60s])"


def changed_query(series, ratio, window="600s"):
    return f"max_over_time(timestamp(abs({series} - {ratio}) > 0.0005)[{window}:60s])"


def newest_query(window="600s", slot="60s"):
    return f"timestamp({SHOP_WEIGHT}) or max_over_time(timestamp({SHOP_WEIGHT})[{window}:{slot}])"


def coverage_query(window="600s", slot="60s"):
    return f"count_over_time(last_over_time({SHOP_WEIGHT}[{slot}])[{window}:{slot}])"


def requests_query(hardware, subquery="540s:60s"):
    rate = f'hardware:inference_requests:rate5m{{hardware="{hardware}", namespace="shop"}}'
    return f"sum_over_time({rate}[{subquery}]) * 60"


def history(
    *,
    ratio="0.2",
    first=(AT - 600,),
    changed=(),
    mirror_ratio="0",
    mirror_first=(),
    mirror_changed=(),
    newest=(AT,),
    coverage=(10,),
    ascend=(600.0, 400.0),
    nvidia=(3000.0,),
    window="600s",
    slot="60s",
    subquery="540s:60s",
) -> PromQLAnswers:
    """Answers for a bake window: by default the weight recorded 20% all along, no mirror
    series, a fresh full weight series, 1,000 Ascend and 3,000 NVIDIA requests."""
    return PromQLAnswers(
        {
            first_query(SHOP_WEIGHT, window): samples(*first),
            changed_query(SHOP_WEIGHT, ratio, window): samples(*changed),
            first_query(SHOP_MIRROR, window): samples(*mirror_first),
            changed_query(SHOP_MIRROR, mirror_ratio, window): samples(*mirror_changed),
            newest_query(window, slot): samples(*newest),
            coverage_query(window, slot): samples(*coverage),
            requests_query("ascend", subquery): samples(*ascend),
            requests_query("nvidia", subquery): samples(*nvidia),
        }
    )


def bake_line(status, held, threshold, detail):
    return Criterion(
        key="bake",
        title="Bake time",
        status=status,
        ascend=held,
        nvidia="",
        threshold=threshold,
        detail=detail,
    )


def judge(settings, client, step=(20, 50), mirror=0, live=None, bounds=DEFAULT_BOUNDS):
    live = live if live is not None else Rung(step[0], mirror, recorded=True)
    return bake_criterion(settings, client, step, mirror, live, AT, bounds)


# --- held_since -----------------------------------------------------------------------------


def test_held_since_starts_one_sample_interval_after_the_last_sample_at_another_value():
    client = history(first=(AT - 720,), changed=(AT - 720,))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 180) == (AT - 540, False)
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 660, False)


def test_held_since_asks_the_first_sample_and_the_last_one_at_another_value():
    client = PromQLAnswers(
        {
            "min_over_time(timestamp(namespace:inference_ascend_weight:ratio"
            '{namespace="shop"})[600s:60s])': samples(AT - 600),
            "max_over_time(timestamp(abs(namespace:inference_ascend_weight:ratio"
            '{namespace="shop"} - 0.2) > 0.0005)[600s:60s])': [],
        }
    )
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 600, True)
    assert client.asked == [
        'min_over_time(timestamp(namespace:inference_ascend_weight:ratio{namespace="shop"})'
        "[600s:60s])",
        'max_over_time(timestamp(abs(namespace:inference_ascend_weight:ratio{namespace="shop"}'
        " - 0.2) > 0.0005)[600s:60s])",
    ]


@pytest.mark.parametrize(
    ("percent", "ratio"), [(0, "0"), (5, "0.05"), (7, "0.07"), (20, "0.2"), (100, "1")]
)
def test_held_since_compares_the_recorded_ratio_of_the_percent(percent, ratio):
    client = PromQLAnswers(
        {
            first_query(SHOP_WEIGHT): samples(AT - 600),
            f"max_over_time(timestamp(abs({SHOP_WEIGHT} - {ratio}) > 0.0005)[600s:60s])": [],
        }
    )
    assert held_since(client, WEIGHT, "shop", percent, AT, 600, 60) == (AT - 600, True)


def test_held_since_selects_a_fleet_member_by_namespace_and_service():
    member = 'namespace:inference_ascend_mirror:ratio{namespace="fleet", service="chat"}'
    client = PromQLAnswers(
        {
            f"min_over_time(timestamp({member})[3600s:60s])": samples(AT - 3600),
            f"max_over_time(timestamp(abs({member} - 0.1) > 0.0005)[3600s:60s])": [],
        }
    )
    scope = {"namespace": "fleet", "service": "chat"}
    assert held_since(client, MIRROR, scope, 10, AT, 3600, 60) == (AT - 3600, True)


@pytest.mark.parametrize(
    ("first", "whole"),
    [
        (AT - 700, True),
        (AT - 541, True),
        (AT - 540, True),  # one step into the window: the first subquery step, inclusive
        (AT - 539, False),
        (AT - 300, False),
    ],
)
def test_held_since_holds_the_whole_span_from_one_step_into_it(first, whole):
    client = history(first=(first,))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (first, whole)


def test_held_since_a_sample_at_another_value_holds_from_one_step_after_it():
    client = history(first=(AT - 600,), changed=(AT - 300,))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 240, False)


def test_held_since_the_earliest_first_sample_of_several_series():
    client = history(first=(AT - 300, AT - 590, AT - 450))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 590, True)


def test_held_since_the_latest_other_value_of_several_series():
    client = history(changed=(AT - 400, AT - 200, AT - 500))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 140, False)


def test_held_since_ignores_non_finite_values():
    client = history(first=(NAN, INF, AT - 600, -INF), changed=(NAN, INF, -INF))
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (AT - 600, True)


@pytest.mark.parametrize("first", [(), (NAN,), (INF, -INF)])
def test_held_since_nothing_recorded_in_the_span(first):
    client = history(first=first)
    assert held_since(client, WEIGHT, "shop", 20, AT, 600, 60) == (None, False)
    assert client.asked == [first_query(SHOP_WEIGHT)]


# --- _requests ------------------------------------------------------------------------------


def test_requests_sums_every_series_of_the_rate_over_the_window_less_one_step():
    client = PromQLAnswers(
        {
            "sum_over_time(hardware:inference_requests:rate5m"
            '{hardware="ascend", namespace="shop"}[540s:60s]) * 60': samples(600.0, 400.0),
        }
    )
    assert _requests(stack(), client, "ascend", 600, AT) == 1000.0


def test_requests_of_a_fleet_member_over_a_day():
    fleet = load_fleet(cfg(namespace="fleet", services={"chat": {"ascendWeight": 20}}))
    client = PromQLAnswers(
        {
            "sum_over_time(hardware:inference_requests:rate5m"
            '{hardware="nvidia", namespace="fleet", service="chat"}[86340s:60s]) * 60': samples(
                5.0
            ),
        }
    )
    assert _requests(fleet.member("chat"), client, "nvidia", 86400, AT) == 5.0


@pytest.mark.parametrize("answer", [(), (NAN,), (100.0, INF)])
def test_requests_without_a_finite_count_is_none(answer):
    client = PromQLAnswers({requests_query("ascend"): samples(*answer)})
    assert _requests(stack(), client, "ascend", 600, AT) is None


# --- bake_criterion: steps that need no bake ---------------------------------------------


def test_the_top_of_the_ladder_needs_no_bake():
    client = PromQLAnswers({})
    assert judge(stack("100"), client, step=(100, None)) == bake_line(
        "PASS", "-", ">= 10m at 100%", "the top of the ladder: nothing to promote"
    )
    assert client.asked == []


@pytest.mark.parametrize("step", [(50, 20), (20, 20), (5, 0)])
def test_a_decrease_or_no_raise_is_never_held_by_bake_time(step):
    client = PromQLAnswers({})
    assert judge(stack(), client, step=step) == bake_line(
        "PASS",
        "-",
        f">= 10m at {step[0]}%",
        "no raise to hold: a decrease is never held by bake time",
    )
    assert client.asked == []


def test_a_bake_time_of_0s_asks_for_no_bake():
    client = PromQLAnswers({})
    assert judge(stack(bakeTime="0s"), client, step=(20, 50)) == bake_line(
        "PASS", "-", ">= 0s at 20%", "bakeTime is 0s: no bake required"
    )
    assert client.asked == []


# --- bake_criterion: the deployed rung ----------------------------------------------------


def test_a_step_from_a_rung_the_rules_do_not_record_fails_at_once():
    client = PromQLAnswers({})
    live = Rung(5, 0, recorded=True)
    assert judge(stack(), client, step=(20, 50), live=live) == bake_line(
        "FAIL",
        "-",
        ">= 10m at 20%",
        "the deployed rules record 5%, not the 20% this step starts from: deploy that rung "
        "and let it bake",
    )
    assert client.asked == []


def test_a_step_from_the_shadow_rung_needs_the_recorded_mirror_too():
    client = PromQLAnswers({})
    live = Rung(0, 0, recorded=True)
    settings = stack("0", mirrorPercent=10)
    assert judge(settings, client, step=(0, 5), mirror=10, live=live) == bake_line(
        "FAIL",
        "-",
        ">= 10m at 0% with 10% mirrored",
        "the deployed rules record 0%, not the 0% with 10% mirrored this step starts from: "
        "deploy that rung and let it bake",
    )


def test_a_rung_recording_a_mirror_is_not_the_rung_without_one():
    live = Rung(0, 10, recorded=True)
    assert judge(stack("0"), PromQLAnswers({}), step=(0, 5), live=live) == bake_line(
        "FAIL",
        "-",
        ">= 10m at 0%",
        "the deployed rules record 0% with 10% mirrored, not the 0% this step starts from: "
        "deploy that rung and let it bake",
    )


def test_a_rung_from_the_stack_file_not_recorded_is_judged_on_the_data():
    client = history()
    live = Rung(50, 0, recorded=False)
    assert judge(stack(), client, step=(20, 50), live=live) == bake_line(
        "PASS", "held >= 10m", ">= 10m at 20%", "held for the whole 10m with 4,000 requests"
    )


# --- bake_criterion: a rung that held -------------------------------------------------------


def test_a_rung_that_held_the_whole_bake_time_with_traffic_passes():
    client = history()
    assert judge(stack(), client) == bake_line(
        "PASS", "held >= 10m", ">= 10m at 20%", "held for the whole 10m with 4,000 requests"
    )
    assert client.asked == [
        'min_over_time(timestamp(namespace:inference_ascend_weight:ratio{namespace="shop"})'
        "[600s:60s])",
        'max_over_time(timestamp(abs(namespace:inference_ascend_weight:ratio{namespace="shop"}'
        " - 0.2) > 0.0005)[600s:60s])",
        'min_over_time(timestamp(namespace:inference_ascend_mirror:ratio{namespace="shop"})'
        "[600s:60s])",
        'timestamp(namespace:inference_ascend_weight:ratio{namespace="shop"}) or '
        'max_over_time(timestamp(namespace:inference_ascend_weight:ratio{namespace="shop"})'
        "[600s:60s])",
        'count_over_time(last_over_time(namespace:inference_ascend_weight:ratio{namespace="shop"}'
        "[60s])[600s:60s])",
        'sum_over_time(hardware:inference_requests:rate5m{hardware="ascend", namespace="shop"}'
        "[540s:60s]) * 60",
        'sum_over_time(hardware:inference_requests:rate5m{hardware="nvidia", namespace="shop"}'
        "[540s:60s]) * 60",
    ]


def test_judge_gives_the_status_detail_and_held_text():
    assert _judge(stack(), history(), 20, 0, AT, 600, DEFAULT_BOUNDS) == (
        "PASS",
        "held for the whole 10m with 4,000 requests",
        "held >= 10m",
    )


def test_the_shadow_rung_held_with_its_mirror_passes():
    client = history(
        ratio="0", mirror_ratio="0.1", mirror_first=(AT - 600,), ascend=(1000.0,), nvidia=(1e4,)
    )
    settings = stack("0", mirrorPercent=10)
    assert judge(settings, client, step=(0, 5), mirror=10) == bake_line(
        "PASS",
        "held >= 10m",
        ">= 10m at 0% with 10% mirrored",
        "held for the whole 10m with 11,000 requests",
    )
    assert client.asked[:4] == [
        first_query(SHOP_WEIGHT),
        changed_query(SHOP_WEIGHT, "0"),
        first_query(SHOP_MIRROR),
        changed_query(SHOP_MIRROR, "0.1"),
    ]


def test_a_recorded_0_percent_mirror_that_held_passes():
    client = history(mirror_ratio="0", mirror_first=(AT - 600,))
    assert judge(stack(), client) == bake_line(
        "PASS", "held >= 10m", ">= 10m at 20%", "held for the whole 10m with 4,000 requests"
    )


# --- bake_criterion: a rung that did not hold ---------------------------------------------


def test_a_weight_changed_within_the_bake_window_fails_with_the_time_left():
    client = history(changed=(AT - 510,))
    assert judge(stack(), client) == bake_line(
        "FAIL",
        "held 7m 30s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 7m 30s; the bake time is 10m: 2m 30s left",
    )
    assert client.asked == [
        first_query(SHOP_WEIGHT),
        changed_query(SHOP_WEIGHT, "0.2"),
        first_query(SHOP_MIRROR),
    ]


def test_a_weight_first_recorded_within_the_bake_window_fails():
    client = history(first=(AT - 300,))
    assert judge(stack(), client) == bake_line(
        "FAIL",
        "held 5m 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 5m 0s; the bake time is 10m: 5m 0s left",
    )


def test_a_weight_other_at_the_last_sample_has_held_for_nothing():
    # One step after the last other value is later than the window end: held 0s, not less.
    client = history(changed=(AT - 20,))
    assert judge(stack(), client) == bake_line(
        "FAIL",
        "held 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 0s; the bake time is 10m: 10m 0s left",
    )


def test_with_rules_every_3m_the_rung_holds_from_the_sample_after_the_last_other_one():
    # The window's first step still sees a sample at another value from 12m ago; the next
    # sample, at the current rung, came one evaluation interval (3m) later: held 9m, not 11m.
    settings = stack(monitoring={"evaluationInterval": "3m"})
    client = history(first=(AT - 720,), changed=(AT - 720,))
    assert judge(settings, client) == bake_line(
        "FAIL",
        "held 9m 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 9m 0s; the bake time is 10m: 1m 0s left",
    )


def test_the_time_left_is_never_negative():
    # A missed evaluation: the first step of the window sees a sample at another value 14m
    # old (within Prometheus's 5m lookback). Held from 3m after it: 11m, nothing left, never
    # "-1m"; the rung did not hold the whole window, so the verdict stays FAIL.
    settings = stack(monitoring={"evaluationInterval": "3m"})
    client = history(first=(AT - 840,), changed=(AT - 840,))
    assert judge(settings, client) == bake_line(
        "FAIL",
        "held 11m 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 11m 0s; the bake time is 10m: 0s left",
    )


def test_a_mirror_changed_within_the_bake_window_fails_the_shadow_rung():
    client = history(
        ratio="0", mirror_ratio="0.1", mirror_first=(AT - 600,), mirror_changed=(AT - 180,)
    )
    settings = stack("0", mirrorPercent=10)
    assert judge(settings, client, step=(0, 5), mirror=10) == bake_line(
        "FAIL",
        "held 2m 0s",
        ">= 10m at 0% with 10% mirrored",
        "the recorded rung is 0% with 10% mirrored only for the last 2m 0s; the bake time is "
        "10m: 8m 0s left",
    )


def test_a_recorded_mirror_that_moved_fails_a_rung_without_mirror():
    # The weight held the whole window; the mirror went back to 0% four minutes ago.
    client = history(mirror_ratio="0", mirror_first=(AT - 600,), mirror_changed=(AT - 300,))
    assert judge(stack(), client) == bake_line(
        "FAIL",
        "held 4m 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 4m 0s; the bake time is 10m: 6m 0s left",
    )


def test_the_later_of_the_weight_and_mirror_since_counts():
    client = history(
        ratio="0",
        changed=(AT - 360,),
        mirror_ratio="0.1",
        mirror_first=(AT - 600,),
        mirror_changed=(AT - 540,),
    )
    settings = stack("0", mirrorPercent=10)
    assert judge(settings, client, step=(0, 5), mirror=10).ascend == "held 5m 0s"


def test_a_mirror_first_recorded_within_the_window_fails_though_the_weight_held():
    client = history(mirror_ratio="0", mirror_first=(AT - 300,))
    assert judge(stack(), client) == bake_line(
        "FAIL",
        "held 5m 0s",
        ">= 10m at 20%",
        "the recorded rung is 20% only for the last 5m 0s; the bake time is 10m: 5m 0s left",
    )


# --- bake_criterion: no data ----------------------------------------------------------------


def test_no_recorded_weight_in_the_bake_window_is_no_data():
    client = history(first=())
    assert judge(stack(), client) == bake_line(
        "NO_DATA", "-", ">= 10m at 20%", "no recorded weight in the 10m bake window"
    )
    assert client.asked == [first_query(SHOP_WEIGHT)]


def test_no_recorded_mirror_for_a_mirrored_rung_is_no_data():
    client = history(ratio="0", mirror_ratio="0.1", mirror_first=())
    settings = stack("0", mirrorPercent=10)
    assert judge(settings, client, step=(0, 5), mirror=10) == bake_line(
        "NO_DATA",
        "-",
        ">= 10m at 0% with 10% mirrored",
        "no recorded mirror in the 10m bake window",
    )


def test_a_stale_weight_series_is_no_data_though_it_held():
    client = history(newest=(AT - 660,))
    assert judge(stack(), client) == bake_line(
        "NO_DATA",
        "held >= 10m",
        ">= 10m at 20%",
        "recorded weight over the bake window: stale: newest sample 11m 0s before the window "
        "end (bound 5m 0s)",
    )


def test_a_sparse_weight_series_is_no_data():
    client = history(coverage=(8,))
    assert judge(stack(), client) == bake_line(
        "NO_DATA",
        "held >= 10m",
        ">= 10m at 20%",
        "recorded weight over the bake window: sparse: samples in 80% of the window (bound 90%)",
    )


def test_the_weight_series_is_judged_by_the_given_bounds():
    client = history(newest=(AT - 120,), coverage=(5,))
    bounds = DataBounds(max_staleness_s=60, min_coverage=0.5)
    assert judge(stack(), client, bounds=bounds).detail == (
        "recorded weight over the bake window: stale: newest sample 2m 0s before the window "
        "end (bound 1m 0s)"
    )
    client = history(newest=(AT - 120,), coverage=(5,))
    assert judge(stack(), client, bounds=DataBounds(120, 0.5)).status == "PASS"


@pytest.mark.parametrize(
    ("interval", "slot", "slots"),
    [("30s", "60s", 30), ("1m", "60s", 30), ("3m", "180s", 10), ("90500ms", "90s", 20)],
)
def test_the_weight_series_slots_are_the_evaluation_interval_but_at_least_60s(
    interval, slot, slots
):
    settings = stack(bakeTime="30m", monitoring={"evaluationInterval": interval})
    client = history(
        first=(AT - 1800,), window="1800s", slot=slot, subquery="1740s:60s", coverage=(slots,)
    )
    criterion = judge(settings, client)
    assert (criterion.status, criterion.ascend) == ("PASS", "held >= 30m")
    assert newest_query("1800s", slot) in client.asked
    assert coverage_query("1800s", slot) in client.asked


def test_coverage_counts_slots_of_the_evaluation_interval():
    # 8 of the 10 three-minute slots of 30m: 80%.
    settings = stack(bakeTime="30m", monitoring={"evaluationInterval": "3m"})
    client = history(
        first=(AT - 1800,), window="1800s", slot="180s", subquery="1740s:60s", coverage=(8,)
    )
    assert judge(settings, client).detail == (
        "recorded weight over the bake window: sparse: samples in 80% of the window (bound 90%)"
    )


# --- bake_criterion: requests in the bake window ------------------------------------------


def too_few(where, ascend, nvidia):
    return (
        f"too few requests {where} in the bake window to call it steady ({ascend} on Ascend, "
        f"{nvidia} on NVIDIA; at least 1,000)"
    )


@pytest.mark.parametrize(
    ("ascend", "nvidia", "detail"),
    [
        ((1000.0,), (0.0,), "held for the whole 10m with 1,000 requests"),
        ((1000.0,), (), "held for the whole 10m with 1,000 requests"),
        ((400.0, 600.0), (1000.0,), "held for the whole 10m with 2,000 requests"),
        ((1000.0,), (NAN,), "held for the whole 10m with 1,000 requests"),
        ((999.0,), (5000.0,), too_few("on Ascend", "999", "5,000")),
        ((400.0,), (600.0,), too_few("on Ascend", "400", "600")),
        ((500.0,), (400.0,), too_few("in all", "500", "400")),
        ((), (5000.0,), too_few("on Ascend", "0", "5,000")),
        ((NAN,), (5000.0,), too_few("on Ascend", "0", "5,000")),
        ((), (), too_few("in all", "0", "0")),
    ],
)
def test_a_rung_with_ascend_traffic_needs_the_minimum_on_ascend_and_in_all(ascend, nvidia, detail):
    criterion = judge(stack(), history(ascend=ascend, nvidia=nvidia))
    assert (criterion.status, criterion.ascend, criterion.detail) == (
        "PASS" if detail.startswith("held") else "FAIL",
        "held >= 10m",
        detail,
    )


@pytest.mark.parametrize(
    ("ascend", "nvidia", "detail"),
    [
        ((), (1000.0,), "held for the whole 10m with 1,000 requests"),
        ((NAN,), (1000.0,), "held for the whole 10m with 1,000 requests"),
        ((0.0,), (1000.0,), "held for the whole 10m with 1,000 requests"),
        ((), (999.0,), too_few("in all", "0", "999")),
        ((300.0,), (500.0,), too_few("in all", "300", "500")),
    ],
)
def test_weight_0_without_mirror_needs_the_minimum_in_all_only(ascend, nvidia, detail):
    client = history(ratio="0", ascend=ascend, nvidia=nvidia)
    criterion = judge(stack("0"), client, step=(0, 5))
    assert (criterion.status, criterion.detail) == (
        "PASS" if detail.startswith("held") else "FAIL",
        detail,
    )


def test_weight_1_sends_ascend_traffic():
    settings = stack("1", ladder="[0,1,5,20,50,80,100]")
    client = history(ratio="0.01", ascend=(10.0,), nvidia=(5000.0,))
    assert judge(settings, client, step=(1, 5)) == bake_line(
        "FAIL", "held >= 10m", ">= 10m at 1%", too_few("on Ascend", "10", "5,000")
    )


@pytest.mark.parametrize(("mirror", "ratio"), [(1, "0.01"), (10, "0.1")])
def test_a_mirror_sends_ascend_traffic_at_weight_0(mirror, ratio):
    client = history(
        ratio="0", mirror_ratio=ratio, mirror_first=(AT - 600,), ascend=(10.0,), nvidia=(5e3,)
    )
    settings = stack("0", mirrorPercent=mirror)
    assert judge(settings, client, step=(0, 5), mirror=mirror) == bake_line(
        "FAIL",
        "held >= 10m",
        f">= 10m at 0% with {mirror}% mirrored",
        too_few("on Ascend", "10", "5,000"),
    )
