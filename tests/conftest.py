"""Shared fixtures: Pulumi mocks, a rendered stack, throwaway git repos with the fixture stacks.

No test reads the committed `Pulumi.<stack>.yaml` files: a step PR moves them one rung, and
`make test` must pass on it (issue 11). Tests take the article's stacks from
`tests/fixtures/stacks/` (`FIXTURE_STACKS`): `git_repo` and `copy_stack_files` for a repo of
stack files, `project_copy` for commands that run on the project itself, `fixture_config` for a
config. `tests/support/committed_stacks.py` fails a test that reads the committed ones.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components import precision
from components.settings import PROJECT
from dualstack.offline.mocks import RecordingMocks, Registered
from dualstack.offline.render import objects_of, run_program
from dualstack.repo.stackfile import read_config
from tests.support import committed_stacks, mutant_order

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
# The article's stacks (prod at 5%, staging at 20%), as the committed files held them.
FIXTURE_STACKS = Path(__file__).resolve().parent / "fixtures" / "stacks"
STACKS = ("prod", "staging")
_GUARD = committed_stacks.install(REPO)
_GUARD.armed = True  # from collection on; lifted only for tests marked reads_committed_stacks

if REPO.name == "mutants" and (REPO.parent / "precision_check" / "__init__.py").is_file():
    # mutmut's copy of the project: its precision_check/*.py carry every mutant's code (over
    # 1 MiB, more than a ConfigMap may hold, so every render there was refused). The checker
    # ConfigMap ships the project's own files, as it does outside mutmut; the checker's mutants
    # are run by its own tests, in-process.
    precision.PACKAGE = REPO.parent / "precision_check"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "reads_committed_stacks: reads the committed stack files for their structure only "
        "(passes at any rung); lifts the guard of tests/support/committed_stacks.py",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under mutmut only: cheap tests first, so `-x` stops at the first kill
    (tests/support/mutant_order.py)."""
    if mutant_order.under_mutmut():
        mutant_order.order(items, mutant_order.recorded_durations(Path(mutant_order.STATS)))


_OPAQUE: list[str] = []
"""Ids of the tests the guard cannot vouch for (marked, or a child process it cannot see into)."""


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Write `_OPAQUE` to `$DUALSTACK_OPAQUE_TESTS`, one id a line (.ci/suite-at-another-rung)."""
    target = os.environ.get("DUALSTACK_OPAQUE_TESTS")
    if target and not mutant_order.under_mutmut():
        Path(target).write_text("".join(f"{node}\n" for node in _OPAQUE), encoding="utf-8")


@pytest.fixture(autouse=True)
def _no_committed_stack_reads(request: pytest.FixtureRequest):
    """Fail the test when it read a committed `Pulumi.<stack>.yaml` (see committed_stacks),
    even when the code under test caught the refusal."""
    _GUARD.hits.clear()  # `opaque` is cleared after the test: a fixture's start before it counts
    if request.node.get_closest_marker("reads_committed_stacks"):
        _OPAQUE.append(request.node.nodeid)
        _GUARD.opaque.clear()
        _GUARD.armed = False
        try:
            yield
        finally:
            _GUARD.armed = True
            _GUARD.opaque.clear()
        return
    yield
    if _GUARD.opaque:
        _OPAQUE.append(request.node.nodeid)
        _GUARD.opaque.clear()
    if _GUARD.hits:
        pytest.fail(f"read {'; '.join(_GUARD.hits)}: {committed_stacks.RULE}", pytrace=False)


EXAMPLE_FLEET = REPO / "examples" / "fleet"
"""The example fleet stack (`Pulumi.fleet.yaml`: chat at 50%, embedder at 20%, reranker at 0%)."""


def fleet_config() -> dict[str, Any]:
    """The config of the example fleet stack `examples/fleet/Pulumi.fleet.yaml`."""
    return read_config(EXAMPLE_FLEET, "fleet")


def fixture_config(stack: str) -> dict[str, Any]:
    """The config of the fixture `Pulumi.<stack>.yaml` (prod at 5%, staging at 20%)."""
    return read_config(FIXTURE_STACKS, stack)


def copy_stack_files(dest: Path) -> None:
    """Put the project file `Pulumi.yaml` and the fixture stack files into `dest`."""
    shutil.copy(REPO / "Pulumi.yaml", dest / "Pulumi.yaml")
    for stack in STACKS:
        shutil.copy(FIXTURE_STACKS / f"Pulumi.{stack}.yaml", dest / f"Pulumi.{stack}.yaml")


CODE = ("components", "dualstack", "policies", "precision_check", "__main__.py")
"""The project's code a base needs to judge (`dualstack.offline.judge`): its packages and the
program's entry point, copied from this tree."""


def copy_code(repo: Path) -> None:
    """Copy this tree's code (`CODE`) into `repo`, without bytecode caches: a base commit of
    `repo` then holds the very code the tests run, so it judges in-process."""
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in CODE:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=ignore)
        else:
            shutil.copy(source, repo / name)


def cfg(**keys: Any) -> dict[str, Any]:
    """Stack config from keyword keys: cfg(ascendWeight="20") -> {"dualstack-inference:...": ..}."""
    return {f"{PROJECT}:{key}": value for key, value in keys.items()}


@pytest.fixture
def run_stack() -> Callable[..., list[Registered]]:
    """Run the program under fresh mocks and config (function scope: nothing leaks)."""

    def run(config: dict[str, Any], stack: str = "test") -> list[Registered]:
        return run_program(config, stack)

    return run


@pytest.fixture
def render_objects(run_stack) -> Callable[..., list[dict[str, Any]]]:
    """Rendered, sorted Kubernetes objects of a config."""

    def render(config: dict[str, Any]) -> list[dict[str, Any]]:
        return objects_of(run_stack(config))

    return render


def find(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    """The object of `kind` named `name`; fails the test when absent."""
    for obj in objects:
        if obj["kind"] == kind and obj["metadata"]["name"] == name:
            return obj
    raise AssertionError(f"no {kind} {name} in {[o['metadata']['name'] for o in objects]}")


def git(repo: Path, *args: str) -> str:
    """Run git in `repo` with a fixed identity; returns stdout."""
    done = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A real git repository holding `Pulumi.yaml`, the fixture stack files and this tree's
    code (the base's judge, `copy_code`), on main."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    copy_stack_files(repo)
    copy_code(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial stacks")
    return repo


# Never copied when the project is not a git checkout: tools, caches, mutmut's copy.
_NOT_PROJECT = {".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "mutants"}
_NOT_PROJECT |= {"node_modules", "checkov-venv", ".benchmarks", "build"}


def _project_files() -> list[str]:
    """The project's files, minus the committed stack files: as git sees them (tracked and
    new, not ignored); outside a git checkout (a tarball, mutmut's ignored `mutants/` copy)
    every file but those under `_NOT_PROJECT` folders."""
    try:
        listed = git(REPO, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
        names = set(listed.split("\0"))
    except (OSError, subprocess.CalledProcessError):
        names = set()
    if not names - {""}:
        names = {
            path.relative_to(REPO).as_posix()
            for path in REPO.rglob("*")
            if not _NOT_PROJECT & set(path.relative_to(REPO).parts)
        }
    return [
        name
        for name in sorted(names)
        if name
        and not (committed_stacks.STACK_FILE.search(name) and "/" not in name)
        and (REPO / name).is_file()
    ]


@pytest.fixture(scope="session")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the project (its working tree) with the fixture stack files, committed on main.

    For commands that run on the project itself (`dualstack render --stack prod` in the repo,
    `make preview`). Shared by the session: tests must not change it (write into tmp_path).
    """
    root = tmp_path_factory.mktemp("project") / "dualstack-inference"
    for name in _project_files():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, root / name)
    copy_stack_files(root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "the project with the fixture stacks")
    return root


@pytest.fixture(autouse=True)
def _fresh_mocks() -> None:
    """Mocks are process-global in Pulumi; start every test from a clean slate."""
    import pulumi

    pulumi.runtime.set_mocks(RecordingMocks(), project=PROJECT, stack="test", preview=True)
    pulumi.runtime.set_all_config({})
