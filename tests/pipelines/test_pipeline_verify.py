"""The verification job, the one writer of the evidence: the real precision check against two
local backends, then the pull request (merge request) that records the pair."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dualstack.repo.stackfile import parse_config
from tests.conftest import git
from tests.pipelines.pipeline_harness import (
    GITLAB_CI,
    WORKFLOWS,
    gitops_world,
    load_yaml,
    run_github_job,
    run_gitlab_job,
)
from tests.pipelines.pipeline_stubs import calls
from tests.support.judge_repos import PROD, V123, V124
from tests.support.precision_servers import Behaviour, OpenAIServer


@pytest.fixture
def gitops(tmp_path: Path) -> dict[str, Any]:
    """A GitOps repo whose fixture prod serves the v1.2.4 pair, not yet verified (only v1.2.3
    is), with the stubs on PATH."""
    serving = {**PROD, "nvidia": {"image": V124["nvidia"]}, "ascend": {"image": V124["ascend"]}}
    return gitops_world(tmp_path, prod=serving)


def github_verify(world: dict[str, Any], nvidia: str, ascend: str):
    contexts = {
        "github": {
            "ref": "refs/heads/main",
            "token": "ghs-test",
            "event": {"repository": {"default_branch": "main"}},
        },
        "inputs": {"stack": "prod", "nvidia_url": nvidia, "ascend_url": ascend},
    }
    env = {**world["env"], "GITHUB_RUN_ID": "77"}
    workflow = load_yaml(WORKFLOWS / "verify-precision.yml")
    return run_github_job(workflow, "verify", contexts, world["repo"], env)[0]


def test_a_pass_opens_the_pull_request_recording_the_pair(gitops) -> None:
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        runs = github_verify(gitops, nvidia.url, ascend.url)
    assert all(run.rc == 0 for run in runs if run.ran), [r.output for r in runs if r.rc]
    recorded = parse_config(
        git(gitops["origin"], "show", "verify/prod-77:Pulumi.prod.yaml"), "pushed"
    )
    assert recorded["dualstack-inference:verifiedImages"] == [V123, V124]  # the history grows
    assert git(gitops["repo"], "diff", "--name-only", "main", "verify/prod-77").split() == [
        "Pulumi.prod.yaml"
    ]
    [created] = [argv for argv in calls(gitops["log"], ("gh",)) if argv[1:3] == ["pr", "create"]]
    assert created[created.index("--title") + 1] == "Precision-verified image pair for prod"


def test_a_mismatch_records_nothing(gitops) -> None:
    with OpenAIServer() as nvidia, OpenAIServer(Behaviour(diverge_after=2)) as ascend:
        runs = github_verify(gitops, nvidia.url, ascend.url)
    check = next(run for run in runs if run.name == "Run the precision check and record the pair")
    assert check.rc == 1
    assert "verifiedAscendImage unchanged in Pulumi.prod.yaml" in check.output
    assert not [run for run in runs if run.name.startswith("Open") and run.ran]
    assert git(gitops["repo"], "status", "--porcelain") == ""
    assert calls(gitops["log"], ("gh",)) == []


def test_gitlab_without_a_token_says_the_pair_is_not_recorded(gitops) -> None:
    config = load_yaml(GITLAB_CI)
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        ci = {
            "CI_PIPELINE_SOURCE": "web",
            "CI_COMMIT_BRANCH": "main",
            "CI_DEFAULT_BRANCH": "main",
            "CI_PROJECT_DIR": str(gitops["repo"]),
            "NVIDIA_URL": nvidia.url,
            "ASCEND_URL": ascend.url,
        }
        done = run_gitlab_job(config, "verify:prod", ci, gitops["repo"], gitops["env"])
    assert done.returncode == 1, done.stdout + done.stderr
    assert "the pair passed but is NOT recorded (no GITLAB_API_TOKEN)" in done.stdout
    added = [line for line in done.stdout.splitlines() if line.startswith("+ ")]
    assert any(f"nvidia: {V124['nvidia']}" in line for line in added), done.stdout
