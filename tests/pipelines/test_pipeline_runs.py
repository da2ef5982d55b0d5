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

import io
import json
import math
import re
import shutil
import sys
import time
import xml.etree.ElementTree as ET
import zipfile
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
    GITLAB_JUDGE,
    WORKFLOWS,
    github_if,
    gitlab_job,
    gitlab_rule,
    gitlab_variables,
    gitops_world,
    load_yaml,
    run_github_job,
    run_gitlab_job,
)
from tests.pipelines.pipeline_stubs import calls, set_weight
from tests.support.gitlab_approvals import PROJECT as GITLAB_PROJECT
from tests.support.gitlab_approvals import TOKEN as GITLAB_TOKEN
from tests.support.gitlab_approvals import Approvals, gitlab_approvals
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

    def verb(argv: list[str]) -> str:
        return argv[3] if argv[1:2] == ["-C"] else argv[1]

    return [argv for argv in calls(log) if argv[0] != "judge" or verb(argv) != "ci"]


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
    return gitops_world(tmp_path)


def pr_branch(repo: Path, **weights: int) -> None:
    git(repo, "switch", "-q", "-c", "step")
    for stack, weight in weights.items():
        set_weight(repo, stack, weight)


# ------------------------------------------------------------------ pull request


def head_render(gitops: dict, into: Path) -> None:
    """The untrusted `head-render` job of pull-request.yml in the head's checkout, its
    `make venv` replaced by a `.venv/bin/dualstack` running the head's own code; its artifact
    lands in `into` (what the judge's download step does)."""
    repo = gitops["repo"]
    venv = repo / ".venv" / "bin"
    venv.mkdir(parents=True, exist_ok=True)
    (venv / "dualstack").write_text(
        f'#!/bin/sh\nPYTHONPATH={repo} exec {sys.executable} -P -m dualstack "$@"\n'
    )
    (venv / "dualstack").chmod(0o755)
    workflow = load_yaml(WORKFLOWS / "pull-request.yml")
    base = git(repo, "rev-parse", "main").strip()
    contexts = {"github": {"event": {"pull_request": {"number": 7, "base": {"sha": base}}}}}
    runs, _ = run_github_job(workflow, "head-render", contexts, repo, gitops["env"])
    assert all(run.rc == 0 for run in runs if run.ran), [r.output for r in runs]
    if (repo / "head-render").is_dir():
        shutil.copytree(repo / "head-render", into, dirs_exist_ok=True)


def judge_layout(gitops: dict, platform: str) -> dict[str, Path]:
    """Where the judge job keeps the base (its code), the head tree and its reports."""
    tmp = gitops["repo"].parent
    if platform == "gitlab":
        work = tmp / "builds" / "dualstack-judge-1"
        base = work / "base"
        temp = tmp / "builds"
    else:
        work = tmp / "runner-temp" / "dualstack"
        base = tmp / "ws" / "base"
        temp = tmp / "runner-temp"
    return {
        "base": base,
        "head": work / "head",
        "reports": work / "reports",
        "out": work,
        "temp": temp,
    }


def run_gitlab_judge(gitops: dict, head_sha: str, token: str, prometheus: str, env: dict):
    """The GitLab judge project's job (.gitlab/judge.yml) against a stand-in of the gitops
    project's API: merge request !7 at `head_sha`, its head-render artifact, the approvals
    (`gitops["gitlab_approved"]`), the note and the judge's approval."""
    tmp = gitops["repo"].parent
    layout = gitops["layout"]
    git(gitops["repo"], "push", "-q", "-f", "origin", "HEAD:refs/merge-requests/7/head")
    untrusted = tmp / "untrusted"
    head_render(gitops, untrusted)
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as out:
        for path in sorted(untrusted.glob("*.yaml")) if untrusted.is_dir() else []:
            out.writestr(f"head-render/{path.name}", path.read_text(encoding="utf-8"))
        for name, text in gitops.get("untrusted", {}).items():
            out.writestr(f"head-render/{name}", text)
    payload = tmp / "payload.json"
    payload.write_text(
        json.dumps({"object_kind": "merge_request", "object_attributes": {"iid": 7}})
    )
    pulumi = tmp / ".pulumi" / "bin"  # where the installer puts the CLI: the stub
    pulumi.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(gitops["env"]["STUB_BIN"]) / "pulumi", pulumi / "pulumi")
    state = Approvals(
        approved={"7": bool(gitops.get("gitlab_approved"))},
        merge_requests={"7": {"sha": head_sha, "target_branch": "main", "state": "opened"}},
        artifacts={head_sha: archive.getvalue()},
    )
    (tmp / "builds" / "project").mkdir(parents=True, exist_ok=True)
    with gitlab_approvals(state) as served:
        ci = {
            "CI_PIPELINE_SOURCE": "trigger",
            "TRIGGER_PAYLOAD": str(payload),
            "CI_BUILDS_DIR": str(layout["temp"]),
            "CI_JOB_ID": "1",
            "CI_API_V4_URL": served.url,
            "GITOPS_PROJECT": GITLAB_PROJECT,
            "GITOPS_GIT_URL": str(gitops["origin"]),
            "GITLAB_API_TOKEN": GITLAB_TOKEN,
            "PULUMI_ACCESS_TOKEN": token,
            "PROMETHEUS_URL": prometheus,
        }
        bin_dir = Path(gitops["env"]["STUB_BIN"])
        tools = {"/usr/bin/make": str(bin_dir / "make"), "/usr/bin/curl": str(bin_dir / "curl")}
        done = run_gitlab_job(
            load_yaml(GITLAB_JUDGE),
            "dualstack-judge",
            ci,
            tmp / "builds" / "project",
            {**gitops["env"], **env},
            tools=tools,
        )
    gitops["gitlab"] = state
    return done


def run_pr(platform: str, gitops: dict, token: str = "", prometheus: str = "", **env: str):
    """Run the PR check: the untrusted render, then the trusted judge over the head pushed
    as refs/pull/7/head. Returns (passed, report text, step names that ran)."""
    repo = gitops["repo"]
    layout = gitops["layout"] = judge_layout(gitops, platform)
    head_sha = git(repo, "rev-parse", "HEAD").strip()
    if platform == "gitlab":
        done = run_gitlab_judge(gitops, head_sha, token, prometheus, env)
        gitops["output"] = done.stdout + done.stderr
        report = layout["out"] / "report.md"
        text = report.read_text(encoding="utf-8") if report.exists() else ""
        return done.returncode == 0, text, [gitops["output"]]
    git(repo, "push", "-q", "-f", "origin", "HEAD:refs/pull/7/head")
    if not layout["base"].exists():
        layout["base"].parent.mkdir(parents=True, exist_ok=True)
        git(layout["base"].parent, "clone", "-q", str(gitops["origin"]), "base")
    layout["temp"].mkdir(parents=True, exist_ok=True)
    untrusted = layout["temp"] / "dualstack-untrusted"
    if "untrusted" in gitops:  # the artifact as a head that lies about its render uploads it
        untrusted.mkdir(parents=True, exist_ok=True)
        for name, text in gitops["untrusted"].items():
            (untrusted / name).write_text(text, encoding="utf-8")
    else:
        head_render(gitops, untrusted)
    base_env = {
        **gitops["env"],
        "RUNNER_TEMP": str(layout["temp"]),
        "GITHUB_REPOSITORY": "org/gitops",
        "OPEN_PR": "7 main",
        **env,
    }
    workflow = load_yaml(WORKFLOWS / "pr-judge.yml")
    contexts = {
        "github": {
            "workspace": str(layout["base"].parent),
            "repository": "org/gitops",
            "token": "ghs-job-token",
            "event": {"workflow_run": {"head_sha": head_sha, "id": 42, "event": "pull_request"}},
        },
        "runner": {"temp": str(layout["temp"])},
        "secrets": {"PULUMI_ACCESS_TOKEN": token},
        "vars": {"PROMETHEUS_URL": prometheus},
    }
    bin_dir = Path(gitops["env"]["STUB_BIN"])
    tools = {"/usr/bin/gh": str(bin_dir / "gh"), "/usr/bin/make": str(bin_dir / "make")}
    runs, _ = run_github_job(
        workflow, "judge", contexts, layout["base"].parent, base_env, skip_steps=(), tools=tools
    )
    gitops["runs"] = runs
    for run in runs:
        if run.ran and run.rc:
            print(f"step {run.name!r} rc={run.rc}\n{run.output}", file=sys.stderr)
    passed = all(run.rc == 0 for run in runs if run.ran)
    ran = [run.name for run in runs if run.ran]
    report = layout["out"] / "report.md"
    return passed, report.read_text(encoding="utf-8") if report.exists() else "", ran


def placed(gitops: dict, argv: list[str]) -> list[str]:
    """`argv` with the judge job's folders as <base>, <head>, <reports> (see judge_layout)."""
    out = []
    for arg in argv:
        for name in ("reports", "head", "base"):
            root = str(gitops["layout"][name])
            if arg == root or arg.startswith(root + "/"):
                arg = f"<{name}>" + arg[len(root) :]
                break
        out.append(arg)
    return out


PLATFORMS = ["github", "gitlab"]
PR_PLATFORMS = PLATFORMS


def final_verdict(gitops: dict, platform: str) -> str:
    """What the judge last told the code host: GitHub's status `dualstack / judge`, GitLab's
    approval by the judge bot ("success" | "failure"; "" when it told nothing)."""
    if platform == "gitlab":
        told = gitops["gitlab"].verdicts
        return {"approve": "success", "unapprove": "failure"}[told[-1][1]] if told else ""
    statuses = posted_statuses(gitops)
    return statuses[-1][statuses[-1].index("-f") + 1].removeprefix("state=") if statuses else ""


def posted_statuses(gitops: dict) -> list[list[str]]:
    """The `gh api -X POST .../statuses/SHA` calls: the required check's states, in order."""
    return [
        argv for argv in calls(gitops["log"], ("gh",)) if any("/statuses/" in arg for arg in argv)
    ]


def judged_calls(gitops: dict) -> list[list[str]]:
    """`judged()` with the judge job's folders placed (<base>, <head>, <reports>)."""
    return [placed(gitops, argv) for argv in judged(gitops["log"])]


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_pr_with_credentials_runs_every_check(platform: str, gitops: dict, prometheus) -> None:
    base = git(gitops["repo"], "rev-parse", "main").strip()
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, TOKEN, prometheus, DEPLOYED_prod="5")
    assert passed, report
    cfg = "<reports>/prod/policy-config.json"
    preview_json = ["--json-file", "<reports>/prod/offline-preview.json"]
    assert judged_calls(gitops) == [
        ["judge", "-C", "<base>", "preview", "--stack", "prod", "--head", "<head>", *preview_json],
        ["pulumi", "stack", "output", "ascendWeight", "--stack", "prod", "--cwd", "<head>"],
        [
            "judge",
            "-C",
            "<base>",
            "policy-config",
            "--stack",
            "prod",
            "--previous-weight",
            "5",
            "--head",
            "<head>",
            "--output",
            cfg,
        ],
        [
            "pulumi",
            "preview",
            "--stack",
            "prod",
            "--cwd",
            "<head>",
            "--policy-pack",
            "<base>/policies",
            "--policy-pack-config",
            cfg,
        ],
        [
            "judge",
            "-C",
            "<head>",
            "gate",
            "--stack",
            "prod",
            "--prometheus",
            prometheus,
            "--markdown",
            "<reports>/prod/gate.md",
            "--json-file",
            "<reports>/prod/gate.json",
        ],
    ]
    assert judge_commits(gitops["log"]) == {base}  # every judge ran from the base
    report_call = ["judge", "ci", "report", "--dir", "<reports>", "--stacks", "prod"]
    assert report_call in [placed(gitops, argv)[:7] for argv in calls(gitops["log"])]
    out = gitops["layout"]["out"]
    pack_config = json.loads((gitops["layout"]["reports"] / "prod/policy-config.json").read_text())
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
    junit = ET.parse(out / "junit.xml").getroot()
    suites = {s.get("name"): s for s in junit.findall("testsuite")}
    assert list(suites) == ["prod: checks", "prod: policies", "prod: gate"]
    assert junit.get("failures") == "0" and junit.get("errors") == "0"
    policies = [c.get("name") for c in suites["prod: policies"].findall("testcase")]
    assert {name.split(" [")[0] for name in policies} == {p.name for p in POLICIES}
    assert "no-unsafe-weight-jump [mandatory]" in policies
    gate_cases = [c.get("name") for c in suites["prod: gate"].findall("testcase")]
    assert any(name.endswith(": p99 latency") for name in gate_cases), gate_cases
    assert final_verdict(gitops, platform) == "success"
    if platform == "github":
        states = [argv[argv.index("-f") + 1] for argv in posted_statuses(gitops)]
        assert states == ["state=pending", "state=success"]
    else:
        assert gitops["gitlab"].verdicts == [
            ("7", "approve", git(gitops["repo"], "rev-parse", "HEAD").strip())
        ]


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_pr_without_credentials_previews_offline_only(platform: str, gitops: dict) -> None:
    # Both stacks lowered: raising both in one PR is an envelope change (one stack per step).
    pr_branch(gitops["repo"], prod=0, staging=5)
    passed, report, _ = run_pr(platform, gitops)
    assert passed, report
    preview = ["judge", "-C", "<base>", "preview", "--stack"]
    assert judged_calls(gitops) == [
        [
            *preview,
            stack,
            "--head",
            "<head>",
            "--json-file",
            f"<reports>/{stack}/offline-preview.json",
        ]
        for stack in ("staging", "prod")
    ]
    assert calls(gitops["log"], ("curl", "pulumi")) == []  # no CLI without credentials
    assert "| `staging` | ✅ pass | ⏭️ skipped | ⏭️ skipped | ⏭️ skipped |" in report
    assert "no PULUMI_ACCESS_TOKEN" in report


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_mandatory_violation_fails_the_check_but_still_reports(platform: str, gitops) -> None:
    pr_branch(gitops["repo"], prod=80)
    passed, report, ran = run_pr(platform, gitops)
    assert not passed
    assert "| `prod` | ❌ failed (exit 1) |" in report
    assert "FAIL no-unsafe-weight-jump [mandatory]" in report
    assert final_verdict(gitops, platform) == "failure"
    if platform == "github":
        assert ran[-1] == "Verdict (the required check)"


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_failing_online_preview_fails_the_check(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(
        platform, gitops, TOKEN, DEPLOYED_prod="5", PULUMI_PREVIEW_RC_prod="255"
    )
    assert not passed
    assert "❌ failed (exit 255)" in report


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_first_deploy_has_no_previous_weight(platform: str, gitops: dict) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, TOKEN)
    assert passed, report
    assert [
        "judge",
        "-C",
        "<base>",
        "policy-config",
        "--stack",
        "prod",
        "--first-deploy",
        "--head",
        "<head>",
        "--output",
        "<reports>/prod/policy-config.json",
    ] in judged_calls(gitops)
    pack_config = json.loads((gitops["layout"]["reports"] / "prod/policy-config.json").read_text())
    assert "previousWeight" not in pack_config["no-unsafe-weight-jump"]
    image = pack_config["precision-verified-before-promotion"]["previousAscendImage"]
    assert image == "registry/inference-service:v1.2.3-npu"  # from the base, origin/main


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_failed_gate_is_reported_not_blocking(
    platform: str, gitops: dict, failing_prometheus
) -> None:
    pr_branch(gitops["repo"], prod=20)
    passed, report, _ = run_pr(platform, gitops, prometheus=failing_prometheus)
    assert passed, report
    assert "⚠️ failed (exit 1), advisory" in report
    assert "### Promotion gate: FAILED" in report
    assert "| 5xx error ratio | FAIL | 5.00% | 0.50% |" in report
    assert "Ascend's 5xx ratio exceeds NVIDIA's by 4.50 pp" in report


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_a_head_that_conflicts_with_the_base_is_not_judged(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    pr_branch(repo, prod=80)
    git(repo, "switch", "-q", "main")
    set_weight(repo, "prod", 0)  # main moved on the same line
    git(repo, "push", "-q", "origin", "main")
    git(repo, "switch", "-q", "step")
    passed, report, _ = run_pr(platform, gitops)
    assert not passed
    assert report == ""  # no "nothing changed, passed" comment
    assert [argv for argv in judged(gitops["log"]) if argv[0] != "judge"] == []
    assert final_verdict(gitops, platform) == "failure"


# ------------------------------------------------------------------ merge: pulumi up


def run_up_github(gitops: dict, before: str, token: str, ref: str = "refs/heads/main", **env):
    """The deploy workflow: `changes`, then `up` per matrix entry in order, stopping at the
    first failure (max-parallel 1, fail-fast). Returns (stacks, [(stack, passed)])."""
    workflow = load_yaml(WORKFLOWS / "deploy.yml")
    github = {"ref": ref, "event": {"before": before, "repository": {"default_branch": "main"}}}
    merged = git(gitops["repo"], "rev-parse", "HEAD").strip()
    base = {**gitops["env"], "GITHUB_SHA": merged, **env}
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
        "CI_COMMIT_SHA": git(gitops["repo"], "rev-parse", "HEAD").strip(),
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
    # both lowered: a raise beside another stack's change is an envelope change, refused by
    # the deploy's own offline preview (test_deploy_judges_everything_since_the_deployed_commit)
    set_weight(repo, "prod", 0)
    set_weight(repo, "staging", 5)
    env = {"DEPLOYED_prod": "5", "DEPLOYED_staging": "20"}
    if platform == "github":
        stacks, results = run_up_github(gitops, before, TOKEN, **env)
        assert stacks == '["staging", "prod"]'
    else:
        results = run_up_gitlab(gitops, before, TOKEN, **env)
    assert results == [("staging", True), ("prod", True)]
    done = ups(gitops["log"])
    assert [argv[4] for argv in done] == ["staging", "staging", "prod", "prod"]  # traffic first
    assert [done[1], done[3]] == [
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
    # both lowered (a raise beside another stack's change is refused before any up)
    set_weight(repo, "prod", 0)
    set_weight(repo, "staging", 5)
    env = {"DEPLOYED_prod": "5", "DEPLOYED_staging": "20", "UP_RC_staging": "255"}
    if platform == "github":
        _, results = run_up_github(gitops, before, TOKEN, **env)
    else:
        results = run_up_gitlab(gitops, before, TOKEN, **env)
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
    assert results == [("staging", True), ("prod", True)]
    assert calls(gitops["log"], ("dualstack", "pulumi", "curl")) == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_deploy_judges_everything_since_the_deployed_commit(platform: str, gitops: dict) -> None:
    # prod runs 5 at `deployed`; the merge of 5 -> 20 never deployed (its run was replaced
    # or failed), and the next merge raises to 50: against what runs, that is 5 -> 50.
    repo = gitops["repo"]
    deployed = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    before = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 50)
    env = {
        "DEPLOYED_prod": "5",
        "DEPLOYED_COMMIT_prod": deployed,
        "DEPLOYED_COMMIT_staging": deployed,
    }
    if platform == "github":
        _, results = run_up_github(gitops, before, TOKEN, **env)
    else:
        results = run_up_gitlab(gitops, before, TOKEN, **env)
    assert results[-1] == ("prod", False)
    assert ups(gitops["log"]) == []
    assert judge_commits(gitops["log"]) == {deployed}  # not the previous commit


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_successful_up_records_its_commit_and_unchanged_stacks_are_left(
    platform: str, gitops: dict
) -> None:
    repo = gitops["repo"]
    deployed = git(repo, "rev-parse", "HEAD").strip()
    set_weight(repo, "prod", 20)
    merged = git(repo, "rev-parse", "HEAD").strip()
    env = {
        "DEPLOYED_prod": "5",
        "DEPLOYED_COMMIT_prod": deployed,
        "DEPLOYED_COMMIT_staging": merged,
    }
    if platform == "github":
        _, results = run_up_github(gitops, deployed, TOKEN, **env)
    else:
        results = run_up_gitlab(gitops, deployed, TOKEN, **env)
    assert results == [("staging", True), ("prod", True)]
    assert [argv[4] for argv in ups(gitops["log"])] == ["prod"]
    tags = [
        argv for argv in calls(gitops["log"], ("pulumi",)) if argv[1:4] == ["stack", "tag", "set"]
    ]
    assert tags == [
        ["pulumi", "stack", "tag", "set", "dualstack:deployed-commit", merged, "--stack", "prod"]
    ]
