"""`gate --wait DURATION` against a real Prometheus whose history ends now: the gate judges
again over the window ending at each evaluation until it passes (0), a criterion fails that
waiting cannot mend (1), or the time runs out still pending (3).

The history is written when the module's Prometheus starts (`NOW`, a whole minute), so the
window ending "now" lies inside it: `live` is healthy and baked; `baking` is healthy but its
20% rung turns baked a few seconds after the server is up (its bakeTime is chosen so); `old`
ended two hours ago (every traffic series stale at now: NO_DATA).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.monitoring.metric_names import ASCEND_WEIGHT, ERROR_RATIO, LATENCY_P99, REQUEST_RATE
from components.settings import PROJECT
from dualstack.cli import main
from tests.conftest import REPO
from tests.support.prometheus_server import Series, constant, prometheus_over
from tests.support.watching import watched

IMAGE = "registry/inference-service:v1.2.3-npu"
HEALTHY = {
    "nvidia": {REQUEST_RATE: 8.0, ERROR_RATIO: 0.002, LATENCY_P99: 0.8},
    "ascend": {REQUEST_RATE: 2.0, ERROR_RATIO: 0.004, LATENCY_P99: 1.0},
}
FLIP_AFTER_S = 30
"""Seconds after the history is written at which `baking`'s rung has held its bakeTime."""


def history(now: int) -> tuple[list[Series], str, float]:
    """The three namespaces' series, `baking`'s bakeTime and when it turns baked."""
    series = []
    spans = {
        "live": (now - 7200, now),
        "baking": (now - 7200, now),
        "old": (now - 14400, now - 7200),
    }
    for namespace, (start, end) in spans.items():
        for hardware, values in HEALTHY.items():
            for metric, value in values.items():
                labels = {"hardware": hardware, "namespace": namespace}
                series.append(Series(metric, labels, constant(value, start, end)))
        weight = {"hardware": "ascend", "namespace": namespace}
        if namespace == "baking":  # 5% until 40 minutes ago, 20% since
            changed = now - 2400
            samples = [(t, 0.05 if t < changed else 0.2) for t, _ in constant(0, start, end)]
        else:
            samples = constant(0.2, start, end)
        series.append(Series(ASCEND_WEIGHT, weight, samples))
    # baked once the last 5% sample (one step before `changed`) has left the bake window,
    # FLIP_AFTER_S seconds from the time the history was written (dualstack.gate.bake)
    flips = int(time.time()) + FLIP_AFTER_S
    bake = flips - (changed - 60)
    return series, f"{bake // 60}m{bake % 60}s" if bake % 60 else f"{bake // 60}m", flips


@pytest.fixture(scope="module")
def live(tmp_path_factory) -> tuple[str, str, float]:
    """(Prometheus URL, `baking`'s bakeTime, the time `baking` turns baked)."""
    now = int(time.time()) // 60 * 60
    series, bake, flips = history(now)
    with prometheus_over(series, tmp_path_factory.mktemp("prometheus")) as url:
        yield url, bake, flips


def write_stack(root: Path, namespace: str, **extra) -> None:
    config = {
        f"{PROJECT}:ascendWeight": "20",
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
        f"{PROJECT}:bakeTime": "1h",
        **{f"{PROJECT}:{k}": v for k, v in extra.items()},
    }
    (root / f"Pulumi.{namespace}.yaml").write_text(yaml.safe_dump({"config": config}))


@pytest.fixture
def project(tmp_path: Path, live) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    write_stack(tmp_path, "live")
    write_stack(tmp_path, "old")
    write_stack(tmp_path, "baking", bakeTime=live[1])
    return tmp_path


def gate(project: Path, url: str, stack: str, *extra: str) -> int:
    return main(["-C", str(project), "gate", "-s", stack, "--prometheus", url, *extra])


def document(capsys) -> tuple[dict, str]:
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    schema = json.loads((REPO / "docs/schemas/dualstack-gate-v1.json").read_text())
    jsonschema.validate(doc, schema)
    return doc, captured.err


def test_a_gate_that_passes_ends_the_wait_at_once(project, live, capsys):
    started = time.monotonic()
    assert gate(project, live[0], "live", "--wait", "2m", "--interval", "5", "-o", "json") == 0
    assert time.monotonic() - started < 5  # no second evaluation
    doc, err = document(capsys)
    assert doc["wait"]["outcome"] == "passed" and doc["wait"]["evaluations"] == 1
    assert doc["passed"] is True and "gate: pending" not in err


def test_a_failure_waiting_cannot_mend_ends_the_wait_with_exit_1(project, live, capsys):
    write_stack(project, "live", ascend=json.dumps({"image": "registry/x:v9.9.9-npu"}))
    started = time.monotonic()
    assert gate(project, live[0], "live", "--wait", "2m", "--interval", "5") == 1
    assert time.monotonic() - started < 5
    out = capsys.readouterr().out
    assert "Precision check: FAIL: served registry/x:v9.9.9-npu is not the verified image" in out


def test_still_pending_when_the_time_is_up_is_exit_3(project, live, capsys):
    started = time.monotonic()
    code = gate(project, live[0], "old", "--wait", "3s", "--interval", "1", "-o", "json")
    waited = time.monotonic() - started
    assert code == 3
    assert 3 <= waited < 15  # bounded: the wait, plus one evaluation
    doc, err = document(capsys)
    assert doc["wait"]["outcome"] == "timed-out" and doc["wait"]["evaluations"] >= 2
    assert doc["passed"] is False
    pending = [line for line in err.splitlines() if line.startswith("gate: pending (old: ")]
    assert pending and "requests NO_DATA" in pending[0] and "left of --wait" in pending[0]
    assert err.splitlines()[-1].startswith("gate: still pending after --wait 3s (")


def test_a_rung_still_baking_is_waited_for_until_it_passes(project, live, capsys):
    url, _bake, flips = live
    before = time.time()
    assert gate(project, url, "baking", "--wait", "2m", "--interval", "2", "-o", "json") == 0
    assert time.time() >= flips - 2  # not before the rung had held its bakeTime
    doc, err = document(capsys)
    assert doc["wait"]["outcome"] == "passed"
    if before < flips - 5:  # the server was up in time to see the rung still baking
        assert doc["wait"]["evaluations"] >= 2
        assert "gate: pending (baking: bake FAIL)" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--wait", "8d"], "--wait 8d: expected more than 0 and at most 7d"),
        (["--wait", "1m", "--at", "1700000000"], "--wait judges the window ending at each"),
        (["--wait", "soon"], "argument --wait: 'soon': expected a duration"),
    ],
)
def test_bad_wait_options_are_one_line(project, live, capsys, extra, message):
    assert gate(project, live[0], "live", *extra) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err and err.count("\n") == 1


def test_status_watch_shows_the_split_the_bake_and_the_gate_verdict(project, live):
    """`status --watch --prometheus`: each drawing carries the rung, the observed split, the
    bake and the gate's verdict now, for the healthy stack and the stale one."""
    url = live[0]
    argv = ["status", "-s", "live", "-s", "old", "--prometheus", url, "--watch", "--interval", "1"]
    code, out = watched(argv, project, drawings=2, terminal=True)
    assert code == 0
    last = out.split("\x1b[H\x1b[2J")[-1]
    assert "  split         PASS: observed 20.00% of requests on Ascend, expected 20.00%" in last
    assert "  bake          PASS: held for the whole 1h with" in last
    assert "  gate          PASSED (judged step 20% -> 50%)\n" in last
    old = last.split("\nold\n", 1)[1]
    assert "  gate          FAILED: requests NO_DATA, error-ratio NO_DATA" in old
