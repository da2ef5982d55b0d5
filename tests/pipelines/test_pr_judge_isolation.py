"""The trusted judge job (.github/workflows/pr-judge.yml) against heads that attack it.

Each head here carries a payload the old single job ran or trusted: tools planted in the
head's `.venv/bin` (it used to be first on PATH for `git worktree`, `make`, `gh` and the Pulumi
installer), exit codes planted in `reports/<stack>/*.rc` (the report read the working tree),
a `sitecustomize.py`, a stack file that is a symlink. The judge must reach the same verdict
it reaches without the payload, run none of it, and post that verdict as the head's status.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import git
from tests.pipelines.pipeline_harness import gitops_world
from tests.pipelines.pipeline_stubs import calls, set_weight
from tests.pipelines.test_pipeline_runs import (
    PLATFORMS,
    TOKEN,
    final_verdict,
    judge_commits,
    run_pr,
)

PLANTED = ("git", "make", "gh", "pulumi", "curl", "python", "python3", "dualstack", "bash")

PAYLOAD = """#!/bin/sh
printf '["planted", "%s"]\\n' "$0" >> "$STUB_LOG"
exit 0
"""


@pytest.fixture
def gitops(tmp_path: Path) -> dict[str, Any]:
    """As in test_pipeline_judge: this tree's code and the fixture stacks on main."""
    return gitops_world(tmp_path, fixtures=True)


def planted_runs(log: Path) -> list[list[str]]:
    return calls(log, ("planted",))


def plant_tools(repo: Path, folder: str = ".venv/bin") -> None:
    """Commit an executable payload under each tool's name in `folder`."""
    bin_dir = repo / folder
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in PLANTED:
        (bin_dir / name).write_text(PAYLOAD)
        (bin_dir / name).chmod(0o755)
    git(repo, "add", "-f", folder)


def plant_passing_report(repo: Path, stacks: tuple[str, ...] = ("prod", "staging")) -> None:
    """Commit exit code 0 for every part of the report, and a passing report.md."""
    for stack in stacks:
        folder = repo / "reports" / stack
        folder.mkdir(parents=True, exist_ok=True)
        for part in ("offline-preview", "policy-config", "pulumi-preview", "gate"):
            (folder / f"{part}.rc").write_text("0\n")
            (folder / f"{part}.txt").write_text("all pass\n")
    (repo / "report.md").write_text("<!-- dualstack-pr-report -->\n### passed\n")
    git(repo, "add", "-f", "reports", "report.md")


def head_of(repo: Path, message: str) -> str:
    git(repo, "commit", "-qam", message)
    return git(repo, "rev-parse", "HEAD").strip()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tools_planted_in_the_heads_venv_never_run_and_the_verdict_stands(
    platform: str, gitops
) -> None:
    repo = gitops["repo"]
    base = git(repo, "rev-parse", "main").strip()
    git(repo, "switch", "-q", "-c", "attack")
    set_weight(repo, "prod", 80)  # a jump: the judge must refuse it
    plant_tools(repo)
    plant_tools(repo, "bin")
    plant_passing_report(repo)
    head_of(repo, "prod 5 -> 80, with tools and a passing report planted")
    gitops["gitlab_approved"] = True
    passed, report, _ = run_pr(
        platform, gitops, TOKEN, DEPLOYED_prod="5", REVIEW_DECISION="APPROVED"
    )
    assert not passed
    assert "FAIL no-unsafe-weight-jump [mandatory]" in report
    assert "❌ failed" in report
    assert planted_runs(gitops["log"]) == []
    assert judge_commits(gitops["log"]) == {base}
    assert final_verdict(gitops, platform) == "failure"
    # the head changed the program (.venv/, bin/): no online preview of it in the judge
    assert calls(gitops["log"], ("pulumi",)) == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_planted_exit_codes_do_not_pass_a_failing_step(platform: str, gitops) -> None:
    # A step PR (stack files and inert paths only would be a step; reports/ is a program path)
    repo = gitops["repo"]
    git(repo, "switch", "-q", "-c", "attack")
    set_weight(repo, "prod", 80)
    plant_passing_report(repo, ("prod",))
    head_of(repo, "prod 5 -> 80 and reports/prod/*.rc = 0")
    passed, report, _ = run_pr(platform, gitops)
    assert not passed
    assert "| `prod` | ❌ failed (exit 1) |" in report
    assert report != (repo / "report.md").read_text()


def test_a_step_runs_the_base_program_not_the_heads_inert_files(gitops) -> None:
    repo = gitops["repo"]
    git(repo, "switch", "-q", "-c", "step")
    set_weight(repo, "prod", 20)
    for inert in ("tests/conftest.py", "docs/sitecustomize.py", "examples/sitecustomize.py"):
        (repo / inert).parent.mkdir(parents=True, exist_ok=True)
        (repo / inert).write_text(
            "import json, os\n"
            "with open(os.environ['STUB_LOG'], 'a') as out:\n"
            f"    out.write(json.dumps(['planted', {inert!r}]) + '\\n')\n"
        )
        git(repo, "add", inert)
    head_of(repo, "prod 5 -> 20, with python files in inert folders")
    passed, report, _ = run_pr("github", gitops, TOKEN, DEPLOYED_prod="5")
    assert passed, report
    assert planted_runs(gitops["log"]) == []
    head = gitops["layout"]["head"]
    assert not (head / "tests" / "conftest.py").exists()  # the base's files, the head's stacks
    assert 'ascendWeight: "20"' in (head / "Pulumi.prod.yaml").read_text()
    assert [argv[1] for argv in calls(gitops["log"], ("pulumi",))] == ["stack", "preview"]


def test_a_stack_file_symlink_is_a_program_change_never_followed(gitops) -> None:
    repo = gitops["repo"]
    git(repo, "switch", "-q", "-c", "attack")
    (repo / "docs").mkdir(exist_ok=True)
    (repo / "docs" / "prod.yaml").write_text((repo / "Pulumi.prod.yaml").read_text())
    (repo / "Pulumi.prod.yaml").unlink()
    (repo / "Pulumi.prod.yaml").symlink_to("docs/prod.yaml")
    git(repo, "add", "-A")
    head_of(repo, "prod as a symlink into docs/")
    passed, report, _ = run_pr("github", gitops, TOKEN, DEPLOYED_prod="5")
    assert not passed, report
    assert "⛔ could not complete" in report  # the symlink's target is never read
    assert calls(gitops["log"], ("pulumi",)) == []  # no online preview of a program change
    assert not (gitops["layout"]["head"] / "Pulumi.prod.yaml").is_symlink()


def test_a_stale_review_does_not_approve_a_new_head(gitops) -> None:
    from dualstack.repo.stackfile import set_config_values

    repo = gitops["repo"]
    git(repo, "switch", "-q", "-c", "envelope")
    set_config_values(repo, "prod", {"capacity": {"totalReplicas": 6}})
    head_of(repo, "prod: 6 NVIDIA pods")
    approved_elsewhere = {"REVIEW_DECISION": "APPROVED", "REVIEWED_SHA": "0" * 40}
    passed, report, _ = run_pr("github", gitops, **approved_elsewhere)
    assert not passed
    assert "FAIL safety-envelope-unchanged [mandatory]" in report
    previews = [argv for argv in calls(gitops["log"], ("judge",)) if "preview" in argv]
    assert previews and not any("--owner-approved" in argv for argv in previews)


def test_the_untrusted_render_is_data_a_lie_about_it_is_refused(gitops) -> None:
    repo = gitops["repo"]
    git(repo, "switch", "-q", "-c", "program")
    (repo / "components" / "extra.py").write_text('"""A program change."""\n')
    git(repo, "add", "components/extra.py")
    head_of(repo, "a program change")
    # What download-artifact brings is the head's to write: an alias bomb is refused.
    gitops["untrusted"] = {"prod.yaml": "a: &x [1]\nb: *x\n", "staging.yaml": ""}
    passed, report, _ = run_pr("github", gitops)
    assert not passed
    assert "untrusted render cannot be judged" in report
