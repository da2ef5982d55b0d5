"""Benchmark (`make bench`): issue 29's figures, each a ratio, from one interleaved run.

Every command is a fresh `python -m dualstack` process (cold imports, bytecode compiled by an
unmeasured first run) in a fixture repository holding this tree's code, and, when
BENCH_BASE_REF names a git ref (default `main`), in one holding that ref's code (`git
archive`) with the same stack files; rounds run every command of both in turn, so the
machine's load hits each alike. Each figure is the median of the rounds, in CPU time of the
process (user + system: what the work costs, less sensitive than wall time to the other work
on the machine) and wall time; peak memory is the process's maximum resident set.

| figure | ratio | target |
| --- | --- | --- |
| cold `render` of 50 services | / `kubectl kustomize` of its own output | < 1 |
| per extra service, 1 -> 50 | (render 50 - render 1) / 49 | <= 10 ms |
| cold `preview --base main` of a step PR | / one cold `render` of the stack | <= 1.3 |
| `render --stack prod` | / importing what it loads (named) | <= 1.2 |
| `dualstack --version` | / `python -c pass` | <= 5 |
| the policy pack over 50 services, in-process | s | <= 0.3 s |
| the policy pack over 1,000 objects, in-process | s per 500 objects | <= 0.2 s |
| peak memory of a 100-service render | MiB | <= 150 |

Printed with the load average, never asserted (only that each command worked).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from dualstack.repo.stackfile import set_config_values
from tests.conftest import REPO, git
from tests.support.fleets import fleet
from tests.support.judge_repos import PROD, STAGING, make_repo, write_stack

pytestmark = pytest.mark.benchmark

ROUNDS = int(os.environ.get("BENCH_ROUNDS", "3"))
SIZES = (1, 10, 50, 100)
STEP = {**PROD, "ascendWeight": "20"}
"""The step pull request: prod 5 -> 20, the stack file only."""


GNU_TIME = "/usr/bin/time"
"""GNU time reports the peak resident set of the command it runs. The rusage `wait4` returns
would not do: a child forked from this (large) test process starts at its resident size."""


class Run:
    """One measured process: wall and CPU seconds (of the process and the ones it waited for),
    peak resident MiB (None without GNU time), exit code, stdout."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str]) -> None:
        with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile("r") as peak:
            timed = Path(GNU_TIME).is_file()
            command = [GNU_TIME, "-f", "%M", "-o", peak.name, *argv] if timed else argv
            started = time.perf_counter()
            process = subprocess.Popen(command, cwd=cwd, env=env, stdout=out, stderr=out)
            _, status, usage = os.wait4(process.pid, 0)
            self.wall = time.perf_counter() - started
            self.cpu = usage.ru_utime + usage.ru_stime
            self.code = os.waitstatus_to_exitcode(status)
            lines = peak.read().split() if timed else []
            self.peak_mib = int(lines[-1]) / 1024 if lines and lines[-1].isdigit() else None
            out.seek(0)
            self.stdout = out.read().decode("utf-8", "replace")


def exported(ref: str, folder: Path) -> Path | None:
    """The code of `ref` (`git archive`) in a fixture repository like `make_repo`'s, or None
    when there is no such ref."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref], capture_output=True, timeout=120
    )
    if archive.returncode != 0:
        return None
    repo = folder / "gitops"
    repo.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(repo)], input=archive.stdout, check=True, timeout=120)
    for path in repo.glob("Pulumi.*.yaml"):
        path.unlink()  # the stack files are the fixtures'
    write_stack(repo, "prod", PROD)
    write_stack(repo, "staging", STAGING)
    (repo / ".gitignore").write_text("__pycache__/\n*.pyc\n", encoding="utf-8")
    git(repo, "init", "-q", "-b", "main")
    return repo


def with_fleets(repo: Path) -> Path:
    """`repo` with the generated fleets committed, and the step PR in its working tree."""
    for size in SIZES:
        write_stack(repo, f"fleet{size}", fleet(size))
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "fleets")
    set_config_values(repo, "prod", {"ascendWeight": STEP["ascendWeight"]})
    return repo


def floor_script(repo: Path, folder: Path) -> tuple[Path, list[str]]:
    """A script importing every module `render --stack prod` imports, and the non-standard
    top-level packages among them (the floor's names)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "dualstack", "render", "--stack", "prod"],
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules = [
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    ][1:]
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "floor.py"
    script.write_text(
        "import importlib\n"
        f"for name in {modules!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception:\n        pass\n",
        encoding="utf-8",
    )
    tops = {name.split(".")[0] for name in modules}
    named = sorted(
        top
        for top in tops
        if top not in sys.stdlib_module_names
        and not top.startswith("_")
        and top != "sitecustomize"
        and importlib.util.find_spec(top) is not None
    )
    return script, named


def kustomization(folder: Path, rendered: str) -> Path:
    """A kustomization of one file holding `rendered`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "all.yaml").write_text(rendered, encoding="utf-8")
    (folder / "kustomization.yaml").write_text("resources:\n- all.yaml\n", encoding="utf-8")
    return folder


def commands(repo: Path, floor: Path) -> dict[str, list[str]]:
    """Each measured command of one code tree."""
    dualstack = [sys.executable, "-m", "dualstack", "-C", str(repo)]
    found = {
        "python -c pass": [sys.executable, "-c", "pass"],
        "--version": [*dualstack, "--version"],
        "import floor": [sys.executable, str(floor)],
        "render prod": [*dualstack, "render", "--stack", "prod"],
        "preview step": [*dualstack, "preview", "--stack", "prod", "--base", "main"],
    }
    for size in SIZES:
        found[f"render {size}"] = [*dualstack, "render", "--stack", f"fleet{size}"]
    return found


def medians(runs: list[Run]) -> dict[str, Any]:
    peaks = [r.peak_mib for r in runs if r.peak_mib is not None]
    return {
        "cpu": statistics.median(r.cpu for r in runs),
        "wall": statistics.median(r.wall for r in runs),
        "peak_mib": max(peaks) if peaks else None,
    }


def ratios(m: dict[str, dict[str, float]], kustomize: dict[str, float] | None) -> dict[str, Any]:
    """The figures of one code tree from its medians `m` (CPU time; wall where named)."""
    found: dict[str, Any] = {}
    per = (m["render 50"]["cpu"] - m["render 1"]["cpu"]) / 49
    found["per_extra_service_ms_cpu"] = round(per * 1000, 1)
    per_wall = (m["render 50"]["wall"] - m["render 1"]["wall"]) / 49
    found["per_extra_service_ms_wall"] = round(per_wall * 1000, 1)
    if kustomize:
        found["render50_over_kustomize_cpu"] = round(m["render 50"]["cpu"] / kustomize["cpu"], 2)
        found["render50_over_kustomize_wall"] = round(m["render 50"]["wall"] / kustomize["wall"], 2)
    found["preview_step_over_render_cpu"] = round(
        m["preview step"]["cpu"] / m["render prod"]["cpu"], 2
    )
    found["preview_step_over_render_wall"] = round(
        m["preview step"]["wall"] / m["render prod"]["wall"], 2
    )
    found["render_prod_over_import_floor_cpu"] = round(
        m["render prod"]["cpu"] / m["import floor"]["cpu"], 2
    )
    found["version_over_python_cpu"] = round(m["--version"]["cpu"] / m["python -c pass"]["cpu"], 1)
    peak = m["render 100"]["peak_mib"]
    found["render100_peak_mib"] = None if peak is None else round(peak)
    found["ms_cpu"] = {name: round(v["cpu"] * 1000) for name, v in m.items()}
    found["ms_wall"] = {name: round(v["wall"] * 1000) for name, v in m.items()}
    return found


TARGETS = (
    ("render50_over_kustomize_cpu", "render 50 / kubectl kustomize of its output (CPU)", "<", 1),
    ("per_extra_service_ms_cpu", "ms per extra service, 1 -> 50 (CPU)", "<=", 10),
    ("preview_step_over_render_cpu", "preview of a step PR / one render (CPU)", "<=", 1.3),
    ("render_prod_over_import_floor_cpu", "render prod / its import floor (CPU)", "<=", 1.2),
    ("version_over_python_cpu", "--version / python -c pass (CPU)", "<=", 5),
    ("render100_peak_mib", "peak MiB of a 100-service render", "<=", 150),
    ("policies_50_services_s", "policy pack over 50 services, s (in-process)", "<=", 0.3),
    ("policies_per_500_objects_s", "policy pack per 500 of 1,000 objects, s", "<=", 0.2),
)


def summary(figures: dict[str, Any], labels: list[str]) -> list[str]:
    """One line per target: this tree's figure, met or not, and each other tree's."""
    lines = []
    for key, text, op, target in TARGETS:
        shared = key in figures  # measured in-process, on this tree only
        values = [figures[key]] if shared else [figures[label].get(key) for label in labels]
        here = values[0]
        met = here is not None and (here < target if op == "<" else here <= target)
        others = "".join(f"; {label} {v}" for label, v in zip(labels[1:], values[1:], strict=False))
        lines.append(f"{text}: {here} (target {op} {target}: {'met' if met else 'MISSED'}){others}")
    return lines


def policy_figures() -> dict[str, float]:
    """The pack in-process (this tree): over a 50-service fleet's objects, and over 1,000
    objects per 500 (`tests/policies/test_policy_benchmark.py`'s stack), medians of 5."""
    from components.settings import load_settings
    from dualstack.offline.policy_config import pack_config
    from dualstack.offline.policy_run import run_policies
    from dualstack.offline.render import render, render_fleet
    from tests.conftest import PROJECT, find
    from tests.policies.test_policy_benchmark import CONFIG, STACK_SIZE, filler
    from tests.support.pack_config import single_pack_config

    def median_of(call) -> float:
        call()  # the pack imported, its first run warm
        times = []
        for _ in range(5):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        return statistics.median(times)

    config = {f"{PROJECT}:{key}": value for key, value in fleet(50).items()}
    base, objects = render_fleet(config, "fleet50")
    pack = pack_config(base, {s.name: s.ascend_weight for s in base}, base, objects, envelope=())
    fifty = median_of(lambda: run_policies(objects, pack, "fleet50"))
    _, many = render(CONFIG, "prod")
    template = find(many, "Deployment", "inference-blue")
    many += [filler(i, template) for i in range(STACK_SIZE - len(many))]
    settings = load_settings(CONFIG)
    single = single_pack_config(settings, previous_weight=5, base=settings, envelope=())
    thousand = median_of(lambda: run_policies(many, single, "prod"))
    return {
        "policies_50_services_s": round(fifty, 3),
        "policies_per_500_objects_s": round(thousand * 500 / STACK_SIZE, 3),
    }


def test_issue_29_figures_as_ratios_in_one_interleaved_run(benchmark, tmp_path, capsys) -> None:
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    load_before = os.getloadavg()
    (tmp_path / "here").mkdir()
    trees = {"here": with_fleets(make_repo(tmp_path / "here", prod=PROD, staging=STAGING))}
    ref = os.environ.get("BENCH_BASE_REF", "main")
    base = exported(ref, tmp_path / "base")
    if base is not None:
        trees[ref] = with_fleets(base)
    measured = {}
    names: dict[str, list[str]] = {}
    for label, repo in trees.items():
        floor, names[label] = floor_script(repo, tmp_path / f"floor-{len(names)}")
        measured[label] = commands(repo, floor)
    envs = {label: {**os.environ, "PYTHONPATH": str(repo)} for label, repo in trees.items()}
    kustomize_dir = None
    runs: dict[tuple[str, str], list[Run]] = {}
    for round_ in range(ROUNDS + 1):  # round 0 compiles bytecode and fills caches: unmeasured
        for name in measured["here"]:
            for label, repo in trees.items():
                if name == "preview step":  # cold: no base render kept from an earlier round
                    shutil.rmtree(repo / ".git" / "dualstack", ignore_errors=True)
                run = Run(measured[label][name], repo, envs[label])
                assert run.code == 0, (label, name, run.stdout[-2000:])
                if round_:
                    runs.setdefault((label, name), []).append(run)
                if name == "render 50" and label == "here" and kustomize_dir is None:
                    kustomize_dir = kustomization(tmp_path / "kustomize", run.stdout)
            if name == "render 50" and shutil.which("kubectl") and kustomize_dir is not None:
                run = Run(["kubectl", "kustomize", str(kustomize_dir)], tmp_path, dict(os.environ))
                assert run.code == 0, run.stdout[-2000:]
                if round_:
                    runs.setdefault(("kubectl", "kustomize"), []).append(run)
    benchmark.pedantic(lambda: None, rounds=1, iterations=1)
    kustomize = (
        medians(runs[("kubectl", "kustomize")]) if ("kubectl", "kustomize") in runs else None
    )
    figures: dict[str, Any] = {
        "rounds": ROUNDS,
        "load_average": [round(x, 2) for x in (*load_before, *os.getloadavg())],
        "kustomize_ms": kustomize
        and {"cpu": round(kustomize["cpu"] * 1000), "wall": round(kustomize["wall"] * 1000)},
        "import_floor_packages": names["here"],
    }
    for label in trees:
        m = {name: medians(runs[(label, name)]) for name in measured[label]}
        figures[label] = ratios(m, kustomize)
    figures.update(policy_figures())
    benchmark.extra_info.update(figures)
    with capsys.disabled():
        print("\nissue 29 figures:", json.dumps(figures))
        print("\n".join(summary(figures, list(trees))))
