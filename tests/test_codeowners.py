"""CODEOWNERS covers the whole safety envelope, on GitHub and GitLab alike: every path of
`PROGRAM_PATHS` (one definition) and the stack files."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from dualstack.repo.changes import PROGRAM_PATHS
from tests.conftest import REPO

FILES = [REPO / ".github" / "CODEOWNERS", REPO / ".gitlab" / "CODEOWNERS"]


def rules(path: Path) -> dict[str, list[str]]:
    """{pattern: owners} of a CODEOWNERS file (comments and blank lines skipped)."""
    found = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            pattern, *owners = line.split()
            found[pattern] = owners
    return found


def owned(patterns: dict[str, list[str]], path: str) -> bool:
    """True when an anchored pattern covers repo path `path` (a folder pattern ends in /)."""
    for pattern in patterns:
        bare = pattern.lstrip("/")
        if bare.endswith("/") and path.startswith(bare):
            return True
        if fnmatch.fnmatchcase(path, bare):
            return True
    return False


@pytest.mark.parametrize("codeowners", FILES, ids=lambda p: p.parent.name)
def test_every_envelope_path_has_an_owner(codeowners: Path) -> None:
    patterns = rules(codeowners)
    for entry in PROGRAM_PATHS:
        sample = f"{entry}any.py" if entry.endswith("/") else entry
        assert owned(patterns, sample), f"{codeowners}: no owner for {entry}"
    for stack_file in ("Pulumi.prod.yaml", "Pulumi.staging.yaml", "Pulumi.yaml"):
        assert owned(patterns, stack_file), stack_file
    assert not owned(patterns, "README.md")  # documentation is not the envelope
    assert all(owners == ["@dualstack-inference/owners"] for owners in patterns.values())


def test_both_code_hosts_name_the_same_paths() -> None:
    github, gitlab = (rules(path) for path in FILES)
    assert github == gitlab
