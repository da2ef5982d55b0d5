"""Benchmarks of the main job, as a user runs it: a cold process each round.

`make bench` runs these with timing on; in `make test` they run once as plain tests.
Target (issue 2): render and preview of the prod stack in about a second.
"""

from __future__ import annotations

import pytest

from tests.dualstack.commands.test_cli import dualstack
from tests.support.judge_repos import make_repo, run_head


@pytest.mark.benchmark(group="main-job")
def test_cold_render_prod(benchmark) -> None:
    done = benchmark.pedantic(dualstack, args=("render", "--stack", "prod"), rounds=5, iterations=1)
    assert done.returncode == 0 and "kind: VirtualService" in done.stdout


@pytest.mark.benchmark(group="main-job")
def test_cold_preview_prod_next_step(benchmark, tmp_path) -> None:
    """`make preview` on a fresh clone: the base is HEAD, whose code is the running code, so
    the base judges in-process (a fixture repository with this tree's code)."""
    repo = make_repo(tmp_path)
    done = benchmark.pedantic(
        run_head, args=(repo, "preview", "--stack", "prod", "--next"), rounds=5, iterations=1
    )
    assert done.returncode == 0 and "Ascend weight: 5% -> 20%" in done.stdout
