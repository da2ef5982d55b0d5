"""Node patches and the atomic taint list: no force by default, extraTaints kept, forcePatch."""

from __future__ import annotations

import pytest

from components.settings import SettingsError, load_settings
from tests.conftest import cfg, find

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def _patches(run_stack, config: dict) -> dict[str, dict]:
    resources = run_stack(config)
    return {
        r.inputs["metadata"]["name"]: r.inputs
        for r in resources
        if r.type_ == "kubernetes:core/v1:NodePatch"
    }


def test_patches_are_not_forced_by_default(run_stack) -> None:
    patches = _patches(run_stack, cfg(ascendWeight="5"))
    assert len(patches) == 5
    for inputs in patches.values():
        assert "pulumi.com/patchForce" not in inputs["metadata"].get("annotations", {})


def test_force_patch_adds_the_annotation_to_that_pool_only(run_stack) -> None:
    config = cfg(ascendWeight="5", nvidia={"pool": {"forcePatch": True}})
    patches = _patches(run_stack, config)
    assert patches["nvidia-01"]["metadata"]["annotations"] == {"pulumi.com/patchForce": "true"}
    assert "annotations" not in patches["ascend-01"]["metadata"]


def test_extra_taints_follow_the_pool_taint(run_stack, render_objects) -> None:
    config = cfg(ascendWeight="5", nvidia={"pool": {"extraTaints": [GPU_TAINT]}})
    patches = _patches(run_stack, config)
    assert patches["nvidia-02"]["spec"]["taints"] == [
        {"key": "pool", "value": "nvidia", "effect": "NoSchedule"},
        GPU_TAINT,
    ]
    assert patches["ascend-02"]["spec"]["taints"] == [
        {"key": "pool", "value": "ascend", "effect": "NoSchedule"}
    ]
    node = find(render_objects(config), "Node", "nvidia-03")
    assert node["spec"]["taints"][1] == GPU_TAINT
    assert set(node) == {"apiVersion", "kind", "metadata", "spec"}
    assert set(node["metadata"]) == {"name", "labels"}


@pytest.mark.parametrize(
    ("taint", "message"),
    [
        (
            {"key": "pool", "value": "x", "effect": "NoSchedule"},
            r"^dualstack-inference:nvidia.pool.extraTaints = .*pool:NoSchedule is given twice",
        ),
        (
            {"key": "gpu", "effect": "Sometimes"},
            r"^dualstack-inference:nvidia.pool.extraTaints.0.effect = 'Sometimes'",
        ),
        (
            {"key": "bad key!", "effect": "NoSchedule"},
            r"^dualstack-inference:nvidia.pool.extraTaints.0.key = 'bad key!'",
        ),
    ],
)
def test_bad_extra_taint_gives_one_line(taint: dict, message: str) -> None:
    with pytest.raises(SettingsError, match=message) as caught:
        load_settings(cfg(ascendWeight="5", nvidia={"pool": {"extraTaints": [taint]}}))
    assert len(str(caught.value).splitlines()) == 1
