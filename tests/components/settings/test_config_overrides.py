"""Partial structured keys, nested `--set`, secrets and malformed stack files."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.settings import SettingsError, load_settings
from components.settings.base import deep_merge
from dualstack.errors import UsageError
from dualstack.repo.stack_config import apply_overrides
from dualstack.repo.stackfile import StackFileError, read_config
from tests.conftest import cfg, find
from tests.dualstack.commands.test_cli import dualstack


def test_partial_pool_keeps_the_pools_name_and_labels() -> None:
    s = load_settings(cfg(ascendWeight="5", ascend={"pool": {"nodes": ["ascend-09"]}}))
    assert s.ascend.pool.nodes == ("ascend-09",)
    assert s.ascend.pool.name == "ascend"
    assert s.ascend.pool.labels["npu-model"] == "910B"
    assert s.nvidia.pool.nodes == ("nvidia-01", "nvidia-02", "nvidia-03")


def test_a_misspelt_nested_key_is_still_refused() -> None:
    with pytest.raises(SettingsError, match=r"^dualstack-inference:ascend\.pool\.nodez: unknown"):
        load_settings(cfg(ascendWeight="5", ascend={"pool": {"nodez": ["a"]}}))


def test_deep_merge_merges_mappings_and_replaces_lists() -> None:
    base = {"pool": {"name": "ascend", "nodes": ["a", "b"], "labels": {"x": "1"}}, "n": 1}
    over = {"pool": {"nodes": ["c"], "labels": {"y": "2"}}}
    assert deep_merge(base, over) == {
        "pool": {"name": "ascend", "nodes": ["c"], "labels": {"x": "1", "y": "2"}},
        "n": 1,
    }


def test_nested_set_decodes_json_and_merges() -> None:
    config = apply_overrides(
        cfg(ascendWeight="5", capacity={"headroom": 1.5}),
        ['ascend.pool.nodes=["ascend-01"]', "capacity.totalReplicas=6", "ascendWeight=20"],
    )
    assert config["dualstack-inference:ascend"] == {"pool": {"nodes": ["ascend-01"]}}
    assert config["dualstack-inference:capacity"] == {"headroom": 1.5, "totalReplicas": 6}
    s = load_settings(config)
    assert (s.ascend.pool.nodes, s.capacity.total_replicas, s.ascend_weight) == (
        ("ascend-01",),
        6,
        20,
    )


def test_malformed_json_in_set_is_one_line() -> None:
    with pytest.raises(UsageError, match=r"is not valid JSON"):
        apply_overrides({}, ["ascend.pool.nodes=[ascend-01"])


def test_cli_nested_set_renders_one_ascend_node(project_copy) -> None:
    nodes = 'ascend.pool.nodes=["ascend-01"]'
    done = dualstack("render", "--stack", "prod", "--set", nodes, cwd=project_copy)
    assert done.returncode == 0, done.stderr
    assert "name: ascend-01" in done.stdout and "name: ascend-02" not in done.stdout


def test_a_pool_given_without_a_name_keeps_the_default_name() -> None:
    s = load_settings(cfg(ascendWeight="5", nvidia={"pool": {"nodes": ["n-1"]}}))
    assert s.nvidia.pool.name == "nvidia"
    assert s.nvidia.pool.node_labels["gpu-model"] == "A100-80G"


def test_secure_values_are_named_not_misreported() -> None:
    with pytest.raises(SettingsError, match=r"ascendWeight: is an encrypted `secure:` value"):
        load_settings(cfg(ascendWeight={"secure": "AAABBB"}))


def test_malformed_stack_yaml_names_line_and_column(tmp_path: Path) -> None:
    (tmp_path / "Pulumi.bad.yaml").write_text(
        'config:\n  dualstack-inference:ascendWeight: "5"\n   extra: [\n'
    )
    with pytest.raises(StackFileError, match=r"^Pulumi\.bad\.yaml: not valid YAML: line 3, col"):
        read_config(tmp_path, "bad")


def test_startup_probe_covers_the_model_load(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5", probes={"startupTimeoutSeconds": 900}))
    container = find(objects, "Deployment", "inference-green")["spec"]["template"]["spec"][
        "containers"
    ][0]
    assert (
        container["startupProbe"]["failureThreshold"] * container["startupProbe"]["periodSeconds"]
        >= 900
    )
    assert container["livenessProbe"]["initialDelaySeconds"] == 0
    assert container["readinessProbe"]["initialDelaySeconds"] == 30


def test_gateways_bind_the_split_to_ingress_and_keep_mesh(render_objects) -> None:
    objects = render_objects(
        cfg(
            ascendWeight="20",
            istio={"gateways": ["istio-system/public"], "hosts": ["infer.example.com"]},
        )
    )
    spec = find(objects, "VirtualService", "inference-vs")["spec"]
    assert spec["gateways"] == ["istio-system/public", "mesh"]
    assert spec["hosts"] == ["inference-service.inference.svc.cluster.local", "infer.example.com"]
    assert [r["weight"] for r in spec["http"][-1]["route"]] == [80, 20]


def test_no_gateways_means_mesh_only(render_objects) -> None:
    spec = find(render_objects(cfg(ascendWeight="5")), "VirtualService", "inference-vs")["spec"]
    assert "gateways" not in spec


def test_names_that_are_not_dns_labels_say_what_is_allowed() -> None:
    with pytest.raises(
        SettingsError, match=r"^dualstack-inference:namespace = 'Prod_NS': not a DNS"
    ):
        load_settings(cfg(ascendWeight="5", namespace="Prod_NS"))


def test_an_empty_set_value_is_a_value_not_json() -> None:
    assert apply_overrides({}, ["namespace="]) == {"dualstack-inference:namespace": ""}
