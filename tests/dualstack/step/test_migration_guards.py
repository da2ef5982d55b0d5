"""What promote and rollback refuse, and what they leave behind when they do: nothing.

Against a real temporary git repo holding the real stack files; a stand-in `pulumi` plays the
CLI where one is needed (the real one is not obtainable here).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from dualstack.commands import rollback_policy
from dualstack.offline.policy_run import PolicyResult
from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.support.migration_helpers import SKIP, WEIGHT, _identity, dualstack, weight  # noqa: F401
from tests.support.pulumi_stub import install_fake_pulumi

UNVERIFIED = "registry/inference-service:v1.2.4-npu"


def stack_bytes(repo: Path, stack: str = "prod") -> bytes:
    return (repo / f"Pulumi.{stack}.yaml").read_bytes()


def one_error_line(err: str) -> str:
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


# --- a pending step and mandatory policies ---


def test_a_second_promote_on_top_of_a_pending_step_is_refused(git_repo, capsys):
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 0
    pending = stack_bytes(git_repo)
    capsys.readouterr()
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 2
    err = one_error_line(capsys.readouterr().err)
    assert (
        "stack prod: ascendWeight is 20% in the working tree (not committed), 5% at HEAD ("
    ) in err
    assert "a step is already pending; commit, merge and deploy that step (or revert it)" in err
    assert stack_bytes(git_repo) == pending  # still the one step 5 -> 20, not 50
    assert weight(git_repo) == "20"


def test_a_step_that_breaks_a_mandatory_policy_is_undone(git_repo, capsys):
    # The served Ascend image is not the verified one; --skip-gate skips the gate's own
    # precision criterion, but the policy pack still blocks raising the weight.
    set_config_values(git_repo, "prod", {"ascend": {"image": UNVERIFIED}})
    git(git_repo, "commit", "-qam", "new Ascend image, not yet verified")
    before = stack_bytes(git_repo)
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 1
    captured = capsys.readouterr()
    assert "--- PR title ---" not in captured.out
    assert (
        "error: policy precision-verified-before-promotion: Deployment inference/inference-green"
        in captured.err
    )
    assert captured.err.endswith("error: Pulumi.prod.yaml restored; stack prod stays at 5%\n")
    assert stack_bytes(git_repo) == before
    assert git(git_repo, "status", "--porcelain") == ""


def test_a_rollback_that_would_break_a_policy_is_undone(git_repo, monkeypatch, capsys):
    # No policy of the pack fails on a lower weight; a hypothetical one that does must block.
    real = rollback_policy.check_policies
    cold = PolicyResult("keep-ascend-warm", "mandatory", "violation", "too cold")

    def strict(head, previous_weight, stack, base=None, base_objects=None):
        extra = [cold] if head.settings.ascend_weight == 0 else []
        return [*real(head, previous_weight, stack, base, base_objects), *extra]

    monkeypatch.setattr(rollback_policy, "check_policies", strict)
    before = stack_bytes(git_repo)
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 1
    captured = capsys.readouterr()
    assert captured.err == (
        "error: policy keep-ascend-warm: too cold\n"
        "error: Pulumi.prod.yaml restored; stack prod stays at 5%\n"
    )
    assert "Rolled back" not in captured.out
    assert stack_bytes(git_repo) == before


def test_a_violation_the_stack_already_had_does_not_block_a_rollback(git_repo, monkeypatch, capsys):
    real = rollback_policy.check_policies
    cold = PolicyResult("keep-ascend-warm", "mandatory", "violation", "too cold")
    monkeypatch.setattr(rollback_policy, "check_policies", lambda *args: [*real(*args), cold])
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    assert "Note: 1 mandatory policy violation(s) were already there before the rollback" in (
        capsys.readouterr().out
    )
    assert weight(git_repo) == "0"


def test_a_rollback_is_judged_from_where_it_starts_not_from_the_base(git_repo, capsys):
    # The working tree went to 100% (uncommitted), its base is at 5%: judged against the base,
    # 80% would be a jump; judged against where the rollback starts, it is a decrease.
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--to", "80") == 0
    assert weight(git_repo) == "80"


# --- the deployed weight (drift guard) ---


OUTPUT = "`pulumi stack output ascendWeight --stack prod`"


@pytest.mark.parametrize(
    ("deployed", "cause"),
    [
        (None, f"{OUTPUT} failed: error: no Pulumi.yaml project file found"),
        ("<html>oops", f"{OUTPUT} returned '<html>oops', not a weight 0..100"),
        ('"fifty"', f"""{OUTPUT} returned '"fifty"', not a weight 0..100"""),
        ('"5"', f"""{OUTPUT} returned '"5"', not a weight 0..100"""),
    ],
)
def test_promote_fails_closed_when_the_cli_cannot_tell_the_deployed_weight(
    git_repo, tmp_path, monkeypatch, capsys, deployed, cause
):
    install_fake_pulumi(tmp_path, monkeypatch)
    if deployed is not None:
        monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", deployed)
    before = stack_bytes(git_repo)
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 2
    err = one_error_line(capsys.readouterr().err)
    assert err.startswith(f"error: stack prod: deployed weight unreadable: {cause}")
    assert stack_bytes(git_repo) == before
    # Rollback is never blocked by it.
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    assert weight(git_repo) == "0"


def test_promote_without_the_cli_says_the_deployed_weight_is_unknown(git_repo, capsys):
    assert dualstack(git_repo, "status", "--stack", "prod") == 0
    assert "unknown: the pulumi CLI is not installed" in capsys.readouterr().out
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 0


# --- a write that did not take ---


def test_a_mangled_pulumi_config_set_is_restored(git_repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "5")
    monkeypatch.setenv("FAKE_PULUMI_CONFIG", "wrong")  # writes 200 for 20
    before = stack_bytes(git_repo)
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 2
    err = one_error_line(capsys.readouterr().err)
    assert "Pulumi.prod.yaml after `pulumi config set ascendWeight 20 --stack prod`" in err
    assert "restored its previous content" in err
    assert stack_bytes(git_repo) == before
    staging = stack_bytes(git_repo, "staging")
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "20")
    assert dualstack(git_repo, "rollback", "--stack", "staging", "--to", "5") == 2  # wrote 50
    assert "holds ascendWeight 50 after writing 5; restored" in capsys.readouterr().err
    assert stack_bytes(git_repo, "staging") == staging


# --- branches ---


def test_rollback_commit_picks_a_free_branch_after_earlier_incidents(git_repo, capsys):
    git(git_repo, "branch", "dualstack/prod-rollback-0")
    git(git_repo, "branch", "dualstack/prod-rollback-0-2")
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 0
    out = capsys.readouterr().out
    assert (
        "Branch dualstack/prod-rollback-0 already exists (an earlier rollback?); using "
        "dualstack/prod-rollback-0-3." in out
    )
    assert "git push -u origin dualstack/prod-rollback-0-3" in out
    assert git(git_repo, "branch", "--show-current").strip() == "dualstack/prod-rollback-0-3"
    assert weight(git_repo) == "0"


def test_rollback_commit_avoids_a_branch_that_exists_only_on_the_remote(git_repo, capsys):
    git(git_repo, "update-ref", "refs/remotes/origin/dualstack/prod-rollback-0", "HEAD")
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 0
    assert git(git_repo, "branch", "--show-current").strip() == "dualstack/prod-rollback-0-2"


def test_an_explicit_branch_that_exists_is_still_refused(git_repo, capsys):
    git(git_repo, "branch", "incident-42")
    argv = ["rollback", "--stack", "prod", "--commit", "--branch", "incident-42"]
    assert dualstack(git_repo, *argv) == 2
    assert "branch incident-42 already exists" in one_error_line(capsys.readouterr().err)
    assert weight(git_repo) == "5"


# --- output files are checked before any work ---


@pytest.mark.parametrize("command", ["promote", "rollback"])
def test_an_unwritable_body_file_is_refused_before_the_stack_file_changes(
    git_repo, tmp_path, capsys, command
):
    target = tmp_path / "no-such-folder" / "body.md"
    argv = [command, "--stack", "prod", "--body-file", str(target)]
    before = stack_bytes(git_repo)
    assert dualstack(git_repo, *argv, *(SKIP if command == "promote" else [])) == 2
    err = one_error_line(capsys.readouterr().err)
    assert err == (f"error: --body-file {target}: folder {target.parent} does not exist\n")
    assert stack_bytes(git_repo) == before
