"""tests/support/mutant_order.py, through a real pytest run in a throwaway project: under
mutmut the cheap tests come first and shared fixtures stay grouped; outside it nothing moves."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.mutant_order import recorded_durations, under_mutmut

REPO = Path(__file__).resolve().parents[2]

CONFTEST = """
import pathlib
import pytest
from tests.support import mutant_order

def pytest_collection_modifyitems(config, items):
    if mutant_order.under_mutmut():
        mutant_order.order(items, mutant_order.recorded_durations(pathlib.Path("stats.json")))
"""

SERVER = """
import pytest

@pytest.fixture(scope="module")
def server():
    return "up"

def test_a_uses_the_server(server):
    assert server == "up"

def test_b_plain():
    pass

def test_c_uses_the_server(server):
    assert server == "up"
"""

UNIT = """
def test_slow_unit():
    pass

def test_fast_unit():
    pass
"""

RENDER = """
import pytest

@pytest.fixture(scope="session")
def render():
    return 1

def test_render(render):
    assert render == 1
"""


def collected(tmp_path: Path, mutant: str, durations: dict[str, float]) -> list[str]:
    project = tmp_path / "project"
    (project / "t").mkdir(parents=True)
    (project / "t" / "conftest.py").write_text(CONFTEST)
    (project / "t" / "test_server.py").write_text(SERVER)
    (project / "t" / "test_unit.py").write_text(UNIT)
    (project / "t" / "test_render.py").write_text(RENDER)
    (project / "stats.json").write_text(json.dumps({"duration_by_test": durations}))
    env = {**os.environ, "MUTANT_UNDER_TEST": mutant, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", "t"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if "::" in line]


DURATIONS = {
    "t/test_unit.py::test_slow_unit": 0.9,
    "t/test_unit.py::test_fast_unit": 0.01,
    "t/test_server.py::test_b_plain": 0.2,
    "t/test_server.py::test_a_uses_the_server": 0.5,
    "t/test_server.py::test_c_uses_the_server": 0.5,
    "t/test_render.py::test_render": 3.0,
}


def test_under_mutmut_cheap_tests_run_first_and_shared_fixtures_stay_grouped(tmp_path):
    assert collected(tmp_path, "pkg.mod.x_f__mutmut_3", DURATIONS) == [
        "t/test_unit.py::test_fast_unit",
        "t/test_server.py::test_b_plain",
        "t/test_unit.py::test_slow_unit",
        # the server's module costs 1.0 s in all, the render's 3.0 s
        "t/test_server.py::test_a_uses_the_server",
        "t/test_server.py::test_c_uses_the_server",
        "t/test_render.py::test_render",
    ]


def test_outside_mutmut_the_collected_order_is_kept(tmp_path):
    assert collected(tmp_path, "", DURATIONS) == [
        "t/test_render.py::test_render",
        "t/test_server.py::test_a_uses_the_server",
        "t/test_server.py::test_b_plain",
        "t/test_server.py::test_c_uses_the_server",
        "t/test_unit.py::test_slow_unit",
        "t/test_unit.py::test_fast_unit",
    ]


def test_without_durations_the_fixture_scopes_alone_decide(tmp_path):
    assert collected(tmp_path, "pkg.mod.x_f__mutmut_3", {}) == [
        "t/test_server.py::test_b_plain",
        "t/test_unit.py::test_slow_unit",
        "t/test_unit.py::test_fast_unit",
        "t/test_render.py::test_render",
        "t/test_server.py::test_a_uses_the_server",
        "t/test_server.py::test_c_uses_the_server",
    ]


def test_only_a_mutant_name_turns_the_order_on_and_bad_stats_read_as_none(tmp_path):
    assert under_mutmut({"MUTANT_UNDER_TEST": "policies.capacity.x_pool__mutmut_12"})
    assert not under_mutmut({"MUTANT_UNDER_TEST": "stats"})
    assert not under_mutmut({"MUTANT_UNDER_TEST": "fail"})
    assert not under_mutmut({})
    broken = tmp_path / "stats.json"
    broken.write_text("{not json")
    assert recorded_durations(broken) == {}
    broken.write_text('{"duration_by_test": [1, 2]}')
    assert recorded_durations(broken) == {}
    assert recorded_durations(tmp_path / "missing.json") == {}
