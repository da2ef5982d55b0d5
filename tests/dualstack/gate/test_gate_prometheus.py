"""The gate, promote and rollback against a real Prometheus over backfilled history.

One server per module serves every scenario side by side, one namespace each; the recorded
series (components.monitoring.metric_names) are backfilled directly with chosen values.
Queries run at an explicit time, END, inside the data.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import yaml

from components.monitoring.metric_names import (
    ASCEND_WEIGHT,
    ERROR_RATIO,
    LATENCY_P99,
    PRECISION_PASSED,
    REQUEST_RATE,
)
from components.settings import PROJECT
from dualstack.cli import main
from dualstack.repo.stackfile import read_config
from tests.conftest import git
from tests.support.prometheus_server import Series, constant, prometheus_over

START = 1_699_999_980  # a whole minute, so the 1-minute count steps line up with END
END = START + 2 * 3600
IMAGE = "registry/inference-service:v1.2.3-npu"
FAILED_IMAGE = "registry/inference-service:v1.2.4-npu"

HEALTHY = {
    "nvidia": {"rate": 8.0, "errors": 0.002, "p99": 0.8},
    "ascend": {"rate": 2.0, "errors": 0.004, "p99": 1.0},
}
SCENARIOS: dict[str, dict[str, dict[str, float]]] = {
    "healthy": HEALTHY,
    "errors-10x": {
        "nvidia": {"rate": 8.0, "errors": 0.005, "p99": 0.8},
        "ascend": {"rate": 2.0, "errors": 0.05, "p99": 1.0},
    },
    "p99-3x": {"nvidia": HEALTHY["nvidia"], "ascend": {**HEALTHY["ascend"], "p99": 2.4}},
    "no-ascend": {"nvidia": HEALTHY["nvidia"]},
    # The rules divide 5xx by all requests: with no requests that is 0/0 = NaN.
    "nan": {
        "nvidia": HEALTHY["nvidia"],
        "ascend": {"rate": 0.0, "errors": math.nan, "p99": math.nan},
    },
    "inf": {"nvidia": HEALTHY["nvidia"], "ascend": {**HEALTHY["ascend"], "p99": math.inf}},
    "few-requests": {"nvidia": HEALTHY["nvidia"], "ascend": {**HEALTHY["ascend"], "rate": 0.05}},
    # The prod stack file's namespace, at its 5%: 0.5 of 10 req/s on Ascend.
    "inference": {
        "nvidia": {**HEALTHY["nvidia"], "rate": 9.5},
        "ascend": {**HEALTHY["ascend"], "rate": 0.5},
    },
    "inference-staging": {  # the staging stack file's namespace
        "nvidia": {"rate": 8.0, "errors": 0.001, "p99": 0.8},
        "ascend": {"rate": 2.0, "errors": 0.01 + 0.001 + 0.0005, "p99": 1.0},
    },
}
OTHER_NAMESPACE = "inference-other"
ZERO = "zero"
"""Ascend at 0%: no Ascend series at all, the rules record weight 0."""
RECORDED_WEIGHT = {"inference": 0.05, ZERO: 0.0}
"""The route weight the deployed rules record per namespace: 20% unless named here, none in
`no-ascend` (rules not deployed)."""
METRICS = {"rate": REQUEST_RATE, "errors": ERROR_RATIO, "p99": LATENCY_P99}


def first_sample(namespace: str) -> int:
    """Where a namespace's history starts: prod's (`inference`) a day earlier, so its 5% has
    baked for the default bakeTime (24h) when promote runs at END."""
    return START - 24 * 3600 if namespace == "inference" else START


def history() -> list[Series]:
    series = []
    for namespace, sides in SCENARIOS.items():
        for hardware, values in sides.items():
            for key, metric in METRICS.items():
                labels = {"hardware": hardware, "namespace": namespace}
                samples = constant(values[key], first_sample(namespace), END)
                series.append(Series(metric, labels, samples))
    # partial-nan: healthy except five minutes of 0/0 inside the last 30 minutes.
    for hardware, values in HEALTHY.items():
        labels = {"hardware": hardware, "namespace": "partial-nan"}
        for key, metric in METRICS.items():
            samples = constant(values[key], START, END)
            if hardware == "ascend" and key == "errors":
                samples = [(t, math.nan if END - 900 <= t < END - 600 else v) for t, v in samples]
            series.append(Series(metric, labels, samples))
    # stopped: healthy until 11 minutes before END, then nothing (a dead rule evaluator).
    # gap: healthy except ten minutes without samples inside the last 30 minutes.
    for namespace, keep in {
        "stopped": lambda t: t <= END - 660,
        "gap": lambda t: not END - 1500 <= t < END - 900,
    }.items():
        for hardware, values in HEALTHY.items():
            labels = {"hardware": hardware, "namespace": namespace}
            for key, metric in METRICS.items():
                samples = [(t, v) for t, v in constant(values[key], START, END) if keep(t)]
                series.append(Series(metric, labels, samples))
    # The route weight the deployed rules record (as the stack files say; none in no-ascend).
    for namespace in [*SCENARIOS, "partial-nan", "gap", ZERO]:
        if namespace != "no-ascend":
            weight = RECORDED_WEIGHT.get(namespace, 0.2)
            labels = {"hardware": "ascend", "namespace": namespace}
            samples = constant(weight, first_sample(namespace), END)
            series.append(Series(ASCEND_WEIGHT, labels, samples))
    stopped = [(t, v) for t, v in constant(0.2, START, END) if t <= END - 660]
    series.append(Series(ASCEND_WEIGHT, {"hardware": "ascend", "namespace": "stopped"}, stopped))
    for key, metric in METRICS.items():
        labels = {"hardware": "nvidia", "namespace": ZERO}
        series.append(Series(metric, labels, constant(HEALTHY["nvidia"][key], START, END)))
    # Pushed precision results; the Job's grouping label `namespace` names the stack's namespace.
    # The same image failed in another namespace (another stack): that must not fail `healthy`.
    for image, namespace, passed in [
        (IMAGE, "healthy", 1),
        (FAILED_IMAGE, "healthy", 0),
        (IMAGE, OTHER_NAMESPACE, 0),
    ]:
        labels = {"ascend_image": image, "job": "precision", "namespace": namespace}
        series.append(Series(PRECISION_PASSED, labels, constant(passed, START, END)))
    return series


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> str:
    with prometheus_over(history(), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def write_stack(root: Path, name: str, namespace: str, weight: int = 20, **extra) -> None:
    config = {
        f"{PROJECT}:ascendWeight": str(weight),
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
        f"{PROJECT}:bakeTime": "1h",  # the history holds 2 h; test_gate_split_bake has days
        **{f"{PROJECT}:{k}": v for k, v in extra.items()},
    }
    (root / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": config}))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project folder with one stack per scenario (stack name = namespace)."""
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    for namespace in [*SCENARIOS, "partial-nan", "stopped", "gap"]:
        write_stack(tmp_path, namespace, namespace)
    write_stack(tmp_path, ZERO, ZERO, weight=0)
    return tmp_path


def gate(project: Path, url: str, stack: str, *extra: str) -> int:
    argv = ["-C", str(project), "gate", "--stack", stack, "--prometheus", url, "--at", str(END)]
    return main([*argv, *extra])


def statuses(markdown: Path) -> dict[str, str]:
    """{criterion title: result} from the Markdown report's table."""
    rows = [line.split("|")[1:-1] for line in markdown.read_text().splitlines()]
    return {
        r[0].strip(): r[1].strip()
        for r in rows
        if len(r) == 6 and r[1].strip() != "Result" and not r[1].startswith("---")
    }


def test_healthy_ascend_passes_every_criterion(project, prometheus, tmp_path, capsys):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "healthy", "--markdown", str(report)) == 0
    assert statuses(report) == {
        "Requests in window": "PASS",
        "5xx error ratio": "PASS",
        "p99 latency": "PASS",
        "Split landed": "PASS",
        "Bake time": "PASS",
        "Precision check": "PASS",
    }
    out = capsys.readouterr().out
    assert "PASSED" in out
    # 2 req/s over 30 min: 30 one-minute steps in (END - 30m, END], each 60 s x 2 req/s.
    assert "3,600" in out
    assert "0.40%" in out and "0.20%" in out
    assert "1.000 s" in out and "0.800 s" in out
    assert f"{PRECISION_PASSED} is 1" in out


def test_the_markdown_charts_have_at_most_30_points(project, prometheus, tmp_path):
    """docs/workflow.md: the charts plot at most 30 points from query_range over the window
    (both ends of the range included), here over 30m and 2h of a real Prometheus."""
    for window in ("30m", "2h"):
        report = tmp_path / f"gate-{window}.md"
        gate(project, prometheus, "healthy", "--window", window, "--markdown", str(report))
        text = report.read_text()
        axes = [line for line in text.splitlines() if line.startswith('    x-axis "UTC" [')]
        lines = [line for line in text.splitlines() if line.startswith("    line [")]
        assert len(axes) == 2 and len(lines) == 6  # NVIDIA, Ascend, the limit: per chart
        for line in [*axes, *lines]:
            count = line.count(",") + 1
            assert 20 <= count <= 30, (window, line)


def test_every_chart_draws_the_gates_limit(project, prometheus, tmp_path):
    """The third line is the limit Ascend is judged against at each time: NVIDIA's 0.20% 5xx
    ratio + the 1 pp margin, NVIDIA's 0.8 s p99 x 1.5; the title says which line it is."""
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "healthy", "--markdown", str(report)) == 0
    text = report.read_text()
    titles = [line.strip() for line in text.splitlines() if line.startswith("    title ")]
    assert titles == [
        'title "5xx error ratio (%): NVIDIA 1st line, Ascend 2nd, Ascend\'s limit 3rd"',
        'title "p99 latency (s): NVIDIA 1st line, Ascend 2nd, Ascend\'s limit 3rd"',
    ]
    lines = [line for line in text.splitlines() if line.startswith("    line [")]
    values = [set(line.removeprefix("    line [").removesuffix("]").split(", ")) for line in lines]
    assert values == [{"0.2"}, {"0.4"}, {"1.2"}, {"0.8"}, {"1"}, {"1.2"}]
    # the y-axis reaches above the limit, so the line is drawn inside the chart
    assert '    y-axis "%" 0 --> 1.32' in text


@pytest.mark.parametrize(
    ("stack", "failing", "status", "why"),
    [
        ("errors-10x", "5xx error ratio", "FAIL", "exceeds NVIDIA's by 4.50 pp"),
        ("p99-3x", "p99 latency", "FAIL", "3.00 x NVIDIA's"),
        ("no-ascend", "5xx error ratio", "NO_DATA", "Ascend: no series"),
        ("nan", "5xx error ratio", "NO_DATA", "NaN from 0/0"),
        ("partial-nan", "5xx error ratio", "NO_DATA", "NaN from 0/0"),
        ("inf", "p99 latency", "NO_DATA", "+Inf"),
        ("few-requests", "Requests in window", "FAIL", "too few requests on Ascend"),
        ("inference-staging", "5xx error ratio", "FAIL", "exceeds NVIDIA's by 1.05 pp"),
    ],
)
def test_unhealthy_ascend_fails_closed(
    project, prometheus, tmp_path, capsys, stack, failing, status, why
):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, stack, "--markdown", str(report)) == 1
    assert statuses(report)[failing] == status
    out = capsys.readouterr().out
    assert "FAILED" in out
    assert why in out


def test_no_ascend_traffic_is_no_data_on_every_traffic_criterion(project, prometheus, tmp_path):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "no-ascend", "--markdown", str(report)) == 1
    assert statuses(report) == {
        "Requests in window": "NO_DATA",
        "5xx error ratio": "NO_DATA",
        "p99 latency": "NO_DATA",
        "Split landed": "FAIL",  # 0% observed against the stack file's 20%
        "Bake time": "NO_DATA",  # no recorded weight: nothing proves the rung baked
        "Precision check": "PASS",
    }


def test_nan_from_zero_traffic_never_passes(project, prometheus, tmp_path):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "nan", "--markdown", str(report)) == 1
    result = statuses(report)
    assert result["Requests in window"] == "FAIL"  # a real 0: below the minimum
    assert result["5xx error ratio"] == "NO_DATA"
    assert result["p99 latency"] == "NO_DATA"


def test_absolute_p99_slo_lets_a_slower_ascend_pass(project, prometheus):
    write_stack(project, "p99-3x", "p99-3x", slo=json.dumps({"p99SloSeconds": 2.5}))
    assert gate(project, prometheus, "p99-3x") == 0
    write_stack(project, "p99-3x", "p99-3x", slo=json.dumps({"p99SloSeconds": 2.0}))
    assert gate(project, prometheus, "p99-3x") == 1


def test_a_failure_pushed_for_another_namespace_does_not_fail_the_gate(
    project, prometheus, tmp_path, capsys
):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "healthy", "--markdown", str(report)) == 0
    assert statuses(report)["Precision check"] == "PASS"
    assert f"verifiedAscendImage matches and {PRECISION_PASSED} is 1" in capsys.readouterr().out
    write_stack(project, OTHER_NAMESPACE, OTHER_NAMESPACE, weight=0)
    assert gate(project, prometheus, OTHER_NAMESPACE) == 1
    assert f"the latest pushed {PRECISION_PASSED} for {IMAGE} is 0" in capsys.readouterr().out


def test_unverified_image_fails_precision(project, prometheus, tmp_path, capsys):
    write_stack(project, "healthy", "healthy", ascend=json.dumps({"image": FAILED_IMAGE}))
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "healthy", "--markdown", str(report)) == 1
    assert statuses(report)["Precision check"] == "FAIL"
    assert "is not the verified image" in capsys.readouterr().out


def test_pushed_failure_overrides_the_recorded_verification(project, prometheus, capsys):
    write_stack(
        project,
        "healthy",
        "healthy",
        ascend=json.dumps({"image": FAILED_IMAGE}),
        verifiedAscendImage=FAILED_IMAGE,
    )
    assert gate(project, prometheus, "healthy") == 1
    assert (
        f"the latest pushed {PRECISION_PASSED} for {FAILED_IMAGE} is 0" in capsys.readouterr().out
    )


def test_first_step_from_zero_rests_on_precision(project, prometheus, capsys):
    assert gate(project, prometheus, ZERO) == 0
    out = capsys.readouterr().out
    assert "NO_DATA (not required)" in out
    assert "Ascend serves 0% of traffic" in out


def test_window_ending_before_the_data_has_no_data(project, prometheus):
    argv = ["-C", str(project), "gate", "--stack", "healthy", "--prometheus", prometheus]
    assert main([*argv, "--at", str(START - 3600)]) == 1


@pytest.mark.parametrize(
    ("stack", "extra", "why"),
    [
        # the trial's case: a 1-hour window ending an hour after the data stopped
        (
            "healthy",
            ["--window", "1h", "--at", str(END + 3600)],
            "stale: newest sample 1h 0m before the window end",
        ),
        # a run "now" while the rule evaluator stopped 11 minutes ago
        ("stopped", [], "stale: newest sample 11m 0s before the window end (bound 5m 0s)"),
        ("gap", [], "sparse: samples in 73% of the window (bound 90%)"),
    ],
)
def test_stale_or_sparse_data_is_no_data(project, prometheus, tmp_path, capsys, stack, extra, why):
    report = tmp_path / "gate.md"
    argv = ["-C", str(project), "gate", "--stack", stack, "--prometheus", prometheus]
    extra = extra if "--at" in extra else [*extra, "--at", str(END)]
    assert main([*argv, *extra, "--markdown", str(report)]) == 1
    result = statuses(report)
    assert [result[k] for k in ("Requests in window", "5xx error ratio", "p99 latency")] == [
        "NO_DATA"
    ] * 3
    assert why in capsys.readouterr().out


def test_staleness_and_coverage_bounds_are_options(project, prometheus):
    assert (
        gate(project, prometheus, "stopped", "--max-staleness", "15m", "--min-coverage", "60") == 0
    )
    assert gate(project, prometheus, "stopped", "--max-staleness", "15m") == 1  # 70% < 90%
    assert gate(project, prometheus, "gap", "--min-coverage", "60") == 0


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--max-staleness", "soon"], "argument --max-staleness: 'soon': expected a duration"),
        (["--max-staleness", "2h"], "--max-staleness 2h: expected more than 0 and at most"),
        (["--min-coverage", "0"], "--min-coverage 0: expected 0 < percent <= 100"),
    ],
)
def test_bad_bounds_are_one_line_errors(project, capsys, option, message):
    assert gate(project, "http://127.0.0.1:1", "healthy", *option) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_header_states_the_weight_the_data_was_taken_at(project, prometheus, capsys):
    assert gate(project, prometheus, "healthy") == 0
    assert "(namespace healthy, Ascend at 20%): PASSED" in capsys.readouterr().out
    # A step written to the file but not deployed: the data is still from 20%.
    write_stack(project, "healthy", "healthy", weight=50)
    gate(project, prometheus, "healthy")
    assert "data taken at 20% Ascend; the stack file says 50%" in capsys.readouterr().out
    assert gate(project, prometheus, "no-ascend") == 1
    assert "Ascend at 20% per the stack file (no recorded route weight)" in capsys.readouterr().out


def test_prometheus_down_is_one_line_error(project, capsys):
    from tests.support.prometheus_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert gate(project, url, "healthy") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: Prometheus at {url} is unreachable: connection refused")


def test_promote_with_passing_gate_moves_prod_one_step(git_repo, prometheus, capsys):
    before = (git_repo / "Pulumi.prod.yaml").read_text()
    argv = ["-C", str(git_repo), "promote", "--stack", "prod", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 0
    out = capsys.readouterr().out
    assert read_config(git_repo, "prod")[f"{PROJECT}:ascendWeight"] == "20"
    assert "prod: Ascend weight 5% -> 20% (ladder step 2 of 5)" in out
    assert "### Promotion gate: PASSED" in out
    assert "Ascend weight: 5% -> 20%" in out  # the preview, against HEAD
    changed = git(git_repo, "diff", "--numstat").split()
    assert changed[:2] == ["1", "1"]
    assert (
        before.replace('ascendWeight: "5"', 'ascendWeight: "20"')
        == (git_repo / "Pulumi.prod.yaml").read_text()
    )


def test_promote_with_failing_gate_changes_nothing(git_repo, prometheus, capsys):
    argv = ["-C", str(git_repo), "promote", "--stack", "staging", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 1
    assert "error: gate FAILED: stack staging stays at 20%" in capsys.readouterr().err
    assert git(git_repo, "status", "--porcelain") == ""
