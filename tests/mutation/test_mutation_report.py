"""`.ci/mutation-report` over mutmut result files written here (mutants/<module>.meta, the
`exit_code_by_key` map mutmut 3 writes): the per-module rate, equivalents left out, and the
exit status CI reads (`--blocking`: only a held module's living mutant fails)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELD = "components/traffic.py"  # in HELD; route_weights is its SCOPE
OTHER = "policies/new_rule.py"  # a module just listed, not held yet (no file needed here)


def project(tmp_path: Path, results: dict[str, dict[str, int | None]], equivalent: str = ""):
    """A project with the report, the listed modules and mutmut's results for each."""
    (tmp_path / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "mutation-report", tmp_path / ".ci" / "mutation-report")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.mutmut]\nonly_mutate = ["{HELD}", "{OTHER}"]\n'
    )
    (tmp_path / "tests" / "mutation").mkdir(parents=True)
    (tmp_path / "tests" / "mutation" / "equivalent.txt").write_text(equivalent)
    for module, codes in results.items():
        meta = tmp_path / "mutants" / f"{module}.meta"
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"exit_code_by_key": codes}))
    return tmp_path


def report(root: Path, *args: str) -> tuple[int, list[str]]:
    done = subprocess.run(
        [sys.executable, str(root / ".ci" / "mutation-report"), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, done.stdout.splitlines()


WEIGHTS = "components.traffic.x_route_weights__mutmut_"
CAPACITY = "policies.new_rule.x_bounds__mutmut_"


def test_rates_count_kills_and_timeouts_and_leave_out_equivalents_and_unscoped(tmp_path):
    root = project(
        tmp_path,
        {
            HELD: {
                f"{WEIGHTS}1": 1,
                f"{WEIGHTS}2": -24,  # a timeout counts as killed
                f"{WEIGHTS}3": 0,  # listed equivalent
                "components.traffic.x_other__mutmut_1": 0,  # outside SCOPE
            },
            OTHER: {f"{CAPACITY}1": 1, f"{CAPACITY}2": 1, f"{CAPACITY}3": 1, f"{CAPACITY}4": 1},
        },
        equivalent=f"# comment\n{WEIGHTS}3 a reason\n",
    )
    status, lines = report(root)
    assert status == 0
    assert lines == [
        f"{HELD}: 2/2 killed (100.0%), 1 equivalent, held at 100%",
        f"{OTHER}: 4/4 killed (100.0%), 0 equivalent",
    ]


def test_a_living_mutant_fails_the_report_and_is_named(tmp_path):
    root = project(
        tmp_path,
        {
            HELD: {f"{WEIGHTS}1": 1},
            OTHER: {f"{CAPACITY}1": 1, f"{CAPACITY}2": 0, f"{CAPACITY}3": None},
        },
    )
    status, lines = report(root)
    assert status == 1
    assert f"{OTHER}: 1/3 killed (33.3%), 0 equivalent" in lines
    assert f"alive: {CAPACITY}2 (survived); see `mutmut show {CAPACITY}2`" in lines
    assert f"alive: {CAPACITY}3 (not checked); see `mutmut show {CAPACITY}3`" in lines
    assert lines[-1] == "2 non-equivalent mutant(s) alive, 0 in held modules"


def test_blocking_fails_only_for_a_held_module(tmp_path):
    below = project(tmp_path / "a", {HELD: {f"{WEIGHTS}1": 1}, OTHER: {f"{CAPACITY}1": 0}})
    status, lines = report(below, "--blocking")
    assert status == 0
    assert lines[-1] == (
        "not blocking: every living mutant is in a module not yet held at 100% (HELD)"
    )
    slipped = project(tmp_path / "b", {HELD: {f"{WEIGHTS}1": 0}, OTHER: {f"{CAPACITY}1": 1}})
    status, lines = report(slipped, "--blocking")
    assert status == 1
    assert (
        f"alive: {WEIGHTS}1 (survived, in a module held at 100%); see `mutmut show {WEIGHTS}1`"
        in lines
    )
    assert lines[-1] == "1 non-equivalent mutant(s) alive, 1 in held modules"


def test_only_restricts_the_count_to_a_scoped_run(tmp_path):
    root = project(
        tmp_path,
        {
            HELD: {f"{WEIGHTS}1": 1},
            OTHER: {f"{CAPACITY}1": 1, "policies.new_rule.x_other__mutmut_1": 0},
        },
    )
    status, lines = report(root, f"--only={CAPACITY}*")
    assert status == 0
    assert lines == [f"{OTHER}: 1/1 killed (100.0%), 0 equivalent"]


def test_an_equivalent_without_a_reason_is_an_error(tmp_path):
    root = project(tmp_path, {HELD: {f"{WEIGHTS}1": 0}, OTHER: {}}, equivalent=f"{WEIGHTS}1\n")
    done = subprocess.run(
        [sys.executable, str(root / ".ci" / "mutation-report")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: equivalent.txt:1: {WEIGHTS}1 has no reason"


def test_missing_results_are_exit_2_naming_the_module(tmp_path):
    root = project(tmp_path, {HELD: {f"{WEIGHTS}1": 1}})
    status, lines = report(root)
    assert status == 2
    assert lines[-1] == f"error: no mutmut results for {OTHER} (run `make mutate`)"


def test_an_equivalent_mutmut_no_longer_generates_is_noted(tmp_path):
    root = project(
        tmp_path,
        {HELD: {f"{WEIGHTS}1": 1}, OTHER: {f"{CAPACITY}1": 1}},
        equivalent=f"{CAPACITY}9 gone since\n",
    )
    status, lines = report(root)
    assert status == 0
    assert f"note: equivalent.txt lists {CAPACITY}9, which mutmut no longer generates" in lines
