"""Rollback is never blocked: `pool-capacity` counts the rollout surge only when a pod template
changes, so moving the weight back onto an NVIDIA pool shrunk while Ascend served 100% passes.

Stacks come from fixture configs (a git repo written here, never the committed stack files):
the NVIDIA pool is one node of 4 GPUs, room for the 4 NVIDIA pods a rollback brings back and no
surge pod. Measured on main: 100 -> 80 and 100 -> 0 both failed `pool-capacity` (4 replicas +
maxSurge 1 = 5 GPUs).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dualstack.offline.policy_config import template_facts
from dualstack.offline.policy_run import PolicyResult, blocking, run_policies
from dualstack.offline.render import render
from dualstack.repo.stackfile import set_config_values
from tests.conftest import cfg
from tests.support.migration_helpers import _identity, dualstack, weight  # noqa: F401
from tests.support.pack_config import single_pack_config

VERIFIED = "registry/inference-service:v1.2.3-npu"
SHRUNK_POOL = {"name": "nvidia", "nodes": ["nvidia-01"], "acceleratorsPerNode": 4}
NEW_IMAGES = {
    "nvidia": {"image": "registry/inference-service:v1.2.4-cuda", "pool": SHRUNK_POOL},
    "ascend": {"image": "registry/inference-service:v1.2.4-npu"},
}


def shrunk(weight: int, **keys: Any) -> dict[str, Any]:
    """A fixture prod config at `weight` with the shrunk NVIDIA pool."""
    return cfg(
        ascendWeight=str(weight),
        verifiedAscendImage=VERIFIED,
        **({"nvidia": {"pool": SHRUNK_POOL}} | keys),
    )


def judged(head: dict[str, Any], base: dict[str, Any], with_templates: bool = True):
    """The pack over the head, judged as `dualstack preview --base` judges it."""
    head_settings, head_objects = render(head, "prod")
    base_settings, base_objects = render(base, "prod")
    config = single_pack_config(
        head_settings,
        base_settings.ascend_weight,
        base_settings,
        base_objects if with_templates else None,
        envelope=(),  # head and base differ in the weight only
    )
    return run_policies(head_objects, config, "prod")


def failing(results: list[PolicyResult]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for result in blocking(results):
        found.setdefault(result.policy, []).append(result.message)
    return found


@pytest.mark.parametrize("weight", [80, 0])
def test_a_rollback_from_100_onto_the_shrunk_pool_passes(weight):
    assert failing(judged(shrunk(weight), shrunk(100))) == {}


def test_without_the_base_s_templates_the_surge_counts():
    """Unknown templates (no base objects): conservative, the surge is counted."""
    [message] = failing(judged(shrunk(80), shrunk(100), with_templates=False))["pool-capacity"]
    assert message.startswith(
        "pool 'nvidia' is too small: a rollout takes up to 5 nvidia.com/gpu (Deployment "
        "inference/inference-blue: (4 replicas + maxSurge 1) x 1) but the pool has 4 (1 nodes "
        "x 4 acceleratorsPerNode)"
    )


def test_an_image_change_with_the_shrunk_pool_still_counts_the_surge():
    """A new image is a new pod template: a real rollout, which needs the surge pod."""
    found = failing(judged(cfg(ascendWeight="80", **NEW_IMAGES), shrunk(100)))
    [message] = found["pool-capacity"]
    assert "takes up to 5 nvidia.com/gpu" in message
    assert "inference-blue: (4 replicas + maxSurge 1) x 1" in message


def test_the_facts_name_each_deployment_once():
    _settings, objects = render(shrunk(100), "prod")
    facts = template_facts(objects)
    assert sorted(facts) == ["inference-blue", "inference-green"]
    assert all(len(digest) == 64 for digest in facts.values())
    # the same name in another namespace: which template is meant is unknown, so it surges
    twin = {"kind": "Deployment", "metadata": {"name": "inference-blue", "namespace": "other"}}
    assert sorted(template_facts([*objects, twin])) == ["inference-green"]


@pytest.fixture
def shrunk_repo(stack_repo) -> Path:
    """A git repo whose main holds prod at 100% on the shrunk NVIDIA pool (fixture file)."""
    return stack_repo(
        100,
        "dualstack-inference:nvidia:",
        "  pool: {name: nvidia, nodes: [nvidia-01], acceleratorsPerNode: 4}",
    )


def test_preview_of_the_rollback_pr_passes(shrunk_repo, capsys):
    set_config_values(shrunk_repo, "prod", {"ascendWeight": 80})
    code = dualstack(shrunk_repo, "preview", "--stack", "prod", "--base", "main")
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Ascend weight: 100% -> 80%" in out
    assert "  ok   pool-capacity [mandatory]" in out


def test_the_emergency_rollback_command_is_not_blocked(shrunk_repo, capsys):
    assert dualstack(shrunk_repo, "rollback", "--stack", "prod") == 0, capsys.readouterr().err
    assert weight(shrunk_repo) == "0"
