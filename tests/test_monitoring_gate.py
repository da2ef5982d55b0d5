"""The monitoring rules and the promotion gate end to end, on a real Prometheus.

Raw Istio counters and histograms (two hours, one sample a minute) are backfilled; the real
recording rules are evaluated over that history with `promtool tsdb create-blocks-from rules`
against a Prometheus serving it; a second Prometheus serves raw and recorded blocks together
and `dualstack gate` judges each scenario. This checks the contract the gate relies on: rates
in req/s, 5xx ratios in 0..1 and absent without traffic, latencies in seconds.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from components.prometheus_rules import prometheus_rule_spec, rule_file
from components.settings import PROJECT, load_settings
from dualstack.cli import main
from tests.prometheus_server import (
    PROMTOOL_TIMEOUT_S,
    Series,
    create_blocks,
    prometheus_server,
    require_prometheus,
)

START = 1_700_000_040  # a whole minute
END = START + 2 * 3600
IMAGE = "registry/inference-service:v1.2.3-npu"
# Cumulative share of requests at or under each Istio bucket bound (milliseconds).
NVIDIA_LATENCY = {"100": 0.5, "250": 0.9, "500": 0.995, "1000": 1.0, "+Inf": 1.0}  # p99 487 ms
ASCEND_LATENCY = {"100": 0.4, "250": 0.85, "500": 0.985, "1000": 1.0, "+Inf": 1.0}  # p99 667 ms
SCENARIOS = {
    # namespace: {hardware: (requests/s, 5xx ratio)}
    "e2e-healthy": {"nvidia": (8.0, 0.002), "ascend": (2.0, 0.004)},
    "e2e-errors": {"nvidia": (8.0, 0.002), "ascend": (2.0, 0.05)},
    "e2e-idle-ascend": {"nvidia": (8.0, 0.002), "ascend": (0.0, 0.0)},
}
WORKLOADS = {"nvidia": "inference-blue", "ascend": "inference-green"}


def counter(per_second: float) -> list[tuple[float, float]]:
    """A counter rising `per_second` from 0, sampled every minute; flat at 17 when 0."""
    if per_second == 0:
        return [(START + i * 60, 17.0) for i in range(121)]
    return [(START + i * 60, per_second * i * 60) for i in range(121)]


def istio_history() -> list[Series]:
    series = []
    for namespace, sides in SCENARIOS.items():
        for hardware, (rate, errors) in sides.items():
            base = {
                "reporter": "destination",
                "destination_workload_namespace": namespace,
                "destination_workload": WORKLOADS[hardware],
            }
            ok, failed = rate * (1 - errors), rate * errors
            series.append(
                Series("istio_requests_total", {**base, "response_code": "200"}, counter(ok))
            )
            series.append(
                Series("istio_requests_total", {**base, "response_code": "503"}, counter(failed))
            )
            shares = NVIDIA_LATENCY if hardware == "nvidia" else ASCEND_LATENCY
            for le, share in shares.items():
                labels = {**base, "le": le}
                series.append(
                    Series(
                        "istio_request_duration_milliseconds_bucket", labels, counter(rate * share)
                    )
                )
    return series


def stack_config(namespace: str) -> dict[str, str]:
    return {
        f"{PROJECT}:ascendWeight": "20",
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
    }


def request_groups() -> dict:
    """The real rules' request groups (what the gate reads) of every scenario's stack."""
    groups = []
    for namespace in SCENARIOS:
        spec = prometheus_rule_spec(load_settings(stack_config(namespace)), namespace)
        groups += [g for g in spec["groups"] if g["name"].endswith(".requests")]
    return {"groups": groups}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> str:
    require_prometheus()
    work = tmp_path_factory.mktemp("e2e")
    tsdb = create_blocks(istio_history(), work)
    (work / "rules.yaml").write_text(rule_file(request_groups()), encoding="utf-8")
    with prometheus_server(tsdb, work) as raw_url:
        done = subprocess.run(
            [
                "promtool", "tsdb", "create-blocks-from", "rules",
                f"--start={START}", f"--end={END}", f"--url={raw_url}",
                f"--output-dir={work / 'recorded'}", "--eval-interval=60s",
                str(work / "rules.yaml"),
            ],
            capture_output=True, text=True, timeout=PROMTOOL_TIMEOUT_S, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
    for block in (work / "recorded").iterdir():
        shutil.move(str(block), tsdb / block.name)
    with prometheus_server(tsdb, work) as url:
        yield url


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    for namespace in SCENARIOS:
        text = yaml.safe_dump({"config": stack_config(namespace)})
        (tmp_path / f"Pulumi.{namespace}.yaml").write_text(text)
    return tmp_path


def gate(project: Path, url: str, stack: str, report: Path) -> int:
    argv = ["-C", str(project), "gate", "--stack", stack, "--prometheus", url]
    return main([*argv, "--at", str(END), "--markdown", str(report)])


def results(report: Path) -> dict[str, str]:
    rows = [line.split("|")[1:-1] for line in report.read_text().splitlines()]
    return {r[0].strip(): r[1].strip() for r in rows if len(r) == 6 and r[1].strip() in (
        "PASS", "FAIL", "NO_DATA")}  # fmt: skip


def test_healthy_ascend_passes_on_the_real_rules(project, prometheus, tmp_path, capsys) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-healthy", report) == 0
    assert set(results(report).values()) == {"PASS"}
    out = capsys.readouterr().out
    assert "0.40%" in out and "0.20%" in out  # the recorded 5xx ratios, 0..1 shown as %
    assert "0.667 s" in out and "0.487 s" in out  # Istio milliseconds recorded as seconds


def test_ascend_errors_fail_on_the_real_rules(project, prometheus, tmp_path) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-errors", report) == 1
    assert results(report)["5xx error ratio"] == "FAIL"


def test_zero_ascend_traffic_is_no_data_never_a_pass(project, prometheus, tmp_path) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-idle-ascend", report) == 1
    verdicts = results(report)
    assert verdicts["5xx error ratio"] == "NO_DATA"
    assert verdicts["p99 latency"] == "NO_DATA"
    assert verdicts["Requests in window"] == "FAIL"  # a real 0 req/s, below the minimum
