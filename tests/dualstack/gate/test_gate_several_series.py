"""The gate over several series per backend, against a real Prometheus over backfilled history.

The recorded series keep whatever labels the rules aggregate by, so one backend of one stack
can match several series: one per pod, with other namespaces' series beside them. The gate
must judge the worst of them (the stalest, the sparsest, the highest 5xx ratio and p99), sum
the requests of all of them, and read only its own namespace.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from components.monitoring.metric_names import (
    ASCEND_WEIGHT,
    ERROR_RATIO,
    LATENCY_P99,
    REQUEST_RATE,
)
from components.settings import PROJECT
from dualstack.cli import main
from tests.support.prometheus_server import Series, constant, prometheus_over

START = 1_699_999_980  # a whole minute, so the 1-minute count steps line up with END
END = START + 2 * 3600
IMAGE = "registry/inference-service:v1.2.3-npu"
METRICS = {"rate": REQUEST_RATE, "errors": ERROR_RATIO, "p99": LATENCY_P99}
GOOD = {"rate": 1.0, "errors": 0.002, "p99": 0.8}
NVIDIA = {"rate": 8.0, "errors": 0.002, "p99": 0.8}


def pods(namespace: str, hardware: str, *values: dict[str, float], keep=None) -> list[Series]:
    """One series per pod (`pod` = <hardware>-0, -1, ...) of every metric, from START to END.

    `keep`, when given, maps a pod index to a predicate on the sample time (a stopped pod).
    """
    out = []
    for index, pod_values in enumerate(values):
        labels = {"hardware": hardware, "namespace": namespace, "pod": f"{hardware}-{index}"}
        for key, metric in METRICS.items():
            samples = constant(pod_values[key], START, END)
            if keep and index in keep:
                samples = [(t, v) for t, v in samples if keep[index](t)]
            out.append(Series(metric, labels, samples))
    return out


def history() -> list[Series]:
    series: list[Series] = []
    # two healthy Ascend pods at 1 req/s each, NVIDIA as one series
    series += pods("two-pods", "ascend", GOOD, GOOD) + pods("two-pods", "nvidia", NVIDIA)
    series.append(Series(ASCEND_WEIGHT, {"namespace": "two-pods"}, constant(0.2, START, END)))
    # the same pods' labels in other namespaces, failing: they belong to other stacks
    for other in ("two-pods-staging", "two-pods-canary"):
        bad = {"rate": 0.01, "errors": 0.5, "p99": 9.0}
        series += pods(other, "ascend", bad, bad) + pods(other, "nvidia", NVIDIA)
    # one Ascend pod of three throws 5% 5xx: the healthy two must not hide it
    errors = {**GOOD, "errors": 0.05}
    series += pods("one-erring-pod", "ascend", GOOD, errors, GOOD)
    series += pods("one-erring-pod", "nvidia", NVIDIA, NVIDIA)
    # one Ascend pod of three is slow (p99 2.4 s against NVIDIA's 0.8 s x 1.5)
    slow = {**GOOD, "p99": 2.4}
    series += pods("one-slow-pod", "ascend", GOOD, GOOD, slow) + pods(
        "one-slow-pod", "nvidia", NVIDIA
    )
    # one Ascend pod's series stopped 11 minutes before END, the other two are fresh
    stopped = {1: lambda t: t <= END - 660}
    series += pods("one-stale-pod", "ascend", GOOD, GOOD, GOOD, keep=stopped)
    series += pods("one-stale-pod", "nvidia", NVIDIA)
    # one NVIDIA series has a ten-minute gap in the last 30 minutes (73% coverage)
    gap = {0: lambda t: not END - 1500 <= t < END - 900}
    series += pods("one-sparse-pod", "ascend", GOOD, GOOD)
    series += pods("one-sparse-pod", "nvidia", NVIDIA, NVIDIA, keep=gap)
    # the stack file says 0%, but the deployed route sends 20% to an Ascend that errs
    series += pods("routed-at-zero", "ascend", {**GOOD, "errors": 0.05})
    series += pods("routed-at-zero", "nvidia", NVIDIA)
    series.append(Series(ASCEND_WEIGHT, {"namespace": "routed-at-zero"}, constant(0.2, START, END)))
    # at 0% in the file and recorded at 0% all along: no Ascend traffic, precision decides
    series.append(Series(ASCEND_WEIGHT, {"namespace": "unrouted"}, constant(0.0, START, END)))
    series += pods("unrouted", "nvidia", NVIDIA)
    return series


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> str:
    with prometheus_over(history(), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder; `stack(name, weight)` writes Pulumi.<name>.yaml (namespace = name)."""
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    return tmp_path


def gate(project: Path, url: str, namespace: str, weight: int = 20) -> tuple[int, dict, str]:
    """Run `dualstack gate` on a stack of that namespace; (exit code, {title: result}, out)."""
    config = {
        f"{PROJECT}:ascendWeight": str(weight),
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
        f"{PROJECT}:bakeTime": "1h",  # the history holds 2 h
    }
    (project / f"Pulumi.{namespace}.yaml").write_text(yaml.safe_dump({"config": config}))
    report = project / f"{namespace}.md"
    argv = ["-C", str(project), "gate", "--stack", namespace, "--prometheus", url]
    code = main([*argv, "--at", str(END), "--markdown", str(report)])
    rows = [line.split("|")[1:-1] for line in report.read_text().splitlines()]
    results = {
        r[0].strip(): r[1].strip()
        for r in rows
        if len(r) == 6 and r[1].strip() != "Result" and not r[1].startswith("---")
    }
    return code, results, report.read_text()


def test_two_healthy_pods_pass_and_their_requests_add_up(project, prometheus, capsys):
    code, results, _ = gate(project, prometheus, "two-pods")
    assert code == 0
    assert set(results.values()) == {"PASS"}
    out = capsys.readouterr().out
    # two pods x 1 req/s over 30 one-minute steps of 60 s: 3,600; NVIDIA 8 req/s: 14,400
    assert "3,600" in out and "14,400" in out
    assert "0.20%" in out and "0.800 s" in out


def test_other_namespaces_series_with_the_same_pod_labels_are_not_read(project, prometheus):
    # The failing series of two-pods-staging and two-pods-canary carry the same pod labels.
    assert gate(project, prometheus, "two-pods")[0] == 0
    code, results, _ = gate(project, prometheus, "two-pods-staging")
    assert code == 1
    assert results["5xx error ratio"] == "FAIL"


def test_the_gate_takes_the_highest_error_ratio_across_series(project, prometheus, capsys):
    """Kills: the gate takes the minimum error ratio across series instead of the maximum."""
    code, results, _ = gate(project, prometheus, "one-erring-pod")
    assert code == 1
    assert results["5xx error ratio"] == "FAIL"
    out = capsys.readouterr().out
    assert "5.00%" in out  # the erring pod's ratio, not the healthy pods' 0.20%
    assert "Ascend's 5xx ratio exceeds NVIDIA's by 4.80 pp" in out


def test_the_gate_takes_the_highest_p99_across_series(project, prometheus, capsys):
    code, results, _ = gate(project, prometheus, "one-slow-pod")
    assert code == 1
    assert results["p99 latency"] == "FAIL"
    assert "Ascend's p99 is 3.00 x NVIDIA's" in capsys.readouterr().out


def test_the_gate_judges_staleness_on_the_stalest_series(project, prometheus, capsys):
    """Kills: the gate judges staleness on the freshest series instead of the worst one."""
    code, results, _ = gate(project, prometheus, "one-stale-pod")
    assert code == 1
    assert [results[k] for k in ("Requests in window", "5xx error ratio", "p99 latency")] == [
        "NO_DATA"
    ] * 3
    assert results["Precision check"] == "PASS"
    out = capsys.readouterr().out
    assert "stale: newest sample 11m 0s before the window end (bound 5m 0s)" in out


def test_the_gate_judges_coverage_on_the_sparsest_series(project, prometheus, capsys):
    code, results, _ = gate(project, prometheus, "one-sparse-pod")
    assert code == 1
    assert results["5xx error ratio"] == "NO_DATA"
    assert "sparse: samples in 73% of the window (bound 90%)" in capsys.readouterr().out


def test_a_recorded_route_weight_requires_traffic_criteria_at_file_weight_zero(
    project, prometheus, capsys
):
    """Kills: the gate ignores the recorded route weight when the stack file says 0, so it
    passes on precision alone while Ascend serves traffic."""
    code, results, _ = gate(project, prometheus, "routed-at-zero", weight=0)
    assert code == 1
    assert results["5xx error ratio"] == "FAIL"
    assert results["Precision check"] == "PASS"
    out = capsys.readouterr().out
    assert "(not required)" not in out
    assert "data taken at 20% Ascend; the stack file says 0%" in out


def test_at_zero_recorded_and_in_the_file_precision_decides(project, prometheus, capsys):
    code, results, _ = gate(project, prometheus, "unrouted", weight=0)
    assert code == 0
    assert results["Precision check"] == "PASS"
    assert results["5xx error ratio"] == "NO_DATA (not required)"
