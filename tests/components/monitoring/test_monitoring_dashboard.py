"""The Grafana dashboard: its queries read only series the rules or exporters produce, are
valid PromQL (checked by promtool), select the stack's namespace, and lay out cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.monitoring import metric_names as m
from components.monitoring.dashboard import dashboard, dashboard_uid
from components.monitoring.prometheus_rule import recorded_names, rule_file
from components.settings import PROJECT, load_settings
from tests.support.monitoring_support import (
    VARIANTS,
    metric_names,
    run_promtool,
    variant_settings,
    variant_spec,
)


def panels(board):
    return [p for p in board["panels"] if p["type"] != "row"]


def queries(board):
    return [t["expr"] for p in panels(board) for t in p["targets"]]


def test_metric_names_reads_names_not_functions_labels_or_numbers() -> None:
    expr = 'histogram_quantile(0.99, sum by (le) (rate(a_bucket{le!="1e3"}[5m]))) / 1000 >= 0'
    assert metric_names(expr) == {"a_bucket"}
    expr = 'x:y:p99_5m{n="a"} > on (namespace) group_left () (z * 1.5) or vector(0)'
    assert metric_names(expr) == {"x:y:p99_5m", "z"}
    assert metric_names("irate(q[5m])") == {"irate", "q"}  # unknown function: flagged


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_queries_read_only_series_the_rules_or_exporters_produce(variant: str) -> None:
    settings, spec = variant_settings(variant), variant_spec(variant)
    produced = recorded_names(spec) | {settings.monitoring.npu.health}
    read = set().union(*(metric_names(q) for q in queries(dashboard(settings))))
    assert read <= produced, read - produced
    # and it shows what a migration needs
    assert {m.ASCEND_SHARE, m.ASCEND_WEIGHT, m.ERROR_RATIO, m.LATENCY_P99} <= read
    assert {m.ACCELERATOR_UTILISATION, m.ACCELERATOR_MEMORY_USED} <= read
    assert {m.ACCELERATOR_TEMPERATURE, m.ACCELERATOR_HOURS} <= read


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_query_selects_the_stacks_namespace(variant: str) -> None:
    settings = variant_settings(variant)
    npu = settings.monitoring.npu
    for query in queries(dashboard(settings)):
        assert (
            f'namespace="{settings.namespace}"' in query
            or f'{npu.namespace_label}="{settings.namespace}"' in query
        ), query


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_query_is_valid_promql(variant: str, tmp_path: Path) -> None:
    board = dashboard(variant_settings(variant))
    rules = [
        {"record": f"dashboard:query{i}:check", "expr": q} for i, q in enumerate(queries(board))
    ]
    (tmp_path / "queries.yaml").write_text(rule_file({"groups": [{"name": "q", "rules": rules}]}))
    done = run_promtool("check", "rules", "queries.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_cost_panels_only_with_prices() -> None:
    priced = set().union(
        *(metric_names(q) for q in queries(dashboard(variant_settings("istio_chip"))))
    )
    assert {m.ACCELERATOR_COST_PER_HOUR, m.ACCELERATOR_COST} <= priced
    unpriced = dashboard(variant_settings("app_container"))
    assert not {p["title"] for p in panels(unpriced)} & {"Cost per hour", "Cost, last 24 h"}
    currency = [
        p for p in panels(dashboard(variant_settings("istio_chip"))) if "Cost" in p["title"]
    ]
    assert {p["fieldConfig"]["defaults"]["unit"] for p in currency} == {"suffix: USD"}


def test_migration_panel_compares_share_with_weight() -> None:
    board = dashboard(variant_settings("istio_chip"))
    progress = next(p for p in panels(board) if p["title"].startswith("Ascend share"))
    assert [t["expr"] for t in progress["targets"]] == [
        'namespace:inference_requests_ascend:ratio_rate5m{namespace="inference"}',
        'namespace:inference_ascend_weight:ratio{namespace="inference"}',
    ]
    assert progress["fieldConfig"]["defaults"]["unit"] == "percentunit"


def test_layout_ids_unique_and_no_overlap() -> None:
    board = dashboard(variant_settings("istio_chip"))
    ids = [p["id"] for p in board["panels"]]
    assert len(ids) == len(set(ids))
    cells = set()
    for panel in board["panels"]:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24
        area = {
            (x, y)
            for x in range(grid["x"], grid["x"] + grid["w"])
            for y in range(grid["y"], grid["y"] + grid["h"])
        }
        assert not cells & area, panel["title"]
        cells |= area


def test_targets_use_the_datasource_variable() -> None:
    board = dashboard(variant_settings("istio_chip"))
    assert board["templating"]["list"][0]["type"] == "datasource"
    assert {t["datasource"]["uid"] for p in panels(board) for t in p["targets"]} == {
        "${datasource}"
    }
    refs = [[t["refId"] for t in p["targets"]] for p in panels(board)]
    assert all(r == ["A", "B"][: len(r)] for r in refs)


def test_uid_is_per_namespace_and_fits_grafanas_limit() -> None:
    assert dashboard_uid("inference") == "dualstack-inference"
    long_a, long_b = "a" * 63, "a" * 62 + "b"
    assert len(dashboard_uid(long_a)) <= 40
    assert dashboard_uid(long_a) != dashboard_uid(long_b)
    staging = load_settings({f"{PROJECT}:ascendWeight": "5", f"{PROJECT}:namespace": "stg"})
    assert dashboard(staging)["uid"] == "dualstack-stg"


# --- a fleet's one dashboard ---------------------------------------------------------------

FLEET = "fleet_istio_chip"


def fleet_board():
    from components.monitoring.dashboard import fleet_dashboard

    return fleet_dashboard(variant_settings(FLEET), ["chat", "embedder"])


def test_a_fleet_dashboard_chooses_the_service_with_a_variable() -> None:
    board = fleet_board()
    variable = next(v for v in board["templating"]["list"] if v["name"] == "service")
    assert (variable["type"], variable["query"]) == ("custom", "chat,embedder")
    assert variable["current"] == {"text": "chat", "value": "chat"}
    assert board["uid"] == "dualstack-inference-fleet"
    progress = next(p for p in panels(board) if p["title"].startswith("Ascend share"))
    assert [t["expr"] for t in progress["targets"]] == [
        'namespace:inference_requests_ascend:ratio_rate5m{namespace="inference-fleet", '
        'service="$service"}',
        'namespace:inference_ascend_weight:ratio{namespace="inference-fleet", service="$service"}',
    ]


def test_a_fleet_dashboard_shows_cost_per_service_and_per_hardware() -> None:
    board = fleet_board()
    by_title = {p["title"]: [t["expr"] for t in p["targets"]] for p in panels(board)}
    selector = '{namespace="inference-fleet"}'
    assert by_title["Accelerator-hours, last 24 h, per service"] == [
        f"sum by (service, hardware) (hardware:accelerator_hours:sum24h{selector})"
    ]
    assert by_title["Accelerator-hours, last 24 h, per hardware"] == [
        f"sum by (hardware) (hardware:accelerator_hours:sum24h{selector})"
    ]
    assert by_title["Cost, last 24 h, per service"] == [
        f"sum by (service, hardware) (hardware:accelerator_cost:sum24h{selector})"
    ]
    assert board["panels"][0]["title"] == "Fleet: every service"


def test_every_fleet_query_reads_recorded_series_of_the_namespace(tmp_path: Path) -> None:
    settings = variant_settings(FLEET)
    board = fleet_board()
    produced = recorded_names(variant_spec(FLEET)) | {settings.monitoring.npu.health}
    found = queries(board)
    assert set().union(*(metric_names(q) for q in found)) <= produced
    for query in found:
        assert 'namespace="inference-fleet"' in query, query
    per_service = [
        q for q in found if "sum by" not in q and settings.monitoring.npu.health not in q
    ]
    assert per_service and all('service="$service"' in q for q in per_service)
    rules = [{"record": f"dashboard:query{i}:check", "expr": q} for i, q in enumerate(found)]
    (tmp_path / "queries.yaml").write_text(rule_file({"groups": [{"name": "q", "rules": rules}]}))
    done = run_promtool("check", "rules", "queries.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_fleet_dashboard_shows_the_chosen_services_chips_only() -> None:
    """npu-exporter labels each chip with the pod it is assigned to: the chosen service's
    Ascend pods are those of its Deployment `<service>-green`."""
    by_title = {p["title"]: [t["expr"] for t in p["targets"]] for p in panels(fleet_board())}
    assert by_title["NPU chip health"] == [
        'npu_chip_info_health_status{namespace="inference-fleet", '
        'pod_name=~"$service-green-[a-z0-9]+-[a-z0-9]+"}'
    ]
