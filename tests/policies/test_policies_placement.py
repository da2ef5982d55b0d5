"""accelerator-placement over hand-built ResourceValidationArgs."""

from __future__ import annotations

import pytest

from policies.placement import requested_accelerators, tolerates
from tests.support.policy_objects import (
    ASCEND_IMAGE,
    NVIDIA_IMAGE,
    deployment,
    good_stack,
    resource_violations,
)


def placement(obj, config=None):
    return resource_violations("accelerator-placement", [obj], config)


def pod(obj):
    return obj["spec"]["template"]["spec"]


def test_clean_stack_passes():
    assert resource_violations("accelerator-placement", good_stack(20)) == []


def test_gpu_pod_without_pool_selector_fails():
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    pod(nvidia)["nodeSelector"] = {}
    unpinned, stray = placement(nvidia)
    assert "inference-blue requests nvidia.com/gpu" in unpinned
    assert "nodeSelector pool=None does not pin it to pool 'nvidia'" in unpinned
    assert "tolerates the taint of pool 'nvidia'" in stray


def test_gpu_pod_on_the_ascend_pool_fails_twice():
    nvidia = deployment("nvidia", 4, NVIDIA_IMAGE)
    pod(nvidia)["nodeSelector"] = {"pool": "ascend"}
    found = placement(nvidia)
    assert any("does not pin it to pool 'nvidia'" in m for m in found)
    assert any("tolerates the taint of pool 'nvidia'" in m for m in found)


def test_missing_toleration_fails():
    ascend = deployment("ascend", 1, ASCEND_IMAGE)
    del pod(ascend)["tolerations"]
    [message] = placement(ascend)
    assert "does not tolerate its pool's taint pool=ascend:NoSchedule" in message


def test_requesting_both_accelerators_fails():
    mixed = deployment("nvidia", 1, NVIDIA_IMAGE)
    pod(mixed)["containers"][0]["resources"]["limits"]["huawei.com/Ascend910"] = "1"
    assert placement(mixed) == [
        "Deployment inference/inference-blue requests huawei.com/Ascend910 and nvidia.com/gpu: "
        "a pod may use one accelerator kind only; split it into one workload per pool"
    ]


def test_zero_quantity_is_not_a_request():
    nvidia = deployment("nvidia", 1, NVIDIA_IMAGE)
    pod(nvidia)["containers"][0]["resources"]["limits"]["huawei.com/Ascend910"] = "0"
    assert placement(nvidia) == []


@pytest.mark.parametrize(
    ("quantity", "requested"),
    [
        (0, False),
        (0.0, False),
        ("0", False),
        (1, True),
        (0.5, True),
        ("2", True),
        ("abc", True),  # unreadable: counted as requested (fail closed)
        (False, True),  # a flag is no quantity: unreadable too
    ],
)
def test_what_counts_as_a_request(quantity, requested):
    spec = {"containers": [{"resources": {"limits": {"huawei.com/Ascend910": quantity}}}]}
    expected = {"huawei.com/Ascend910"} if requested else set()
    assert requested_accelerators(spec, {"huawei.com/Ascend910": "ascend"}) == expected


def test_a_request_without_a_limit_counts():
    spec = {"containers": [{"resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
    pools = {"nvidia.com/gpu": "nvidia", "huawei.com/Ascend910": "ascend"}
    assert requested_accelerators(spec, pools) == {"nvidia.com/gpu"}


@pytest.mark.parametrize(
    "toleration",
    [
        {"key": "pool", "operator": "Exists"},
        {"operator": "Exists"},
        {"key": "pool", "value": "ascend"},
    ],
)
def test_tolerating_another_pool_fails(toleration):
    nvidia = deployment("nvidia", 1, NVIDIA_IMAGE)
    pod(nvidia)["tolerations"].append(toleration)
    [message] = placement(nvidia)
    assert "tolerates the taint of pool 'ascend'" in message


def test_plain_pod_tolerating_a_pool_fails():
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "precision-check", "namespace": "inference"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [{"name": "check", "image": "python:3.11"}],
                    "tolerations": [{"key": "pool", "value": "nvidia", "effect": "NoSchedule"}],
                }
            }
        },
    }
    [message] = placement(job)
    assert "Job inference/precision-check tolerates the taint of pool 'nvidia'" in message


def test_missing_properties_are_no_violation():
    bare = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}}
    assert placement(bare) == []


def test_a_pod_pinned_to_a_pool_must_request_its_accelerator():
    """A resource the pool's nodes do not offer (a wrong `acceleratorResource`) keeps the pods
    Pending, and `pool-capacity` would not count them."""
    nvidia = deployment("nvidia", 1, NVIDIA_IMAGE)
    del pod(nvidia)["containers"][0]["resources"]
    [message] = placement(nvidia)
    assert message == (
        "Deployment inference/inference-blue selects pool 'nvidia' but requests none of its "
        "accelerators (nvidia.com/gpu); request them, or do not pin the pod to the pool"
    )
    two = {
        "acceleratorPools": {
            "nvidia.com/mig-1g.10gb": "nvidia",
            "nvidia.com/gpu": "nvidia",
            "huawei.com/Ascend910": "ascend",
        }
    }
    assert placement(nvidia, two) == [
        "Deployment inference/inference-blue selects pool 'nvidia' but requests none of its "
        "accelerators (nvidia.com/gpu, nvidia.com/mig-1g.10gb); request them, or do not pin the "
        "pod to the pool"
    ]
    unpinned = deployment("nvidia", 1, NVIDIA_IMAGE)
    del pod(unpinned)["containers"][0]["resources"]
    del pod(unpinned)["nodeSelector"]
    pod(unpinned)["tolerations"] = []
    assert placement(unpinned) == []


def test_config_overrides_pools_and_label():
    nvidia = deployment("nvidia", 1, NVIDIA_IMAGE)
    pod(nvidia)["nodeSelector"] = {"accelerator-pool": "a100"}
    pod(nvidia)["tolerations"] = [
        {"key": "accelerator-pool", "value": "a100", "effect": "NoSchedule"}
    ]
    config = {"acceleratorPools": {"nvidia.com/gpu": "a100"}, "poolLabel": "accelerator-pool"}
    assert placement(nvidia, config) == []
    assert len(placement(nvidia)) == 2  # default label `pool`: neither selected nor tolerated


@pytest.mark.parametrize(
    "pools", [["gpu"], {}, {"nvidia.com/gpu": ""}, {"nvidia.com/gpu": True}, "nvidia"]
)
def test_bad_pools_config_fails_closed(pools):
    """A list, an empty map, an empty or non-string pool name: refused, naming the key."""
    assert placement(deployment("nvidia", 1, NVIDIA_IMAGE), {"acceleratorPools": pools}) == [
        f"policy config acceleratorPools = {pools!r} must map resources to pool names, "
        'e.g. {"nvidia.com/gpu": "nvidia"}; regenerate it with `dualstack policy-config`'
    ]


@pytest.mark.parametrize(
    ("toleration", "expected"),
    [
        ({"key": "pool", "operator": "Equal", "value": "nvidia", "effect": "NoSchedule"}, True),
        ({"key": "pool", "value": "nvidia"}, True),
        ({"key": "pool", "value": "nvidia", "effect": "NoExecute"}, False),
        ({"key": "pool", "value": "ascend"}, False),
        ({"key": "pool", "operator": "Exists"}, True),
        ({"operator": "Exists"}, True),
        ({"key": "other", "operator": "Exists"}, False),
        ({"key": "pool", "value": "nvidia", "effect": ""}, True),  # empty: every effect
        ({"key": "pool", "value": "nvidia", "effect": "PreferNoSchedule"}, False),
        ({"operator": "Equal"}, False),  # no key: only Exists matches every taint
        ({"key": "pool", "operator": "Equal"}, False),  # Equal without a value: value ""
    ],
)
def test_toleration_matching(toleration, expected):
    assert tolerates(toleration, "pool", "nvidia") is expected
