"""The pipelines' own shell steps, run in a throwaway GitOps repo with stub `pulumi` and the
real `dualstack preview`, `policy-config` and `rollback` (policies included).

GitHub jobs and GitLab jobs get the same scenarios and must make the same calls: the offline
preview always; with credentials the deployed weight, the policy-pack config and `pulumi
preview --policy-pack`; with a Prometheus URL the gate; on the default branch `pulumi up`
per changed stack in deploy order. The emergency rollback's runs: test_emergency_rollback.py.
Every judging call (changed stacks, preview, policy config, the pack, the recorder, the
report) runs from `base-checkout`, a checkout of the BASE (the target branch; on deploy the
previous commit), with the head's tree passed as data (`--head`).
"""

from __future__ import annotations

import json
import math
import os
import re
import time
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from components.monitoring.metric_names import (
    ASCEND_WEIGHT,
    ERROR_RATIO,
    LATENCY_P99,
    REQUEST_RATE,
)
from components.settings import load_settings
from policies import POLICIES
from tests.conftest import fixture_config, git
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
from tests.support.prometheus_server import Series, constant, prometheus_over

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
TOKEN = "pul-test-token"
# The deployed 5%: 0.5 of 10 req/s reach Ascend (the gate checks that the split landed).
HEALTHY = {
    "nvidia": {"rate": 9.5, "errors": 0.002, "p99": 0.8},
    "ascend": {"rate": 0.5, "errors": 0.004, "p99": 1.0},
}
ERRORS_10X = {
    "nvidia": {"rate": 9.5, "errors": 0.005, "p99": 0.8},
    "ascend": {"rate": 0.5, "errors": 0.05, "p99": 1.0},
}


def live_history(sides: dict[str, dict[str, float]]) -> list[Series]:
    """The prod stack's recorded series from 26 hours ago until an hour from now.

    The pipelines run `dualstack gate` without `--at`, so it judges the 30 minutes ending at
    the moment it runs: the backfilled history has to cover the present, and the default
    bakeTime (24h) before it. The route weight recorded is the deployed 5% (main's prod), the
    data the gate must say it was taken at.
    """
    namespace = load_settings(fixture_config("prod")).namespace  # the gitops copy holds it
    start = math.floor(time.time() / 60) * 60 - 26 * 3600
    end = start + 27 * 3600
    metrics = {"rate": REQUEST_RATE, "errors": ERROR_RATIO, "p99": LATENCY_P99}
    series = [
        Series(metric, {"hardware": hw, "namespace": namespace}, constant(v[key], start, end))
        for hw, v in sides.items()
        for key, metric in metrics.items()
    ]
    series.append(Series(ASCEND_WEIGHT, {"namespace": namespace}, constant(0.05, start, end)))
    return series


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory) -> str:
    """A real Prometheus where Ascend is healthy at 5% beside NVIDIA."""
    with prometheus_over(live_history(HEALTHY), tmp_path_factory.mktemp("healthy")) as url:
        yield url


@pytest.fixture(scope="module")
def failing_prometheus(tmp_path_factory) -> str:
    """A real Prometheus where Ascend throws 10x NVIDIA's 5xx ratio."""
    with prometheus_over(live_history(ERRORS_10X), tmp_path_factory.mktemp("errors")) as url:
        yield url


PACK = ["--policy-pack", "base-checkout/policies"]


def judged(log: Path) -> list[list[str]]:
    """The calls of the judge (the base's `dualstack`), the head's `dualstack` and `pulumi`,
    without the judge's `ci` helpers (changed stacks, report, approval)."""
    return [argv for argv in calls(log) if argv[:2] != ["judge", "ci"]]


def judge_commits(log: Path) -> set[str]:
    """The commits the judge's checkout was at, over every judge call."""
    if not log.exists():
        return set()
    lines = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    return {argv[2] for argv in lines if argv[0] == "judge-at"}


def drop_base_checkout(repo: Path) -> None:
    """What a fresh job would not have: the previous job's base checkout."""
    if (repo / "base-checkout").exists():
        git(repo, "worktree", "remove", "--force", "base-checkout")


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
        "STUB_BIN": str(tmp_path / "bin"),
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
                    "pull_request": {
                        "number": 7,
                        "base": {"ref": "main"},
                        "head": {"repo": {"full_name": "org/gitops"}},
                    },
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
def test_pr_with_credentials_runs_every_check(platform: str, gitops: dict, prometheus) -> None:
    base = git(gitops["repo"], "rev-parse", "main").strip()
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, TOKEN, prometheus, DEPLOYED_prod="5")
    assert passed
    cfg = "reports/prod/policy-config.json"
    head = str(gitops["repo"])
    preview_json = ["--json-file", "reports/prod/offline-preview.json"]
    assert judged(gitops["log"]) == [
        [
            "judge",
            "-C",
            "base-checkout",
            "preview",
            "--stack",
            "prod",
            "--head",
            head,
            *preview_json,
        ],
        ["pulumi", "stack", "output", "ascendWeight", "--stack", "prod"],
        [
            "judge",
            "-C",
            "base-checkout",
            "policy-config",
            "--stack",
            "prod",
            "--previous-weight",
            "5",
            "--head",
            head,
            "--output",
            cfg,
        ],
        ["pulumi", "preview", "--stack", "prod", *PACK, "--policy-pack-config", cfg],
        [
            "dualstack",
            "gate",
            "--stack",
            "prod",
            "--prometheus",
            prometheus,
            "--markdown",
            "reports/prod/gate.md",
            "--json-file",
            "reports/prod/gate.json",
        ],
    ]
    assert judge_commits(gitops["log"]) == {base}  # every judge ran from the base
    assert ["judge", "ci", "report", "--dir", "reports", "--stacks", "prod"] in [
        argv[:7] for argv in calls(gitops["log"])
    ]
    pack_config = json.loads((gitops["repo"] / cfg).read_text())
    assert pack_config["no-unsafe-weight-jump"]["previousWeight"] == 5
    assert pack_config["safety-envelope-unchanged"]["envelopeChanges"] == []
    assert "✅ passed" in report
    assert "| `prod` | ✅ pass | ✅ pass | ✅ pass | ✅ pass |" in report
    assert "Ascend weight: 5% -> 20%" in report
    # The real gate's verdicts over the real Prometheus, at the moment the job ran: 0.5 req/s
    # (NVIDIA 9.5) x 60 s per whole minute in the 29-minute count range, both ends included
    # (29 minutes off the minute, 30 exactly on it).
    assert "### Promotion gate: PASSED" in report
    assert re.search(r"\| Requests in window \| PASS \| (870|900) \| 1(6,530|7,100) \|", report)
    assert "| Split landed | PASS | 5.00% | 95.00% |" in report
    assert "| Bake time | PASS |" in report
    assert "_Judged step: 5% -> 20%._" in report
    assert "| 5xx error ratio | PASS | 0.40% | 0.20% |" in report
    assert "| p99 latency | PASS | 1.000 s | 0.800 s |" in report
    assert "| Precision check | PASS |" in report
    assert "data taken at 5% Ascend; the stack file says 20%" in report
    junit = ET.parse(gitops["repo"] / "junit.xml").getroot()
    suites = {s.get("name"): s for s in junit.findall("testsuite")}
    assert list(suites) == ["prod: checks", "prod: policies", "prod: gate"]
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    policies = [c.get("name") for c in suites["prod: policies"].findall("testcase")]
    assert {name.split(" [")[0] for name in policies} == {p.name for p in POLICIES}
    assert "no-unsafe-weight-jump [mandatory]" in policies
    gate_cases = [c.get("name") for c in suites["prod: gate"].findall("testcase")]
    assert any(name.endswith(": p99 latency") for name in gate_cases), gate_cases


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pr_without_credentials_previews_offline_only(platform: str, gitops: dict) -> None:
    # Both stacks lowered: raising both in one PR is an envelope change (one stack per step).
    pr_branch(gitops["repo"], prod=0, staging=5)
    passed, report, _ = run_pr(platform, gitops)
    assert passed, report
    head = str(gitops["repo"])
    preview = ["judge", "-C", "base-checkout", "preview", "--stack"]
    assert judged(gitops["log"]) == [
        [*preview, stack, "--head", head, "--json-file", f"reports/{stack}/offline-preview.json"]
        for stack in ("staging", "prod")
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
        "judge",
        "-C",
        "base-checkout",
        "policy-config",
        "--stack",
        "prod",
        "--first-deploy",
        "--head",
        str(gitops["repo"]),
        "--output",
        "reports/prod/policy-config.json",
    ] in calls(gitops["log"])
    pack_config = json.loads((gitops["repo"] / "reports/prod/policy-config.json").read_text())
    assert "previousWeight" not in pack_config["no-unsafe-weight-jump"]
    image = pack_config["precision-verified-before-promotion"]["previousAscendImage"]
    assert image == "registry/inference-service:v1.2.3-npu"  # from the base, origin/main


@pytest.mark.parametrize("platform", PLATFORMS)
def test_failed_gate_is_reported_not_blocking(
    platform: str, gitops: dict, failing_prometheus
) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, prometheus=failing_prometheus)
    assert passed
    assert "⚠️ failed (exit 1), advisory" in report
    assert "### Promotion gate: FAILED" in report
    assert "| 5xx error ratio | FAIL | 5.00% | 0.50% |" in report
    assert "Ascend's 5xx ratio exceeds NVIDIA's by 4.50 pp" in report


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
        drop_base_checkout(gitops["repo"])
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
        drop_base_checkout(gitops["repo"])
        results.append((name.removeprefix("up:"), done.returncode == 0))
        if done.returncode:
            break
    return results


def ups(log: Path) -> list[list[str]]:
    return [argv for argv in calls(log) if argv[:2] == ["pulumi", "up"]]


UP = [*PACK, "--policy-pack-config", "policy-config.json"]


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
        "judge",
        "-C",
        "base-checkout",
        "policy-config",
        "--stack",
        "prod",
        "--from-stack-output",
        "--head",
        str(repo),
        "--output",
        "policy-config.json",
    ] in calls(gitops["log"])
    assert judge_commits(gitops["log"]) == {before}  # the previous commit judged the deploy


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
