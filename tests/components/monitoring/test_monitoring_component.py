"""The UnifiedMonitoring component under Pulumi mocks, the objects it renders, their schemas,
and `dualstack render --stack prod` feeding promtool's lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from components.monitoring.prometheus_rule import rule_file
from dualstack.offline.schemas import object_errors, validate_objects
from tests.conftest import SHARED, cfg, find
from tests.dualstack.commands.test_cli import dualstack
from tests.support.monitoring_support import run_promtool

RULE = "inference-service-dualstack"
BOARD = "inference-service-dualstack-dashboard-inference"


def names(objects):
    return {(o["kind"], o["metadata"]["name"]) for o in objects}


def test_stack_renders_the_rule_and_the_dashboard(render_objects) -> None:
    config = cfg(ascendWeight="20")
    objects = render_objects(config)

    rule = find(objects, "PrometheusRule", RULE)
    assert rule["apiVersion"] == "monitoring.coreos.com/v1"
    assert rule["metadata"]["namespace"] == "inference"
    assert rule["metadata"]["labels"] == {"app": "inference-service"}
    groups = rule["spec"]["groups"]
    assert [(g["name"], g["interval"]) for g in groups] == [
        ("dualstack.inference.requests", "30s"),
        ("dualstack.inference.accelerators", "30s"),
        ("dualstack.inference.usage", "5m"),
        ("dualstack.inference.alerts", "30s"),
    ]
    recorded = {(r["record"], r["labels"]["hardware"]): r["expr"] for r in groups[0]["rules"]}
    assert recorded[("hardware:inference_requests:rate5m", "ascend")] == (
        'sum(rate(istio_requests_total{reporter="destination", '
        'destination_workload_namespace="inference", destination_workload="inference-green"}[5m]))'
    )
    assert (
        'destination_workload="inference-blue"'
        in recorded[("hardware:inference_requests:rate5m", "nvidia")]
    )
    assert recorded[("namespace:inference_ascend_weight:ratio", "ascend")] == "vector(0.2)"
    assert [a["alert"] for a in groups[3]["rules"]] == [
        "AscendErrorRatioAboveNvidia",
        "AscendLatencyAboveNvidia",
        "AscendPrecisionCheckFailed",
        "AscendNoTraffic",
        "NpuChipUnhealthy",
    ]

    board = find(objects, "ConfigMap", BOARD)
    assert board["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert board["metadata"]["namespace"] == "inference"
    shown = json.loads(board["data"]["dualstack-inference.json"])
    assert shown["uid"] == "dualstack-inference"
    assert shown["title"] == "Dual-stack inference: inference-service (inference)"
    assert [p["title"] for p in shown["panels"]][:5] == [
        "Migration",
        "Ascend share of requests vs configured weight",
        "Error ratio (5xx / all)",
        "Latency p99 and p50",
        "Request rate",
    ]
    validate_objects(objects)


def test_component_is_a_child_of_the_stack(run_stack) -> None:
    resources = run_stack(cfg(ascendWeight="5"))
    components = {r.type_: r.name for r in resources if not r.custom}
    assert components["dualstack:index:UnifiedMonitoring"] == "inference-monitoring"


def test_rule_labels_folder_and_dashboard_namespace(render_objects) -> None:
    objects = render_objects(
        cfg(
            ascendWeight="5",
            monitoring={
                "ruleLabels": {"release": "kube-prometheus-stack"},
                "dashboard": {"namespace": "monitoring", "folder": "Migration"},
            },
        )
    )
    assert find(objects, "PrometheusRule", RULE)["metadata"]["labels"] == {
        "app": "inference-service",
        "release": "kube-prometheus-stack",
    }
    board = find(objects, "ConfigMap", BOARD)
    assert board["metadata"]["namespace"] == "monitoring"
    assert board["metadata"]["annotations"] == {"grafana_folder": "Migration"}
    validate_objects(objects)


def test_stacks_sharing_a_dashboard_namespace_get_distinct_config_maps(render_objects) -> None:
    shared = {"dashboard": {"namespace": "monitoring"}}
    boards = [
        find(
            render_objects(cfg(ascendWeight="5", namespace=namespace, monitoring=shared)),
            "ConfigMap",
            f"inference-service-dualstack-dashboard-{namespace}",
        )["metadata"]
        for namespace in ("inference", "inference-staging")
    ]
    assert [(b["namespace"], b["name"]) for b in boards] == [
        ("monitoring", "inference-service-dualstack-dashboard-inference"),
        ("monitoring", "inference-service-dualstack-dashboard-inference-staging"),
    ]


def test_switches(render_objects) -> None:
    ours = {("PrometheusRule", RULE), ("ConfigMap", BOARD)}
    assert ours <= names(render_objects(cfg(ascendWeight="5")))
    off = render_objects(cfg(ascendWeight="5", monitoring={"enabled": False}))
    assert not ours & names(off)
    no_board = render_objects(cfg(ascendWeight="5", monitoring={"dashboard": {"enabled": False}}))
    assert ours & names(no_board) == {("PrometheusRule", RULE)}


def test_schemas_catch_a_misspelt_rule_and_config_map(render_objects) -> None:
    objects = render_objects(cfg(ascendWeight="5"))
    rule = find(objects, "PrometheusRule", RULE)
    assert object_errors(rule) == []
    rule["spec"]["groups"][0]["rules"][0]["recrod"] = rule["spec"]["groups"][0]["rules"][0].pop(
        "record"
    )
    assert any("recrod" in e for e in object_errors(rule))
    board = find(objects, "ConfigMap", BOARD)
    assert object_errors(board) == []
    board["dta"] = board.pop("data")
    assert object_errors(board) != []


@pytest.fixture(scope="module")
def prod_render(project_copy) -> list[dict]:
    done = dualstack("render", "--stack", "prod", cwd=project_copy)
    assert done.returncode == 0, done.stderr
    return list(yaml.safe_load_all(done.stdout))


def test_prod_render_rule_file_passes_promtool_lint(prod_render, tmp_path: Path) -> None:
    rule = find(prod_render, "PrometheusRule", RULE)
    (tmp_path / "prod-rules.yaml").write_text(rule_file(rule["spec"]))
    done = run_promtool("check", "rules", "--lint-fatal", "prod-rules.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    # 8 request + 2 migration + 10 accelerator + 2 usage records, 5 alerts (no prices: no cost)
    assert "SUCCESS: 28 rules found" in done.stdout
    assert "--stack prod`" in rule["spec"]["groups"][-1]["rules"][0]["annotations"]["summary"]


def test_prod_render_includes_the_dashboard(prod_render) -> None:
    board = find(prod_render, "ConfigMap", BOARD)
    assert json.loads(board["data"]["dualstack-inference.json"])["uid"] == "dualstack-inference"


@pytest.mark.skipif(not (SHARED / "schemas" / "validate_crd.py").is_file(), reason="no ../shared")
def test_prometheus_rule_passes_the_shared_validator_strict(prod_render, tmp_path) -> None:
    manifest = tmp_path / "rule.yaml"
    manifest.write_text(yaml.safe_dump(find(prod_render, "PrometheusRule", RULE)))
    done = subprocess.run(
        [sys.executable, str(SHARED / "schemas" / "validate_crd.py"), "--strict", str(manifest)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"OK PrometheusRule/{RULE}" in done.stdout
