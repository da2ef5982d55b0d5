"""`--commit` branches from the default branch, checks first, undoes a failed commit, and
carries the verify-precision change: against real temporary git repos."""

from __future__ import annotations

from pathlib import Path

from dualstack.repo.stackfile import read_config_at, set_config_values
from tests.conftest import git
from tests.support.migration_helpers import SKIP, WEIGHT, _identity, dualstack, weight  # noqa: F401

VERIFIED = "dualstack-inference:verifiedAscendImage"


def feature_branch_at_80(repo: Path) -> None:
    """A feature branch holding unrelated commits, one of them prod at 80 %."""
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "unrelated.txt").write_text("not for prod\n")
    git(repo, "add", "unrelated.txt")
    git(repo, "commit", "-qm", "unrelated")
    set_config_values(repo, "prod", {"ascendWeight": 80})
    git(repo, "commit", "-qam", "prod at 80 on the feature branch")


def test_rollback_commit_branches_from_main_not_from_a_feature_branch(git_repo, capsys):
    feature_branch_at_80(git_repo)
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 0
    out = capsys.readouterr().out
    branch = "dualstack/prod-rollback-0"
    assert git(git_repo, "rev-parse", f"{branch}~1") == git(git_repo, "rev-parse", "main")
    assert git(git_repo, "show", "--name-only", "--format=", branch).split() == ["Pulumi.prod.yaml"]
    assert "--- PR title ---\nprod: roll back Ascend weight 5% -> 0%\n" in out
    assert "80%" not in out.split("--- PR body ---")[0]
    assert "from main (in a temporary worktree; your checkout is untouched)" in out
    # the user's checkout: same branch, same files, no extra worktree
    assert git(git_repo, "branch", "--show-current").strip() == "feature"
    assert weight(git_repo) == "80"
    assert git(git_repo, "status", "--porcelain") == ""
    assert len(git(git_repo, "worktree", "list").splitlines()) == 1
    assert read_config_at(git_repo, "prod", branch)[WEIGHT] == "0"


def test_promote_commit_branches_from_main_with_mains_weights(git_repo, capsys):
    feature_branch_at_80(git_repo)
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 0
    out = capsys.readouterr().out
    branch = "dualstack/prod-ascend-20"
    assert "--- PR title ---\nprod: Ascend weight 5% -> 20% (ladder step 2 of 5)\n" in out
    assert git(git_repo, "rev-parse", f"{branch}~1") == git(git_repo, "rev-parse", "main")
    assert read_config_at(git_repo, "prod", branch)[WEIGHT] == "20"
    assert git(git_repo, "branch", "--show-current").strip() == "feature"
    assert weight(git_repo) == "80"


def no_identity(monkeypatch, home: Path) -> None:
    for var in ("AUTHOR", "COMMITTER"):
        for part in ("NAME", "EMAIL"):
            monkeypatch.delenv(f"GIT_{var}_{part}", raising=False)
    monkeypatch.delenv("EMAIL", raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "user.useConfigOnly")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "true")


def test_no_identity_is_refused_before_anything_changes(git_repo, tmp_path, monkeypatch, capsys):
    no_identity(monkeypatch, tmp_path)
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: git has no identity to commit with") and err.count("\n") == 1
    assert git(git_repo, "branch", "--show-current").strip() == "main"
    assert git(git_repo, "branch", "--list").split() == ["*", "main"]
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_failed_commit_restores_the_file_and_deletes_the_branch(git_repo, capsys):
    hook = git_repo / ".git" / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'refused by policy hook' >&2\nexit 1\n")
    hook.chmod(0o755)
    before = (git_repo / "Pulumi.prod.yaml").read_bytes()
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 2
    assert "refused by policy hook" in capsys.readouterr().err
    assert git(git_repo, "branch", "--show-current").strip() == "main"
    assert git(git_repo, "branch", "--list").split() == ["*", "main"]
    assert git(git_repo, "status", "--porcelain") == ""
    assert (git_repo / "Pulumi.prod.yaml").read_bytes() == before
    hook.unlink()  # the next attempt gets the plain name, not -2
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 0
    assert git(git_repo, "branch", "--show-current").strip() == "dualstack/prod-rollback-0"


def test_promote_commit_refuses_to_carry_a_verification_record(git_repo, capsys):
    """Evidence never rides along with a step (docs/trust-model.md): the record that
    verify-precision writes lands through its own pull request."""
    set_config_values(git_repo, "prod", {"verifiedAscendImage": "registry/inference:v2-npu"})
    before = (git_repo / "Pulumi.prod.yaml").read_bytes()
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 2
    err = capsys.readouterr().err
    assert "Pulumi.prod.yaml has an uncommitted verification record (verifiedAscendImage)" in err
    assert "never with a step" in err
    assert (git_repo / "Pulumi.prod.yaml").read_bytes() == before
    assert git(git_repo, "branch", "--list").split() == ["*", "main"]


def test_any_other_uncommitted_change_is_still_refused(git_repo, capsys):
    set_config_values(git_repo, "prod", {"verifiedAscendImage": "registry/inference:v2-npu"})
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 2
    assert "Pulumi.prod.yaml has uncommitted changes" in capsys.readouterr().err
    assert weight(git_repo) == "20"
