"""mutmut runs only the test files in `[tool.mutmut] pytest_add_cli_args_test_selection`.

A test file outside that selection that imports a mutated module (`only_mutate`) kills none
of its mutants: mutmut reports them "no tests", or, worse, alive although a test exists.
This guard makes each such file a choice: in the selection, or listed below with the reason
it is left out.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LEFT_OUT = {
    "tests/dualstack/offline/test_policy_config.py": (
        "uses route_weights and the pack's annotation name to build its fixtures; the policies' "
        "own tests are in tests/policies"
    ),
    "tests/dualstack/offline/test_preview_policies.py": (
        "patches components.routers.istio to simulate a slipped edit of the offline preview; the "
        "module's own tests are in tests/components/test_components.py"
    ),
    "tests/dualstack/offline/test_preview_traffic.py": (
        "patches components.routers.istio.spec to simulate an edited program; the "
        "module's own tests are in tests/components"
    ),
    "tests/dualstack/step/test_migration_bench.py": (
        "a benchmark over a simulated migration: slow per mutant, and the gate's criteria have "
        "their own tests in tests/dualstack/gate"
    ),
}
"""Test files that import a mutated module but are not mutation tests, with the reason."""


def mutmut_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]


def imported_modules(source: str) -> set[str]:
    """Dotted names a file imports: `import a.b` gives a.b; `from a import b` gives a and a.b."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def selected(path: str, selection: list[str]) -> bool:
    return any(path == entry or path.startswith(entry.rstrip("/") + "/") for entry in selection)


def files_outside_the_selection() -> dict[str, list[str]]:
    """{test file: [mutated modules it imports]} for each file mutmut would not run."""
    config = mutmut_config()
    mutated = {path.removesuffix(".py").replace("/", ".") for path in config["only_mutate"]}
    selection = config["pytest_add_cli_args_test_selection"]
    found: dict[str, list[str]] = {}
    for test in sorted((ROOT / "tests").rglob("test_*.py")):
        path = test.relative_to(ROOT).as_posix()
        hits = sorted(imported_modules(test.read_text()) & mutated)
        if hits and not selected(path, selection):
            found[path] = hits
    return found


def test_every_test_file_of_a_mutated_module_is_in_mutmuts_selection_or_left_out_on_purpose():
    outside = files_outside_the_selection()
    unexplained = {path: modules for path, modules in outside.items() if path not in LEFT_OUT}
    assert unexplained == {}, (
        "add these to [tool.mutmut] pytest_add_cli_args_test_selection, or to LEFT_OUT with a "
        f"reason: {unexplained}"
    )


def test_every_file_left_out_still_imports_a_mutated_module():
    stale = sorted(set(LEFT_OUT) - set(files_outside_the_selection()))
    assert stale == [], f"remove from LEFT_OUT (in the selection now, or gone): {stale}"


TWO_SESSIONS = """
import json, sys, pytest
ids = []
class Ids:
    def pytest_collection_modifyitems(self, items):
        ids.append(sorted(item.nodeid for item in items))
for _ in range(2):
    args = ["-qqq", "--collect-only", "-p", "no:cacheprovider", *sys.argv[1:]]
    pytest.main(args, plugins=[Ids()])
print(json.dumps(sorted(set(ids[0]) - set(ids[1]))))
"""
"""Collect the tests named on the command line twice in one process, as mutmut's fork server
does; print the ids of the first session the second does not have."""


def test_every_selected_test_keeps_its_id_in_a_second_session():
    """mutmut's fork server collects the selection once (its warm-up), then runs each mutant's
    tests by id in a second pytest session of the same process. pytest escapes an id's
    backslashes and non-ASCII characters once more per session over the same parameters
    (`'\\xb2'` becomes `'\\\\xb2'`), so such an id is not found in the second one: a usage
    error (pytest exit 4) that mutmut records as exit 255, a timeout, for every mutant those
    tests cover, whatever they would say. Ids are ASCII without a backslash
    (`tests/support/param_ids.py`)."""
    config = mutmut_config()
    done = subprocess.run(
        [sys.executable, "-c", TWO_SESSIONS, *config["pytest_add_cli_args_test_selection"]],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lost = json.loads(done.stdout.splitlines()[-1])
    assert lost == [], f"ids that change in a second session: {lost[:10]}"


def test_the_guard_sees_a_new_test_file_of_a_mutated_module():
    source = "from dualstack.gate.bake import held_since\nimport policies.capacity\n"
    assert {"dualstack.gate.bake.held_since", "policies.capacity"} <= imported_modules(source)
    assert selected("tests/policies/test_x.py", ["tests/policies"])
    assert not selected("tests/policies_extra/test_x.py", ["tests/policies"])
    assert selected("tests/components/test_capacity.py", ["tests/components/test_capacity.py"])
