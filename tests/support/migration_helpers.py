"""Shared by the promote/rollback tests: a git identity, no Pulumi CLI, and short helpers."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.settings import PROJECT
from dualstack.cli import main
from dualstack.repo.stackfile import read_config
from tests.support.pulumi_stub import hide_pulumi

WEIGHT = f"{PROJECT}:ascendWeight"
SKIP = ["--skip-gate", "--reason", "staging ran 20% for a week without alerts"]


@pytest.fixture(autouse=True)
def _identity(monkeypatch):
    """A git identity for the commits the commands make, and no pulumi CLI on PATH.

    Autouse in every test module that imports it.
    """
    hide_pulumi(monkeypatch)
    for var in ("GIT_AUTHOR_NAME", "GIT_COMMITTER_NAME"):
        monkeypatch.setenv(var, "Test")
    for var in ("GIT_AUTHOR_EMAIL", "GIT_COMMITTER_EMAIL"):
        monkeypatch.setenv(var, "test@example.com")
    monkeypatch.delenv("DUALSTACK_PROMETHEUS_URL", raising=False)


def dualstack(repo: Path, *argv: str) -> int:
    """`dualstack -C repo ARGV...` in-process; returns the exit code."""
    return main(["-C", str(repo), *argv])


def weight(repo: Path, stack: str = "prod") -> str:
    """The stack file's `ascendWeight` as written (a string)."""
    return read_config(repo, stack)[WEIGHT]
