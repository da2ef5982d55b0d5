"""The pipelines run the judge from the base: a head that edits the pack is judged by the
base's pack, an envelope change passes only with the owners' approval as the code host
reports it (GitHub's review decision, GitLab's approval rules), on the PR and on deploy.

The GitOps repository here holds this tree's code, so `base-checkout` runs real base code
and the head's edits are real edits (`tests.pipelines.pipeline_stubs.make_gitops`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dualstack.repo.stackfile import set_config_values
from tests.conftest import git
from tests.dualstack.offline.test_redteam_fleet_of_one import fleet_of_one, single
from tests.pipelines.pipeline_harness import gitops_world
from tests.pipelines.pipeline_stubs import calls
from tests.pipelines.test_pipeline_runs import (
    PLATFORMS,
    PR_PLATFORMS,
    TOKEN,
    judge_commits,
    run_pr,
    run_up_github,
    run_up_gitlab,
)
from tests.support.gitlab_approvals import PROJECT, Approvals, gitlab_approvals
from tests.support.gitlab_approvals import TOKEN as GITLAB_TOKEN
from tests.support.judge_repos import edit_code


@pytest.fixture
def gitops(tmp_path: Path) -> dict[str, Any]:
    """As in test_pipeline_runs, with the project's code and fixture stacks on main."""
    return gitops_world(tmp_path, fixtures=True)


def pr(repo: Path, message: str = "the pull request") -> str:
    """Commit the working tree on a PR branch; the base is main's commit (returned)."""
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "switch", "-q", "-c", "pr")
    git(repo, "commit", "-qam", message)
    return base


def previews(log: Path) -> list[list[str]]:
    return [argv for argv in calls(log, ("judge",)) if "preview" in argv]


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_a_pack_edited_in_the_pr_does_not_judge_it(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    edit_code(
        repo,
        "policies/traffic.py",
        "    if previous is None:\n        return ladder[1]\n",
        "    return 100\n",
    )
    set_config_values(repo, "prod", {"ascendWeight": "100"})
    base = pr(repo, "prod 5 -> 100, and a step limit of 100")
    passed, report, _ = run_pr(platform, gitops)
    assert not passed
    assert "FAIL no-unsafe-weight-jump [mandatory]" in report
    assert "file policies/traffic.py: at base -> modified" in report
    assert judge_commits(gitops["log"]) == {base}


@pytest.mark.parametrize("platform", PR_PLATFORMS)
@pytest.mark.parametrize("approved", [False, True])
def test_an_envelope_change_passes_only_with_the_owners(
    platform: str, approved: bool, gitops: dict
) -> None:
    repo = gitops["repo"]
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 6}})
    pr(repo, "prod: 6 NVIDIA pods")
    gitops["gitlab_approved"] = approved  # the judge's stand-in of GitLab's approvals API
    env = {"REVIEW_DECISION": "APPROVED"} if platform == "github" and approved else {}
    passed, report, _ = run_pr(platform, gitops, **env)
    assert passed is approved, report
    assert "capacity.totalReplicas: 4 -> 6" in report
    flagged = [argv for argv in previews(gitops["log"]) if "--owner-approved" in argv]
    assert len(flagged) == (1 if approved else 0)  # prod only: the program did not change
    if not approved:
        assert "FAIL safety-envelope-unchanged [mandatory]" in report


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_an_approved_change_may_not_raise_the_weight(platform: str, gitops: dict) -> None:
    repo = gitops["repo"]
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 6}})
    set_config_values(repo, "prod", {"ascendWeight": "20"})
    pr(repo)
    gitops["gitlab_approved"] = True
    passed, report, _ = run_pr(platform, gitops, REVIEW_DECISION="APPROVED")
    assert not passed
    assert "raises the Ascend weight from 5% to 20%" in report


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("approved", [False, True])
def test_deploy_takes_the_approval_of_the_merged_change(
    platform: str, approved: bool, gitops: dict
) -> None:
    repo = gitops["repo"]
    before = git(repo, "rev-parse", "HEAD").strip()
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 6}})
    git(repo, "commit", "-qam", "merged: prod 6 NVIDIA pods")
    merged = git(repo, "rev-parse", "HEAD").strip()
    env = {"DEPLOYED_prod": "5"}
    with gitlab_approvals(Approvals(approved={"7": approved}, merged_by={merged: "7"})) as state:
        if platform == "github":
            env |= {"MERGED_PR": "7", "REVIEW_DECISION": "APPROVED" if approved else ""}
            env |= {"GITHUB_SHA": merged, "GITHUB_REPOSITORY": "org/gitops"}  # the runner's
            _, results = run_up_github(gitops, before, TOKEN, **env)
        else:
            env |= {
                "CI_API_V4_URL": state.url,
                "CI_PROJECT_ID": PROJECT,
                "GITLAB_API_TOKEN": GITLAB_TOKEN,
                "CI_COMMIT_SHA": merged,
            }
            results = run_up_gitlab(gitops, before, TOKEN, **env)
    # unapproved, the deploy's own offline preview refuses the envelope change: no `up`
    assert ("prod", approved) in results
    ups = [argv for argv in calls(gitops["log"], ("pulumi",)) if argv[1] == "up"]
    assert bool(ups) is approved
    configs = [argv for argv in calls(gitops["log"], ("judge",)) if "policy-config" in argv]
    assert configs and all(("--owner-approved" in argv) is approved for argv in configs)
    assert judge_commits(gitops["log"]) == {before}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("back", [False, True], ids=["to a fleet of one", "back to one service"])
def test_an_approved_fleet_of_one_conversion_deploys(platform: str, back: bool, gitops) -> None:
    """Merged approved at the same weight, the stack still deployed in the old layout (it
    exports `ascendWeight`, or a fleet's `services`): the deploy reads that shape, judges it as
    the same service and runs the full `up` (issue 28)."""
    repo = gitops["repo"]
    prod = repo / "Pulumi.prod.yaml"
    before_text, after_text = (fleet_of_one(5), single(5)) if back else (single(5), fleet_of_one(5))
    prod.write_text(before_text, encoding="utf-8")
    git(repo, "commit", "-qam", "prod as deployed")
    before = git(repo, "rev-parse", "HEAD").strip()
    prod.write_text(after_text, encoding="utf-8")
    git(repo, "commit", "-qam", "merged: prod converted")
    merged = git(repo, "rev-parse", "HEAD").strip()
    services = '{"inference-service": {"ascendWeight": 5}}'
    env = {"DEPLOYED_SERVICES_prod": services} if back else {"DEPLOYED_prod": "5"}
    with gitlab_approvals(Approvals(approved={"7": True}, merged_by={merged: "7"})) as state:
        if platform == "github":
            env |= {"MERGED_PR": "7", "REVIEW_DECISION": "APPROVED"}
            env |= {"GITHUB_SHA": merged, "GITHUB_REPOSITORY": "org/gitops"}
            _, results = run_up_github(gitops, before, TOKEN, **env)
        else:
            env |= {
                "CI_API_V4_URL": state.url,
                "CI_PROJECT_ID": PROJECT,
                "GITLAB_API_TOKEN": GITLAB_TOKEN,
                "CI_COMMIT_SHA": merged,
            }
            results = run_up_gitlab(gitops, before, TOKEN, **env)
    assert ("prod", True) in results
    ups = [argv for argv in calls(gitops["log"], ("pulumi",)) if argv[1] == "up"]
    assert [argv[:5] for argv in ups] == [["pulumi", "up", "--yes", "--stack", "prod"]]
    assert "--target" not in ups[0]  # nothing moved first: the full up does the conversion


@pytest.mark.parametrize("platform", PR_PLATFORMS)
def test_an_approved_fleet_of_one_conversion_passes_the_pr_check(platform: str, gitops) -> None:
    """With credentials the judge previews online from the deployed weight: the stack still
    exports one service's `ascendWeight` (issue 28)."""
    repo = gitops["repo"]
    (repo / "Pulumi.prod.yaml").write_text(fleet_of_one(5), encoding="utf-8")
    pr(repo, "prod as a fleet of one")
    gitops["gitlab_approved"] = True
    passed, report, _ = run_pr(
        platform, gitops, TOKEN, DEPLOYED_prod="5", REVIEW_DECISION="APPROVED"
    )
    assert passed, report
    assert "could not be built" not in report
