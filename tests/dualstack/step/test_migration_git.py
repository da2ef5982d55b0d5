"""promote, rollback and revert against a real temporary git repo holding the real stack files."""

from __future__ import annotations

from pathlib import Path

import pytest

from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.support.migration_helpers import SKIP, WEIGHT, _identity, dualstack, weight  # noqa: F401
from tests.support.pulumi_stub import install_fake_pulumi


def numstat(repo: Path, *refs: str) -> list[str]:
    return git(repo, "diff", "--numstat", *refs).split()


def test_promote_edits_one_line_and_keeps_comments(git_repo, capsys):
    before = (git_repo / "Pulumi.prod.yaml").read_text()
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 0
    after = (git_repo / "Pulumi.prod.yaml").read_text()
    assert weight(git_repo) == "20"
    assert numstat(git_repo) == ["1", "1", "Pulumi.prod.yaml"]
    comments = [line for line in before.splitlines() if line.lstrip().startswith("#")]
    assert comments and all(line in after.splitlines() for line in comments)
    out = capsys.readouterr().out
    assert "--- PR title ---\nprod: Ascend weight 5% -> 20% (ladder step 2 of 5)\n" in out
    assert "### Promotion gate: SKIPPED" in out
    assert "Reason given: staging ran 20% for a week without alerts" in out
    assert "-      weight: 5\n+      weight: 20" in out  # the preview's diff


def test_promote_commit_then_revert_restores_the_previous_weight(git_repo, capsys):
    original = (git_repo / "Pulumi.prod.yaml").read_text()
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 0
    assert git(git_repo, "branch", "--show-current").strip() == "dualstack/prod-ascend-20"
    assert git(git_repo, "status", "--porcelain") == ""
    message = git(git_repo, "log", "-1", "--format=%B")
    assert message.startswith("prod: Ascend weight 5% -> 20% (ladder step 2 of 5)\n\n")
    assert "Gate skipped: staging ran 20% for a week without alerts" in message
    assert numstat(git_repo, "HEAD~1", "HEAD") == ["1", "1", "Pulumi.prod.yaml"]
    git(git_repo, "revert", "--no-edit", "HEAD")
    assert weight(git_repo) == "5"
    assert (git_repo / "Pulumi.prod.yaml").read_text() == original


def test_rollback_to_the_previous_step_equals_reverting_the_promotion(git_repo):
    original = (git_repo / "Pulumi.prod.yaml").read_text()
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 0
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--to", "5") == 0
    assert (git_repo / "Pulumi.prod.yaml").read_text() == original


def test_rollback_commit_reverted_restores_the_weight(git_repo, capsys):
    assert dualstack(git_repo, "rollback", "--stack", "staging", "--commit") == 0
    assert weight(git_repo, "staging") == "0"
    assert git(git_repo, "branch", "--show-current").strip() == "dualstack/staging-rollback-0"
    assert numstat(git_repo, "HEAD~1", "HEAD") == ["1", "1", "Pulumi.staging.yaml"]
    git(git_repo, "revert", "--no-edit", "HEAD")
    assert weight(git_repo, "staging") == "20"


def test_rollback_prints_the_fastest_path_and_the_break_glass_caveat(git_repo, capsys):
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    out = capsys.readouterr().out
    assert out.startswith("Rolled back stack prod: Ascend weight 5% -> 0%")
    assert (
        "pulumi up --stack prod --target 'urn:pulumi:prod::dualstack-inference::"
        "dualstack:index:DualStackInference$dualstack:index:TrafficSplit$"
        "kubernetes:networking.istio.io/v1:VirtualService::inference-traffic-virtual-service'"
    ) in out
    assert "the next `pulumi up` takes the fields back from kubectl-patch and overwrites it" in out
    assert "kubectl -n inference patch virtualservices.networking.istio.io inference-vs" in out
    assert "--- PR title ---\nprod: roll back Ascend weight 5% -> 0%\n" in out


def test_rollback_is_allowed_without_gate_or_verified_image(git_repo):
    set_config_values(git_repo, "prod", {"verifiedAscendImage": "registry/other:v0.9-npu"})
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    assert weight(git_repo) == "0"


def test_promote_at_100_says_nothing_is_left(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    before = (git_repo / "Pulumi.prod.yaml").read_text()
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 0
    assert "top of the ladder: nothing left to promote" in capsys.readouterr().out
    assert (git_repo / "Pulumi.prod.yaml").read_text() == before


def test_rollback_from_100_scales_nvidia_before_moving_traffic(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--to", "80") == 0
    out = capsys.readouterr().out
    deployment = (
        "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference$"
        "dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment::"
        "inference-nvidia-deployment"
    )
    assert f"--target '{deployment}' --target 'urn:" in out
    assert "kubectl -n inference scale deployment inference-blue --replicas=4" in out


def test_rollback_at_target_does_nothing(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 0})
    git(git_repo, "commit", "-qam", "at zero")
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    assert "already at 0% Ascend: nothing to roll back" in capsys.readouterr().out
    assert git(git_repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["rollback", "--stack", "staging", "--to", "50"], "--to 50: above the current weight 20%"),
        (
            ["rollback", "--stack", "staging", "--to", "7"],
            "--to 7: not a ladder step; allowed: 0, 5",
        ),
        (["rollback", "--stack", "staging", "--to", "150"], "--to 150: not a ladder step"),
        (["promote", "--stack", "prod", "--skip-gate"], "--skip-gate needs --reason"),
        (["promote", "--stack", "prod", "--reason", "x"], "--reason is only used with --skip-gate"),
        (
            ["promote", "--stack", "prod"],
            "no Prometheus: pass --prometheus URL or set $DUALSTACK_PROMETHEUS_URL; or promote "
            'without the gate: --skip-gate --reason "why" (the reason goes into the PR for the '
            "reviewers)",
        ),
        (["gate", "--stack", "prod"], "no Prometheus: pass --prometheus URL or set"),
        (["promote", "--stack", "qa", *SKIP], "no stack file Pulumi.qa.yaml"),
        (["promote", "--stack", "prod", "--prometheus", "localhost"], "--prometheus 'localhost'"),
        (["rollback", "--stack", "prod", "--commit", "--branch", "a..b"], "not a valid branch"),
    ],
)
def test_bad_input_is_one_line_and_changes_nothing(git_repo, capsys, argv, message):
    assert dualstack(git_repo, *argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and message in err
    assert err.count("\n") == 1
    assert git(git_repo, "status", "--porcelain") == ""


def test_non_integer_target_is_one_line_from_the_parser(git_repo, capsys):
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--to", "abc") == 2
    assert capsys.readouterr().err == (
        "error: rollback: argument --to: 'abc': expected a whole number in decimal digits (e.g. "
        "20), without sign '+', leading zeros, spaces, '_', fraction or exponent (see dualstack "
        "rollback --help)\n"
    )
    assert weight(git_repo) == "5"


def test_commit_refuses_a_dirty_stack_file(git_repo, capsys):
    path = git_repo / "Pulumi.prod.yaml"
    path.write_text(path.read_text() + "# local note\n")
    assert dualstack(git_repo, "rollback", "--stack", "prod", "--commit") == 2
    assert "Pulumi.prod.yaml has uncommitted changes" in capsys.readouterr().err
    assert weight(git_repo) == "5"


def test_commit_refuses_an_existing_branch(git_repo, capsys):
    git(git_repo, "branch", "dualstack/prod-ascend-20")
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 2
    assert "branch dualstack/prod-ascend-20 already exists" in capsys.readouterr().err
    assert weight(git_repo) == "5"


def test_commit_only_takes_the_stack_file(git_repo):
    # Unrelated documentation: any other file of the tree is the program, which the preview
    # of the working tree judges as an envelope change (fail closed).
    (git_repo / "docs").mkdir()
    (git_repo / "docs" / "notes.md").write_text("unrelated work\n")
    git(git_repo, "add", "docs/notes.md")
    assert dualstack(git_repo, "promote", "--stack", "prod", "--commit", *SKIP) == 0
    assert git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == ["Pulumi.prod.yaml"]
    assert git(git_repo, "status", "--porcelain").strip() == "A  docs/notes.md"


def test_body_file_is_the_printed_body(git_repo, tmp_path, capsys):
    body = tmp_path / "body.md"
    assert (
        dualstack(git_repo, "promote", "--stack", "staging", "--body-file", str(body), *SKIP) == 0
    )
    text = body.read_text()
    assert text.startswith("## staging: Ascend weight 20% -> 50% (ladder step 3 of 5)\n")
    assert text in capsys.readouterr().out
    assert "| NVIDIA pods | 2 | 2 |" in text
    assert "| Ascend pods | 2 | 2 |" in text  # staging: 2 x 0.2 and 2 x 0.5 x 1.2 -> 2


# --- with a stand-in `pulumi` on PATH (the real CLI is not obtainable here) ---


def test_pulumi_config_set_is_used_when_the_cli_works(git_repo, tmp_path, monkeypatch, capsys):
    fake_pulumi = install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_CONFIG", "ok")
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "5")
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 0
    assert "config set ascendWeight 20 --stack prod" in fake_pulumi.read_text()
    assert "Set ascendWeight 5 -> 20: pulumi config set ascendWeight 20 --stack prod" in (
        capsys.readouterr().out
    )
    assert weight(git_repo) == "20"


def test_a_failing_cli_falls_back_to_editing_the_file(git_repo, tmp_path, monkeypatch, capsys):
    fake_pulumi = install_fake_pulumi(tmp_path, monkeypatch)
    assert dualstack(git_repo, "rollback", "--stack", "prod") == 0
    assert "config set ascendWeight 0 --stack prod" in fake_pulumi.read_text()
    out = capsys.readouterr().out
    assert (
        "edited Pulumi.prod.yaml in place; `pulumi config set ascendWeight` failed: "
        "error: failed to load" in out
    )
    assert weight(git_repo) == "0"


def test_promote_refuses_while_the_deployed_weight_differs(git_repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "0")
    assert dualstack(git_repo, "promote", "--stack", "prod", *SKIP) == 2
    assert "stack prod: DIFFERS: deployed 0%, git 5%; deploy or revert" in capsys.readouterr().err
    assert weight(git_repo) == "5"


def test_gate_without_prometheus_names_no_skip(git_repo, capsys, monkeypatch):
    """`--skip-gate` is promote's way out, not the gate's: the gate's refusal names only the
    Prometheus."""
    monkeypatch.delenv("DUALSTACK_PROMETHEUS_URL", raising=False)
    assert dualstack(git_repo, "gate", "--stack", "prod") == 2
    assert capsys.readouterr().err == (
        "error: no Prometheus: pass --prometheus URL or set $DUALSTACK_PROMETHEUS_URL\n"
    )
