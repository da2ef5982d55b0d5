"""The judge protocol end to end: the BASE's code judges, the head's code only renders.

Class 3 of issue 11 (code in the PR judging the PR): each head below edits the code and is
run by its OWN code (`run_head`: the repository's working tree first on PYTHONPATH), which
must ask the base's code to judge in a temporary worktree. Then: a base that cannot judge
stops the preview (exit 2, never a first deploy); a first deploy applies only when the stack
file is absent at the base; `--head DIR` judges from a checkout of the base.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from dualstack.cli import main
from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.support.judge_repos import (
    PROD,
    commit,
    edit_code,
    failed_policies,
    make_repo,
    preview,
    run_base,
    run_head,
    write_stack,
)

ENVELOPE = "safety-envelope-unchanged"
WORKTREE = "Judged by the base's code and facts (this checkout)"  # the base's own CLI


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path)


def head_preview(repo, *args: str) -> subprocess.CompletedProcess[str]:
    return run_head(repo, "preview", "--stack", "prod", "--base", "main", *args)


# ------------------------------------------------------------- 3. code in the PR


def test_a_step_limit_edited_in_the_pack_does_not_judge(repo):
    edit_code(
        repo,
        "policies/traffic.py",
        "    if previous is None:\n        return ladder[1]\n",
        "    return 100\n",
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    done = head_preview(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert WORKTREE in done.stdout
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}
    assert "raises the Ascend weight from 5% to 100%: an increase may go only to the next " in (
        done.stderr
    )
    assert "file policies/traffic.py: at base -> modified" in done.stdout


def test_a_head_whose_preview_always_passes_does_not_decide(repo):
    """Issue 28: `preview --base` runs the base's CLI and returns its exit code: a head whose
    own preview.py exits 0 whatever the verdict still fails (and prints the base's verdict)."""
    edit_code(
        repo,
        "dualstack/commands/preview.py",
        "    return EXIT_OK if passed else EXIT_FAILED\n",
        "    return EXIT_OK\n",
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    done = head_preview(repo)
    assert done.returncode == 1, done.stdout + done.stderr
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}
    assert "file dualstack/commands/preview.py: at base -> modified" in done.stdout


def test_a_policy_made_advisory_in_the_pr_stays_mandatory(repo):
    edit_code(
        repo,
        "policies/traffic.py",
        """        validate=no_unsafe_weight_jump_validator,
        enforcement_level=EnforcementLevel.MANDATORY,""",
        """        validate=no_unsafe_weight_jump_validator,
        enforcement_level=EnforcementLevel.ADVISORY,""",
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    done = head_preview(repo)
    assert done.returncode == 1
    assert "  FAIL no-unsafe-weight-jump [mandatory]" in done.stdout


def test_a_policy_config_writer_edited_in_the_pr_does_not_judge(repo):
    edit_code(
        repo,
        "dualstack/offline/policy_config.py",
        '"ladder": list(settings.ladder),',
        '"ladder": [0, 100],',
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    done = head_preview(repo)
    assert done.returncode == 1
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}
    assert "file dualstack/offline/policy_config.py: at base -> modified" in done.stdout


def test_a_code_only_pr_shows_what_its_code_changes(repo):
    """The base is rendered by the base's code: a program edit shows in the diff."""
    edit_code(
        repo,
        "components/workloads.py",
        '"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0},',
        '"rollingUpdate": {"maxSurge": 3, "maxUnavailable": 0},',
    )
    done = head_preview(repo)
    assert done.returncode == 1
    assert "No changes to any object." not in done.stdout
    assert "~ Deployment inference/inference-blue" in done.stdout
    assert "-      maxSurge: 1\n+      maxSurge: 3\n" in done.stdout
    assert failed_policies(done.stderr) == {ENVELOPE}
    assert "file components/workloads.py: at base -> modified" in done.stdout


def test_a_head_that_rejects_the_base_config_is_not_a_first_deploy(repo):
    """The head's settings model no longer accepts the base's `verifiedImages`; the base is
    still rendered and judged by its own code (no "first deploy with the head's ladder")."""
    edit_code(
        repo,
        "components/settings/model.py",
        '        (),\n        description="The verification history',
        '        (),\n        max_length=0,\n        description="The verification history',
    )
    write_stack(repo, "prod", {"ascendWeight": "100", "ladder": [0, 5, 100]})
    done = head_preview(repo)
    assert done.returncode == 1, done.stderr
    assert "first deploy" not in done.stdout
    assert "Ascend weight: 5% -> 100%" in done.stdout
    assert "no-unsafe-weight-jump" in failed_policies(done.stderr)


# ------------------------------------------------------------- fail closed


def test_a_base_without_the_protocol_stops_the_preview(repo):
    edit_code(
        repo,
        "dualstack/commands/ci.py",
        '    judge = _step(\n        steps,\n        "judge",',
        '    judge = _step(\n        steps,\n        "judge-v0",',
    )
    commit(repo, "a base from before the judge protocol")
    git(repo, "checkout", "-q", "HEAD~1", "--", "dualstack/commands/ci.py")
    # --set: a what-if the base's code judges through the protocol (without it, the base's
    # own CLI previews the head, and judges this one: an envelope change, exit 1)
    done = head_preview(repo, "--set", "ascendWeight=20")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert "has no judge protocol 1 (`dualstack ci judge`)" in done.stderr
    assert "first deploy applies only when Pulumi.prod.yaml is absent at the base" in done.stderr


def test_a_base_that_cannot_render_its_own_stack_stops_the_preview(repo, capsys):
    write_stack(repo, "prod", {**PROD, "ascendWeight": "33"})
    commit(repo, "a broken base")
    write_stack(repo, "prod", PROD)
    code, out, err = preview(repo, capsys)
    assert code == 2
    assert out == ""
    assert "does not render under the base's own code" in err
    assert "ascendWeight = '33': not a ladder step" in err


def test_a_first_deploy_only_when_the_stack_file_is_absent_at_the_base(repo, capsys):
    write_stack(repo, "canary", {"ascendWeight": "0"})
    code, out, err = preview(repo, capsys, stack="canary")
    assert code == 1
    assert "Note: Pulumi.canary.yaml does not exist at main" in out
    assert "judged as a first deploy" in out
    assert "Pulumi.canary.yaml: absent -> added" in out
    assert failed_policies(err) == {ENVELOPE}
    code, out, err = preview(repo, capsys, "--owner-approved", stack="canary")
    assert code == 0, out + err


def test_an_approved_first_deploy_still_may_not_serve_unverified_traffic(repo, capsys):
    write_stack(repo, "canary", {"ascendWeight": "5"})
    code, _out, err = preview(repo, capsys, "--owner-approved", stack="canary")
    assert code == 1
    assert failed_policies(err) == {ENVELOPE, "precision-verified-before-promotion"}
    assert "the base records no precision-verified image pair" in err


def test_no_base_at_all_is_an_error(tmp_path, capsys):
    (tmp_path / "Pulumi.yaml").write_text("name: dualstack-inference\nruntime: python\n")
    write_stack(tmp_path, "prod", PROD)
    code = main(["-C", str(tmp_path), "preview", "--stack", "prod"])
    assert code == 2
    assert "no base to judge against" in capsys.readouterr().err


# ------------------------------------------------------------- from a checkout of the base


def test_head_mode_judges_from_the_base_checkout(repo, tmp_path):
    """The pipelines' way: `-C base-checkout preview --head .`; the head edits the pack."""
    base = tmp_path / "base-checkout"
    git(repo, "worktree", "add", "-q", "--detach", str(base), "main")
    edit_code(
        repo,
        "policies/traffic.py",
        "    if previous is None:\n        return ladder[1]\n",
        "    return 100\n",
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    done = run_base(base, "preview", "--stack", "prod", "--head", str(repo))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Judged by the base's code and facts (this checkout)" in done.stdout
    assert failed_policies(done.stderr) == {ENVELOPE, "no-unsafe-weight-jump"}


def test_policy_config_from_the_base_checkout(repo, tmp_path):
    base = tmp_path / "base-checkout"
    git(repo, "worktree", "add", "-q", "--detach", str(base), "main")
    set_config_values(repo, "prod", {"ascendWeight": "20"})
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 1}})
    out = tmp_path / "policy-config.json"
    argv = ["policy-config", "--stack", "prod", "--previous-weight", "5"]
    done = run_base(base, *argv, "--head", str(repo), "--output", str(out))
    assert done.returncode == 0, done.stderr
    config = json.loads(out.read_text())
    assert config["rollback-capacity"]["totalReplicas"] == 4  # the base's, not the head's 1
    assert config[ENVELOPE]["envelopeChanges"] == [
        {"fact": "capacity.totalReplicas", "before": "4", "after": "1", "kind": "config"}
    ]
    assert config[ENVELOPE]["ownerApproved"] is False
    assert config["precision-verified-before-promotion"]["verifiedImages"] == [
        {
            "nvidia": "registry/inference-service:v1.2.3-cuda",
            "ascend": "registry/inference-service:v1.2.3-npu",
        }
    ]


def test_a_base_without_code_of_its_own_cannot_judge(tmp_path, capsys):
    """A base commit that holds stack files only: its judge would fall back on the installed
    copy of the code (the head's), so it refuses (exit 2) instead of judging."""
    repo = tmp_path / "stacks-only"
    repo.mkdir()
    (repo / "Pulumi.yaml").write_text("name: dualstack-inference\nruntime: python\n")
    write_stack(repo, "prod", PROD)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "stacks only")
    set_config_values(repo, "prod", {"ascendWeight": "20"})
    code = main(["-C", str(repo), "preview", "--stack", "prod", "--base", "main"])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert "not the base's own: the base has no code to judge with (fail closed)" in err
