"""Start-up time of the CLI (`make bench`): repeated runs of a few light commands, each a
fresh `python -m dualstack` process, measured as CPU time (user + system of the child: what
start-up costs, less sensitive than wall time to other work on the machine), for this tree
and, interleaved, for the code at BENCH_BASE_REF (default `main`, exported with `git archive`)
so both sides see the same load. Target (issue 17): at most 50 ms more than the base
(docs/workflow.md quotes the figures). Printed, never asserted."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO

COMMANDS = (("--version",), ("status", "--help"), ("gate", "--help"), ("ci", "--help"))
RUNS = 15
BUDGET_MS = 50


def startup_ms(argv: tuple[str, ...], root: Path = REPO, runs: int = RUNS) -> list[float]:
    """CPU times (ms, user + system) of `runs` fresh `python -m dualstack argv` processes run in
    `root` (one unmeasured run first, so bytecode is compiled)."""
    command = [sys.executable, "-m", "dualstack", *argv]
    subprocess.run(command, cwd=root, capture_output=True, check=True, timeout=60)
    times = []
    for _ in range(runs):
        process = subprocess.Popen(
            command, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        assert process.returncode == 0, argv
        times.append((usage.ru_utime + usage.ru_stime) * 1000)
    return times


def export(ref: str, folder: Path) -> Path | None:
    """The tree of `ref` unpacked into `folder` (git archive), or None when there is no ref."""
    folder.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", ref], capture_output=True, timeout=60
    )
    if archive.returncode != 0:
        return None
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive.stdout, check=True, timeout=60)
    return folder


@pytest.mark.benchmark
def test_bench_cli_startup(benchmark, tmp_path, capsys):
    if benchmark.disabled:
        pytest.skip("speed figure: run `make bench`")
    ref = os.environ.get("BENCH_BASE_REF", "main")
    base = export(ref, tmp_path / "base")
    lines = []
    for argv in COMMANDS:
        name = " ".join(argv)
        here, before = [], []
        for _ in range(3):  # interleaved rounds: the same load on both sides
            here += startup_ms(argv, REPO, RUNS // 3)
            if base is not None:
                before += startup_ms(argv, base, RUNS // 3)
        line = f"dualstack {name}: min {min(here):.0f} ms CPU, median {statistics.median(here):.0f}"
        if before:
            added = min(here) - min(before)
            met = "met" if added <= BUDGET_MS else "NOT met"
            target = f"target <= +{BUDGET_MS}: {met}"
            line += f"; {ref}: min {min(before):.0f} ms ({added:+.0f} ms, {target})"
        lines.append(line)
    if base is None:
        lines.append(f"(no {ref} to compare with: set BENCH_BASE_REF)")
    with capsys.disabled():
        print("\n" + "\n".join(lines))
