"""Replica arithmetic across the whole ladder (pure functions, no Pulumi)."""

from __future__ import annotations

import math

import pytest

from components.capacity import ascend_replicas, nvidia_replicas
from components.settings import load_settings
from components.traffic import route_weights
from components.workloads import replicas_for
from tests.conftest import cfg

LADDER = (0, 5, 20, 50, 80, 100)


@pytest.mark.parametrize(
    "weight, expected",
    # total 4, headroom 1.2, ratio 1.0: ceil(4 * w/100 * 1.2); 1 at 0 (no traffic), at least
    # 2 while Ascend takes traffic (a drain must leave a ready pod): 0.24 and 0.96 round up to 2
    [(0, 1), (5, 2), (20, 2), (50, 3), (80, 4), (100, 5)],
)
def test_ascend_replicas_on_the_default_ladder(weight: int, expected: int) -> None:
    assert ascend_replicas(4, weight, 1.2, 1.0) == expected


def test_slower_ascend_pods_need_more_replicas() -> None:
    # one 910B pod serving 0.8 of an A100 pod: ceil(4 * 0.5 * 1.2 / 0.8) = 3
    assert ascend_replicas(4, 50, 1.2, 0.8) == 3
    assert ascend_replicas(4, 100, 1.2, 0.8) == 6


def test_float_noise_does_not_add_a_pod() -> None:
    # 2 * 0.8 * 1.5 / 0.8 is 3.0000000000000004 in floating point
    assert ascend_replicas(2, 80, 1.5, 0.8) == 3


@pytest.mark.parametrize("weight", LADDER[1:])
def test_a_serving_ascend_backend_has_two_pods(weight: int) -> None:
    for total in (1, 2, 4):
        assert ascend_replicas(total, weight, 1.0, 1.0) >= 2


def test_a_serving_nvidia_backend_has_two_pods_even_for_one_replica_of_traffic() -> None:
    assert [nvidia_replicas(1, weight, 1) for weight in LADDER] == [2, 2, 2, 2, 2, 1]


@pytest.mark.parametrize("weight", LADDER)
def test_ascend_always_covers_its_share(weight: int) -> None:
    for total in (1, 2, 4, 10):
        assert ascend_replicas(total, weight, 1.0, 1.0) >= math.ceil(total * weight / 100)


@pytest.mark.parametrize("weight", LADDER[:-1])
def test_nvidia_stays_sized_for_all_traffic_until_100(weight: int) -> None:
    assert nvidia_replicas(4, weight, 1) == 4


def test_nvidia_retires_only_at_100() -> None:
    assert nvidia_replicas(4, 100, 1) == 1
    assert nvidia_replicas(4, 100, 0) == 0


@pytest.mark.parametrize("weight", [-1, 101])
def test_weight_outside_range_is_refused(weight: int) -> None:
    with pytest.raises(ValueError, match=r"outside 0\.\.100"):
        ascend_replicas(4, weight, 1.2, 1.0)
    with pytest.raises(ValueError, match=r"outside 0\.\.100"):
        nvidia_replicas(4, weight, 1)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((0, 20, 1.2, 1.0), "total_replicas 0 is below 1"),
        ((4, 20, 0, 1.0), "headroom 0 is not above 0"),
        ((4, 20, -1.2, 1.0), "headroom -1.2 is not above 0"),
        ((4, 20, 1.2, 0), "ascend_capacity_ratio 0 is not above 0"),
        ((4, 101, 0, 0), "weight 101 is outside 0..100"),  # the weight is named first
    ],
)
def test_bad_arguments_are_refused_by_name(arguments, message):
    with pytest.raises(ValueError) as refused:
        ascend_replicas(*arguments)
    assert str(refused.value) == message


def test_nvidia_replicas_refuses_no_total_and_accepts_one():
    with pytest.raises(ValueError) as refused:
        nvidia_replicas(0, 20, 1)
    assert str(refused.value) == "total_replicas 0 is below 1"
    assert nvidia_replicas(1, 20, 1) == 2
    assert ascend_replicas(1, 20, 0.1, 0.1) == 2


@pytest.mark.parametrize(
    ("total", "weight", "headroom", "ratio", "pods"),
    [
        (301, 1, 1.0, 1.0, 4),  # 3.01 pods: a started pod is a whole pod
        (100, 100, 1.0, 1 - 1e-12, 100),  # noise below 1e-9 pods adds no pod
        (4, 20, 1.25, 1.0, 2),  # 4 * 0.2 * 1.25 is 1.0000000000000002 in floats
        (10, 50, 1.2, 0.5, 12),
    ],
)
def test_ascend_replicas_round_up_whole_pods(total, weight, headroom, ratio, pods):
    assert ascend_replicas(total, weight, headroom, ratio) == pods


@pytest.mark.parametrize(
    ("weight", "expected"),
    [(0, {"nvidia": 100, "ascend": 0}), (20, {"nvidia": 80, "ascend": 20}),
     (100, {"nvidia": 0, "ascend": 100})],
)  # fmt: skip
def test_route_weights_split_100_between_the_backends(weight, expected):
    assert route_weights(weight) == expected


@pytest.mark.parametrize(
    ("weight", "message"),
    [(-1, "ascend weight -1 is outside 0..100"), (101, "ascend weight 101 is outside 0..100"),
     (True, "ascend weight must be an integer, got True"),
     (20.0, "ascend weight must be an integer, got 20.0")],
)  # fmt: skip
def test_route_weights_refuse_what_is_not_a_weight(weight, message):
    with pytest.raises(ValueError) as caught:
        route_weights(weight)
    assert str(caught.value) == message


@pytest.mark.parametrize("hardware", ["NVIDIA", "gpu", "", None])
def test_replicas_for_refuses_a_hardware_it_does_not_know(hardware) -> None:
    """A misspelt backend is an error, never NVIDIA's pod count by default."""
    settings = load_settings(cfg(ascendWeight="20"))
    assert (replicas_for(settings, "nvidia"), replicas_for(settings, "ascend")) == (4, 2)
    with pytest.raises(ValueError) as refused:
        replicas_for(settings, hardware)
    assert str(refused.value) == f"hardware {hardware!r} is not nvidia or ascend"
