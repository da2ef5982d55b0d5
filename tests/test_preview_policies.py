"""End to end: `dualstack preview` runs the policy pack on the real stacks in a real git repo.

The base (`main`) holds the stack files as committed; the head is the working tree, edited the
way `pulumi config set` edits it. Exit codes: 0 all mandatory policies pass, 1 a mandatory
violation (named on stderr), 2 the preview could not be built.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import components.traffic
from dualstack.cli import main
from dualstack.stackfile import set_config_value
from tests.conftest import REPO, git


def preview(repo, capsys, *args):
    code = main(["-C", str(repo), "preview", "--stack", "prod", "--base", "main", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def deployed_at(repo, weight):
    """Commit prod at `weight` on main: the base the next pull request is judged against."""
    set_config_value(repo, "prod", "ascendWeight", weight)
    git(repo, "commit", "-qam", f"prod at {weight}")


def test_5_to_20_passes(git_repo, capsys):
    set_config_value(git_repo, "prod", "ascendWeight", 20)
    code, out, err = preview(git_repo, capsys)
    assert code == 0, out
    assert "Ascend weight: 5% -> 20%" in out
    summary = "0 violations, 1 advisory, 8 of 9 policies passed"
    assert f"Policies (dualstack-migration, previous weight 5%): {summary}" in out
    assert "  ok   no-unsafe-weight-jump [mandatory]" in out
    assert err == ""


def test_5_to_80_fails_naming_the_jump(git_repo, capsys):
    set_config_value(git_repo, "prod", "ascendWeight", 80)
    code, out, err = preview(git_repo, capsys)
    assert code == 1
    assert (
        "  FAIL no-unsafe-weight-jump [mandatory]: VirtualService inference/inference-vs raises "
        "the Ascend weight from 5% to 80%: an increase may go only to the next ladder step, 20%"
    ) in out
    assert err.splitlines()[0] == "policy check failed: no-unsafe-weight-jump"


def test_80_to_0_rollback_passes(git_repo, capsys):
    deployed_at(git_repo, 80)
    set_config_value(git_repo, "prod", "ascendWeight", 0)
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert "Ascend weight: 80% -> 0%" in out


def test_50_to_20_passes(git_repo, capsys):
    deployed_at(git_repo, 50)
    set_config_value(git_repo, "prod", "ascendWeight", 20)
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert "0 violations" in out


def test_raise_to_20_with_an_unverified_ascend_image_fails(git_repo, capsys):
    set_config_value(git_repo, "prod", "ascendWeight", 20)
    code, out, err = preview(
        git_repo,
        capsys,
        "--set",
        "ascend.image=registry/inference-service:v1.2.4-npu",
        "--set",
        "nvidia.image=registry/inference-service:v1.2.4-cuda",
    )
    assert code == 1
    assert "Ascend image: registry/inference-service:v1.2.4-npu (NOT verified)" in out
    assert err.splitlines()[0] == "policy check failed: precision-verified-before-promotion"
    assert "precision-verified image is registry/inference-service:v1.2.3-npu" in err


def test_a_subset_selecting_no_pod_fails(git_repo, capsys, monkeypatch):
    """A code slip in the DestinationRule's labels (here: `hardware: npu`) is caught."""
    real = components.traffic.subset_labels

    def slipped(settings, hardware):
        labels = real(settings, hardware)
        return {**labels, "hardware": "npu"} if hardware == "ascend" else labels

    monkeypatch.setattr(components.traffic, "subset_labels", slipped)
    code, out, err = preview(git_repo, capsys)
    assert code == 1
    assert "route-weights-valid" in err.splitlines()[0]
    assert (
        "DestinationRule inference/inference-dr subset 'ascend' labels "
        "app=inference-service, hardware=npu select no pod"
    ) in out
    assert "503 UH no_healthy_upstream" in out


def test_a_stack_new_at_the_base_is_judged_as_a_first_deploy(git_repo, capsys):
    (git_repo / "Pulumi.canary.yaml").write_text(
        'config:\n  dualstack-inference:ascendWeight: "20"\n', encoding="utf-8"
    )
    code = main(["-C", str(git_repo), "preview", "--stack", "canary", "--base", "main"])
    out = capsys.readouterr().out
    assert code == 1
    assert "Pulumi.canary.yaml does not exist at main" in out
    assert "no previousWeight in the policy config (a first deploy)" in out


def test_cli_exit_code_in_a_real_process(git_repo):
    """`dualstack preview --stack prod --base <prod at 5>` with ascendWeight 80 exits 1."""
    set_config_value(git_repo, "prod", "ascendWeight", 80)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "dualstack",
            "-C",
            str(git_repo),
            "preview",
            "--stack",
            "prod",
            "--base",
            "main",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 1, done.stderr
    assert "policy check failed: no-unsafe-weight-jump" in done.stderr


@pytest.mark.parametrize("weight", ["150", "abc"])
def test_bad_weight_is_exit_2_before_any_policy(git_repo, capsys, weight):
    set_config_value(git_repo, "prod", "ascendWeight", weight)
    code, out, err = preview(git_repo, capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: dualstack-inference:ascendWeight = '{weight}'")
