"""The guard of tests/support/committed_stacks.py: no test reads the committed stack files.

A step PR moves `Pulumi.prod.yaml` one rung; `make test` must still pass on it (issue 11).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.repo.stackfile import read_config
from tests.conftest import FIXTURE_STACKS, REPO, fixture_config
from tests.support.committed_stacks import CommittedStackRead, install

GUARD = install(REPO)  # the one guard conftest armed for this test


@pytest.fixture
def hits():
    """The guard's record for this test; cleared at the end, so the refusals shown here are
    not held against the test itself."""
    yield GUARD.hits
    GUARD.hits.clear()


@pytest.mark.parametrize("stack", ["prod", "staging"])
def test_reading_a_committed_stack_file_is_refused(hits, stack):
    with pytest.raises(CommittedStackRead, match=r"use the fixtures in tests/fixtures/stacks"):
        (REPO / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")
    assert hits == [f"open({str(REPO / f'Pulumi.{stack}.yaml')!r})"]


def test_the_cli_run_in_process_on_the_repo_is_refused(hits):
    with pytest.raises(CommittedStackRead):
        main(["-C", str(REPO), "render", "--stack", "prod"])
    assert hits == [f"open({str(REPO / 'Pulumi.prod.yaml')!r})"]


def test_a_refusal_the_code_swallows_is_still_recorded(hits):
    """Code that turns any error into an exit code cannot hide the read: conftest fails the
    test on the record."""
    with contextlib.suppress(Exception):
        read_config(REPO, "staging")
    assert hits == [f"open({str(REPO / 'Pulumi.staging.yaml')!r})"]


def test_a_subprocess_on_the_repo_is_refused(hits):
    with pytest.raises(CommittedStackRead):
        subprocess.run([sys.executable, "-m", "dualstack", "render"], cwd=REPO / "components")
    with pytest.raises(CommittedStackRead):
        subprocess.run(["git", "-C", str(REPO), "show", "HEAD:Pulumi.prod.yaml"])
    assert len(hits) == 2
    assert hits[0].startswith(f"subprocess '{sys.executable} -m dualstack render' in {REPO}")
    assert hits[1] == f"subprocess 'git -C {REPO} show HEAD:Pulumi.prod.yaml' in {REPO}"


def test_the_fixtures_and_other_repos_are_allowed(hits, git_repo: Path):
    assert fixture_config("prod")["dualstack-inference:ascendWeight"] == "5"
    assert (REPO / "Pulumi.yaml").read_text(encoding="utf-8").startswith("name: ")
    listing = subprocess.run(["ls", str(REPO)], capture_output=True, text=True, check=True)
    assert "Pulumi.prod.yaml" in listing.stdout.split()  # a name listed, not read
    done = subprocess.run(
        [sys.executable, "-m", "dualstack", "-C", str(git_repo), "render", "--stack", "prod"],
        cwd=REPO,  # the code of the repo, the stacks of git_repo
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert hits == []


def test_the_fixture_stacks_hold_the_articles_values():
    prod, staging = fixture_config("prod"), fixture_config("staging")
    assert prod == {
        "dualstack-inference:ascendWeight": "5",
        "dualstack-inference:verifiedAscendImage": "registry/inference-service:v1.2.3-npu",
    }
    assert staging == {
        "dualstack-inference:ascendWeight": "20",
        "dualstack-inference:namespace": "inference-staging",
        "dualstack-inference:capacity": {"totalReplicas": 2},
        "dualstack-inference:verifiedAscendImage": "registry/inference-service:v1.2.3-npu",
    }
    assert sorted(p.name for p in FIXTURE_STACKS.glob("Pulumi.*.yaml")) == [
        "Pulumi.prod.yaml",
        "Pulumi.staging.yaml",
    ]


@pytest.mark.parametrize(
    ("argv", "where", "opaque"),
    [
        (["bash", ".ci/example-fleet"], "repo", True),  # a script the guard cannot see into
        (["make", "checkov"], "repo", True),  # make reads the repo's Makefile by itself
        (["git", "status"], "repo", True),
        (["git", "-C", "{tmp}", "status"], "repo", False),  # -C elsewhere: not the repo
        (["promtool", "check", "rules", "{tmp}/rules.yaml"], "repo", False),
        (["promtool", "check", "rules", "{repo}/rules.yaml"], "tmp", True),  # names a repo file
        ([sys.executable, "-m", "dualstack", "-C", "{tmp}", "render"], "repo", False),
        (["ls"], "{repo}", True),  # a cwd of its own inside the repo
    ],
)
def test_children_the_guard_cannot_see_into_are_recorded(tmp_path, argv, where, opaque):
    """`opaque` (what .ci/suite-at-another-rung runs again at another rung) holds the starts
    of children working in the repo or naming a file in it, and nothing else."""
    from tests.support.committed_stacks import Guard

    repo = tmp_path / "repo"
    (repo / ".ci").mkdir(parents=True)
    for name in (".ci/example-fleet", "rules.yaml", "Makefile"):
        (repo / name).write_text("x\n")
    other = tmp_path / "elsewhere"
    other.mkdir()
    guard = Guard(repo)
    tokens = [a.format(tmp=other, repo=repo) for a in argv]
    cwd = None if where in ("repo", "tmp") else where.format(repo=repo)
    inherited = repo if where == "repo" else other
    with contextlib.chdir(inherited):
        guard("subprocess.Popen", (tokens[0], tokens, cwd, None))
    assert bool(guard.opaque) is opaque, guard.opaque
    assert guard.hits == []  # recording is not refusing
