"""The emergency path's pieces: what it targets, how it reads `pulumi cancel`, where it runs.

Fixture stack files (tests/support/emergency_stub.py) in a real git repo; a stand-in `pulumi`
on PATH plays the CLI (the real one is not obtainable here).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from dualstack.errors import UsageError
from dualstack.repo.git import GitError
from dualstack.repo.stackfile import read_config, set_config_values
from dualstack.step import traffic_first as tf
from tests.conftest import git
from tests.support.emergency_stub import calls, install_emergency_tools, make_gitops

PARENT = "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
NVIDIA = (
    f"{PARENT}$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment"
    "::inference-nvidia-deployment"
)
VS = (
    f"{PARENT}$dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService"
    "::inference-traffic-virtual-service"
)
RULE = (
    f"{PARENT}$dualstack:index:UnifiedMonitoring"
    "$kubernetes:monitoring.coreos.com/v1:PrometheusRule::inference-monitoring-rules"
)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone on main with prod at 20% and staging at 50%, the stand-in tools first on PATH."""
    clone, _ = make_gitops(tmp_path, {"prod": 20, "staging": 50})
    install_emergency_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "calls.jsonl"))
    for name in ("RUNNING_prod", "DEPLOYED_prod", "CANCEL_FAIL", "UP_RC_prod"):
        monkeypatch.delenv(name, raising=False)
    return clone


# --- what is targeted


def test_the_up_has_no_preview_no_refresh_and_only_the_weight_targets(repo: Path) -> None:
    plan = tf.plan_rollback(repo, "prod", 0, clamp=False)
    assert tf.up_args("prod", tf.targets_for(plan, {plan.before.name: 20}), "why") == [
        "up",
        "--yes",
        "--skip-preview",
        "--refresh=false",
        "--stack",
        "prod",
        "--target",
        VS,
        "--target",
        RULE,
        "--target-dependents",
        "--message",
        "why",
    ]


@pytest.mark.parametrize(
    ("git_weight", "deployed", "nvidia_first"),
    [
        (20, 20, False),  # NVIDIA is sized for all traffic below 100 %
        (80, 100, True),  # reverted in git, not yet deployed: NVIDIA is still scaled down
        (100, 80, True),  # a deploy to 100 is running: it may have shrunk NVIDIA already
        (20, None, True),  # unknown deployed weight: assume the worst
    ],
)
def test_nvidia_goes_first_when_the_cluster_may_hold_fewer_nvidia_pods(
    repo: Path, git_weight: int, deployed: int | None, nvidia_first: bool
) -> None:
    set_config_values(repo, "prod", {"ascendWeight": git_weight})
    git(repo, "commit", "-q", "--allow-empty", "-am", f"prod at {git_weight}")
    plan = tf.plan_rollback(repo, "prod", 0, clamp=False)
    targets = tf.targets_for(plan, {} if deployed is None else {plan.before.name: deployed})
    assert targets == ([NVIDIA] if nvidia_first else []) + [VS, RULE]


def test_a_rollback_only_lowers_and_only_to_ladder_steps(repo: Path) -> None:
    with pytest.raises(UsageError, match=r"--to 50: above stack prod's weight 20%"):
        tf.plan_rollback(repo, "prod", 50, clamp=False)
    with pytest.raises(UsageError, match=r"--to 7: not a ladder step of stack prod; allowed: 0, 5"):
        tf.plan_rollback(repo, "prod", 7, clamp=False)
    kept = tf.plan_rollback(repo, "prod", 50, clamp=True)  # --all: prod stays at 20
    assert (kept.after.ascend_weight, kept.changes_git) == (20, False)


def test_all_means_every_stack_file_non_production_first(repo: Path) -> None:
    assert tf.fleet(repo) == ["staging", "prod"]


# --- pulumi cancel


def test_cancel_tells_a_cancelled_update_from_none_running_from_a_failure(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tf.stop_update(repo, "prod").outcome == "none"  # [409] ... already completed
    monkeypatch.setenv("RUNNING_prod", "1")
    assert tf.stop_update(repo, "prod").outcome == "cancelled"
    monkeypatch.setenv("CANCEL_FAIL", "1")
    failed = tf.stop_update(repo, "prod")
    assert failed.outcome == "failed"
    assert "[401] Unauthorized" in failed.describe("prod")
    assert failed.describe("prod").endswith("the targeted up goes ahead")


def test_the_cancelled_update_leaves_its_pending_operation_in_the_export(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tf.pending_operations(repo, "prod") == []
    monkeypatch.setenv("RUNNING_prod", "1")
    assert tf.pending_operations(repo, "prod") == [
        f"updating {PARENT}$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment"
        "::inference-ascend-deployment"
    ]


def test_stop_and_deployed_weight_come_before_the_up(
    repo: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RUNNING_prod", "1")
    monkeypatch.setenv("DEPLOYED_prod", "20")
    plan = tf.plan_rollback(repo, "prod", 0, clamp=False)
    tf.write_weights(repo, [plan])
    [applied] = tf.apply_fleet(repo, [plan], lambda p: "why", started=0.0, clock=lambda: 1.5)
    deployed = {plan.before.name: 20}  # {service: weight}, a single-service stack too
    assert (applied.stopped.outcome, applied.deployed, applied.error) == (
        "cancelled",
        deployed,
        None,
    )
    assert applied.targets == [VS, RULE]
    log = calls(tmp_path / "calls.jsonl", ("pulumi",))
    assert sorted(map(tuple, log[:2])) == sorted(
        [
            ("pulumi", "cancel", "--yes", "--stack", "prod"),
            ("pulumi", "stack", "output", "ascendWeight", "--json", "--stack", "prod"),
        ]
    )
    assert log[2][:2] == ["pulumi", "up"] and log[2][-1] == "weight=0"


def test_a_failed_up_is_reported_not_raised(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UP_RC_prod", "255")
    plan = tf.plan_rollback(repo, "prod", 0, clamp=False)
    [applied] = tf.apply_fleet(repo, [plan], lambda p: "why", started=0.0)
    assert applied.error == "`pulumi up --yes --skip-preview` failed: Updating (prod)"


# --- where it runs


def test_it_runs_only_from_the_default_branch_tip(repo: Path) -> None:
    assert tf.check_checkout(repo, ["prod"]) == "origin/main"
    git(repo, "switch", "-q", "-c", "feature")
    (repo / "notes.txt").write_text("x")
    git(repo, "add", "notes.txt")
    git(repo, "commit", "-qm", "feature work")
    with pytest.raises(GitError, match=r"HEAD is [0-9a-f]{12}, not origin/main .*git switch main"):
        tf.check_checkout(repo, ["prod"])


def test_it_refuses_uncommitted_program_changes(repo: Path) -> None:
    (repo / "__main__.py").write_text("print('local experiment')\n")
    git(repo, "add", "__main__.py")
    git(repo, "commit", "-qm", "program")
    git(repo, "push", "-q", "origin", "main")
    git(repo, "fetch", "-q", "origin")
    (repo / "__main__.py").write_text("print('uncommitted')\n")
    with pytest.raises(GitError, match=r"__main__.py has uncommitted changes: `git stash`"):
        tf.check_checkout(repo, ["prod"])


def test_an_uncommitted_weight_is_fine_other_keys_are_not(repo: Path) -> None:
    set_config_values(repo, "prod", {"ascendWeight": 50})  # e.g. a promote not yet committed
    assert tf.check_checkout(repo, ["prod"]) == "origin/main"
    set_config_values(repo, "prod", {"namespace": "elsewhere"})
    with pytest.raises(GitError, match=r"besides ascendWeight \(dualstack-inference:namespace\)"):
        tf.check_checkout(repo, ["prod"])


def test_the_commit_holds_only_the_rolled_back_stack_files(repo: Path) -> None:
    (repo / "scratch.txt").write_text("unrelated")
    git(repo, "add", "scratch.txt")
    plans = [tf.plan_rollback(repo, stack, 5, clamp=True) for stack in ("staging", "prod")]
    tf.write_weights(repo, plans)
    branch = tf.rollback_branch(repo, plans, None)
    assert branch == "dualstack/rollback-all"
    tf.commit_rollback(repo, plans, branch, "Emergency rollback\n")
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert changed == ["Pulumi.prod.yaml", "Pulumi.staging.yaml"]
    assert read_config(repo, "prod")["dualstack-inference:ascendWeight"] == "5"
    assert git(repo, "status", "--porcelain").strip() == "A  scratch.txt"  # still staged


def test_with_gateway_api_the_emergency_up_targets_the_httproute(repo: Path) -> None:
    set_config_values(repo, "prod", {"router": "gateway-api"})
    git(repo, "commit", "-qam", "prod on the Gateway API")
    plan = tf.plan_rollback(repo, "prod", 0, clamp=False)
    route = (
        f"{PARENT}$dualstack:index:TrafficSplit$kubernetes:gateway.networking.k8s.io/v1:HTTPRoute"
        "::inference-traffic-http-route"
    )
    targets = tf.targets_for(plan, {plan.before.name: 20})
    assert targets == [route, RULE]
