"""The emergency-rollback jobs (GitHub `emergency-rollback.yml`, GitLab `rollback:<stack>` and
`rollback:all`), run by the pipeline harness in a throwaway GitOps repo with fixture stacks.

What a reviewer relies on: the job never waits on the deploy's concurrency group or resource
group; it stops the running update, moves the traffic, then records the change in git (a
pull request, or a direct push with ROLLBACK_GIT=direct), and cancels the deploy runs that
would put the old weight back. The stand-in tools (tests/support/emergency_stub.py) log every
call in one file, so the order across pulumi, git, gh and curl is what the assertions read.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO, git
from tests.pipelines.pipeline_harness import (
    GITLAB_CI,
    WORKFLOWS,
    expand,
    github_if,
    gitlab_job,
    gitlab_rule,
    gitlab_variables,
    interpolate,
    load_yaml,
    run_github_job,
    run_gitlab_job,
)
from tests.support.emergency_budget import budget
from tests.support.emergency_stub import calls, install_emergency_tools, make_gitops

STACKS = ("staging", "prod")
TOKEN = "pul-test-token"


@pytest.fixture
def gitops(tmp_path: Path) -> dict[str, Any]:
    """Clone of a bare origin with prod at 20% and staging at 50%, stand-in tools on PATH."""
    clone, origin = make_gitops(tmp_path, {"prod": 20, "staging": 50})
    install_emergency_tools(tmp_path / "bin")
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    env = {
        "PATH": os.pathsep.join([str(tmp_path / "bin"), "/usr/local/bin", "/usr/bin", "/bin"]),
        "HOME": str(tmp_path),
        "STUB_LOG": str(tmp_path / "calls.jsonl"),
        "LANG": "C.UTF-8",
        "RUNNER_TEMP": str(temp),
    }
    return {"repo": clone, "origin": origin, "log": tmp_path / "calls.jsonl", "env": env}


def steps(log: Path) -> list[tuple[str, ...]]:
    """(tool, verb[, verb]) of each call, `stack output` left out (it runs beside the cancel)."""
    out = []
    for call in calls(log):
        if call[1:3] == ["stack", "output"]:
            continue
        out.append(tuple(call[:3]) if call[0] in ("gh", "pulumi") else tuple(call[:2]))
    return out


# ------------------------------------------------------------------ never behind a deploy


def test_github_rollback_has_its_own_concurrency_group() -> None:
    rollback = load_yaml(WORKFLOWS / "emergency-rollback.yml")["jobs"]["rollback"]
    up = load_yaml(WORKFLOWS / "deploy.yml")["jobs"]["up"]
    assert rollback["concurrency"] == {"group": "emergency-rollback", "cancel-in-progress": False}
    for stack in STACKS:
        ours = interpolate(rollback["concurrency"]["group"], {"inputs": {"stack": stack}})
        deploys = interpolate(up["concurrency"]["group"], {"matrix": {"stack": stack}})
        assert (ours, deploys) == ("emergency-rollback", f"pulumi-up-{stack}")


def test_gitlab_rollback_has_its_own_resource_group() -> None:
    config = load_yaml(GITLAB_CI)
    ci = {"CI_PIPELINE_SOURCE": "web", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}
    for stack in STACKS:
        up, ours = gitlab_job(config, f"up:{stack}"), gitlab_job(config, f"rollback:{stack}")
        deploys = expand(up["resource_group"], gitlab_variables(config, up, ci))
        mine = expand(ours["resource_group"], gitlab_variables(config, ours, ci))
        assert (mine, deploys) == ("emergency-rollback", f"pulumi-{stack}")
    assert gitlab_job(config, "rollback:all")["resource_group"] == "emergency-rollback"


def test_github_rollback_runs_only_when_dispatched_the_cache_job_otherwise() -> None:
    jobs = load_yaml(WORKFLOWS / "emergency-rollback.yml")["jobs"]
    on_main = {"ref": "refs/heads/main", "event": {"repository": {"default_branch": "main"}}}
    for event, rollback, warm in (
        ("workflow_dispatch", True, False),
        ("schedule", False, True),
        ("push", False, True),
    ):
        github = {"github": {**on_main, "event_name": event}}
        assert github_if(jobs["rollback"]["if"], github, False) is rollback, event
        assert github_if(jobs["warm-cache"]["if"], github, False) is warm, event


# ------------------------------------------------------------------ GitHub run


def github_run(gitops: dict, stack: str = "prod", git_rule: str = "", **env: str):
    workflow = load_yaml(WORKFLOWS / "emergency-rollback.yml")
    contexts = {
        "github": {
            "event_name": "workflow_dispatch",
            "ref": "refs/heads/main",
            "token": "ghs-test",
            "event": {"repository": {"default_branch": "main"}},
        },
        "inputs": {"stack": stack, "to": "", "reason": "p99 doubled on Ascend"},
        "secrets": {"PULUMI_ACCESS_TOKEN": TOKEN},
        "vars": {"ROLLBACK_GIT": git_rule},
    }
    base_env = {**gitops["env"], "GITHUB_RUN_ID": "4242", **env}
    runs, _ = run_github_job(workflow, "rollback", contexts, gitops["repo"], base_env)
    return {run.name: run for run in runs}


def test_github_stops_the_deploy_moves_traffic_then_opens_the_pr(gitops: dict) -> None:
    runs = github_run(gitops, RUNNING_prod="1", DEPLOYED_prod="20", GH_RUNS="77")
    assert all(run.rc == 0 for run in runs.values() if run.ran), runs
    assert not runs["Install"].ran  # the harness provides the tools; its cache: below
    assert steps(gitops["log"]) == [
        ("pulumi", "cancel", "--yes"),  # stop the running update first
        ("pulumi", "up", "--yes"),  # then the traffic objects alone
        ("git", "checkout"),
        ("git", "commit"),  # then git
        ("pulumi", "stack", "export"),  # what the cancelled update left (advice)
        ("gh", "run", "list"),
        ("gh", "run", "cancel"),  # the queued deploy of the old weight
        ("git", "push"),
        ("gh", "pr", "create"),
    ]
    up = next(c for c in calls(gitops["log"]) if c[:2] == ["pulumi", "up"])
    assert "--skip-preview" in up and "--refresh=false" in up and up[-1] == "weight=0"
    assert "--policy-pack" not in up  # a rollback is never blocked
    cancelled = next(c for c in calls(gitops["log"]) if c[:3] == ["gh", "run", "cancel"])
    assert cancelled == ["gh", "run", "cancel", "77"]
    pushed = git(gitops["origin"], "show", "rollback/prod-4242:Pulumi.prod.yaml")
    assert 'ascendWeight: "0"' in pushed
    pr = next(c for c in calls(gitops["log"]) if c[:3] == ["gh", "pr", "create"])
    body = Path(pr[pr.index("--body-file") + 1]).read_text()
    assert body.startswith("Reason: p99 doubled on Ascend\n")
    out = runs["Traffic first, then the commit"].output
    assert "prod: cancelled the running update of prod (pulumi cancel); deployed 20%" in out


def test_github_direct_push_lands_on_the_default_branch(gitops: dict) -> None:
    runs = github_run(gitops, git_rule="direct")
    assert runs["Record the rollback in git"].rc == 0
    assert "pushed to main directly" in runs["Record the rollback in git"].output
    assert 'ascendWeight: "0"' in git(gitops["origin"], "show", "main:Pulumi.prod.yaml")
    assert not [c for c in calls(gitops["log"]) if c[:3] == ["gh", "pr", "create"]]


def test_github_all_rolls_back_every_stack_in_one_pull_request(gitops: dict) -> None:
    runs = github_run(gitops, stack="all")
    assert all(run.rc == 0 for run in runs.values() if run.ran), runs
    ups = [c[c.index("--stack") + 1] for c in calls(gitops["log"]) if c[:2] == ["pulumi", "up"]]
    assert sorted(ups) == ["prod", "staging"]
    for stack in STACKS:
        text = git(gitops["origin"], "show", f"rollback/all-4242:Pulumi.{stack}.yaml")
        assert 'ascendWeight: "0"' in text
    assert len([c for c in calls(gitops["log"]) if c[:3] == ["gh", "pr", "create"]]) == 1


def test_github_a_failed_up_still_records_git_and_fails_the_job(gitops: dict) -> None:
    runs = github_run(gitops, UP_RC_prod="255")
    assert runs["Traffic first, then the commit"].rc == 2
    assert "Break-glass for prod without Pulumi" in runs["Traffic first, then the commit"].output
    assert runs["Record the rollback in git"].rc == 0  # the decision is recorded anyway
    assert 'ascendWeight: "0"' in git(
        gitops["origin"], "show", "rollback/prod-4242:Pulumi.prod.yaml"
    )


# ------------------------------------------------------------------ GitLab run


def gitlab_run(gitops: dict, job: str = "rollback:prod", **variables: str):
    config = load_yaml(GITLAB_CI)
    ci = {
        "CI_PIPELINE_SOURCE": "web",
        "CI_COMMIT_BRANCH": "main",
        "CI_DEFAULT_BRANCH": "main",
        "CI_PROJECT_DIR": str(gitops["repo"]),
        "CI_PIPELINE_ID": "99",
        "GITLAB_USER_NAME": "Operator",
        "GITLAB_USER_EMAIL": "operator@example.com",
        "PULUMI_ACCESS_TOKEN": TOKEN,
        **variables,
    }
    spec = gitlab_job(config, job)
    assert gitlab_rule(spec, gitlab_variables(config, spec, ci)) == "manual"
    return run_gitlab_job(config, job, ci, gitops["repo"], gitops["env"])


def test_gitlab_without_a_git_token_moves_traffic_then_fails_loudly(gitops: dict) -> None:
    done = gitlab_run(gitops, ROLLBACK_TO="5")
    assert done.returncode == 1
    assert "rolled back in the cluster but NOT in git (no GITLAB_API_TOKEN)" in done.stdout
    assert '+  dualstack-inference:ascendWeight: "5"' in done.stdout  # the diff to push
    assert steps(gitops["log"]) == [
        ("pulumi", "cancel", "--yes"),
        ("pulumi", "up", "--yes"),
        ("git", "checkout"),
        ("git", "commit"),
    ]


def test_gitlab_with_a_token_cancels_the_deploy_job_and_opens_the_mr(gitops: dict) -> None:
    host = "https://oauth2:glpat-x@gitlab.example:443/group/gitops.git"
    git(gitops["repo"], "config", f"url.{gitops['origin']}.insteadOf", host)
    git(gitops["origin"], "config", "receive.advertisePushOptions", "true")
    jobs = '[{"id": 7, "name": "up:prod"}, {"id": 8, "name": "up:staging"}]'
    done = gitlab_run(
        gitops,
        GITLAB_API_TOKEN="glpat-x",
        CI_API_V4_URL="https://gitlab.example/api/v4",
        CI_PROJECT_ID="42",
        CI_SERVER_PROTOCOL="https",
        CI_SERVER_HOST="gitlab.example",
        CI_SERVER_PORT="443",
        CI_PROJECT_PATH="group/gitops",
        CURL_OUT=jobs,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    curls = [c for c in calls(gitops["log"]) if c[0] == "curl"]
    assert [c[-1] for c in curls] == [
        "https://gitlab.example/api/v4/projects/42/jobs?scope[]=created&scope[]=pending"
        "&scope[]=running&scope[]=waiting_for_resource&per_page=100",
        "https://gitlab.example/api/v4/projects/42/jobs/7/cancel",  # up:prod, not up:staging
    ]
    order = [s[:2] for s in steps(gitops["log"])]
    assert (
        order.index(("pulumi", "up"))
        < order.index(("git", "commit"))
        < order.index(("curl", "-fsS"))
    )
    push = next(c for c in calls(gitops["log"]) if c[:2] == ["git", "push"])
    assert "merge_request.create" in push
    assert 'ascendWeight: "0"' in git(gitops["origin"], "show", "rollback/prod-99:Pulumi.prod.yaml")


# ------------------------------------------------------------------ the install step's cache hit


def test_a_cache_hit_installs_nothing(tmp_path: Path) -> None:
    """With .venv and the Pulumi CLI restored (`CACHE_HIT=true`), the install step runs no pip,
    no download and no plugin install: `make venv` finds the venv current."""
    work = tmp_path / "checkout"
    work.mkdir()
    for name in ("Makefile", "pyproject.toml", "requirements.lock", "requirements-dev.lock"):
        (work / name).write_bytes((REPO / name).read_bytes())
    (work / ".venv" / "bin").mkdir(parents=True)
    python = work / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (work / ".venv" / ".installed").write_text("")
    home = tmp_path / "pulumi-home"
    (home / "bin").mkdir(parents=True)
    version = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.metadata as m; print(m.version('pulumi_kubernetes'))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (home / "plugins" / f"resource-kubernetes-v{version}").mkdir(parents=True)
    install_emergency_tools(tmp_path / "bin")
    (home / "bin" / "pulumi").symlink_to(tmp_path / "bin" / "pulumi")
    for name in ("pyproject.toml", "requirements-dev.lock"):
        os.utime(work / name)  # a fresh checkout: newer than the restored venv
    env = {
        "PATH": os.pathsep.join([str(tmp_path / "bin"), "/usr/bin", "/bin"]),
        "HOME": str(tmp_path),
        "STUB_LOG": str(tmp_path / "calls.jsonl"),
        "PULUMI_VERSION": "3.272.0",
        "PULUMI_HOME": str(home),
        "CACHE_HIT": "true",
    }
    done = subprocess.run(
        ["bash", str(REPO / ".ci" / "emergency-toolchain")],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install" not in done.stdout
    assert calls(tmp_path / "calls.jsonl") == []  # no curl, no `pulumi plugin install`


# ------------------------------------------------------------------ the SOP page


def test_the_sop_starts_with_this_path_and_its_budget_fits_the_minute() -> None:
    text = (REPO / "docs" / "operations.md").read_text(encoding="utf-8")
    sop = text.split("# Emergency SOP (Ascend misbehaves in production)\n", 1)[1]
    opening = sop.split("\n## ", 1)[0]
    assert "dualstack rollback --emergency" in opening
    for trigger in ("`emergency-rollback`", "`rollback:prod`", "`rollback:all`"):
        assert trigger in opening
    assert re.findall(r"^\d\. \*\*(\w+)\*\*", opening, re.M) == ["Stop", "Traffic", "Git"]
    assert sop.index("\n## Time budget") < sop.index("\n## Break-glass")
    rows = budget()
    steps = [value for name, value in rows.items() if name != "Total"]
    assert rows["Total"] == (sum(ci for ci, _ in steps), sum(lap for _, lap in steps))
    assert rows["Total"][0] <= 60 and rows["Total"][1] <= 60
