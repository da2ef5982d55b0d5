"""The rule generation as pure functions: labels, sources, thresholds, prices, settings."""

from __future__ import annotations

import pytest
import yaml

from components.monitoring import metric_names as m
from components.monitoring.prometheus_rule import (
    alert_names,
    prometheus_rule_spec,
    recorded_names,
    rule_file,
)
from components.monitoring.promql import number, quote, selector
from components.settings import PROJECT, SettingsError, load_settings
from components.settings.monitoring import MonitoringSettings
from tests.support.monitoring_support import VARIANTS, metric_names, variant_settings, variant_spec

ALERTS = {
    "AscendErrorRatioAboveNvidia",
    "AscendLatencyAboveNvidia",
    "AscendPrecisionCheckFailed",
    "AscendNoTraffic",
    "NpuChipUnhealthy",
}


def settings_with(**keys):
    keys.setdefault("ascendWeight", "5")
    return load_settings({f"{PROJECT}:{k}": v for k, v in keys.items()})


def rules(spec):
    return [rule for group in spec["groups"] for rule in group["rules"]]


def rule(spec, name, hardware="ascend"):
    found = [
        r
        for r in rules(spec)
        if name in (r.get("record"), r.get("alert")) and r["labels"]["hardware"] == hardware
    ]
    assert len(found) == 1, f"{name}/{hardware}: {len(found)} rules"
    return found[0]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_rule_carries_hardware_and_namespace(variant: str) -> None:
    settings = variant_settings(variant)
    for r in rules(variant_spec(variant)):
        assert r["labels"]["hardware"] in ("nvidia", "ascend"), r
        assert r["labels"]["namespace"] == settings.namespace, r


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_rules_read_only_exporter_series_and_recorded_series(variant: str) -> None:
    settings, spec = variant_settings(variant), variant_spec(variant)
    mon = settings.monitoring
    source = mon.istio if mon.request_source == "istio" else mon.app
    npu_level = {mon.npu.utilization, *mon.npu.memory}
    exporters = {
        *(mon.dcgm.utilization, mon.dcgm.memory_used, mon.dcgm.memory_free),
        *(mon.dcgm.temperature, mon.dcgm.power),
        *(mon.npu.chip_utilization, mon.npu.temperature, mon.npu.power, mon.npu.health),
        *npu_level,
        *(source.requests, source.duration_bucket, m.PRECISION_PASSED, m.PRECISION_COMPLETED),
    }
    read = set().union(*(metric_names(r["expr"]) for r in rules(spec)))
    assert read <= exporters | recorded_names(spec), read - exporters - recorded_names(spec)
    # The article's non-existent names are not read.
    assert not read & {"DCGM_FI_DEV_FB_TOTAL", "container_npu_memory_total_bytes"}


def test_names_come_from_the_shared_module() -> None:
    spec = variant_spec("istio_chip")
    assert {m.REQUEST_RATE, m.ERROR_RATIO, m.LATENCY_P50, m.LATENCY_P99} <= recorded_names(spec)
    assert alert_names(spec) == ALERTS | {"AcceleratorUnpriced"}
    assert len({g["name"] for g in spec["groups"]}) == len(spec["groups"])


def test_istio_maps_workloads_to_hardware_and_converts_milliseconds() -> None:
    spec = prometheus_rule_spec(settings_with(), "prod")
    nvidia = rule(spec, m.REQUEST_RATE, "nvidia")["expr"]
    assert 'destination_workload="inference-blue"' in nvidia
    assert 'destination_workload_namespace="inference"' in nvidia
    assert 'reporter="destination"' in nvidia
    assert 'destination_workload="inference-green"' in rule(spec, m.REQUEST_RATE)["expr"]
    p99 = rule(spec, m.LATENCY_P99)["expr"]
    assert "istio_request_duration_milliseconds_bucket" in p99
    assert ") / 1000 >= 0" in p99


def test_app_source_selects_by_hardware_label_and_service() -> None:
    spec = prometheus_rule_spec(settings_with(monitoring={"requestSource": "app"}), "prod")
    expr = rule(spec, m.REQUEST_RATE)["expr"]
    assert selector("http_requests_total", {}) in expr
    assert 'hardware="ascend"' in expr and 'app="inference-service"' in expr
    assert "/ 1000" not in rule(spec, m.LATENCY_P99)["expr"]
    unfiltered = settings_with(monitoring={"requestSource": "app", "app": {"serviceLabel": None}})
    assert "app=" not in rule(prometheus_rule_spec(unfiltered, "prod"), m.REQUEST_RATE)["expr"]


def test_workload_names_follow_the_deployments() -> None:
    settings = settings_with(ascend={"deploymentName": "llm-npu"})
    expr = rule(prometheus_rule_spec(settings, "prod"), m.ERROR_RATIO)["expr"]
    assert 'destination_workload="llm-npu"' in expr


def test_exporter_names_and_sentinel_floor_are_settings() -> None:
    settings = settings_with(
        monitoring={
            "dcgm": {"namespaceLabel": "exported_namespace", "blankFloor": 1e18},
            "npu": {"chipUtilization": "npu_util"},
        }
    )
    spec = prometheus_rule_spec(settings, "prod")
    util = rule(spec, m.ACCELERATOR_UTILISATION, "nvidia")["expr"]
    assert util == 'avg(DCGM_FI_DEV_GPU_UTIL{exported_namespace="inference"} < 1000000000000000000)'
    assert rule(spec, m.ACCELERATOR_UTILISATION)["expr"] == 'avg(npu_util{namespace="inference"})'


def test_weight_is_recorded_as_a_ratio() -> None:
    for weight, text in (("0", "vector(0)"), ("20", "vector(0.2)"), ("100", "vector(1)")):
        spec = prometheus_rule_spec(settings_with(ascendWeight=weight), "prod")
        assert rule(spec, m.ASCEND_WEIGHT)["expr"] == text


def test_thresholds_come_from_the_slo_settings() -> None:
    spec = prometheus_rule_spec(
        settings_with(slo={"errorRatioMargin": 0.02, "p99Factor": 2}), "prod"
    )
    errors = rule(spec, "AscendErrorRatioAboveNvidia")
    assert '{hardware="nvidia", namespace="inference"} + 0.02)' in errors["expr"]
    assert "by more than 2 percentage points" in errors["annotations"]["summary"]
    latency = rule(spec, "AscendLatencyAboveNvidia")["expr"]
    assert latency.endswith('{hardware="nvidia", namespace="inference"} * 2)')
    with_slo = prometheus_rule_spec(settings_with(slo={"p99SloSeconds": 1.5}), "prod")
    assert rule(with_slo, "AscendLatencyAboveNvidia")["expr"].endswith(") > 1.5")


def test_every_alert_says_which_sop_and_command() -> None:
    spec = prometheus_rule_spec(settings_with(), "staging")
    for name in ALERTS:
        alert = rule(spec, name)
        assert alert["labels"]["severity"] in ("critical", "warning")
        assert alert["for"]
        summary = alert["annotations"]["summary"]
        assert "SOP" in summary and "`dualstack rollback --stack staging`" in summary, name


def test_alert_durations_severities_and_runbook_are_settings() -> None:
    settings = settings_with(
        monitoring={
            "alerts": {
                "ascendNoTraffic": {"duration": "2m", "severity": "warning"},
                "runbookUrl": "https://wiki.example/sop",
            }
        }
    )
    alert = rule(prometheus_rule_spec(settings, "prod"), "AscendNoTraffic")
    assert (alert["for"], alert["labels"]["severity"]) == ("2m", "warning")
    assert alert["annotations"]["runbook_url"] == "https://wiki.example/sop"


def test_precision_alert_watches_the_served_image_of_its_namespace_on_completed_runs() -> None:
    settings = settings_with(
        namespace="inference-staging", ascend={"image": "registry/inference-service:v2.0.0-npu"}
    )
    expr = rule(prometheus_rule_spec(settings, "prod"), "AscendPrecisionCheckFailed")["expr"]
    scope = 'ascend_image="registry/inference-service:v2.0.0-npu", namespace="inference-staging"'
    assert expr == (
        f"precision_check_passed{{{scope}}} == 0\n  and\nprecision_check_completed{{{scope}}} == 1"
    )


def test_alert_summaries_name_the_rollback_then_its_targeted_up() -> None:
    spec = prometheus_rule_spec(settings_with(), "staging")
    summary = rule(spec, "AscendErrorRatioAboveNvidia")["annotations"]["summary"]
    assert summary.endswith(
        "run `dualstack rollback --stack staging`, then the targeted "
        "`pulumi up --stack staging --target ...` it prints."
    )
    assert "apply it with `pulumi up --stack staging`" not in summary


def test_cost_rules_only_for_priced_hardware() -> None:
    unpriced = prometheus_rule_spec(settings_with(), "prod")
    assert not {m.ACCELERATOR_COST_PER_HOUR, m.ACCELERATOR_COST} & recorded_names(unpriced)
    assert "AcceleratorUnpriced" not in alert_names(unpriced)
    assert m.ACCELERATOR_HOURS in recorded_names(unpriced)

    settings = settings_with(monitoring={"prices": {"ascend": {"910B": 1.2, "910C": 2}}})
    spec = prometheus_rule_spec(settings, "prod")
    by_model = [r for r in rules(spec) if r.get("record") == m.ACCELERATOR_COST_PER_HOUR_BY_MODEL]
    assert [r["labels"]["model"] for r in by_model] == ["910B", "910C"]
    assert by_model[0]["expr"] == (
        '(count(npu_chip_info_utilization{namespace="inference", model_name="910B"}) '
        "or vector(0)) * 1.2"
    )
    assert {r["labels"]["hardware"] for r in rules(spec) if "cost" in r.get("record", "")} == {
        "ascend"
    }
    unpriced_alert = rule(spec, "AcceleratorUnpriced")
    assert 'model_name!="910B", model_name!="910C"' in unpriced_alert["expr"]


def test_accelerator_hours_integrate_a_zero_filled_count() -> None:
    expr = rule(variant_spec("istio_chip"), m.ACCELERATOR_HOURS)["expr"]
    assert expr == (
        'avg_over_time((count(npu_chip_info_utilization{namespace="inference"}) or vector(0))'
        "[24h:1m]) * 24"
    )


def test_rule_file_is_the_spec_as_yaml() -> None:
    spec = variant_spec("istio_chip")
    text = rule_file(spec)
    assert yaml.safe_load(text) == spec
    assert "expr: |-\n" in text  # multi-line expressions as literal blocks


def test_promql_text_helpers() -> None:
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert (number(2147483632.0), number(0.05), number(3)) == ("2147483632", "0.05", "3")
    matchers = [("m", "!=", "a"), ("m", "!=", "b")]
    assert selector("up", matchers) == 'up{m!="a", m!="b"}'
    assert selector("up") == "up"
    with pytest.raises(ValueError, match="unknown matcher operator '=='"):
        selector("up", [("job", "==", "x")])


def test_defaults_are_the_exporters_real_names() -> None:
    mon = MonitoringSettings()
    assert (mon.dcgm.memory_used, mon.dcgm.memory_free) == (
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_FB_FREE",
    )
    assert mon.npu.memory == ("npu_chip_info_hbm_used_memory", "npu_chip_info_hbm_total_memory")
    assert mon.request_source == "istio"
    assert mon.istio.duration_bucket == "istio_request_duration_milliseconds_bucket"


@pytest.mark.parametrize(
    ("monitoring", "message"),
    [
        ({"dcgm": {"utilization": "DCGM-GPU"}}, r"monitoring\.dcgm\.utilization = 'DCGM-GPU'"),
        (
            {"alerts": {"ascendLatency": {"duration": "5 minutes", "severity": "warning"}}},
            r"monitoring\.alerts\.ascendLatency\.duration = '5 minutes'",
        ),
        ({"prices": {"nvidia": {"A100": -1}}}, r"monitoring\.prices\.nvidia\.A100 = -1"),
        ({"npu": {"level": "node"}}, r"monitoring\.npu\.level = 'node'.*'chip' or 'container'"),
        ({"requestSource": "linkerd"}, r"monitoring\.requestSource = 'linkerd'"),
        ({"dashbord": {}}, r"monitoring\.dashbord: unknown key"),
    ],
)
def test_bad_monitoring_settings_name_the_key(monitoring, message) -> None:
    with pytest.raises(SettingsError, match=message):
        settings_with(monitoring=monitoring)
