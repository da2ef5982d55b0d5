"""The monitoring rules and the promotion gate end to end, on a real Prometheus.

Raw Istio counters and histograms (two hours, one sample a minute) are backfilled; the real
recording rules are evaluated over that history with `promtool tsdb create-blocks-from rules`
against a Prometheus serving it; a second Prometheus serves raw and recorded blocks together
and `dualstack gate` judges each scenario. This checks the contract the gate relies on: rates
in req/s, 5xx ratios in 0..1 and absent without traffic, latencies in seconds; and the
gate's verdicts on them: healthy passes; 10x NVIDIA's errors, 3x its p99, no Ascend traffic
and 0/0 minutes inside the window fail; a stopped Prometheus is an error (exit 2). A fleet of
two services in one namespace: each service's gate (`--service`) judges its own series only.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import yaml

from components.monitoring.prometheus_rule import prometheus_rule_spec, rule_file
from components.settings import PROJECT, load_fleet, load_settings
from dualstack.cli import main
from tests.support.prometheus_server import (
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
NVIDIA_LATENCY = {"100": 0.5, "250": 0.9, "500": 0.995, "1000": 1.0, "2500": 1.0, "+Inf": 1.0}
ASCEND_LATENCY = {"100": 0.4, "250": 0.85, "500": 0.985, "1000": 1.0, "2500": 1.0, "+Inf": 1.0}
# p99 = 1000 + (0.99 - 0.985) / 0.015 x 1500 = 1500 ms: 3.08 x NVIDIA's 487 ms.
SLOW_LATENCY = {"100": 0.3, "250": 0.7, "500": 0.9, "1000": 0.985, "2500": 1.0, "+Inf": 1.0}
STALL = (END - 1500, END - 600)
"""Fifteen minutes inside the last 30 in which the `e2e-stalled` Ascend counters stand still."""


@dataclass(frozen=True)
class Side:
    """One backend's traffic: requests/s, 5xx share (0..1), latency shares, a still span."""

    rate: float
    errors: float
    latency: dict[str, float]
    still: tuple[int, int] | None = None


HEALTHY_NVIDIA = Side(8.0, 0.002, NVIDIA_LATENCY)
HEALTHY_ASCEND = Side(2.0, 0.004, ASCEND_LATENCY)
SCENARIOS = {
    # namespace: {hardware: traffic}; a hardware left out has no series at all.
    "e2e-healthy": {"nvidia": HEALTHY_NVIDIA, "ascend": HEALTHY_ASCEND},
    "e2e-errors-10x": {
        "nvidia": Side(8.0, 0.005, NVIDIA_LATENCY),
        "ascend": Side(2.0, 0.05, ASCEND_LATENCY),
    },
    "e2e-p99-3x": {"nvidia": HEALTHY_NVIDIA, "ascend": Side(2.0, 0.004, SLOW_LATENCY)},
    "e2e-no-ascend": {"nvidia": HEALTHY_NVIDIA},
    # Scraped counters that never rise: every raw 5xx / all ratio is 0/0.
    "e2e-idle-ascend": {"nvidia": HEALTHY_NVIDIA, "ascend": Side(0.0, 0.0, ASCEND_LATENCY)},
    "e2e-stalled": {"nvidia": HEALTHY_NVIDIA, "ascend": replace(HEALTHY_ASCEND, still=STALL)},
}
WORKLOADS = {"nvidia": "inference-blue", "ascend": "inference-green"}
FLEET = "e2e-fleet"
FLEET_SERVICES = {
    # service: {hardware: traffic}, all in namespace e2e-fleet; workloads <service>-blue/-green
    "chat": {"nvidia": HEALTHY_NVIDIA, "ascend": HEALTHY_ASCEND},
    "embedder": {
        "nvidia": Side(8.0, 0.005, NVIDIA_LATENCY),
        "ascend": Side(2.0, 0.05, ASCEND_LATENCY),
    },
}


def counter(per_second: float, still: tuple[int, int] | None = None) -> list[tuple[float, float]]:
    """A counter rising `per_second` from 0, sampled every minute; flat at 17 when 0.

    Within `still` (start, end) it keeps its value: scraped, but no request counted.
    """
    if per_second == 0:
        return [(START + i * 60, 17.0) for i in range(121)]
    samples, value = [], 0.0
    for i in range(121):
        at = START + i * 60
        if i and not (still and still[0] < at <= still[1]):
            value += per_second * 60
        samples.append((at, value))
    return samples


def istio_history() -> list[Series]:
    series = []
    backends = [
        (namespace, WORKLOADS[hardware], side)
        for namespace, sides in SCENARIOS.items()
        for hardware, side in sides.items()
    ]
    backends += [
        (FLEET, f"{service}-{'blue' if hardware == 'nvidia' else 'green'}", side)
        for service, sides in FLEET_SERVICES.items()
        for hardware, side in sides.items()
    ]
    for namespace, workload, side in backends:
        base = {
            "reporter": "destination",
            "destination_workload_namespace": namespace,
            "destination_workload": workload,
        }
        ok, failed = side.rate * (1 - side.errors), side.rate * side.errors
        for code, rate in (("200", ok), ("503", failed)):
            labels = {**base, "response_code": code}
            series.append(Series("istio_requests_total", labels, counter(rate, side.still)))
        for le, share in side.latency.items():
            series.append(
                Series(
                    "istio_request_duration_milliseconds_bucket",
                    {**base, "le": le},
                    counter(side.rate * share, side.still),
                )
            )
    return series


def stack_config(namespace: str) -> dict[str, str]:
    return {
        f"{PROJECT}:ascendWeight": "20",
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
        f"{PROJECT}:bakeTime": "1h",  # the history holds 2 h of the recorded 20%
    }


def fleet_config() -> dict:
    """The fleet stack: both services at 20 %, each with its verified image."""
    member = {"ascendWeight": 20, "verifiedAscendImage": IMAGE}
    return {
        f"{PROJECT}:namespace": FLEET,
        f"{PROJECT}:bakeTime": "1h",  # inherited by both; the history holds 2 h of 20%
        f"{PROJECT}:services": {name: dict(member) for name in FLEET_SERVICES},
    }


def request_groups() -> dict:
    """The real rules' request groups (what the gate reads) of every scenario's stack, and of
    each service of the fleet."""
    groups = []
    members = [(load_settings(stack_config(ns)), ns) for ns in SCENARIOS]
    members += [(settings, FLEET) for settings in load_fleet(fleet_config())]
    for settings, stack in members:
        spec = prometheus_rule_spec(settings, stack)
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
    (tmp_path / f"Pulumi.{FLEET}.yaml").write_text(yaml.safe_dump({"config": fleet_config()}))
    return tmp_path


def gate(project: Path, url: str, stack: str, report: Path, *extra: str) -> int:
    argv = ["-C", str(project), "gate", "--stack", stack, "--prometheus", url, *extra]
    return main([*argv, "--at", str(END), "--markdown", str(report)])


def results(report: Path) -> dict[str, str]:
    rows = [line.split("|")[1:-1] for line in report.read_text().splitlines()]
    return {r[0].strip(): r[1].strip() for r in rows if len(r) == 6 and r[1].strip() in (
        "PASS", "FAIL", "NO_DATA")}  # fmt: skip


def details(out: str) -> dict[str, str]:
    """`{title: "STATUS: detail"}` from the table's detail lines on stdout."""
    titles = ("Requests in window", "5xx error ratio", "p99 latency", "Precision check")
    return {t: line.removeprefix(f"{t}: ") for line in out.splitlines() for t in titles if
            line.startswith(f"{t}: ")}  # fmt: skip


def test_healthy_ascend_passes_on_the_real_rules(project, prometheus, tmp_path, capsys) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-healthy", report) == 0
    assert set(results(report).values()) == {"PASS"}
    out = capsys.readouterr().out
    assert "0.40%" in out and "0.20%" in out  # the recorded 5xx ratios, 0..1 shown as %
    assert "0.667 s" in out and "0.487 s" in out  # Istio milliseconds recorded as seconds


def test_error_ratio_10x_nvidia_fails_on_the_real_rules(
    project, prometheus, tmp_path, capsys
) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-errors-10x", report) == 1
    assert results(report) == {
        "Requests in window": "PASS",
        "5xx error ratio": "FAIL",
        "p99 latency": "PASS",
        "Split landed": "PASS",
        "Bake time": "PASS",
        "Precision check": "PASS",
    }
    out = capsys.readouterr().out
    assert "| 5xx error ratio | FAIL | 5.00% | 0.50% | <= 1.50% (NVIDIA + 1.00 pp) |" in (
        report.read_text()
    )
    assert details(out)["5xx error ratio"] == "FAIL: Ascend's 5xx ratio exceeds NVIDIA's by 4.50 pp"


def test_p99_3x_nvidia_fails_on_the_real_rules(project, prometheus, tmp_path, capsys) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-p99-3x", report) == 1
    assert results(report) == {
        "Requests in window": "PASS",
        "5xx error ratio": "PASS",
        "p99 latency": "FAIL",
        "Split landed": "PASS",
        "Bake time": "PASS",
        "Precision check": "PASS",
    }
    out = capsys.readouterr().out
    assert "| p99 latency | FAIL | 1.500 s | 0.487 s | <= 0.730 s (1.5 x NVIDIA) |" in (
        report.read_text()
    )
    assert details(out)["p99 latency"] == "FAIL: Ascend's p99 is 3.08 x NVIDIA's"


@pytest.mark.parametrize(
    ("stack", "requests"),
    [
        ("e2e-no-ascend", "NO_DATA"),  # no Ascend series at all: nothing recorded
        ("e2e-idle-ascend", "FAIL"),  # counters scraped but flat: a real 0 req/s
    ],
)
def test_no_ascend_traffic_is_no_data_never_a_pass(
    project, prometheus, tmp_path, capsys, stack, requests
) -> None:
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, stack, report) == 1
    assert results(report) == {
        "Requests in window": requests,
        "5xx error ratio": "NO_DATA",
        "p99 latency": "NO_DATA",
        "Split landed": "FAIL",  # observed 0% of requests on Ascend at the recorded 20%
        "Bake time": "FAIL",  # no Ascend request in the bake window either
        "Precision check": "PASS",
    }
    found = details(capsys.readouterr().out)
    assert found["5xx error ratio"] == (  # the series the gate asked, named
        "NO_DATA: Ascend: no series hardware:inference_request_errors:ratio_rate5m"
        f'{{hardware="ascend", namespace="{stack}"}}'
    )
    assert found["p99 latency"] == (
        "NO_DATA: Ascend: no series hardware:inference_request_duration_seconds:p99_5m"
        f'{{hardware="ascend", namespace="{stack}"}}'
    )


def test_zero_over_zero_inside_the_window_is_no_data(project, prometheus, tmp_path, capsys) -> None:
    """Ascend's counters stand still for 15 of the 30 minutes: the raw 5xx / all ratio is
    0/0 there. The rules leave those minutes out; averaging the rest would pass, so the gate
    must see the hole and judge NO_DATA, which alone fails it."""
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "e2e-stalled", report) == 1
    assert results(report) == {
        "Requests in window": "PASS",  # 2 req/s for the other minutes
        "5xx error ratio": "NO_DATA",
        "p99 latency": "NO_DATA",
        "Split landed": "FAIL",  # half of Ascend's share went missing
        "Bake time": "PASS",
        "Precision check": "PASS",
    }
    found = details(capsys.readouterr().out)
    assert found["5xx error ratio"].startswith("NO_DATA: Ascend: sparse: samples in ")
    assert found["p99 latency"].startswith("NO_DATA: Ascend: sparse: samples in ")


def test_prometheus_down_is_a_one_line_error(project, tmp_path, capsys) -> None:
    require_prometheus()
    (tmp_path / "empty").mkdir()
    with prometheus_server(tmp_path / "empty", tmp_path) as url:
        assert gate(project, url, "e2e-healthy", tmp_path / "up.md") == 1  # up, but no data
    capsys.readouterr()
    report = tmp_path / "down.md"
    assert gate(project, url, "e2e-healthy", report) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"error: Prometheus at {url} is unreachable: connection refused"
    ]
    assert captured.out == ""
    assert not report.exists()


def test_each_service_of_a_fleet_is_gated_on_its_own_series(
    project, prometheus, tmp_path, capsys
) -> None:
    """chat is healthy, embedder errs 10x in the same namespace: chat's gate passes."""
    report = tmp_path / "chat.md"
    assert gate(project, prometheus, FLEET, report, "--service", "chat") == 0
    assert set(results(report).values()) == {"PASS"}
    out = capsys.readouterr().out
    assert out.startswith("Promotion gate for stack e2e-fleet, service chat (namespace e2e-fleet")
    assert "0.40%" in out and "0.20%" in out  # chat's own 5xx ratios, not embedder's 5%
    report = tmp_path / "embedder.md"
    assert gate(project, prometheus, FLEET, report, "--service", "embedder") == 1
    assert results(report)["5xx error ratio"] == "FAIL"
    assert "| 5xx error ratio | FAIL | 5.00% | 0.50% |" in report.read_text()


def test_a_fleet_without_service_judges_every_service_on_its_own(
    project, prometheus, tmp_path, capsys
) -> None:
    """What the pull-request pipeline runs (`gate --stack S`): one report per service; the
    fleet fails because embedder does, and chat's report still passes."""
    report = tmp_path / "fleet.md"
    assert gate(project, prometheus, FLEET, report, "-o", "json") == 1
    doc = json.loads(capsys.readouterr().out)
    verdicts = {(s["stack"], s["service"]): s["passed"] for s in doc["stacks"]}
    assert verdicts == {(FLEET, "chat"): True, (FLEET, "embedder"): False}
    text = report.read_text()
    assert "### Promotion gate: PASSED\n\nStack `e2e-fleet`, service `chat` " in text
    assert "### Promotion gate: FAILED\n\nStack `e2e-fleet`, service `embedder` " in text
