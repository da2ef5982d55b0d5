"""One lock per repository around the commands that write it (issue 34), against real repos and
real second processes: a holder refuses the next command in one line naming its pid, within a
bounded wait; a killed holder never blocks; two commits started at once each land on their own
branch; a held `.git/index.lock` leaves the stack file as it was."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dualstack.repo.lock import RepoLockError, lock_path, repo_lock, wait_seconds
from dualstack.repo.stackfile import read_config_at
from tests.conftest import git
from tests.support.bounded_process import spawn, stop
from tests.support.migration_helpers import WEIGHT, _identity, dualstack, weight  # noqa: F401

HOLD = (
    "import sys, time\nfrom pathlib import Path\nfrom dualstack.repo.lock import repo_lock\n"
    "with repo_lock(Path(sys.argv[1]), 'dualstack promote -s staging --commit'):\n"
    "    print('held', flush=True)\n"
    "    time.sleep(float(sys.argv[2]))\n"
)


def hold_lock(repo: Path, seconds: float = 300.0) -> subprocess.Popen:
    """A real second process holding `repo`'s lock for `seconds`, once it said so."""
    process = spawn(
        [sys.executable, "-c", HOLD, str(repo), str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout.readline() == "held\n"
    return process


def test_a_held_lock_refuses_a_rollback_in_one_line_naming_the_holder(
    git_repo, monkeypatch, capsys
):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", "0")
    before = (git_repo / "Pulumi.prod.yaml").read_bytes()
    holder = hold_lock(git_repo)
    try:
        assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 2
    finally:
        stop(holder)
    err = capsys.readouterr().err
    assert err == (
        f"error: .git/dualstack.lock is held by pid {holder.pid} (dualstack promote -s staging "
        f"--commit, since {err.split('since ')[1].split(')')[0]}); waited 0 s: let it finish, "
        f"or end it (kill {holder.pid})\n"
    )
    assert (git_repo / "Pulumi.prod.yaml").read_bytes() == before
    assert git(git_repo, "branch", "--list").split() == ["*", "main"]


def test_the_wait_is_bounded(git_repo, monkeypatch):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", "1.5")
    holder = hold_lock(git_repo)
    try:
        started = time.monotonic()
        with pytest.raises(RepoLockError, match=r"waited 1\.5 s"), repo_lock(git_repo):
            pass
        took = time.monotonic() - started
    finally:
        stop(holder)
    assert 1.5 <= took < 3.5, took


def test_a_lock_released_while_waiting_is_taken(git_repo, monkeypatch):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", "20")
    holder = hold_lock(git_repo, seconds=1.0)
    try:
        started = time.monotonic()
        assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 0
        assert time.monotonic() - started >= 0.5
    finally:
        stop(holder)
    assert read_config_at(git_repo, "prod", "dualstack/prod-rollback-0")[WEIGHT] == "0"


def test_a_holder_killed_with_sigkill_never_blocks(git_repo, monkeypatch):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", "0")
    holder = hold_lock(git_repo)
    holder.send_signal(signal.SIGKILL)
    holder.wait(timeout=10)
    stop(holder)
    assert "pid" in lock_path(git_repo).read_text()  # its note stays; its lock went with it
    with repo_lock(git_repo, "next") as path:
        assert path.read_text().startswith(f"pid {os.getpid()} (next, since ")
    assert path.read_text() == ""


def test_every_worktree_of_a_clone_shares_one_lock(git_repo, tmp_path):
    git(git_repo, "worktree", "add", "-q", "--detach", str(tmp_path / "other"), "main")
    assert (
        lock_path(tmp_path / "other")
        == lock_path(git_repo)
        == (git_repo / ".git" / "dualstack.lock").resolve()
    )


def test_outside_git_no_lock_is_taken(tmp_path):
    with repo_lock(tmp_path) as path:
        assert path is None
    assert list(tmp_path.iterdir()) == []


def test_the_lock_is_reentrant_in_one_process(git_repo, monkeypatch):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", "0")
    with repo_lock(git_repo, "outer"), repo_lock(git_repo, "inner") as path:
        assert "outer" in path.read_text()


@pytest.mark.parametrize("value", ["-1", "1e3", "inf", "nan", " 5", "5s", "", "١", "3601", "01"])
def test_a_bad_wait_is_one_line_naming_the_variable(git_repo, monkeypatch, capsys, value):
    monkeypatch.setenv("DUALSTACK_LOCK_WAIT", value)
    with pytest.raises(RepoLockError, match=r"^DUALSTACK_LOCK_WAIT="):
        wait_seconds()
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: DUALSTACK_LOCK_WAIT=") and err.count("\n") == 1


def _cli(repo: Path, *argv: str) -> subprocess.Popen:
    env = {**os.environ, "DUALSTACK_LOCK_WAIT": "120"}
    return spawn(
        [sys.executable, "-m", "dualstack", "-C", str(repo), *argv],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_two_rollbacks_with_commit_started_at_once_each_land_on_their_own_branch(git_repo):
    """Before the lock, two `--commit`s at once in one checkout put one's commit on the other's
    branch. Now the second waits for the first: each branch holds its own stack file only."""
    first = _cli(git_repo, "rollback", "-s", "prod", "--commit")
    second = _cli(git_repo, "rollback", "-s", "staging", "--to", "5", "--commit")
    try:
        done = [p.communicate(timeout=300) for p in (first, second)]
    finally:
        stop(first)
        stop(second)
    assert (first.returncode, second.returncode) == (0, 0), done
    for branch, stack in (
        ("dualstack/prod-rollback-0", "Pulumi.prod.yaml"),
        ("dualstack/staging-rollback-5", "Pulumi.staging.yaml"),
    ):
        assert git(git_repo, "rev-parse", f"{branch}~1") == git(git_repo, "rev-parse", "main")
        assert git(git_repo, "show", "--name-only", "--format=", branch).split() == [stack]
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_held_index_lock_leaves_the_stack_file_as_it_was(git_repo, capsys):
    """Before: `rollback --commit` edited the file, failed at `git checkout -b` and left it
    edited. Now the file is put back, no branch is left, exit 2 in one line."""
    before = (git_repo / "Pulumi.prod.yaml").read_bytes()
    (git_repo / ".git" / "index.lock").write_text("")
    try:
        assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 2
    finally:
        (git_repo / ".git" / "index.lock").unlink()
    err = capsys.readouterr().err
    assert err.startswith("error: git checkout: fatal: Unable to create") and err.count("\n") == 1
    assert (git_repo / "Pulumi.prod.yaml").read_bytes() == before
    assert git(git_repo, "branch", "--list").split() == ["*", "main"]
    assert git(git_repo, "status", "--porcelain") == ""
    assert weight(git_repo) == "5"
