"""Helpers for the monitoring tests: the stack configs the promtool suites are written for,
running the real promtool, and reading metric names out of PromQL.

Each folder of `tests/promtool/` holds the suites of one config in `VARIANTS`; a test writes
that config's rule file as `rules.yaml` beside a copy of the suite.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from components.monitoring.prometheus_rule import prometheus_rule_spec, rule_file
from components.settings import PROJECT, Settings, load_fleet

SUITES = Path(__file__).resolve().parents[1] / "promtool"
PROMTOOL_TIMEOUT = 60  # seconds; the whole set runs in about one

FULL_VARIANT = "istio_chip"
"""The variant whose suites cover every rule; the others cover the rules that differ."""
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    # Istio telemetry, npu-exporter chip level, prices for both hardware kinds.
    "istio_chip": (
        "prod",
        {
            "ascendWeight": "5",
            "monitoring": {
                "prices": {
                    "nvidia": {"NVIDIA A100-SXM4-80GB": 2.5},
                    "ascend": {"Ascend910B3": 1.25},
                }
            },
        },
    ),
    # The app's own metrics, npu-exporter container level behind a ServiceMonitor
    # (exported_namespace), an absolute p99 objective, no prices.
    "app_container": (
        "staging",
        {
            "ascendWeight": "20",
            "slo": {"p99SloSeconds": 0.5},
            "monitoring": {
                "requestSource": "app",
                "npu": {"level": "container", "namespaceLabel": "exported_namespace"},
            },
        },
    ),
    # A fleet: chat at 50 % and embedder at 20 % in one namespace, Istio, chip level, priced.
    # Both services' rules are loaded together: each records and alerts under its `service`.
    "fleet_istio_chip": (
        "fleet",
        {
            "namespace": "inference-fleet",
            "monitoring": {
                "prices": {
                    "nvidia": {"NVIDIA A100-SXM4-80GB": 2.5},
                    "ascend": {"Ascend910B3": 1.25},
                }
            },
            "services": {"chat": {"ascendWeight": 50}, "embedder": {"ascendWeight": 20}},
        },
    ),
}


def variant_fleet(variant: str) -> list[Settings]:
    """The validated settings of every service of a suite folder's config."""
    _stack, keys = VARIANTS[variant]
    return list(load_fleet({f"{PROJECT}:{key}": value for key, value in keys.items()}))


def variant_settings(variant: str) -> Settings:
    """The validated settings of a suite folder's config (a fleet's first service)."""
    return variant_fleet(variant)[0]


def variant_spec(variant: str) -> dict[str, Any]:
    """The PrometheusRule spec of a suite folder's config, rendered for its stack: every
    service's groups together (one rule file holding each PrometheusRule of the fleet)."""
    stack, _keys = VARIANTS[variant]
    specs = [prometheus_rule_spec(settings, stack) for settings in variant_fleet(variant)]
    return {"groups": [group for spec in specs for group in spec["groups"]]}


def suites(variant: str | None = None) -> list[Path]:
    """The promtool test files, of one variant or of all."""
    pattern = f"{variant}/*.yaml" if variant else "*/*.yaml"
    return sorted(SUITES.glob(pattern))


def promtool() -> str:
    """Path of promtool. Missing: a failure under CI (env CI set), a skip elsewhere."""
    path = shutil.which("promtool")
    if path is None:
        message = "promtool not found; install it with `make tools` (Debian package prometheus)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return path


def run_promtool(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run promtool with a time bound; returns the finished process (any exit code)."""
    return subprocess.run(
        [promtool(), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=PROMTOOL_TIMEOUT,
        check=False,
    )


def run_suite(spec: dict[str, Any], suite: Path, workdir: Path) -> subprocess.CompletedProcess:
    """`promtool test rules` of one suite against `spec` written as `rules.yaml` beside it."""
    (workdir / "rules.yaml").write_text(rule_file(spec), encoding="utf-8")
    shutil.copy(suite, workdir / suite.name)
    return run_promtool("test", "rules", suite.name, cwd=workdir)


# --- PromQL names ----------------------------------------------------------------------

PROMQL_WORDS = {
    # aggregations, functions and keywords the rules and the dashboard use
    *("sum", "avg", "min", "max", "count", "by", "without", "on", "ignoring"),
    *("group_left", "group_right", "and", "or", "unless", "bool", "offset"),
    *("rate", "histogram_quantile", "avg_over_time", "vector", "round"),
}


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads. An unknown function shows up as a name, so a
    test comparing against known series fails rather than passing it silently."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    text = re.sub(r"\{[^}]*\}", " ", text)  # label matchers
    text = re.sub(r"\[[^\]]*\]", " ", text)  # ranges and subqueries
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    text = re.sub(r"(?<![A-Za-z0-9_:])\d[\d.eE+\-]*", " ", text)  # numbers
    return set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", text)) - PROMQL_WORDS
