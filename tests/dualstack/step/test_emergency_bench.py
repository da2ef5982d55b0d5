"""Speed figures of the emergency rollback (`make bench`), against its time budget
(docs/operations.md).

- The local path's own time: a cold `dualstack rollback --emergency --stack prod` process up to
  "traffic applied", with a stand-in `pulumi` that answers at once (network excluded), plus a
  cold run of the program the real targeted `up` executes (the render of the stack).
- The pipeline's install from the cache: restoring the project's `.venv` from a zstd tar (what
  actions/cache and the GitLab runner do after the download), and, for comparison, creating
  the venv again from a warm pip cache (what a cache miss costs).

Each prints its figure, its budget line (docs/operations.md "Time budget") and `met` or
`missed`, with the machine's load; nothing is asserted on time. Both need `make bench` (a few
minutes).
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.support.emergency_budget import budget
from tests.support.emergency_stub import install_emergency_tools, make_gitops

ROUNDS = 5

PROGRAM = """
import sys
from pathlib import Path
from dualstack.offline.render import render
from dualstack.repo.stack_config import load_stack_config
settings, objects = render(load_stack_config(Path(sys.argv[1]), "prod"), "prod")
assert any(o["kind"] == "VirtualService" for o in objects)
"""


def verdict(label: str, seconds: float, limit: int) -> str:
    return f"{label}: {seconds:.2f} s, budget {limit} s: {'met' if seconds <= limit else 'missed'}"


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds process `pid` and its waited-for children (git, the stand-in pulumi) used
    so far: utime + stime + cutime + cstime of /proc/<pid>/stat; None without /proc. On a
    shared machine this, not the wall time, is what an idle runner would take."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return sum(int(value) for value in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def time_to_traffic(repo: Path, env: dict[str, str]) -> tuple[float, float | None, str]:
    """(wall seconds, CPU seconds) from spawning the command to its "traffic applied" line,
    and its whole output."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [sys.executable, "-m", "dualstack", "-C", str(repo), "rollback", "--emergency"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    seen, cpu, lines = None, None, []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if seen is None and "traffic applied" in line:
            seen, cpu = time.perf_counter() - started, cpu_seconds(process.pid)
    process.wait(timeout=120)
    output = "".join(lines)
    assert process.returncode == 0 and seen is not None, output
    return seen, cpu, output


def timed_run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one child process run to its end."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(argv, check=True, env=env, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@pytest.mark.benchmark(group="emergency")
def test_local_emergency_path(benchmark, tmp_path: Path, capsys) -> None:
    if benchmark.disabled:
        pytest.skip(
            "speed figure: run `make bench` (the order is tested in test_rollback_emergency)"
        )
    install_emergency_tools(tmp_path / "bin")
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "STUB_LOG": str(tmp_path / "calls.jsonl"),
        "PYTHONUNBUFFERED": "1",
        "DEPLOYED_prod": "20",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
    }
    repos = iter(range(100))
    to_traffic: list[float] = []
    to_traffic_cpu: list[float] = []

    def fresh_repo():
        repo, _ = make_gitops(tmp_path / f"round-{next(repos)}", {"prod": 20})
        return (repo,), {}

    def one_rollback(repo: Path) -> str:
        seconds, cpu, output = time_to_traffic(repo, env)
        to_traffic.append(seconds)
        if cpu is not None:
            to_traffic_cpu.append(cpu)
        return output

    rounds = ROUNDS
    output = benchmark.pedantic(one_rollback, setup=fresh_repo, rounds=rounds, iterations=1)
    assert "prod: traffic applied: VirtualService inference-traffic-virtual-service" in output
    program = [
        timed_run([sys.executable, "-c", PROGRAM, str(tmp_path / "round-0" / "gitops")], env)
        for _ in range(rounds)
    ]
    start, run = statistics.median(to_traffic), statistics.median(w for w, _ in program)
    start_cpu = statistics.median(to_traffic_cpu) if to_traffic_cpu else float("nan")
    run_cpu = statistics.median(c for _, c in program)
    rows = budget()
    benchmark.extra_info.update(
        to_traffic_s=round(start, 3),
        to_traffic_cpu_s=round(start_cpu, 3),
        program_run_s=round(run, 3),
        program_run_cpu_s=round(run_cpu, 3),
    )
    limits = {"start": rows["Start"][1], "program": rows["Program"][1]}
    with capsys.disabled():
        print(
            f"\nemergency, local path (median of {rounds} cold runs, stub pulumi; load {load()}):"
        )
        for label, wall, cpu, limit in (
            ("command to 'traffic applied'", start, start_cpu, limits["start"]),
            ("program run inside the targeted up", run, run_cpu, limits["program"]),
            ("local path's own time", start + run, start_cpu + run_cpu, sum(limits.values())),
        ):
            print(f"  {verdict(label + ', wall', wall, limit)}")
            print(f"  {verdict(label + ', CPU', cpu, limit)}")


def load() -> str:
    """The 1-minute load average and the CPU count, to read the figures by."""
    return f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"


@pytest.mark.benchmark(group="emergency")
def test_install_from_the_cache(benchmark, tmp_path: Path, capsys) -> None:
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    venv = REPO / ".venv"
    if not (venv / ".installed").exists() or not shutil.which("zstd"):
        pytest.skip("needs the project's .venv (make venv) and zstd")
    archive = tmp_path / "venv.tar.zst"
    subprocess.run(
        ["tar", "--zstd", "-cf", str(archive), "-C", str(REPO), ".venv"], check=True, timeout=600
    )
    targets = iter(range(100))

    def empty_dir():
        dest = tmp_path / f"restore-{next(targets)}"
        dest.mkdir()
        return (dest,), {}

    def restore(dest: Path) -> None:
        subprocess.run(["tar", "--zstd", "-xf", str(archive), "-C", str(dest)], check=True)

    benchmark.pedantic(restore, setup=empty_dir, rounds=3, iterations=1)
    assert (tmp_path / "restore-0" / ".venv" / ".installed").exists()
    fresh = tmp_path / "fresh-venv"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(fresh)], check=True, timeout=600)
    subprocess.run(
        [str(fresh / "bin" / "python"), "-m", "pip", "install", "--quiet", "-e", f"{REPO}[dev]"],
        check=True,
        timeout=1200,
    )
    from_pip = time.perf_counter() - started
    restored = benchmark.stats.stats.median
    size_mb = archive.stat().st_size / 1e6
    limit = budget()["Install"][0]
    benchmark.extra_info.update(
        restore_s=round(restored, 3), archive_mb=round(size_mb, 1), warm_pip_s=round(from_pip, 1)
    )
    with capsys.disabled():
        print(f"\nemergency, pipeline install ({size_mb:.0f} MB zstd of .venv; load {load()}):")
        print("  " + verdict("cached .venv restore (extract, download excluded)", restored, limit))
        print("  " + verdict("cache miss: venv from a warm pip cache", from_pip, limit))
