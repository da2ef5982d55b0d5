"""CODEOWNERS covers the whole safety envelope, on GitHub and GitLab alike: every path the
program is made of (`touches_program`: all but the stack files and the docs and tests, fail
closed) and the stack files."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

from dualstack.repo.changes import touches_program
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
    """True when a pattern covers repo path `path`: `*` every path, an anchored folder
    pattern (ending in /) what lies below, any other a glob of the whole path."""
    for pattern in patterns:
        if pattern == "*":
            return True
        bare = pattern.lstrip("/")
        if bare.endswith("/") and path.startswith(bare):
            return True
        if fnmatch.fnmatchcase(path, bare):
            return True
    return False


PROGRAM_SAMPLES = (
    "Pulumi.yaml",
    "__main__.py",
    "components/traffic.py",
    "policies/traffic.py",
    "dualstack/offline/judge.py",
    "precision_check/run.py",
    "pyproject.toml",
    "requirements.lock",
    ".github/workflows/deploy.yml",
    ".gitlab-ci.yml",
    "CODEOWNERS",
    "docs/CODEOWNERS",
    # nobody listed these, and each runs: the head's render and `pulumi up` import them
    "sitecustomize.py",
    "yaml.py",
    "pulumi_kubernetes/__init__.py",
    ".venv/lib/python3.11/site-packages/zz.pth",
)


@pytest.mark.parametrize("codeowners", FILES, ids=lambda p: p.parent.name)
def test_every_envelope_path_has_an_owner(codeowners: Path) -> None:
    patterns = rules(codeowners)
    for sample in PROGRAM_SAMPLES:
        assert touches_program(sample), sample
        assert owned(patterns, sample), f"{codeowners}: no owner for {sample}"
    for stack_file in ("Pulumi.prod.yaml", "Pulumi.staging.yaml"):
        assert owned(patterns, stack_file), stack_file
    assert all(owners == ["@dualstack-inference/owners"] for owners in patterns.values())


def test_both_code_hosts_name_the_same_paths() -> None:
    github, gitlab = (rules(path) for path in FILES)
    assert github == gitlab


def test_the_set_up_dismisses_approvals_a_new_push_makes_stale() -> None:
    """An approval given before the author pushes an envelope change must not approve that
    change: the check re-runs on the push and reads the review state, which the code host
    keeps APPROVED unless the set-up the trust model gives dismisses it."""
    page = (REPO / "docs" / "trust-model.md").read_text(encoding="utf-8")
    set_up = page.split("**Set-up on GitHub.**", 1)[1].split("**Stronger", 1)[0]
    flat = " ".join(set_up.split())
    for setting in (
        "Require review from Code Owners",
        "Dismiss stale pull request approvals when new commits are pushed",
        "Require approval of the most recent reviewable push",
        "Code owner approval",
        "Prevent approval by author",
        "Remove all approvals when commits are added to the source branch",
    ):
        assert f'"{setting}"' in flat, setting
