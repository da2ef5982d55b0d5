"""The static audit of the pipelines (docs/trust-model.md): the trusted judge job reads the
head only as data (tests/pipelines/trusted_lint.py), the untrusted workflow holds no secret,
and zizmor finds nothing above "low" in .github/workflows that is not justified inline."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

import pytest

from tests.pipelines.pipeline_harness import GITLAB_JUDGE, REPO, WORKFLOWS, gitlab_job, load_yaml
from tests.pipelines.trusted_lint import command_words, lint_github_job, lint_gitlab_job


def zizmor_binary() -> Path:
    """The locked zizmor (requirements-dev.lock) that `make venv` installed: in the scripts folder
    of the interpreter running the tests, else the repo's .venv, else on PATH. A missing one is a
    failure naming where it looked (the audit must run, never be skipped)."""
    places = [
        Path(sysconfig.get_path("scripts")),
        Path(sys.executable).parent,
        REPO / ".venv" / "bin",
    ]
    for folder in places:
        if (folder / "zizmor").is_file():
            return folder / "zizmor"
    found = shutil.which("zizmor")
    if found:
        return Path(found)
    pytest.fail(f"zizmor not found in {', '.join(map(str, places))} nor on PATH: run `make venv`")


def judge_job() -> dict[str, Any]:
    return load_yaml(WORKFLOWS / "pr-judge.yml")["jobs"]["judge"]


def test_the_judge_runs_the_default_branchs_definition_after_the_untrusted_run() -> None:
    flow = load_yaml(WORKFLOWS / "pr-judge.yml")
    assert flow["on"] == {"workflow_run": {"workflows": ["pull-request"], "types": ["completed"]}}
    assert flow["permissions"] == {}
    assert judge_job()["permissions"] == {
        "contents": "read",
        "actions": "read",
        "pull-requests": "write",
        "statuses": "write",
    }
    owner = flow["jobs"]["owner-preview"]
    assert owner["environment"] == "owner-preview"  # the owners' required review
    assert (
        owner["if"] == "needs.judge.outputs.kind == 'program' && needs.judge.outputs.stacks != ''"
    )


def test_the_untrusted_workflow_holds_no_secret_and_a_read_only_token() -> None:
    path = WORKFLOWS / "pull-request.yml"
    flow = load_yaml(path)
    assert set(flow["on"]) == {"pull_request", "pull_request_review"}  # a review re-judges
    assert flow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in flow["jobs"].values())
    assert "secrets." not in path.read_text(encoding="utf-8")
    assert "pull_request_target" not in path.read_text(encoding="utf-8")


def test_the_trusted_judge_job_names_no_head_path_and_only_its_own_tools() -> None:
    assert lint_github_job("judge", judge_job()) == []


def test_the_gitlab_judge_job_names_no_head_path_and_only_its_own_tools() -> None:
    job = gitlab_job(load_yaml(GITLAB_JUDGE), "dualstack-judge")
    assert lint_gitlab_job("dualstack-judge", job) == []
    bad = {**job, "script": [*job["script"], 'export PATH="$PWD/.venv/bin:$PATH"', "make venv"]}
    findings = lint_gitlab_job("dualstack-judge", bad)
    assert any("search path" in finding for finding in findings)
    assert any("command `make`" in finding for finding in findings)


def test_only_the_verdict_step_decides_and_it_reads_the_report_this_job_wrote() -> None:
    steps = {step.get("name"): step for step in judge_job()["steps"]}
    verdict = steps["Verdict (the required check)"]
    assert verdict["if"] == "always()"
    assert verdict["env"]["STATUS"] == "${{ steps.report.outputs.status }}"
    assert '"$JUDGE" ci report --dir "$WORK/reports"' in steps["Report"]["run"]
    assert steps["Report"]["env"]["WORK"] == "${{ runner.temp }}/dualstack"
    online = steps["Online preview with the policy pack (a step, the base's program)"]
    assert online["env"]["PULUMI_ACCESS_TOKEN"] == "${{ secrets.PULUMI_ACCESS_TOKEN }}"
    holders = [name for name, step in steps.items() if "secrets." in json.dumps(step)]
    assert holders == ["Online preview with the policy pack (a step, the base's program)"]


BAD_STEPS = {
    "make venv": "command `make`",
    'echo "$PWD/.venv/bin" >> "$GITHUB_PATH"': "head path `$PWD`",
    "cat reports/prod/offline-preview.rc": "head path `reports/`",
    '"$JUDGE" ci report --dir reports || true': "`|| true` swallows a verdict",
    "source .venv/bin/activate": "sources or evaluates text",
    'stacks=$(dualstack ci changed-stacks --base "$BASE")': "command `dualstack`",
    "x=$(gh pr view 7)": "command `gh`",
    'git worktree add base-checkout "$BASE"': "command `git`",
    ".venv/bin/python -m dualstack preview": "command `.venv/bin/python`",
    'for s in $STACKS; do ./tool "$s"; done': "command `./tool`",
    'if weight=$(pulumi stack output w); then echo "$weight"; fi': "command `pulumi`",
}


@pytest.mark.parametrize("script", sorted(BAD_STEPS))
def test_the_lint_flags_a_step_that_trusts_the_head(script: str) -> None:
    job = copy.deepcopy(judge_job())
    job["steps"].append({"name": "bad", "run": script})
    findings = lint_github_job("judge", job)
    assert any(BAD_STEPS[script] in finding for finding in findings), findings


def test_the_lint_flags_a_checkout_of_the_head_and_kept_credentials() -> None:
    job = copy.deepcopy(judge_job())
    job["steps"].insert(0, {"uses": "actions/checkout@v4", "with": {"ref": "refs/pull/7/head"}})
    findings = lint_github_job("judge", job)
    assert any("checks out another commit" in finding for finding in findings)
    assert any("keeps the token" in finding for finding in findings)


def test_command_words_sees_through_substitutions_pipes_and_assignments() -> None:
    script = (
        'x=$(make foo)  # make\nargs=(--a "$b")\nGIT_DIR=/x gh y | git z && { echo; } >> out\n'
        'for s in $S; do "$JUDGE" a "$s"; done'
    )
    assert command_words(script) == ["make", "gh", "git", "echo", "$JUDGE", "done"]


def zizmor(path: Path) -> list[dict[str, Any]]:
    done = subprocess.run(
        [str(zizmor_binary()), "--offline", "--no-progress", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode in (0, 10, 11, 12, 13, 14), done.stderr  # 1x: findings
    return json.loads(done.stdout or "[]")


def above_low(findings: list[dict[str, Any]]) -> list[str]:
    return [
        f"{f['ident']} ({f['determinations']['severity']})"
        for f in findings
        if not f.get("ignored") and f["determinations"]["severity"] not in ("Informational", "Low")
    ]


def test_zizmor_finds_nothing_above_low_that_is_not_justified() -> None:
    assert above_low(zizmor(WORKFLOWS)) == []
    ignores = [
        line
        for path in WORKFLOWS.glob("*.yml")
        for line in path.read_text(encoding="utf-8").splitlines()
        if "zizmor: ignore[" in line
    ]
    assert ignores and all(line.split("]", 1)[1].strip() for line in ignores)  # each a reason


def test_zizmor_catches_a_pwn_request(tmp_path: Path) -> None:
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "pwn.yml").write_text(
        "name: pwn\non: pull_request_target\npermissions: write-all\njobs:\n  x:\n"
        "    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n"
        "        with:\n          ref: ${{ github.event.pull_request.head.sha }}\n"
        '      - run: echo "${{ github.event.pull_request.title }}"\n',
        encoding="utf-8",
    )
    found = above_low(zizmor(folder))
    assert "dangerous-triggers (High)" in found
    assert "template-injection (High)" in found
