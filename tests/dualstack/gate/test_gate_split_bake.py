"""Did the split land, and did the rung bake? The gate against a real Prometheus over a
backfilled day and a half of recorded series, one namespace per scenario.

The recorded weight (and mirror) are what the deployed PrometheusRule would write; request
rates are per-backend `hardware:inference_requests:rate5m`. Queries run at END, inside the
data; the default bakeTime is 24h and the gate's window 30m.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from components.monitoring.metric_names import (
    ASCEND_MIRROR,
    ASCEND_WEIGHT,
    ERROR_RATIO,
    LATENCY_P99,
    REQUEST_RATE,
)
from components.settings import PROJECT
from dualstack.cli import main
from tests.conftest import REPO, git
from tests.support.prometheus_server import Series, prometheus_over

END = 1_700_200_020  # a whole minute
START = END - 30 * 3600
IMAGE = "registry/inference-service:v1.2.3-npu"
HOUR = 3600


def steps(*spans: tuple[float, float]) -> list[tuple[float, float]]:
    """One sample a minute from START to END: `spans` are (from time, value), latest last."""
    samples = []
    for i in range(int((END - START) // 60) + 1):
        at = START + i * 60
        value = [v for since, v in spans if at >= since][-1]
        samples.append((at, value))
    return samples


def rates(ascend_share: list[tuple[float, float]], total: float = 10.0):
    """(nvidia, ascend) rate spans for an Ascend share over time, `total` req/s."""
    return (
        [(t, total * (1 - share)) for t, share in ascend_share],
        [(t, total * share) for t, share in ascend_share],
    )


# namespace: recorded weight spans, recorded mirror spans (None: not recorded), Ascend share
# of counted requests over time (None: no Ascend series at all), Ascend 5xx ratio.
SCENARIOS = {
    "landed": ([(START, 0.2)], None, [(START, 0.2)], 0.004),
    # 5% recorded and serving, for a day and more; the stack file says 20%: merged, not deployed
    "not-deployed": ([(START, 0.05)], None, [(START, 0.05)], 0.004),
    "never-landed": ([(START, 0.2)], None, [(START, 0.0)], 0.004),
    "never-landed-absent": ([(START, 0.2)], None, None, 0.004),
    "changed": (
        [(START, 0.05), (END - 600, 0.2)],
        None,
        [(START, 0.05), (END - 600, 0.2)],
        0.004,
    ),
    "recent": (
        [(START, 0.05), (END - 6 * HOUR, 0.2)],
        None,
        [(START, 0.05), (END - 6 * HOUR, 0.2)],
        0.004,
    ),
    "decrease": ([(START, 0.2), (END - HOUR, 0.5)], None, [(START, 0.2), (END - HOUR, 0.5)], 0.004),
    # The shadow rung: weight 0, 10% mirrored; Ascend counts the copies: 1 per 10 originals.
    "mirror": ([(START, 0.0)], [(START, 0.1)], [(START, 1 / 11)], 0.004),
    "mirror-errors": ([(START, 0.0)], [(START, 0.1)], [(START, 1 / 11)], 0.08),
    "mirror-recent": (
        [(START, 0.0)],
        [(START, 0.0), (END - 2 * HOUR, 0.1)],
        [(START, 0.0), (END - 2 * HOUR, 1 / 11)],
        0.004,
    ),
}
WEIGHTS = {  # what each stack file says
    "landed": 20,
    "not-deployed": 20,
    "never-landed": 20,
    "never-landed-absent": 20,
    "changed": 20,
    "recent": 20,
    "decrease": 20,  # a pull request lowering the deployed 50% to 20%
    "mirror": 0,
    "mirror-errors": 0,
    "mirror-recent": 0,
    "no-data": 20,
}


FLEET = "fleet-ns"
FLEET_MEMBERS = {
    # Two services in one namespace, told apart by the `service` label: chat's 20% landed and
    # held for a day; embedder's file says 20% but its rules record 5% and Ascend serves none
    # of its requests. Selected by namespace alone, chat would read a rung that moved between
    # 5% and 20%, 10% on Ascend, and a weight that never held.
    "chat": ([(START, 0.2)], [(START, 0.2)]),
    "embedder": ([(START, 0.05)], [(START, 0.0)]),
}


def fleet_history() -> list[Series]:
    series = []
    for member, (weight, share) in FLEET_MEMBERS.items():
        scope = {"namespace": FLEET, "service": member}
        series.append(Series(ASCEND_WEIGHT, {"hardware": "ascend", **scope}, steps(*weight)))
        for hardware, rate in zip(("nvidia", "ascend"), rates(share), strict=True):
            labels = {"hardware": hardware, **scope}
            series.append(Series(REQUEST_RATE, labels, steps(*rate)))
            series.append(Series(ERROR_RATIO, labels, steps((START, 0.003))))
            series.append(Series(LATENCY_P99, labels, steps((START, 0.9))))
    return series


def write_fleet(root: Path) -> None:
    member = {"ascendWeight": 20, "verifiedAscendImage": IMAGE}
    config = {
        f"{PROJECT}:namespace": FLEET,
        f"{PROJECT}:services": {name: dict(member) for name in FLEET_MEMBERS},
    }
    (root / f"Pulumi.{FLEET}.yaml").write_text(yaml.safe_dump({"config": config}))


def history() -> list[Series]:
    series = fleet_history()
    for namespace, (weight, mirror, share, errors) in SCENARIOS.items():
        ascend_labels = {"hardware": "ascend", "namespace": namespace}
        series.append(Series(ASCEND_WEIGHT, ascend_labels, steps(*weight)))
        if mirror is not None:
            series.append(Series(ASCEND_MIRROR, ascend_labels, steps(*mirror)))
        nvidia_rate, ascend_rate = rates(share or [(START, 0.0)])
        sides = {"nvidia": (nvidia_rate, 0.002, 0.8)}
        if share is not None:
            sides["ascend"] = (ascend_rate, errors, 1.0)
        for hardware, (rate, error_ratio, p99) in sides.items():
            labels = {"hardware": hardware, "namespace": namespace}
            series.append(Series(REQUEST_RATE, labels, steps(*rate)))
            series.append(Series(ERROR_RATIO, labels, steps((START, error_ratio))))
            series.append(Series(LATENCY_P99, labels, steps((START, p99))))
    return series


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> str:
    with prometheus_over(history(), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def write_stack(root: Path, namespace: str, **extra) -> None:
    """The stack file of a scenario: its weight, 10% mirrored at the shadow rung; `extra`
    config keys win (`mirrorPercent="20"`)."""
    config = {
        f"{PROJECT}:ascendWeight": str(WEIGHTS[namespace]),
        f"{PROJECT}:namespace": namespace,
        f"{PROJECT}:verifiedAscendImage": IMAGE,
    }
    if namespace.startswith("mirror"):
        config[f"{PROJECT}:mirrorPercent"] = "10"
    config.update({f"{PROJECT}:{key}": value for key, value in extra.items()})
    (root / f"Pulumi.{namespace}.yaml").write_text(yaml.safe_dump({"config": config}))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "Pulumi.yaml").write_text(f"name: {PROJECT}\nruntime: python\n")
    for namespace in WEIGHTS:
        write_stack(tmp_path, namespace)
    write_fleet(tmp_path)
    return tmp_path


def gate(project: Path, url: str, stack: str, *extra: str) -> int:
    argv = ["-C", str(project), "gate", "--stack", stack, "--prometheus", url, "--at", str(END)]
    return main([*argv, *extra])


def lines(out: str) -> dict[str, str]:
    """{criterion title: "STATUS: detail"} from the report's detail lines."""
    titles = (
        "Requests in window",
        "5xx error ratio",
        "p99 latency",
        "Split landed",
        "Bake time",
        "Precision check",
    )
    return {
        title: line.removeprefix(f"{title}: ")
        for line in out.splitlines()
        for title in titles
        if line.startswith(f"{title}: ")
    }


def rows(out: str) -> dict[str, list[str]]:
    """{criterion title: the table's cells after the title} from the terminal table."""
    found = {}
    for line in out.splitlines():
        for title in ("Split landed", "Bake time"):
            if line.startswith(title + "  "):
                found[title] = line[len(title) :].split()
    return found


def test_a_landed_split_that_baked_passes(project, prometheus, capsys):
    assert gate(project, prometheus, "landed") == 0
    out = capsys.readouterr().out
    found = lines(out)
    assert found["Split landed"] == (
        "PASS: observed 20.00% of requests on Ascend, expected 20.00% at the recorded rung 20%"
    )
    assert found["Bake time"] == "PASS: held for the whole 24h with 864,000 requests"
    assert rows(out)["Split landed"][:3] == ["PASS", "20.00%", "80.00%"]
    assert "Note: Judged step: 20% -> 50%." in out


@pytest.mark.parametrize("stack", ["never-landed", "never-landed-absent"])
def test_a_split_that_never_landed_fails_with_observed_and_expected(
    project, prometheus, capsys, stack
):
    """Weight 20% recorded for a day, no request on Ascend (a flat 0, or no series at all)."""
    assert gate(project, prometheus, stack) == 1
    out = capsys.readouterr().out
    assert lines(out)["Split landed"].startswith(
        "FAIL: observed 0.00% of requests on Ascend, expected 20.00% at the recorded rung 20% "
        "(+/- 5.00 pp): the configured split did not land"
    )
    assert rows(out)["Split landed"] == ["FAIL", "0.00%", "100.00%", "20.00%", "+/-", "5.00", "pp"]
    assert "FAILED" in out


def test_a_weight_change_inside_the_window_is_judged_on_neither_rung(project, prometheus, capsys):
    assert gate(project, prometheus, "changed") == 1
    found = lines(capsys.readouterr().out)
    assert found["Split landed"] == (
        "NO_DATA: the recorded weight moved between 5% and 20% inside the window: the data "
        "mixes two rungs; judge a window that starts after the change"
    )
    assert found["Bake time"] == (
        "FAIL: the recorded rung is 20% only for the last 10m 0s; the bake time is 24h: "
        "23h 50m left"
    )


def test_a_bake_window_that_started_too_recently_fails(project, prometheus, capsys):
    assert gate(project, prometheus, "recent") == 1
    out = capsys.readouterr().out
    found = lines(out)
    assert found["Split landed"].startswith("PASS: observed 20.00%")
    assert found["Bake time"] == (
        "FAIL: the recorded rung is 20% only for the last 6h 0m; the bake time is 24h: 18h 0m left"
    )
    assert rows(out)["Bake time"][:3] == ["FAIL", "held", "6h"]
    # The same history with a 5-hour bake time: baked.
    write_stack(project, "recent", bakeTime="5h")
    assert gate(project, prometheus, "recent") == 0
    assert lines(capsys.readouterr().out)["Bake time"].startswith("PASS: held for the whole 5h")


def test_no_data_fails_closed(project, prometheus, capsys):
    assert gate(project, prometheus, "no-data") == 1
    found = lines(capsys.readouterr().out)
    rules = (
        "(neither backend has it: are the recording rules loaded? The Prometheus Operator loads "
        "the stack's PrometheusRule only when its labels match the Prometheus ruleSelector "
        "(monitoring.ruleLabels: none set); `kubectl get prometheusrule -n no-data` and "
        "Prometheus's /rules page show what is there)"
    )
    assert found["Split landed"] == (
        'NO_DATA: Ascend: no series hardware:inference_requests:rate5m{hardware="ascend", '
        'namespace="no-data"}; NVIDIA: no series hardware:inference_requests:rate5m{hardware='
        f'"nvidia", namespace="no-data"}} {rules}'
    )
    assert found["5xx error ratio"] == (
        "NO_DATA: Ascend: no series hardware:inference_request_errors:ratio_rate5m{hardware="
        '"ascend", namespace="no-data"}; NVIDIA: no series hardware:inference_request_errors:'
        f'ratio_rate5m{{hardware="nvidia", namespace="no-data"}} {rules}'
    )
    assert found["Bake time"] == "NO_DATA: no recorded weight in the 24h bake window"
    assert all(found[t].startswith("NO_DATA") for t in ("Requests in window", "5xx error ratio"))


def test_a_decrease_passes_bake_time_regardless(project, prometheus, capsys):
    """The deployed rules record 50% for an hour only; the stack file lowers it to 20%."""
    assert gate(project, prometheus, "decrease") == 0
    out = capsys.readouterr().out
    found = lines(out)
    assert found["Bake time"] == "PASS: no raise to hold: a decrease is never held by bake time"
    assert found["Split landed"].startswith("PASS: observed 50.00% of requests on Ascend")
    assert "Note: Judged step: 50% -> 20%." in out
    assert "data taken at 50% Ascend; the stack file says 20%" in out


def test_the_shadow_rung_is_judged_on_mirrored_traffic(project, prometheus, capsys):
    assert gate(project, prometheus, "mirror") == 0
    out = capsys.readouterr().out
    found = lines(out)
    # 10% mirrored: Ascend counts 1 copy per 10 originals NVIDIA serves, 1/11 of all counted.
    assert found["Split landed"] == (
        "PASS: observed 9.09% of requests on Ascend, expected 9.09% at the recorded rung 0% "
        "with 10% mirrored"
    )
    # 10 req/s counted (9.09 originals on NVIDIA, 0.91 copies on Ascend) x 1,440 minutes
    assert found["Bake time"] == "PASS: held for the whole 24h with 864,000 requests"
    assert "(not required)" not in out  # the traffic criteria count at the shadow rung
    assert "Ascend's numbers come from mirrored copies of 10% of the requests" in out
    assert "It cannot conclude that the answers were right" in out


def test_mirrored_errors_fail_the_shadow_rung(project, prometheus, tmp_path, capsys):
    report = tmp_path / "gate.md"
    assert gate(project, prometheus, "mirror-errors", "--markdown", str(report)) == 1
    assert lines(capsys.readouterr().out)["5xx error ratio"].startswith("FAIL: ")
    text = report.read_text()
    assert "| 5xx error ratio | FAIL | 8.00% | 0.20% |" in text
    assert "_Ascend's numbers come from mirrored copies of 10% of the requests" in text


def test_a_mirror_switched_on_recently_has_not_baked(project, prometheus, capsys):
    assert gate(project, prometheus, "mirror-recent") == 1
    assert lines(capsys.readouterr().out)["Bake time"] == (
        "FAIL: the recorded rung is 0% with 10% mirrored only for the last 2h 0m; the bake "
        "time is 24h: 22h 0m left"
    )


def test_the_gate_bakes_the_recorded_mirror_when_the_stack_file_drops_it(
    project, prometheus, capsys
):
    """The rules record 0% with 10% mirrored for a day; the stack file (the change under
    review) mirrors nothing: the gate judges the deployed rung, which baked."""
    write_stack(project, "mirror", mirrorPercent="0")
    assert gate(project, prometheus, "mirror") == 0
    out = capsys.readouterr().out
    assert lines(out)["Bake time"] == "PASS: held for the whole 24h with 864,000 requests"
    assert " ".join(rows(out)["Bake time"]) == "PASS held >= 24h - >= 24h at 0% with 10% mirrored"


def test_gate_progress_counts_every_query_on_stderr(project, prometheus, capsys):
    assert gate(project, prometheus, "landed", "--progress") == 0
    last = capsys.readouterr().err.splitlines()[-1]
    assert re.fullmatch(r"gate landed: (\d+)/\1 queries, \d+\.\d s", last), last


def test_a_mirror_in_the_stack_file_requires_the_traffic_criteria_before_any_is_recorded(
    project, prometheus, capsys
):
    """Rules that record no weight yet: the stack file's 10% mirror is the rung, so the
    traffic criteria are required and the report says what mirrored evidence shows."""
    write_stack(project, "no-data", ascendWeight="0", mirrorPercent="10")
    assert gate(project, prometheus, "no-data", "-o", "json") == 1
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    required = {c["key"]: c["required"] for c in stack["criteria"]}
    assert required == {
        "requests": True,
        "error-ratio": True,
        "p99-latency": True,
        "split": True,
        "bake": True,
        "precision": True,
    }
    assert stack["notes"][0] == "Judged step: 0% -> 5%."
    assert stack["notes"][1].startswith(
        "Ascend's numbers come from mirrored copies of 10% of the requests"
    )


def test_a_stack_file_mirror_over_a_recorded_rung_without_one_adds_no_mirror_note(
    project, prometheus, capsys
):
    """The rules record 20% and no mirror; the stack file goes back to the shadow rung: the
    data was taken at 20%, not on mirrored copies."""
    write_stack(project, "landed", ascendWeight="0", mirrorPercent="10")
    gate(project, prometheus, "landed", "-o", "json")
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    assert stack["notes"] == ["Judged step: 20% -> 0%."]


@pytest.fixture
def repo(project: Path) -> Path:
    git(project, "init", "-q", "-b", "main")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "stacks")
    return project


def test_promote_waits_for_the_bake_time_and_changes_nothing(repo, prometheus, capsys):
    argv = ["-C", str(repo), "promote", "--stack", "recent", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 1
    captured = capsys.readouterr()
    assert "error: gate FAILED: stack recent stays at 20%" in captured.err
    assert "Bake time: FAIL: the recorded rung is 20% only for the last 6h 0m" in captured.out
    assert git(repo, "status", "--porcelain") == ""


def test_promote_from_a_rung_that_was_never_deployed_fails_the_bake(repo, prometheus, capsys):
    """The stack file says 20% but the rules record 50%: promote judges 20% -> 50% and the
    recorded rung is not the one it starts from."""
    argv = ["-C", str(repo), "promote", "--stack", "decrease", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 1
    assert lines(capsys.readouterr().out)["Bake time"] == (
        "FAIL: the deployed rules record 50%, not the 20% this step starts from: deploy that "
        "rung and let it bake"
    )


def test_promote_from_a_mirror_that_was_never_deployed_fails_the_bake(repo, prometheus, capsys):
    """The stack file mirrors 20% but the rules record 10%: promote judges 0% -> 5% from the
    0% with 20% mirrored, which was never deployed."""
    write_stack(repo, "mirror", mirrorPercent="20")
    git(repo, "commit", "-q", "-am", "mirror 20%")
    argv = ["-C", str(repo), "promote", "--stack", "mirror", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 1
    assert lines(capsys.readouterr().out)["Bake time"] == (
        "FAIL: the deployed rules record 0% with 10% mirrored, not the 0% with 20% mirrored "
        "this step starts from: deploy that rung and let it bake"
    )
    assert git(repo, "status", "--porcelain") == ""


def test_status_shows_whether_the_split_landed_and_how_long_the_rung_held(
    project, prometheus, capsys
):
    argv = ["-C", str(project), "status", "--prometheus", prometheus, "--at", str(END)]
    assert main([*argv, "--stack", "never-landed", "--stack", "recent"]) == 0
    out = capsys.readouterr().out
    assert (
        "  split         FAIL: observed 0.00% of requests on Ascend, expected 20.00% at the "
        "recorded rung 20% (+/- 5.00 pp)"
    ) in out
    assert (
        "  bake          FAIL: the recorded rung is 20% only for the last 6h 0m; the bake time "
        "is 24h: 18h 0m left"
    ) in out
    assert main([*argv, "--stack", "mirror", "--json"]) == 0
    [status] = json.loads(capsys.readouterr().out)["stacks"]
    assert status["traffic"]["rung"] == "0% with 10% mirrored"
    assert status["traffic"]["split"]["status"] == "PASS"
    assert status["traffic"]["split"]["observed"] == "9.09%"
    assert status["traffic"]["bake"]["held"] == "held >= 24h"  # proven over the bake window


def test_status_at_a_recorded_rung_git_has_left_is_drift(project, prometheus, capsys):
    """The split passes at the recorded 5%, but git says 20%: status says the step is not
    deployed, in the gate's words, and exits 3 (drift), text and JSON alike."""
    argv = ["-C", str(project), "status", "--prometheus", prometheus, "--at", str(END)]
    assert main([*argv, "--stack", "not-deployed"]) == 3
    out = capsys.readouterr().out
    assert (
        "  rung          DIFFERS: data taken at 5% Ascend; the stack file says 20%: the step is "
        "not deployed (deploy it, or revert it); the split and bake below are 5%'s\n"
        "  split         PASS: observed 5.00% of requests on Ascend, expected 5.00% at the "
        "recorded rung 5% (last 30m)\n"
    ) in out
    assert gate(project, prometheus, "not-deployed") == 0  # the step 5 -> 20 may go ahead
    out = capsys.readouterr().out  # and the gate's header says the same
    assert "data taken at 5% Ascend; the stack file says 20%" in out
    assert "Note: Judged step: 5% -> 20%." in out
    assert main([*argv, "--stack", "not-deployed", "-o", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    jsonschema.validate(
        doc, json.loads((REPO / "docs/schemas/dualstack-status-v1.json").read_text())
    )
    [status] = doc["stacks"]
    assert status["drift"] is True and status["services"][0]["drift"] is True
    traffic = status["traffic"]
    assert (traffic["rung"], traffic["stackFileRung"], traffic["rungDiffers"]) == (
        "5%",
        "20%",
        True,
    )
    assert main([*argv, "--stack", "landed"]) == 0  # recorded as the stack file says
    assert "  rung          20%, recorded by the deployed rules as the stack file says\n" in (
        capsys.readouterr().out
    )


def test_status_names_the_series_it_found_none_of(project, prometheus, capsys):
    write_stack(project, "no-data", monitoring={"ruleLabels": {"release": "kube-prometheus"}})
    argv = ["-C", str(project), "status", "-s", "no-data", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 0
    out = capsys.readouterr().out
    assert (
        '  split         NO_DATA: Ascend: no series hardware:inference_requests:rate5m{hardware="'
        'ascend", namespace="no-data"}; NVIDIA: no series'
    ) in out
    assert "(monitoring.ruleLabels: release: kube-prometheus)" in out


def test_status_without_an_answering_prometheus_still_shows_the_rest(project, capsys):
    from tests.support.prometheus_server import free_port

    url = f"http://127.0.0.1:{free_port()}"
    assert main(["-C", str(project), "status", "--stack", "landed", "--prometheus", url]) == 0
    out = capsys.readouterr().out
    assert "  weight        20% Ascend, 80% NVIDIA" in out
    assert f"  split         unknown: Prometheus at {url} is unreachable: connection refused" in out


def test_gate_json_carries_the_split_the_bake_and_the_judged_step(project, prometheus, capsys):
    argv = ["-C", str(project), "gate", "-s", "mirror", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END), "-o", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    schema = json.loads((REPO / "docs/schemas/dualstack-gate-v1.json").read_text())
    jsonschema.validate(doc, schema)
    (mirror,) = doc["stacks"]
    by_key = {c["key"]: c for c in mirror["criteria"]}
    assert [c["key"] for c in mirror["criteria"]] == [
        "requests",
        "error-ratio",
        "p99-latency",
        "split",
        "bake",
        "precision",
    ]
    assert (by_key["split"]["status"], by_key["split"]["ascend"]) == ("PASS", "9.09%")
    assert by_key["bake"]["status"] == "PASS"
    assert mirror["step"] == {"from": 0, "to": 5}
    assert mirror["notes"][1].startswith("Ascend's numbers come from mirrored copies")


def test_a_fleet_members_split_and_bake_are_judged_on_its_own_series(project, prometheus, capsys):
    assert gate(project, prometheus, FLEET, "--service", "chat") == 0
    found = lines(capsys.readouterr().out)
    assert found["Split landed"] == (
        "PASS: observed 20.00% of requests on Ascend, expected 20.00% at the recorded rung 20%"
    )
    assert found["Bake time"] == "PASS: held for the whole 24h with 864,000 requests"
    assert gate(project, prometheus, FLEET, "--service", "embedder") == 1
    found = lines(capsys.readouterr().out)
    assert found["Split landed"].startswith(
        "FAIL: observed 0.00% of requests on Ascend, expected 5.00% at the recorded rung 5%"
    )
    assert found["Bake time"] == (  # the recorded 5% held, but Ascend served none of it
        "FAIL: too few requests on Ascend in the bake window to call it steady (0 on Ascend, "
        "864,000 on NVIDIA; at least 100)"
    )


def test_status_of_a_fleet_shows_each_services_split(project, prometheus, capsys):
    argv = ["-C", str(project), "status", "--stack", FLEET, "--prometheus", prometheus]
    assert main([*argv, "--at", str(END)]) == 3  # embedder's rules record 5%, its file 20%
    out = capsys.readouterr().out
    assert "  embedder rung: DIFFERS: data taken at 5% Ascend; the stack file says 20%" in out
    assert (
        "  chat split: PASS: observed 20.00% of requests on Ascend, expected 20.00% at the "
        "recorded rung 20% (last 30m)"
    ) in out
    assert "  embedder split: FAIL: observed 0.00% of requests on Ascend, expected 5.00%" in out
    assert main([*argv, "--at", str(END), "--service", "chat", "-o", "json"]) == 0
    [status] = json.loads(capsys.readouterr().out)["stacks"]
    [chat] = status["services"]
    assert (chat["service"], chat["traffic"]["split"]["status"]) == ("chat", "PASS")
    assert chat["traffic"]["bake"]["held"] == "held >= 24h"
