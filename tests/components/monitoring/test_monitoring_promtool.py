"""The monitoring rules checked by the real promtool: lint, unit-test suites, coverage.

The suites in `tests/promtool/<variant>/` feed synthetic exporter, Istio, application and
Pushgateway series through the rendered rules and assert every recorded value and every
alert firing or staying quiet. Mutation cases prove the suites catch the mistakes they are
about (the seed article's GPU-hours, 0/0 as a pass, NaN latency, double counting).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.monitoring import metric_names as m
from components.monitoring.prometheus_rule import rule_file
from tests.support.monitoring_support import (
    FULL_VARIANT,
    VARIANTS,
    promtool,
    run_promtool,
    run_suite,
    suites,
    variant_spec,
)

ALL_SUITES = suites()


def test_missing_promtool_fails_under_ci_and_skips_elsewhere(monkeypatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="promtool not found"):
        promtool()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="promtool not found"):
        promtool()


def test_every_variant_has_suites() -> None:
    assert {p.parent.name for p in ALL_SUITES} == set(VARIANTS)


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_rules_pass_promtool_lint(variant: str, tmp_path: Path) -> None:
    (tmp_path / "rules.yaml").write_text(rule_file(variant_spec(variant)), encoding="utf-8")
    done = run_promtool("check", "rules", "--lint-fatal", "rules.yaml", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SUCCESS" in done.stdout


@pytest.mark.parametrize("suite", ALL_SUITES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_promtool_suite(suite: Path, tmp_path: Path) -> None:
    done = run_suite(variant_spec(suite.parent.name), suite, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr


# --- coverage: every rule of every variant is asserted ----------------------------------


def _suite_tests(variant: str) -> list[dict[str, Any]]:
    return [t for p in suites(variant) for t in yaml.safe_load(p.read_text())["tests"]]


def _asserted_values(variant: str, records: set[str]) -> set[tuple[str, str]]:
    """(record, hardware) pairs some promql_expr_test asserts a value of."""
    covered = set()
    for test in _suite_tests(variant):
        for case in test.get("promql_expr_test", []):
            expr = case["expr"]
            names = {r for r in records if re.search(rf"{re.escape(r)}(?![a-z0-9_:])", expr)}
            for sample in case.get("exp_samples") or []:
                hardware = re.search(r'hardware="(\w+)"', sample["labels"])
                covered |= {(name, hardware[1]) for name in names if hardware}
    return covered


def _asserted_alerts(variant: str) -> tuple[set[str], set[str]]:
    """(alerts asserted firing, alerts asserted quiet)."""
    firing, quiet = set(), set()
    for test in _suite_tests(variant):
        for case in test.get("alert_rule_test", []):
            (firing if case.get("exp_alerts") else quiet).add(case["alertname"])
    return firing, quiet


def _rules(spec: dict[str, Any]) -> list[dict[str, Any]]:
    return [rule for group in spec["groups"] for rule in group["rules"]]


def _own_rules(variant: str) -> list[dict[str, Any]]:
    """Rules of a variant; for a variant other than the full one, only the rules whose
    expression differs from the full variant's (the rest is covered there)."""
    rules = _rules(variant_spec(variant))
    if variant == FULL_VARIANT:
        return rules
    full = _rules(variant_spec(FULL_VARIANT))
    seen = {(r.get("record") or r.get("alert"), r["expr"]) for r in full}
    return [r for r in rules if (r.get("record") or r.get("alert"), r["expr"]) not in seen]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_suites_assert_every_recording_rule(variant: str) -> None:
    own = {(r["record"], r["labels"]["hardware"]) for r in _own_rules(variant) if "record" in r}
    assert own, "a variant without rules of its own needs no suites"
    missing = own - _asserted_values(variant, {name for name, _hw in own})
    assert not missing, f"no promtool assertion of the value of {sorted(missing)}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_suites_assert_every_alert_firing_and_quiet(variant: str) -> None:
    own = {r["alert"] for r in _own_rules(variant) if "alert" in r}
    firing, quiet = _asserted_alerts(variant)
    assert own - firing == set(), "alerts never asserted firing"
    assert own - quiet == set(), "alerts never asserted quiet"


def test_the_full_variant_records_every_shared_name() -> None:
    spec = variant_spec(FULL_VARIANT)
    records = {r["record"] for r in _rules(spec) if "record" in r}
    constants = {v for k, v in vars(m).items() if k.isupper() and isinstance(v, str)}
    # colons are reserved for recording rules; the rest are pushed (precision_check_*)
    assert records == {name for name in constants if ":" in name}


# --- the suites catch real mistakes -----------------------------------------------------


def _mutate(spec: dict[str, Any], record: str, old: str, new: str) -> dict[str, Any]:
    """The spec with `old` replaced by `new` in the expressions of `record`; fails the test
    when the replacement changes nothing (a mutation that mutates nothing proves nothing)."""
    changed = False
    for rule in _rules(spec):
        if rule.get("record") == record and old in rule["expr"]:
            rule["expr"] = rule["expr"].replace(old, new)
            changed = True
    assert changed, f"{old!r} not in {record}"
    return spec


MUTATIONS = {
    "article GPU-hours: x 60": ("usage", m.ACCELERATOR_HOURS, "* 24", "* 60"),
    "0/0 error ratio": ("requests", m.ERROR_RATIO, " > 0)", ")"),
    "NaN latency kept": ("requests", m.LATENCY_P99, " >= 0", ""),
    "both reporters counted": ("requests", m.REQUEST_RATE, 'reporter="destination", ', ""),
    "DCGM sentinel kept": ("accelerators", m.ACCELERATOR_UTILISATION, "< 2147483632", ">= 0"),
    "count not zero-filled": ("usage", m.ACCELERATOR_HOURS, " or vector(0)", ""),
}


@pytest.mark.parametrize("mutation", sorted(MUTATIONS))
def test_suites_catch_the_mistake(mutation: str, tmp_path: Path) -> None:
    suite_name, record, old, new = MUTATIONS[mutation]
    spec = _mutate(variant_spec(FULL_VARIANT), record, old, new)
    suite = next(p for p in suites(FULL_VARIANT) if p.stem == suite_name)
    done = run_suite(spec, suite, tmp_path)
    assert done.returncode != 0, f"the {suite_name} suite missed: {mutation}"
    assert "FAILED" in done.stdout + done.stderr
