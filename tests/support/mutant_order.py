"""Cheap tests first when mutmut runs a mutant's tests.

mutmut 3.8 runs each mutant's covering tests with `pytest -x`, but with
`process_isolation = "forkserver"` it hands them over in set order (its fork runner sorts them
by duration; the fork server does not). A mutant a unit test kills in 0.1 s then often waits for
a module's Prometheus to be backfilled first, or runs into mutmut's CPU limit and counts as a
timeout. Under mutmut (`MUTANT_UNDER_TEST` names a mutant) `order` sorts the collected tests:

1. tests that use only function-scoped fixtures, by the duration mutmut recorded for each
   (`mutants/mutmut-stats.json`, `duration_by_test`, seconds);
2. then tests that share a module- or session-scoped fixture (a Prometheus, a render, a git
   template), module by module (cheapest module first) so that each shared fixture is still
   set up once.

Outside mutmut the order is untouched.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

STATS = "mutmut-stats.json"
"""mutmut's stats file, in the `mutants/` directory it runs the tests from."""


def under_mutmut(environ: Mapping[str, str] = os.environ) -> bool:
    """True while mutmut runs a mutant's tests (`MUTANT_UNDER_TEST=pkg.mod.x_f__mutmut_3`)."""
    return "__mutmut_" in environ.get("MUTANT_UNDER_TEST", "")


def recorded_durations(stats: Path) -> dict[str, float]:
    """{test node id: seconds} from mutmut's stats; {} when the file is missing or unreadable
    (the order then falls back to the fixture scopes alone)."""
    try:
        durations = json.loads(stats.read_text())["duration_by_test"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    return durations if isinstance(durations, dict) else {}


def shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture wider than a function (module, package or session)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definition.scope != "function"
        for definitions in info.name2fixturedefs.values()
        for definition in definitions
    )


def order(items: list[pytest.Item], durations: Mapping[str, float]) -> None:
    """Sort `items` in place: cheap function-scoped tests by duration, then the tests sharing a
    wider fixture grouped by module, the cheapest module first (see the module docstring)."""

    def seconds(item: pytest.Item) -> float:
        return float(durations.get(item.nodeid, 0.0))

    module_cost: dict[str, float] = {}
    for item in items:
        if shares_a_fixture(item):
            module = item.nodeid.split("::", 1)[0]
            module_cost[module] = module_cost.get(module, 0.0) + seconds(item)
    position = {id(item): index for index, item in enumerate(items)}

    def key(item: pytest.Item) -> tuple:
        if not shares_a_fixture(item):
            return (0, seconds(item), "", position[id(item)])
        module = item.nodeid.split("::", 1)[0]
        return (1, module_cost[module], module, position[id(item)])

    items.sort(key=key)
