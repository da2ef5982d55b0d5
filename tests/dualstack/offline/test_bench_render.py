"""Benchmarks of the main job, as a user runs it: a cold process each round.

`make bench` runs these with timing on; in `make test` they run once as plain tests.
Target (issue 2): render and preview of the prod stack in about a second. They run on
`project_copy`: the project with the fixture stacks (prod at 5%).
"""

from __future__ import annotations

import pytest

from tests.dualstack.commands.test_cli import dualstack


@pytest.mark.benchmark(group="main-job")
def test_cold_render_prod(benchmark, project_copy) -> None:
    done = benchmark.pedantic(
        dualstack,
        args=("render", "--stack", "prod"),
        kwargs={"cwd": project_copy},
        rounds=5,
        iterations=1,
    )
    assert done.returncode == 0 and "kind: VirtualService" in done.stdout


@pytest.mark.benchmark(group="main-job")
def test_cold_preview_prod_next_step(benchmark, project_copy) -> None:
    done = benchmark.pedantic(
        dualstack,
        args=("preview", "--stack", "prod", "--next"),
        kwargs={"cwd": project_copy},
        rounds=5,
        iterations=1,
    )
    assert done.returncode == 0 and "Ascend weight: 5% -> 20%" in done.stdout
