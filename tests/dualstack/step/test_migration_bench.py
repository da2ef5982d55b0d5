"""Speed figures for the migration workflow (`make bench`); each also runs once as a test.

- gate: every query of one gate run against a real Prometheus on 127.0.0.1.
- weight write: one in-place stack-file edit, read back and validated.
- rollback: the whole `dualstack rollback` command, offline preview included.
"""

from __future__ import annotations

import pytest

from components.settings import load_settings
from dualstack.cli import main
from dualstack.gate.criteria import evaluate
from dualstack.gate.prometheus import PrometheusClient
from dualstack.repo.stackfile import read_config, set_config_values
from dualstack.step.weights import change_weight
from tests.conftest import copy_stack_files
from tests.dualstack.gate.test_gate_prometheus import END, history, write_stack
from tests.support.prometheus_server import prometheus_over
from tests.support.pulumi_stub import hide_pulumi


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory):
    with prometheus_over(history(), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


@pytest.mark.benchmark
def test_bench_gate_against_real_prometheus(benchmark, prometheus, tmp_path):
    write_stack(tmp_path, "healthy", "healthy")
    settings = load_settings(read_config(tmp_path, "healthy"))
    client = PrometheusClient(prometheus)
    report = benchmark(evaluate, settings, "healthy", client, "30m", END)
    assert report.passed


@pytest.mark.benchmark
def test_bench_weight_write(benchmark, tmp_path, monkeypatch):
    hide_pulumi(monkeypatch)
    copy_stack_files(tmp_path)
    before = load_settings(read_config(tmp_path, "prod"))

    def move() -> int:
        return change_weight(tmp_path, "prod", before, 20).after.ascend_weight

    assert benchmark(move) == 20


@pytest.mark.benchmark
def test_bench_rollback_command(benchmark, git_repo, monkeypatch, capsys):
    hide_pulumi(monkeypatch)

    def reset() -> None:
        set_config_values(git_repo, "prod", {"ascendWeight": 50})

    def rollback() -> int:
        return main(["-C", str(git_repo), "rollback", "--stack", "prod"])

    assert benchmark.pedantic(rollback, setup=reset, rounds=5) == 0
    assert read_config(git_repo, "prod")["dualstack-inference:ascendWeight"] == "0"
