"""Benchmark (`make bench`): what each service of a fleet costs (issue 13).

Targets: a cold `dualstack render` and a cold `dualstack preview --next` of a fleet of 1, 10
and 50 services cost at most 10 ms more per extra service; every policy of the pack over the
50-service fleet's objects (in-process, the pack imported) takes under 0.3 s. Each run is a
fresh process in a fixture repository (this tree's code); rounds are interleaved so the
machine's load hits each size alike, and the median is reported.
"""

from __future__ import annotations

import json
import statistics
import time
from typing import Any

import pytest

from dualstack.offline.policy_config import pack_config
from dualstack.offline.policy_run import run_policies
from dualstack.offline.render import render_fleet
from tests.conftest import PROJECT
from tests.support.fleets import fleet
from tests.support.judge_repos import make_repo, run_head, write_stack

pytestmark = pytest.mark.benchmark

SIZES = (1, 10, 50)
ROUNDS = 3
PER_SERVICE_TARGET_S = 0.010
POLICIES_TARGET_S = 0.3


def _timed(repo, *argv: str) -> tuple[float, str]:
    started = time.perf_counter()
    done = run_head(repo, *argv)
    assert done.returncode == 0, done.stderr
    return time.perf_counter() - started, done.stdout


def test_cold_render_and_preview_cost_per_service(benchmark, tmp_path, capsys) -> None:
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    repo = make_repo(tmp_path)
    for size in SIZES:
        write_stack(repo, f"fleet{size}", fleet(size))
    from dualstack.repo.git import git

    git(repo, "add", ".")
    git(repo, "commit", "-qm", "fleets")
    runs: dict[tuple[str, int], list[float]] = {}
    for _ in range(ROUNDS):
        for size in SIZES:
            stack = f"fleet{size}"
            wall, out = _timed(repo, "render", "--stack", stack)
            assert out.count("kind: VirtualService") == size
            runs.setdefault(("render", size), []).append(wall)
            wall, out = _timed(repo, "preview", "--stack", stack, "--service", "svc-0", "--next")
            assert "Ascend weight: 0% -> 5%" in out
            runs.setdefault(("preview", size), []).append(wall)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    median = {key: statistics.median(values) for key, values in runs.items()}
    figures: dict[str, Any] = {"rounds": ROUNDS}
    for verb in ("render", "preview"):
        for size in SIZES:
            figures[f"{verb}_{size}_s"] = round(median[(verb, size)], 3)
        per = (median[(verb, SIZES[-1])] - median[(verb, SIZES[0])]) / (SIZES[-1] - SIZES[0])
        figures[f"{verb}_per_extra_service_ms"] = round(per * 1000, 1)
        figures[f"{verb}_target"] = "met" if per <= PER_SERVICE_TARGET_S else "missed"
    benchmark.extra_info.update(figures)
    with capsys.disabled():
        print("\nfleet benchmark:", json.dumps(figures))


def test_every_policy_over_a_50_service_fleet(benchmark, capsys) -> None:
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    config = {f"{PROJECT}:{key}": value for key, value in fleet(50).items()}
    base, objects = render_fleet(config, "fleet50")
    weights = {s.name: s.ascend_weight for s in base}
    pack = pack_config(base, weights, base, objects, envelope=())
    run_policies(objects, pack, "fleet50")  # the pack imported, its first run warm
    times = []
    for _ in range(5):
        started = time.perf_counter()
        results = run_policies(objects, pack, "fleet50")
        times.append(time.perf_counter() - started)
    assert not [r for r in results if r.outcome == "violation"]
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    best = statistics.median(times)
    figures = {
        "objects": len(objects),
        "policies_50_services_s": round(best, 3),
        "target_s": POLICIES_TARGET_S,
        "target": "met" if best < POLICIES_TARGET_S else "missed",
    }
    benchmark.extra_info.update(figures)
    with capsys.disabled():
        print("\nfleet policies benchmark:", json.dumps(figures))
