"""rollback-capacity over hand-built StackValidationArgs."""

from __future__ import annotations

import pytest

from components.capacity import ascend_replicas
from policies.capacity import ascend_pods_needed
from tests.support.policy_objects import (
    HOST,
    NOT_APPLICABLE,
    find,
    good_stack,
    stack_reports,
    stack_violations,
    urn,
)


def capacity(objects, config=None):
    return stack_violations("rollback-capacity", objects, config)


@pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
def test_clean_stack_passes_at_every_step(weight):
    assert capacity(good_stack(weight)) == []


def test_nvidia_scaled_down_before_100_fails():
    stack = good_stack(50)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 2
    [message] = capacity(stack)
    assert "Deployment inference/inference-blue has 2 replicas while Ascend takes 50%" in message
    assert "totalReplicas=4" in message and "rollback" in message


def test_nvidia_may_not_shrink_at_80():
    """The last rung below 100 still needs all of NVIDIA (kills `least < 100` -> `< 80`)."""
    stack = good_stack(80)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 3
    [message] = capacity(stack)
    assert message.startswith(
        "Deployment inference/inference-blue has 3 replicas while Ascend takes 80%: NVIDIA must "
        "keep totalReplicas=4 pods"
    )


def test_nvidia_one_pod_short_fails():
    """One pod short of totalReplicas is short (kills `count < total` -> `< total - 1`)."""
    stack = good_stack(20)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 3
    [message] = capacity(stack)
    assert "inference-blue has 3 replicas while Ascend takes 20%" in message
    assert message.endswith("keep 4 replicas")


def test_nvidia_may_shrink_at_100():
    stack = good_stack(100)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
    assert capacity(stack) == []


def test_too_few_ascend_pods_for_the_share_fails():
    stack = good_stack(80, ascend_replicas=2)
    [message] = capacity(stack)
    assert "inference-green has 2 replicas for 80% of traffic" in message
    assert "needs at least 4" in message


def test_capacity_ratio_config_overrides_default():
    stack = good_stack(80, ascend_replicas=2)
    assert capacity(stack, {"ascendCapacityRatio": 2.0}) == []
    assert len(capacity(stack, {"ascendCapacityRatio": 1.5})) == 1  # ceil(3.2 / 1.5) = 3


def test_total_replicas_config_overrides_default():
    stack = good_stack(5)
    [message] = capacity(stack, {"totalReplicas": 6})
    assert "has 4 replicas" in message and "totalReplicas=6" in message
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 6
    assert capacity(stack, {"totalReplicas": 6}) == []


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"totalReplicas": 0}, "totalReplicas = 0.0 is not a positive integer"),
        ({"totalReplicas": 2.5}, "totalReplicas = 2.5 is not a positive integer"),
        ({"ascendCapacityRatio": "fast"}, "ascendCapacityRatio = 'fast' is not a positive number"),
        ({"ascendCapacityRatio": 0}, "ascendCapacityRatio = 0.0 is not a positive number"),
        ({"ascendCapacityRatio": True}, "ascendCapacityRatio = True is not a positive number"),
    ],
)
def test_bad_config_fails_closed(config, expected):
    assert capacity(good_stack(20), config) == [
        f"policy config {expected}; regenerate it with `dualstack policy-config`"
    ]


def test_one_total_replica_is_a_valid_fleet():
    stack = good_stack(0)
    find(stack, "Deployment", "nvidia")["spec"]["replicas"] = 1
    assert capacity(stack, {"totalReplicas": 1}) == []


@pytest.mark.parametrize(
    ("total", "weight", "ratio", "pods"),
    [
        (4, 20, 1.0, 1),  # 0.8 pods -> 1
        (101, 1, 1.0, 2),  # 1.01 pods: a started pod is a whole pod
        (100, 100, 1.0, 100),
        (10, 30, 0.3, 10),  # 10 * 30 / 100 / 0.3 is 10.000000000000002 in floats
        (100, 100, 1 - 1e-12, 100),  # noise below 1e-9 pods adds no pod
        (4, 80, 1.3, 3),  # 2.46 -> 3
    ],
)
def test_ascend_pods_needed(total, weight, ratio, pods):
    assert ascend_pods_needed(total, weight, ratio) == pods


def test_missing_replicas_means_one_pod():
    stack = good_stack(20)
    del find(stack, "Deployment", "nvidia")["spec"]["replicas"]
    [message] = capacity(stack)
    assert "has 1 replicas" in message


def test_missing_backend_fails_closed():
    stack = [
        o for o in good_stack(20) if o["metadata"].get("labels", {}).get("hardware") != "ascend"
    ]
    [message] = capacity(stack)
    assert message == (
        "cannot check the capacity: VirtualService inference/inference-vs route 'split' "
        f"destination {HOST} subset 'ascend': subset 'ascend' of {HOST} selects no pod of "
        "Service inference/inference-service (503 UH no_healthy_upstream); make the subset's "
        "labels match a pod template"
    )


def test_no_traffic_split_is_not_applicable():
    stack = [o for o in good_stack(20) if o["kind"] != "VirtualService"]
    assert capacity(stack) == NOT_APPLICABLE
    assert stack_reports("rollback-capacity", stack) == (
        "not applicable: no VirtualService or HTTPRoute routes traffic"
    )


def test_each_violation_is_reported_on_the_object_to_fix():
    """The shrunk NVIDIA Deployment, the short Ascend one, the route whose destination
    reaches no pod: each on its own URN, so the preview shows it beside that object."""
    shrunk = good_stack(50)
    nvidia = find(shrunk, "Deployment", "nvidia")
    nvidia["spec"]["replicas"] = 2
    [(_message, where)] = stack_reports("rollback-capacity", shrunk)
    assert where == urn(nvidia)
    short = good_stack(80, ascend_replicas=2)
    [(_message, where)] = stack_reports("rollback-capacity", short)
    assert where == urn(find(short, "Deployment", "ascend"))
    unreached = [
        o for o in good_stack(20) if o["metadata"].get("labels", {}).get("hardware") != "ascend"
    ]
    [(_message, where)] = stack_reports("rollback-capacity", unreached)
    assert where == urn(find(unreached, "VirtualService"))


def test_unreadable_nvidia_replicas_fail_closed():
    stack = good_stack(20)
    nvidia = find(stack, "Deployment", "nvidia")
    nvidia["spec"]["replicas"] = "many"
    assert stack_reports("rollback-capacity", stack) == [
        ("Deployment inference/inference-blue has replicas 'many', not an integer", urn(nvidia))
    ]


@pytest.mark.parametrize("weight", [0, 5, 20, 50, 80, 100])
@pytest.mark.parametrize("ratio", [0.5, 1.0, 1.3, 2.0])
def test_components_formula_always_satisfies_the_policy(weight, ratio):
    """The program's replica arithmetic (with headroom >= 1) never trips the policy."""
    assert ascend_replicas(4, weight, 1.2, ratio) >= ascend_pods_needed(4, weight, ratio)


def test_unreadable_ascend_replicas_fail_closed():
    stack = good_stack(20)
    ascend = find(stack, "Deployment", "ascend")
    ascend["spec"]["replicas"] = "two"
    assert stack_reports("rollback-capacity", stack) == [
        ("Deployment inference/inference-green has replicas 'two', not an integer", urn(ascend))
    ]
