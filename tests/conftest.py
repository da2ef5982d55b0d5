"""Shared fixtures: Pulumi mocks, a rendered stack, a throwaway git copy of the repo."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from components.settings import PROJECT
from dualstack.offline.mocks import RecordingMocks, Registered
from dualstack.offline.render import objects_of, run_program

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
STACK_FILES = ("Pulumi.yaml", "Pulumi.prod.yaml", "Pulumi.staging.yaml")
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
    """A real git repository holding copies of the project's stack files and code (the base's
    judge, `copy_code`), committed on main."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    for name in STACK_FILES:
        shutil.copy(REPO / name, repo / name)
    copy_code(repo)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "initial stacks")
    return repo


@pytest.fixture(autouse=True)
def _fresh_mocks() -> None:
    """Mocks are process-global in Pulumi; start every test from a clean slate."""
    import pulumi

    pulumi.runtime.set_mocks(RecordingMocks(), project=PROJECT, stack="test", preview=True)
    pulumi.runtime.set_all_config({})
