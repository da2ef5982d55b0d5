"""Did the split land? `dualstack.gate.split` on given request counts and rungs, and
`request_counts` against a real Prometheus over an hour of recorded request rates.

The counts are what `request_counts` reads (requests per backend in the window); the rung is
the recorded one (`dualstack.gate.rung.Rung`). With the default SLO the tolerance is
max(2 points, 25% of the expected share) and at least 100 requests in all are needed.
"""

from __future__ import annotations

import pytest

from components.monitoring.metric_names import REQUEST_RATE
from components.settings import PROJECT, load_settings
from dualstack.gate.data import DEFAULT_BOUNDS
from dualstack.gate.prometheus import PrometheusClient
from dualstack.gate.readings import Reading
from dualstack.gate.rung import Rung
from dualstack.gate.split import expected_share, request_counts, split_criterion, tolerance
from tests.support.prometheus_server import Series, constant, prometheus_over

END = 1_700_200_020  # a whole minute
WINDOW = 30 * 60


def settings(**keys: str):
    return load_settings({f"{PROJECT}:{k}": v for k, v in {"ascendWeight": "20", **keys}.items()})


def counts(ascend: float | None, nvidia: float | None, problem: str = "no series"):
    def reading(value):
        return Reading(value) if value is not None else Reading(None, problem)

    return {"ascend": reading(ascend), "nvidia": reading(nvidia)}


AT_20 = Rung(20, 0, recorded=True)


def judged(ascend, nvidia, rung=AT_20, problem="no series", **keys):
    """(status, Ascend cell, NVIDIA cell, threshold, detail) of the split criterion."""
    c = split_criterion(settings(**keys), rung, counts(ascend, nvidia, problem))
    assert (c.key, c.title) == ("split", "Split landed")
    return c.status, c.ascend, c.nvidia, c.threshold, c.detail


@pytest.mark.parametrize(
    ("weight", "mirror", "share"),
    [(20, 0, 0.2), (1, 0, 0.01), (100, 0, 1.0), (0, 10, 10 / 110), (0, 100, 0.5), (0, 0, 0.0)],
)
def test_the_expected_share_is_the_weight_or_the_mirrored_copies_share(weight, mirror, share):
    assert expected_share(weight, mirror) == pytest.approx(share, abs=1e-15)


@pytest.mark.parametrize(
    ("expected", "points", "relative", "allowed"),
    [(0.2, 2.0, 0.25, 0.05), (0.05, 2.0, 0.25, 0.02), (0.0, 2.0, 0.25, 0.02), (0.5, 0, 0.1, 0.05)],
)
def test_the_tolerance_is_the_larger_of_points_and_relative(expected, points, relative, allowed):
    assert tolerance(expected, points, relative) == pytest.approx(allowed, abs=1e-15)


def test_a_split_at_the_edge_of_the_tolerance_passes_and_just_beyond_fails():
    # 20% expected, +/- 5 points: 25% passes, 25.1% does not.
    assert judged(250, 750)[:4] == ("PASS", "25.00%", "75.00%", "20.00% +/- 5.00 pp")
    assert judged(150, 850)[0] == "PASS"
    assert judged(251, 749)[0] == "FAIL"
    assert judged(149, 851)[0] == "FAIL"


def test_a_failed_split_names_observed_expected_and_the_tolerance():
    assert judged(0, 1000) == (
        "FAIL",
        "0.00%",
        "100.00%",
        "20.00% +/- 5.00 pp",
        "observed 0.00% of requests on Ascend, expected 20.00% at the recorded rung 20% "
        "(+/- 5.00 pp): the configured split did not land; check that the route object was "
        "applied and accepted (its status), and for clients bypassing the mesh",
    )


def test_a_rung_nothing_recorded_is_the_stack_files():
    assert judged(200, 800, Rung(20, 0, recorded=False))[4] == (
        "observed 20.00% of requests on Ascend, expected 20.00% at 20% per the stack file"
    )


def test_all_requests_on_one_side_is_a_share_not_missing_data():
    assert judged(0, 500, Rung(0, 0, recorded=True), ascendWeight="0")[:4] == (
        "PASS",
        "0.00%",
        "100.00%",
        "0.00% +/- 2.00 pp",
    )
    assert judged(500, 0, Rung(100, 0, recorded=True), ascendWeight="100")[:4] == (
        "PASS",
        "100.00%",
        "0.00%",
        "100.00% +/- 25.00 pp",
    )


def test_exactly_the_minimum_requests_is_enough_and_one_fewer_is_no_data():
    assert judged(20, 80)[0] == "PASS"
    assert judged(20, 79) == (
        "NO_DATA",
        "no data",
        "no data",
        "20.00% +/- 5.00 pp",
        "99 requests in the window; measuring the split needs at least 100 (slo.minRequests)",
    )
    assert judged(2_000, 8_000, **{"slo": '{"minRequests": 10001}'})[4] == (
        "10,000 requests in the window; measuring the split needs at least 10,001 (slo.minRequests)"
    )


def test_a_negative_count_is_no_data_and_counts_as_zero():
    assert judged(-5, 500)[:2] == ("NO_DATA", "no data")
    assert judged(-5, 50)[4].startswith("50 requests in the window")
    assert judged(50, -5)[4].startswith("50 requests in the window")
    assert judged(500, -5)[0] == "NO_DATA"


def test_an_absent_ascend_series_is_zero_requests_when_nvidia_has_one():
    assert judged(None, 1000)[:3] == ("FAIL", "0.00%", "100.00%")


def test_a_stale_ascend_series_is_no_data_not_zero():
    assert judged(None, 1000, problem="stale: newest sample 11m 0s before the window end")[::4] == (
        "NO_DATA",
        "Ascend: stale: newest sample 11m 0s before the window end",
    )


def test_missing_series_on_both_sides_name_both():
    assert judged(None, None)[::4] == ("NO_DATA", "Ascend: no series; NVIDIA: no series")
    assert judged(1000, None)[::4] == ("NO_DATA", "NVIDIA: no series")


def test_a_rung_that_changed_inside_the_window_is_no_data_whatever_the_counts():
    rung = Rung(20, 0, recorded=True, changed="the recorded weight moved between 5% and 20%")
    assert judged(200, 800, rung) == (
        "NO_DATA",
        "no data",
        "no data",
        "20.00% +/- 5.00 pp",
        "the recorded weight moved between 5% and 20% inside the window: the data mixes two "
        "rungs; judge a window that starts after the change",
    )


def test_the_shadow_rung_expects_the_mirrored_copies_share():
    rung = Rung(0, 10, recorded=True)
    found = judged(100, 1000, rung, ascendWeight="0", mirrorPercent="10")
    assert found == (
        "PASS",
        "9.09%",
        "90.91%",
        "9.09% +/- 2.27 pp",
        "observed 9.09% of requests on Ascend, expected 9.09% at the recorded rung 0% with 10% "
        "mirrored",
    )


def test_the_tolerance_settings_widen_the_split():
    keys = {"slo": '{"splitTolerancePoints": 10, "splitToleranceRelative": 0.6}'}
    assert judged(290, 710, **keys)[::3] == ("PASS", "20.00% +/- 12.00 pp")
    keys = {"slo": '{"splitTolerancePoints": 10, "splitToleranceRelative": 0.1}'}
    assert judged(290, 710, **keys)[::3] == ("PASS", "20.00% +/- 10.00 pp")
    assert judged(310, 690, **keys)[::3] == ("FAIL", "20.00% +/- 10.00 pp")


def rate(
    namespace: str, hardware: str, value: float, step: float = 60, until: float = END, **labels
):
    labels = {"hardware": hardware, "namespace": namespace, **labels}
    return Series(REQUEST_RATE, labels, constant(value, END - 3600, until, step))


HISTORY = [
    rate("steady", "ascend", 2.0),
    rate("steady", "nvidia", 8.0),
    rate("pods", "ascend", 1.0, pod="a"),
    rate("pods", "ascend", 1.5, pod="b"),
    rate("pods", "nvidia", 8.0),
    rate("slow-rules", "ascend", 2.0, step=180),
    rate("slow-rules", "nvidia", 8.0, step=180),
    rate("stale", "ascend", 2.0, until=END - 20 * 60),
    rate("stale", "nvidia", 8.0),
    rate("sparse", "ascend", 2.0),
    rate("sparse", "nvidia", 8.0, step=300),
    rate("absent", "nvidia", 8.0),
]


@pytest.fixture(scope="module")
def client(tmp_path_factory) -> PrometheusClient:
    with prometheus_over(HISTORY, tmp_path_factory.mktemp("prometheus")) as url:
        yield PrometheusClient(url)


def requests_in_window(client: PrometheusClient, namespace: str, **keys: str):
    found = request_counts(
        settings(namespace=namespace, **keys), client, WINDOW, END, DEFAULT_BOUNDS
    )
    return found["ascend"], found["nvidia"]


def test_request_counts_are_the_requests_each_backend_served_in_the_window(client):
    # 30 one-minute samples of the rate x 60 s: 2 req/s is 3,600 requests in 30 minutes.
    assert requests_in_window(client, "steady") == (Reading(3600.0), Reading(14400.0))


def test_request_counts_add_up_the_series_of_one_backend(client):
    assert requests_in_window(client, "pods") == (Reading(4500.0), Reading(14400.0))


def test_a_rule_group_slower_than_a_minute_is_not_sparse(client):
    monitoring = '{"evaluationInterval": "3m"}'
    assert requests_in_window(client, "slow-rules", monitoring=monitoring) == (
        Reading(3600.0),
        Reading(14400.0),
    )
    # Judged by one-minute slots, a sample every 3 minutes fills 21 of 30 (Prometheus 2.x
    # ranges include both ends, so one sample reaches two slots).
    assert requests_in_window(client, "slow-rules") == (
        Reading(None, "sparse: samples in 70% of the window (bound 90%)"),
        Reading(None, "sparse: samples in 70% of the window (bound 90%)"),
    )


def test_a_stale_or_sparse_request_series_is_no_data(client):
    assert requests_in_window(client, "stale") == (
        Reading(None, "stale: newest sample 20m 0s before the window end (bound 5m 0s)"),
        Reading(14400.0),
    )
    assert requests_in_window(client, "sparse") == (
        Reading(3600.0),
        Reading(None, "sparse: samples in 43% of the window (bound 90%)"),  # 13 of 30 slots
    )


def test_a_backend_without_a_request_series_has_none(client):
    assert requests_in_window(client, "absent") == (Reading(None, "no series"), Reading(14400.0))
