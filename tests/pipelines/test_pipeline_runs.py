"""The pipelines' own shell steps, run in a throwaway GitOps repo with stub `pulumi` and the
real `dualstack preview`, `policy-config` and `rollback` (policies included).

GitHub jobs and GitLab jobs get the same scenarios and must make the same calls: the offline
preview always; with credentials the deployed weight, the policy-pack config and `pulumi
preview --policy-pack`; with a Prometheus URL the gate; on the default branch `pulumi up`
per changed stack in deploy order; the emergency rollback's targeted `up`.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from policies import POLICIES
from tests.conftest import git
from tests.pipelines.pipeline_harness import (
    GITLAB_CI,
    WORKFLOWS,
    github_if,
    gitlab_job,
    gitlab_rule,
    gitlab_variables,
    load_yaml,
    run_github_job,
    run_gitlab_job,
)
from tests.pipelines.pipeline_stubs import calls, install_stubs, make_gitops, set_weight

PARENT = "urn:pulumi:prod::dualstack-inference::dualstack:index:DualStackInference"
VS_URN = (
    f"{PARENT}$dualstack:index:TrafficSplit$kubernetes:networking.istio.io/v1:VirtualService"
    "::inference-traffic-virtual-service"
)
NVIDIA_DEPLOYMENT_URN = (
    f"{PARENT}$dualstack:index:InferenceWorkload$kubernetes:apps/v1:Deployment"
    "::inference-nvidia-deployment"
)
RULE_URN = (
    f"{PARENT}$dualstack:index:UnifiedMonitoring"
    "$kubernetes:monitoring.coreos.com/v1:PrometheusRule::inference-monitoring-rules"
)
PROMETHEUS = "http://127.0.0.1:9/"  # never contacted: `dualstack gate` is a stub here
TOKEN = "pul-test-token"


@pytest.fixture
def gitops(tmp_path: Path) -> dict[str, Any]:
    """Repo clone, stub PATH and log; main has prod at 5 and staging at 20."""
    clone, origin = make_gitops(tmp_path)
    install_stubs(tmp_path / "bin")
    log = tmp_path / "calls.jsonl"
    env = {
        "PATH": os.pathsep.join([str(tmp_path / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(tmp_path),
        "STUB_LOG": str(log),
        "LANG": "C.UTF-8",
    }
    return {"repo": clone, "origin": origin, "log": log, "env": env}


def pr_branch(repo: Path, **weights: int) -> None:
    git(repo, "switch", "-q", "-c", "step")
    for stack, weight in weights.items():
        set_weight(repo, stack, weight)


# ------------------------------------------------------------------ pull request


def run_pr(platform: str, gitops: dict, token: str = "", prometheus: str = "", **env: str):
    """Run the PR check; returns (passed, report text, step names that ran)."""
    repo, base_env = gitops["repo"], {**gitops["env"], **env}
    if platform == "github":
        workflow = load_yaml(WORKFLOWS / "pull-request.yml")
        contexts = {
            "github": {
                "base_ref": "main",
                "ref": "refs/pull/7/merge",
                "repository": "org/gitops",
                "event": {
                    "pull_request": {"number": 7, "head": {"repo": {"full_name": "org/gitops"}}},
                    "repository": {"default_branch": "main"},
                },
            },
            "secrets": {"PULUMI_ACCESS_TOKEN": token},
            "vars": {"PROMETHEUS_URL": prometheus},
        }
        runs, _ = run_github_job(workflow, "preview", contexts, repo, base_env)
        passed = all(run.rc == 0 for run in runs if run.ran)
        ran = [run.name for run in runs if run.ran]
    else:
        ci = {
            "CI_PIPELINE_SOURCE": "merge_request_event",
            "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
            "CI_DEFAULT_BRANCH": "main",
            "CI_PROJECT_DIR": str(repo),
            "PULUMI_ACCESS_TOKEN": token,
            "PROMETHEUS_URL": prometheus,
        }
        done = run_gitlab_job(load_yaml(GITLAB_CI), "preview", ci, repo, base_env)
        passed, ran = done.returncode == 0, [done.stdout + done.stderr]
    report = repo / "report.md"
    return passed, report.read_text(encoding="utf-8") if report.exists() else "", ran


PLATFORMS = ["github", "gitlab"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pr_with_credentials_runs_every_check(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, TOKEN, PROMETHEUS, DEPLOYED_prod="5")
    assert passed
    cfg = "reports/prod/policy-config.json"
    assert calls(gitops["log"]) == [
        [
            "dualstack",
            "preview",
            "--stack",
            "prod",
            "--base",
            "origin/main",
            "--json-file",
            "reports/prod/offline-preview.json",
        ],
        ["pulumi", "stack", "output", "ascendWeight", "--stack", "prod"],
        [
            "dualstack",
            "policy-config",
            "--stack",
            "prod",
            "--previous-weight",
            "5",
            "--base",
            "origin/main",
            "--output",
            cfg,
        ],
        [
            "pulumi",
            "preview",
            "--stack",
            "prod",
            "--policy-pack",
            "policies",
            "--policy-pack-config",
            cfg,
        ],
        [
            "dualstack",
            "gate",
            "--stack",
            "prod",
            "--prometheus",
            PROMETHEUS,
            "--markdown",
            "reports/prod/gate.md",
            "--json-file",
            "reports/prod/gate.json",
        ],
    ]
    pack_config = json.loads((gitops["repo"] / cfg).read_text())
    assert pack_config["no-unsafe-weight-jump"]["previousWeight"] == 5
    assert "✅ passed" in report
    assert "| `prod` | ✅ pass | ✅ pass | ✅ pass | ✅ pass |" in report
    assert "Ascend weight: 5% -> 20%" in report
    assert "| p99 | PASS |" in report
    junit = ET.parse(gitops["repo"] / "junit.xml").getroot()
    suites = {s.get("name"): s for s in junit.findall("testsuite")}
    assert list(suites) == ["prod: checks", "prod: policies", "prod: gate"]
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    policies = [c.get("name") for c in suites["prod: policies"].findall("testcase")]
    assert {name.split(" [")[0] for name in policies} == {p.name for p in POLICIES}
    assert "no-unsafe-weight-jump [mandatory]" in policies
    gate_cases = [c.get("name") for c in suites["prod: gate"].findall("testcase")]
    assert gate_cases == ["p99-latency: p99 latency"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pr_without_credentials_previews_offline_only(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20, staging=50)
    passed, report, _ = run_pr(platform, gitops)
    assert passed, report
    assert calls(gitops["log"]) == [
        ["dualstack", "preview", "--stack", stack, "--base", "origin/main", "--json-file", json]
        for stack in ("staging", "prod")
        for json in [f"reports/{stack}/offline-preview.json"]
    ]
    assert calls(gitops["log"], ("curl",)) == []  # no CLI download without credentials
    assert "| `staging` | ✅ pass | ⏭️ skipped | ⏭️ skipped | ⏭️ skipped |" in report
    assert "no PULUMI_ACCESS_TOKEN" in report


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mandatory_violation_fails_the_check_but_still_reports(platform: str, gitops) -> None:
    pr_branch(gitops["repo"], prod=80)
    passed, report, ran = run_pr(platform, gitops)
    assert not passed
    assert "| `prod` | ❌ failed (exit 1) |" in report
    assert "FAIL no-unsafe-weight-jump [mandatory]" in report
    if platform == "github":
        assert ran[-1] == "Fail on a mandatory policy violation or an error"


@pytest.mark.parametrize("platform", PLATFORMS)
def test_failing_online_preview_fails_the_check(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(
        platform, gitops, TOKEN, DEPLOYED_prod="5", PULUMI_PREVIEW_RC_prod="255"
    )
    assert not passed
    assert "❌ failed (exit 255)" in report


@pytest.mark.parametrize("platform", PLATFORMS)
def test_first_deploy_has_no_previous_weight(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, _, _ = run_pr(platform, gitops, TOKEN)
    assert passed
    assert [
        "dualstack",
        "policy-config",
        "--stack",
        "prod",
        "--first-deploy",
        "--base",
        "origin/main",
        "--output",
        "reports/prod/policy-config.json",
    ] in calls(gitops["log"])
    pack_config = json.loads((gitops["repo"] / "reports/prod/policy-config.json").read_text())
    assert "previousWeight" not in pack_config["no-unsafe-weight-jump"]
    image = pack_config["precision-verified-before-promotion"]["previousAscendImage"]
    assert image == "registry/inference-service:v1.2.3-npu"  # from the base, origin/main


@pytest.mark.parametrize("platform", PLATFORMS)
def test_failed_gate_is_reported_not_blocking(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, prometheus=PROMETHEUS, GATE_RC="1")
    assert passed
    assert "⚠️ failed (exit 1), advisory" in report


@pytest.mark.parametrize("platform", PLATFORMS)
def test_unresolvable_base_fails_closed(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=80)
    git(gitops["repo"], "update-ref", "-d", "refs/remotes/origin/main")
    if platform == "gitlab":  # the job fetches the target branch itself
        git(gitops["repo"], "remote", "set-url", "origin", str(gitops["repo"] / "missing"))
    passed, report, _ = run_pr(platform, gitops)
    assert not passed
    assert report == ""  # no "nothing changed, passed" comment
    assert calls(gitops["log"]) == []


# ------------------------------------------------------------------ merge: pulumi up


def run_up_github(gitops: dict, before: str, token: str, ref: str = "refs/heads/main", **env):
    """The deploy workflow: `changes`, then `up` per matrix entry in order, stopping at the
    first failure (max-parallel 1, fail-fast). Returns (stacks, [(stack, passed)])."""
    workflow = load_yaml(WORKFLOWS / "deploy.yml")
    github = {"ref": ref, "event": {"before": before, "repository": {"default_branch": "main"}}}
    base = {**gitops["env"], **env}
    contexts: dict[str, Any] = {"github": github, "secrets": {"PULUMI_ACCESS_TOKEN": token}}
    if not github_if(workflow["jobs"]["changes"]["if"], contexts, False):
        return None, []
    _, outputs = run_github_job(workflow, "changes", contexts, gitops["repo"], base)
    contexts["needs"] = {"changes": {"outputs": outputs}}
    up = workflow["jobs"]["up"]
    if not github_if(up["if"], contexts, False):
        return outputs["stacks"], []
    results = []
    for stack in json.loads(outputs["stacks"]):
        runs, _ = run_github_job(
            workflow,
            "up",
            {**contexts, "matrix": {"stack": stack}},
            gitops["repo"],
            base,
            skip_steps=("Install",),
        )
        results.append((stack, all(r.rc == 0 for r in runs if r.ran)))
        if not results[-1][1]:
            break
    return outputs["stacks"], results


def run_up_gitlab(gitops: dict, before: str, token: str, branch: str = "main", **env):
    """The GitLab deploy stages in order; a failed job stops the later stages."""
    config = load_yaml(GITLAB_CI)
    ci = {
        "CI_PIPELINE_SOURCE": "push",
        "CI_COMMIT_BRANCH": branch,
        "CI_DEFAULT_BRANCH": "main",
        "CI_COMMIT_BEFORE_SHA": before,
        "CI_PROJECT_DIR": str(gitops["repo"]),
        "PULUMI_ACCESS_TOKEN": token,
    }
    jobs = [name for name in config if name.startswith("up:")]
    jobs.sort(key=lambda name: config["stages"].index(gitlab_job(config, name)["stage"]))
    results = []
    for name in jobs:
        job = gitlab_job(config, name)
        if gitlab_rule(job, gitlab_variables(config, job, ci)) is None:
            continue
        done = run_gitlab_job(config, name, ci, gitops["repo"], {**gitops["env"], **env})
        results.append((name.removeprefix("up:"), done.returncode == 0))
        if done.returncode:
            break
    return results


def ups(log: Path) -> list[list[str]]:
    return [argv for argv in calls(log) if argv[:2] == ["pulumi", "up"]]


UP = ["--policy-pack", "policies", "--policy-pack-config", "policy-config.json"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_merge_ups_changed_stacks_staging_first(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    set_weight(repo, "staging", 50)
    env = {"DEPLOYED_prod": "5", "DEPLOYED_staging": "20"}
    if platform == "github":
        stacks, results = run_up_github(gitops, before, TOKEN, **env)
        assert stacks == '["staging", "prod"]'
    else:
        results = run_up_gitlab(gitops, before, TOKEN, **env)
    assert results == [("staging", True), ("prod", True)]
    assert ups(gitops["log"]) == [
        ["pulumi", "up", "--yes", "--stack", "staging", *UP],
        ["pulumi", "up", "--yes", "--stack", "prod", *UP],
    ]
    assert [
        "dualstack",
        "policy-config",
        "--stack",
        "prod",
        "--previous-weight",
        "5",
        "--output",
        "policy-config.json",
    ] in calls(gitops["log"])


TARGETED = ["--target-dependents", *UP]


def merge_weights(platform: str, gitops: dict, deployed: int, new: int) -> list[list[str]]:
    """Merge prod at `new` over a deployed `deployed`; the `pulumi up` calls made."""
    repo = gitops["repo"]
    set_weight(repo, "prod", deployed)
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", new)
    env = {"DEPLOYED_prod": str(deployed)}
    if platform == "github":
        _, results = run_up_github(gitops, before, TOKEN, **env)
    else:
        results = run_up_gitlab(gitops, before, TOKEN, **env)
    assert ("prod", True) in results and all(passed for _, passed in results)
    return ups(gitops["log"])


@pytest.mark.parametrize("platform", PLATFORMS)
def test_merged_decrease_moves_traffic_before_the_full_up(platform: str, gitops: dict) -> None:
    assert merge_weights(platform, gitops, 50, 20) == [
        [
            "pulumi",
            "up",
            "--yes",
            "--stack",
            "prod",
            "--target",
            VS_URN,
            "--target",
            RULE_URN,
            *TARGETED,
        ],
        ["pulumi", "up", "--yes", "--stack", "prod", *UP],
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_merged_decrease_from_100_resizes_nvidia_first(platform: str, gitops: dict) -> None:
    first = ["--target", NVIDIA_DEPLOYMENT_URN, "--target", VS_URN, "--target", RULE_URN]
    assert merge_weights(platform, gitops, 100, 80) == [
        ["pulumi", "up", "--yes", "--stack", "prod", *first, *TARGETED],
        ["pulumi", "up", "--yes", "--stack", "prod", *UP],
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_merged_raise_has_no_targeted_step(platform: str, gitops: dict) -> None:
    assert merge_weights(platform, gitops, 20, 50) == [
        ["pulumi", "up", "--yes", "--stack", "prod", *UP],
    ]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_failed_up_stops_the_chain(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    set_weight(repo, "staging", 50)
    if platform == "github":
        _, results = run_up_github(gitops, before, TOKEN, UP_RC_staging="255")
    else:
        results = run_up_gitlab(gitops, before, TOKEN, UP_RC_staging="255")
    assert results == [("staging", False)]
    assert [argv[4] for argv in ups(gitops["log"])] == ["staging"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_only_the_changed_stack_is_deployed(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    if platform == "github":
        run_up_github(gitops, before, TOKEN)
    else:
        run_up_gitlab(gitops, before, TOKEN)
    assert [argv[4] for argv in ups(gitops["log"])] == ["prod"]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_up_never_runs_off_the_default_branch(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    if platform == "github":
        stacks, results = run_up_github(gitops, before, TOKEN, ref="refs/heads/feature")
        assert (stacks, results) == (None, [])
    else:
        assert run_up_gitlab(gitops, before, TOKEN, branch="feature") == []
    assert calls(gitops["log"]) == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_up_without_credentials_skips_cleanly(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    if platform == "github":
        _, results = run_up_github(gitops, before, "")
    else:
        results = run_up_gitlab(gitops, before, "")
    expected = [("prod", True)] if platform == "github" else [("staging", True), ("prod", True)]
    assert results == expected
    assert calls(gitops["log"], ("dualstack", "pulumi", "curl")) == []


# ------------------------------------------------------------------ emergency rollback


def test_github_emergency_rollback_applies_then_opens_the_pr(gitops: dict) -> None:
    repo = gitops["repo"]
    workflow = load_yaml(WORKFLOWS / "emergency-rollback.yml")
    contexts = {
        "github": {
            "ref": "refs/heads/main",
            "token": "ghs-test",
            "event": {"repository": {"default_branch": "main"}},
        },
        "inputs": {"stack": "prod", "to": "", "reason": "p99 doubled on Ascend"},
        "secrets": {"PULUMI_ACCESS_TOKEN": TOKEN},
    }
    env = {**gitops["env"], "GITHUB_RUN_ID": "4242"}
    runs, _ = run_github_job(workflow, "rollback", contexts, repo, env)
    assert all(run.rc == 0 for run in runs if run.ran), [r for r in runs if r.rc]
    log = [
        argv
        for argv in calls(gitops["log"], ("dualstack", "pulumi", "gh"))
        if argv[:2] != ["pulumi", "config"]
    ]  # rollback tries `pulumi config set` first
    assert log[0] == ["dualstack", "rollback", "--stack", "prod"]
    assert log[1] == [
        "pulumi",
        "up",
        "--yes",
        "--stack",
        "prod",
        "--target",
        VS_URN,
        "--target",
        RULE_URN,
        "--target-dependents",
    ]
    assert log[2][:3] == ["gh", "pr", "create"]
    pushed = git(gitops["origin"], "show", "rollback/prod-4242:Pulumi.prod.yaml")
    assert 'ascendWeight: "0"' in pushed
    message = git(gitops["origin"], "log", "-1", "--format=%s", "rollback/prod-4242")
    assert message.strip() == "Emergency rollback of prod: p99 doubled on Ascend"


def test_github_emergency_rollback_only_from_the_default_branch() -> None:
    job = load_yaml(WORKFLOWS / "emergency-rollback.yml")["jobs"]["rollback"]
    feature = {
        "github": {"ref": "refs/heads/x", "event": {"repository": {"default_branch": "main"}}}
    }
    assert not github_if(job["if"], feature, False)


def test_gitlab_emergency_rollback_without_git_token_fails_loudly(gitops: dict) -> None:
    """Leaving 100 %: NVIDIA's Deployment is targeted before the VirtualService. The cluster
    is rolled back; not recording it in git must fail the job, not pass."""
    set_weight(gitops["repo"], "prod", 100)
    config = load_yaml(GITLAB_CI)
    ci = {
        "CI_PIPELINE_SOURCE": "web",
        "CI_COMMIT_BRANCH": "main",
        "CI_DEFAULT_BRANCH": "main",
        "CI_PROJECT_DIR": str(gitops["repo"]),
        "PULUMI_ACCESS_TOKEN": TOKEN,
        "ROLLBACK_TO": "80",
    }
    job = gitlab_job(config, "rollback:prod")
    assert gitlab_rule(job, gitlab_variables(config, job, ci)) == "manual"
    done = run_gitlab_job(config, "rollback:prod", ci, gitops["repo"], gitops["env"])
    assert done.returncode == 1
    assert "NOT in git" in done.stdout
    assert '+  dualstack-inference:ascendWeight: "80"' in done.stdout  # the diff to commit
    log = [argv for argv in calls(gitops["log"]) if argv[:2] != ["pulumi", "config"]]
    assert log == [
        ["dualstack", "rollback", "--stack", "prod", "--to", "80"],
        [
            "pulumi",
            "up",
            "--yes",
            "--stack",
            "prod",
            "--target",
            NVIDIA_DEPLOYMENT_URN,
            "--target",
            VS_URN,
            "--target",
            RULE_URN,
            "--target-dependents",
        ],
    ]
