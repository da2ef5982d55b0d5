"""Benchmarks of the monitoring checks: what `make test` spends in promtool, and the rule
generation the component and the gate call. `make bench` times them; `make test` runs them
once as plain tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from components.monitoring.prometheus_rule import prometheus_rule_spec, rule_file
from tests.support.monitoring_support import (
    VARIANTS,
    run_promtool,
    suites,
    variant_settings,
    variant_spec,
)


def _run_all_suites(workdir: Path) -> list[int]:
    codes = []
    for variant in sorted(VARIANTS):
        folder = workdir / variant
        folder.mkdir(exist_ok=True)
        (folder / "rules.yaml").write_text(rule_file(variant_spec(variant)), encoding="utf-8")
        for suite in suites(variant):
            shutil.copy(suite, folder / suite.name)
        names = [p.name for p in suites(variant)]
        codes.append(run_promtool("test", "rules", *names, cwd=folder).returncode)
    return codes


@pytest.mark.benchmark(group="monitoring")
def test_all_promtool_suites(benchmark, tmp_path: Path) -> None:
    codes = benchmark.pedantic(_run_all_suites, args=(tmp_path,), rounds=5, iterations=1)
    assert codes == [0] * len(VARIANTS)


@pytest.mark.benchmark(group="monitoring")
def test_rule_spec_generation(benchmark) -> None:
    settings = variant_settings("istio_chip")
    spec = benchmark(prometheus_rule_spec, settings, "prod")
    assert len(spec["groups"]) == 4
