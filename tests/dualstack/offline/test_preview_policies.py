"""End to end: `dualstack preview` runs the policy pack on the real stacks in a real git repo.

The base (`main`) holds the stack files as committed; the head is the working tree, edited the
way `pulumi config set` edits it. Exit codes: 0 all mandatory policies pass, 1 a mandatory
violation (named on stderr), 2 the preview could not be built.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import components.routers.istio
from dualstack.cli import main
from dualstack.repo.stackfile import set_config_values
from tests.conftest import REPO, git


def preview(repo, capsys, *args):
    code = main(["-C", str(repo), "preview", "--stack", "prod", "--base", "main", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def deployed_at(repo, weight):
    """Commit prod at `weight` on main: the base the next pull request is judged against."""
    set_config_values(repo, "prod", {"ascendWeight": weight})
    git(repo, "commit", "-qam", f"prod at {weight}")


def test_5_to_20_passes(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    code, out, err = preview(git_repo, capsys)
    assert code == 0, out
    assert "Ascend weight: 5% -> 20%" in out
    summary = "0 violations, 4 advisories, 13 of 15 policies passed"
    assert f"Policies (dualstack-migration, previous weight 5%): {summary}" in out
    assert "  ok   no-unsafe-weight-jump [mandatory]" in out
    assert err == ""


def test_a_pass_says_why(git_repo, capsys):
    """The reviewer reads why each policy passed, as docs/ci.md's pull-request flow says:
    `no-unsafe-weight-jump` passes because 20 is the step after the deployed 5."""
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert (
        "  ok   no-unsafe-weight-jump [mandatory]: 20% is the ladder step after the deployed 5%\n"
    ) in out
    assert (
        "  ok   ascend-weight-on-ladder [mandatory]: the routes send 20% to Ascend pods: ladder "
        "steps (0, 5, 20, 50, 80, 100)\n"
    ) in out
    assert (
        "  ok   safety-envelope-unchanged [mandatory]: nothing beyond the Ascend weight and the "
        "verified image pair changes\n"
    ) in out
    assert "  ok   pool-capacity [mandatory]: Each accelerator pool holds the pods" in out
    passes = [line for line in out.splitlines() if line.startswith("  ok ")]
    assert passes and all(": " in line for line in passes)  # every pass carries its reason
    code = main(["-C", str(git_repo), "preview", "-s", "prod", "--base", "main", "-o", "json"])
    (stack,) = json.loads(capsys.readouterr().out)["stacks"]
    jump = next(p for p in stack["policies"] if p["policy"] == "no-unsafe-weight-jump")
    assert jump["message"] == "20% is the ladder step after the deployed 5%"
    assert all(p["message"] for p in stack["policies"] if p["outcome"] == "pass")


def test_a_rollback_pass_says_it_lowers_the_weight(git_repo, capsys):
    deployed_at(git_repo, 80)
    set_config_values(git_repo, "prod", {"ascendWeight": 0})
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert (
        "  ok   no-unsafe-weight-jump [mandatory]: 0% lowers the deployed 80% (decreases are "
        "always allowed)\n"
    ) in out


def test_5_to_80_fails_naming_the_jump(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 80})
    code, out, err = preview(git_repo, capsys)
    assert code == 1
    assert (
        "  FAIL no-unsafe-weight-jump [mandatory]: VirtualService inference/inference-vs raises "
        "the Ascend weight from 5% to 80%: an increase may go only to the next ladder step, 20%"
    ) in out
    assert err.splitlines()[0] == "policy check failed: no-unsafe-weight-jump"


def test_80_to_0_rollback_passes(git_repo, capsys):
    deployed_at(git_repo, 80)
    set_config_values(git_repo, "prod", {"ascendWeight": 0})
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert "Ascend weight: 80% -> 0%" in out


def test_50_to_20_passes(git_repo, capsys):
    deployed_at(git_repo, 50)
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert "0 violations" in out


def test_raise_to_20_with_an_unverified_ascend_image_fails(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    code, out, err = preview(
        git_repo,
        capsys,
        "--set",
        "ascend.image=registry/inference-service:v1.2.4-npu",
        "--set",
        "nvidia.image=registry/inference-service:v1.2.4-cuda",
    )
    assert code == 1
    assert "Ascend image: registry/inference-service:v1.2.4-npu (NOT verified at the base)" in out
    assert err.splitlines()[0] == "policy check failed: precision-verified-before-promotion"
    assert "the base's precision-verified pairs are the deployed nvidia image + " in err


NEW_IMAGES = (
    "--set",
    "ascend.image=registry/inference-service:v1.2.4-npu",
    "--set",
    "nvidia.image=registry/inference-service:v1.2.4-cuda",
)


def test_image_bump_at_5_without_verification_fails(git_repo, capsys):
    """The precision check is required after every image upgrade while Ascend serves traffic."""
    code, out, err = preview(git_repo, capsys, *NEW_IMAGES)
    assert code == 1
    assert "Ascend weight: unchanged at 5%" in out
    assert "Ascend image: registry/inference-service:v1.2.4-npu (NOT verified at the base)" in out
    assert err.splitlines()[0] == "policy check failed: precision-verified-before-promotion"
    assert (
        "with the Ascend weight at 5% while replacing the deployed NVIDIA image "
        "registry/inference-service:v1.2.3-cuda: Deployment inference/inference-green serves "
        "registry/inference-service:v1.2.4-cuda + registry/inference-service:v1.2.4-npu to live "
        "traffic, but the base's precision-verified pairs are the deployed nvidia image + "
        "registry/inference-service:v1.2.3-npu"
    ) in err
    assert "`dualstack verify-precision --stack <stack> --nvidia URL --ascend URL`" in err


def test_nvidia_image_swap_with_a_decrease_5_to_0_fails(git_repo, capsys):
    """A decrease is never blocked, but one that also swaps the image serving all traffic is
    not a plain rollback (issue 28): the NVIDIA image is judged at every weight."""
    set_config_values(git_repo, "prod", {"ascendWeight": 0})
    code, out, err = preview(git_repo, capsys, *NEW_IMAGES)
    assert code == 1, out
    assert "Ascend weight: 5% -> 0%" in out
    assert (
        "with the Ascend weight at 0%: Deployment inference/inference-blue serves "
        "registry/inference-service:v1.2.4-cuda to all live traffic in place of the deployed "
        "registry/inference-service:v1.2.3-cuda, but no pair the base verified names it"
    ) in err


def test_nvidia_image_swap_at_0_fails(git_repo, capsys):
    """At weight 0 NVIDIA serves everything: its image is judged there too (issue 28)."""
    deployed_at(git_repo, 0)
    code, out, err = preview(git_repo, capsys, *NEW_IMAGES)
    assert code == 1, out
    assert "Ascend weight: unchanged at 0%" in out
    assert (
        "registry/inference-service:v1.2.4-cuda to all live traffic in place of the deployed" in err
    )


def test_image_bump_at_5_with_its_own_verification_fails(git_repo, capsys):
    """Evidence comes from the base: the head's verifiedAscendImage verifies nothing."""
    set_config_values(
        git_repo, "prod", {"verifiedAscendImage": "registry/inference-service:v1.2.4-npu"}
    )
    code, out, err = preview(git_repo, capsys, *NEW_IMAGES)
    assert code == 1, out
    assert "Ascend image: registry/inference-service:v1.2.4-npu (NOT verified at the base)" in out
    assert err.splitlines()[0] == (
        "policy check failed: precision-verified-before-promotion, safety-envelope-unchanged"
    )


def test_more_nvidia_pods_than_the_pool_holds_fails(git_repo, capsys):
    """The trial's case: totalReplicas=100 puts 100 pods on 3 nodes x 8 GPUs."""
    code, out, err = preview(git_repo, capsys, "--set", "capacity.totalReplicas=100")
    assert code == 1
    assert "Replicas: nvidia 4 -> 100, ascend 2 -> 6" in out
    assert err.splitlines()[0] == (
        "policy check failed: fleet-rollback-capacity, pool-capacity, safety-envelope-unchanged"
    )
    assert (
        "pool 'nvidia' is too small: a rollout takes up to 100 nvidia.com/gpu (Deployment "
        "inference/inference-blue: (100 replicas, pod template unchanged: no surge) x 1) but "
        "the pool has 24 (3 nodes x 8 acceleratorsPerNode)"
    ) in err


def test_more_ascend_pods_than_the_pool_holds_at_100_fails(git_repo, capsys):
    """The trial's case: at 100% with totalReplicas=20, 24 Ascend pods on 2 nodes x 8 NPUs."""
    deployed_at(git_repo, 80)
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    code, out, err = preview(git_repo, capsys, "--set", "capacity.totalReplicas=20")
    assert code == 1
    assert "Replicas: nvidia 4 -> 1, ascend 4 -> 24" in out
    assert err.splitlines()[0] == "policy check failed: pool-capacity, safety-envelope-unchanged"
    assert (
        "pool 'ascend' is too small: a rollout takes up to 24 huawei.com/Ascend910" in err
        and "but the pool has 16 (2 nodes x 8 acceleratorsPerNode)" in err
    )


def test_pool_size_comes_from_the_base(git_repo, capsys):
    """The head's `acceleratorsPerNode: 16` does not size the pool; approved by the owners it
    does, but then the same pull request may not raise the weight."""
    deployed_at(git_repo, 80)
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    pool = {"name": "ascend", "nodes": ["ascend-01", "ascend-02"], "acceleratorsPerNode": 16}
    set_config_values(git_repo, "prod", {"ascend": {"pool": pool}})
    code, out, err = preview(git_repo, capsys, "--set", "capacity.totalReplicas=20")
    assert code == 1, out
    assert "but the pool has 16 (2 nodes x 8 acceleratorsPerNode)" in err
    code, out, err = preview(
        git_repo, capsys, "--set", "capacity.totalReplicas=20", "--owner-approved"
    )
    assert code == 1, out
    assert "  ok   pool-capacity [mandatory]" in out
    assert err.splitlines()[0] == "policy check failed: safety-envelope-unchanged"


def test_a_subset_selecting_no_pod_fails(git_repo, capsys, monkeypatch):
    """A code slip in the DestinationRule's labels (here: `hardware: npu`) is caught."""
    real = components.routers.istio.subset_labels

    def slipped(settings, hardware):
        labels = real(settings, hardware)
        return {**labels, "hardware": "npu"} if hardware == "ascend" else labels

    monkeypatch.setattr(components.routers.istio, "subset_labels", slipped)
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
    set_config_values(git_repo, "prod", {"ascendWeight": 80})
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
    set_config_values(git_repo, "prod", {"ascendWeight": weight})
    code, out, err = preview(git_repo, capsys)
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: dualstack-inference:ascendWeight = '{weight}'")


def write_config_lines(repo, *lines):
    """Add `key: value` lines to the working tree's Pulumi.prod.yaml, as a PR would."""
    path = repo / "Pulumi.prod.yaml"
    text = path.read_text(encoding="utf-8")
    path.write_text(text + "".join(f"  dualstack-inference:{line}\n" for line in lines))


def test_a_head_ladder_cannot_widen_its_own_step(git_repo, capsys):
    """5 -> 100 with a ladder [0, 5, 100] the PR itself brings is judged on the base ladder."""
    set_config_values(git_repo, "prod", {"ascendWeight": 100})
    write_config_lines(git_repo, "ladder: [0, 5, 100]")
    code, out, err = preview(git_repo, capsys)
    assert code == 1, out
    assert "  ok   ascend-weight-on-ladder [mandatory]" in out
    assert (
        "  FAIL no-unsafe-weight-jump [mandatory]: VirtualService inference/inference-vs raises "
        "the Ascend weight from 5% to 100%: an increase may go only to the next ladder step, 20%"
    ) in out
    assert err.splitlines()[0] == (
        "policy check failed: no-unsafe-weight-jump, safety-envelope-unchanged"
    )


def test_a_head_max_step_cannot_widen_its_own_step(git_repo, capsys):
    set_config_values(git_repo, "prod", {"ascendWeight": 80})
    write_config_lines(git_repo, "policy: {maxStep: 100}")
    code, out, err = preview(git_repo, capsys)
    assert code == 1, out
    assert "from 5% to 80%: an increase may go only to the next ladder step, 20%" in out
    assert err.splitlines()[0] == (
        "policy check failed: no-unsafe-weight-jump, safety-envelope-unchanged"
    )


def test_a_max_step_already_on_the_base_applies(git_repo, capsys):
    """The step limit is the base's: a maxStep merged (reviewed) before applies to the next PR."""
    write_config_lines(git_repo, "policy: {maxStep: 75}")
    git(git_repo, "commit", "-qam", "prod: maxStep 75")
    set_config_values(git_repo, "prod", {"ascendWeight": 80})
    code, out, _err = preview(git_repo, capsys)
    assert code == 0, out
    assert "  ok   no-unsafe-weight-jump [mandatory]" in out


def test_a_decrease_with_unverified_new_images_fails(git_repo, capsys):
    """50 -> 20 while both images move to an unchecked release: not a rollback."""
    deployed_at(git_repo, 50)
    set_config_values(git_repo, "prod", {"ascendWeight": 20})
    code, out, err = preview(git_repo, capsys, *NEW_IMAGES)
    assert code == 1, out
    assert err.splitlines()[0] == "policy check failed: precision-verified-before-promotion"
    assert (
        "lowering the Ascend weight from 50% to 20% while replacing the deployed Ascend image "
        "registry/inference-service:v1.2.3-npu and the deployed NVIDIA image "
        "registry/inference-service:v1.2.3-cuda: Deployment inference/inference-green serves "
        "registry/inference-service:v1.2.4-cuda + registry/inference-service:v1.2.4-npu to "
        "live traffic"
    ) in err
