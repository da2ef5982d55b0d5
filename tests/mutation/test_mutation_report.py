"""`.ci/mutation-report` over mutmut result files written here (mutants/<module>.meta, the
`exit_code_by_key` map mutmut 3 writes, and the mutated copy mutants/<module>.py with each
mutant beside the original function): the per-module rate, equivalents left out by their diff
whatever mutmut numbered them, stale entries listed, and the exit status CI reads
(`--blocking`: only a held module's living mutant fails)."""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HELD = "components/traffic.py"  # in HELD; route_weights is its SCOPE
OTHER = "policies/new_rule.py"  # a module just listed, not held yet (no file needed here)


ORIGINAL = ["    share = min(weight, 100)", "    return {'new': share, 'old': 100 - share}"]
"""route_weights' body in the mutated copies below."""


def mutated(function: str, mutants: dict[int, tuple[int, str]]) -> str:
    """mutmut's copy of a module holding `function` (mangled: `x_route_weights`): the original
    `<function>__mutmut_orig` and, for each number, the mutant with ORIGINAL's line i replaced."""
    parts = [f"def {function}__mutmut_orig(weight):", *ORIGINAL]
    for number, (index, line) in mutants.items():
        body = list(ORIGINAL)
        body[index] = f"    {line}"
        parts += ["", "", f"def {function}__mutmut_{number}(weight):", *body]
    return "\n".join(parts) + "\n"


def entry(before: str, after: str, reason: str = "a reason", function: str = "route_weights"):
    return (
        f"- module: {HELD}\n  function: {function}\n  before: {before!r}\n"
        f"  after: {after!r}\n  reason: {reason!r}\n"
    )


def project(
    tmp_path: Path,
    results: dict[str, dict[str, int | None]],
    equivalent: str = "",
    sources: dict[str, str] | None = None,
):
    """A project with the report, the listed modules, mutmut's results for each and its
    mutated copies (`sources`, {module: text})."""
    (tmp_path / ".ci").mkdir(parents=True)
    shutil.copy(ROOT / ".ci" / "mutation-report", tmp_path / ".ci" / "mutation-report")
    (tmp_path / "pyproject.toml").write_text(
        f'[tool.mutmut]\nonly_mutate = ["{HELD}", "{OTHER}"]\n'
    )
    (tmp_path / "tests" / "mutation").mkdir(parents=True)
    (tmp_path / "tests" / "mutation" / "equivalent.yaml").write_text(equivalent)
    for module, codes in results.items():
        meta = tmp_path / "mutants" / f"{module}.meta"
        meta.parent.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps({"exit_code_by_key": codes}))
    for module, text in (sources or {}).items():
        (tmp_path / "mutants" / module).write_text(text)
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
SHARE = "share = min(weight, 100)"
MAX = "share = max(weight, 100)"
RETURN = "return {'new': share, 'old': 100 - share}"
PLUS = "return {'new': share, 'old': 100 + share}"


def test_rates_count_kills_and_timeouts_and_leave_out_equivalents_and_unscoped(tmp_path):
    root = project(
        tmp_path,
        {
            HELD: {
                f"{WEIGHTS}1": 1,
                f"{WEIGHTS}2": -24,  # a timeout counts as killed
                f"{WEIGHTS}3": 0,  # recorded equivalent
                "components.traffic.x_other__mutmut_1": 0,  # outside SCOPE
            },
            OTHER: {f"{CAPACITY}1": 1, f"{CAPACITY}2": 1, f"{CAPACITY}3": 1, f"{CAPACITY}4": 1},
        },
        equivalent="# comment\n" + entry(SHARE, MAX),
        sources={
            HELD: mutated("x_route_weights", {1: (1, PLUS), 2: (0, "share = 0"), 3: (0, MAX)})
        },
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


def test_an_entry_without_a_reason_listed_twice_or_with_a_field_missing_is_an_error(tmp_path):
    errors = {
        "a": entry(SHARE, MAX, reason=" "),
        "b": entry(SHARE, MAX) + entry(SHARE, MAX, reason="another reason"),
        "c": f"- module: {HELD}\n  function: route_weights\n  before: x\n  reason: r\n",
    }
    stderr = {}
    for case, equivalent in errors.items():
        root = project(tmp_path / case, {HELD: {f"{WEIGHTS}1": 0}, OTHER: {}}, equivalent)
        done = subprocess.run(
            [sys.executable, str(root / ".ci" / "mutation-report")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 1
        stderr[case] = done.stderr.strip()
    assert stderr == {
        "a": f"error: equivalent.yaml: entry 1 ({HELD} route_weights) has no reason",
        "b": f"error: equivalent.yaml: entry 2 ({HELD} route_weights) is listed twice",
        "c": (
            "error: equivalent.yaml: entry 1: expected the fields module, function, before, "
            "after, reason, got ['before', 'function', 'module', 'reason']"
        ),
    }


def test_missing_results_are_exit_2_naming_the_module(tmp_path):
    root = project(tmp_path, {HELD: {f"{WEIGHTS}1": 1}})
    status, lines = report(root)
    assert status == 2
    assert lines[-1] == f"error: no mutmut results for {OTHER} (run `make mutate`)"


def test_an_entry_matches_its_mutant_by_diff_whatever_mutmut_numbered_it(tmp_path):
    equivalent = entry(f"  {SHARE}", MAX)  # whitespace does not matter
    before = project(
        tmp_path / "before",
        {HELD: {f"{WEIGHTS}1": 1, f"{WEIGHTS}2": 0}, OTHER: {}},
        equivalent,
        sources={HELD: mutated("x_route_weights", {1: (1, PLUS), 2: (0, MAX)})},
    )
    # an edit above the line adds a mutant: the equivalent one is now number 3
    after = project(
        tmp_path / "after",
        {HELD: {f"{WEIGHTS}1": 1, f"{WEIGHTS}2": 1, f"{WEIGHTS}3": 0}, OTHER: {}},
        equivalent,
        sources={
            HELD: mutated("x_route_weights", {1: (1, PLUS), 2: (1, "return {}"), 3: (0, MAX)})
        },
    )
    assert report(before) == (0, [f"{HELD}: 1/1 killed (100.0%), 1 equivalent, held at 100%"])
    assert report(after) == (0, [f"{HELD}: 2/2 killed (100.0%), 1 equivalent, held at 100%"])


def test_a_living_mutant_whose_diff_no_entry_records_still_fails(tmp_path):
    root = project(
        tmp_path,
        {HELD: {f"{WEIGHTS}1": 0, f"{WEIGHTS}2": 0}, OTHER: {}},
        entry(SHARE, MAX),  # the same line changed otherwise, or another function's
        sources={
            HELD: mutated("x_route_weights", {1: (0, "share = min(weight, 101)"), 2: (0, MAX)})
        },
    )
    status, lines = report(root, "--blocking")
    assert status == 1
    assert f"{HELD}: 0/1 killed (0.0%), 1 equivalent, held at 100%" in lines
    assert (
        f"alive: {WEIGHTS}1 (survived, in a module held at 100%); see `mutmut show {WEIGHTS}1`"
        in lines
    )


def test_a_stale_entry_is_listed_and_fails_nothing(tmp_path):
    root = project(
        tmp_path,
        {HELD: {f"{WEIGHTS}1": 1}, OTHER: {f"{CAPACITY}1": 1}},
        entry(SHARE, MAX) + entry(RETURN, PLUS, function="gone"),
        sources={HELD: mutated("x_route_weights", {1: (1, PLUS)})},
    )
    stale = [
        f"warning: equivalent.yaml: stale entry, no mutant of {HELD} gone changes `{RETURN}` "
        f"to `{PLUS}` (update or remove it)",
        f"warning: equivalent.yaml: stale entry, no mutant of {HELD} route_weights changes "
        f"`{SHARE}` to `{MAX}` (update or remove it)",
    ]
    assert report(root, "--blocking") == (
        0,
        [
            f"{HELD}: 1/1 killed (100.0%), 0 equivalent, held at 100%",
            f"{OTHER}: 1/1 killed (100.0%), 0 equivalent",
            *stale,
        ],
    )
    # a run scoped to another module's mutants does not call them stale
    assert report(root, f"--only={CAPACITY}*") == (
        0,
        [f"{OTHER}: 1/1 killed (100.0%), 0 equivalent"],
    )


def test_the_committed_entries_load_and_name_listed_modules():
    loader = importlib.machinery.SourceFileLoader("report", str(ROOT / ".ci" / "mutation-report"))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    listed = module.equivalents()
    assert listed, "tests/mutation/equivalent.yaml records no mutant"
    assert {diff.module for diff in listed} <= set(module.modules())
