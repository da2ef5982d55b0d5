"""`dualstack rollback --emergency` as an operator runs it on a laptop with cluster access:
stop the running update, move the traffic, then commit, in that order.

A real git clone of a bare origin holding fixture stack files; stand-in `pulumi` and a logging
`git` on PATH record every call in one log, so the order across tools is visible.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import jsonschema
import pytest

from dualstack.cli import main
from dualstack.repo.stackfile import read_config
from tests.conftest import REPO, git
from tests.support.emergency_stub import calls, install_emergency_tools, make_gitops
from tests.support.pulumi_stub import hide_pulumi

WEIGHT = "dualstack-inference:ascendWeight"


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clone, _ = make_gitops(tmp_path, {"prod": 20, "staging": 50})
    install_emergency_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "calls.jsonl"))
    for var, value in (("NAME", "Test"), ("EMAIL", "test@example.com")):
        monkeypatch.setenv(f"GIT_AUTHOR_{var}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{var}", value)
    for name in ("RUNNING_prod", "DEPLOYED_prod", "UP_RC_prod", "RUNNING_staging"):
        monkeypatch.delenv(name, raising=False)
    return clone


def log_of(repo: Path) -> list[list[str]]:
    """pulumi and git calls, `stack output` left out (it runs beside the cancel)."""
    return [c for c in calls(repo.parent / "calls.jsonl") if c[1:3] != ["stack", "output"]]


def rollback(repo: Path, *argv: str) -> int:
    return main(["-C", str(repo), "rollback", *argv])


def test_stop_then_traffic_then_git(repo: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("RUNNING_prod", "1")  # a deploy is in progress
    monkeypatch.setenv("DEPLOYED_prod", "20")
    code = rollback(repo, "--emergency", "--stack", "prod", "--reason", "p99 doubled")
    out = capsys.readouterr().out
    assert code == 0
    steps = [(c[0], c[1]) for c in log_of(repo)]
    assert steps == [
        ("pulumi", "cancel"),
        ("pulumi", "up"),
        ("git", "checkout"),
        ("git", "commit"),
        ("pulumi", "stack"),  # export: what the cancelled update left
    ]
    up = log_of(repo)[1]
    assert up[-1] == "weight=0"  # the stack file held the new weight when the up ran
    assert up[up.index("--message") + 1] == "Emergency rollback of prod to 0%: p99 doubled"
    assert "prod: cancelled the running update of prod (pulumi cancel); deployed 20%" in out
    assert (
        "prod: traffic applied: VirtualService inference-traffic-virtual-service, "
        "PrometheusRule inference-monitoring-rules (pulumi up --target)"
    ) in out
    assert "The cancelled update left 1 pending operation(s) in prod's state:" in out
    assert "git push -u origin dualstack/prod-rollback-0" in out
    assert git(repo, "show", "HEAD:Pulumi.prod.yaml").count(f'{WEIGHT}: "0"') == 1
    subject = git(repo, "log", "-1", "--format=%s").strip()
    assert subject == "Emergency rollback: prod 20% -> 0%"
    assert "Reason: p99 doubled" in git(repo, "log", "-1", "--format=%b")


def test_no_running_update_is_said_and_does_not_stop_the_rollback(repo: Path, capsys) -> None:
    assert rollback(repo, "--emergency", "--stack", "prod") == 0
    out = capsys.readouterr().out
    assert "no update was running on prod: nothing to cancel; deployed unknown" in out
    # deployed weight unknown: NVIDIA's Deployment is targeted first, in case it was shrunk
    assert "traffic applied: Deployment inference-nvidia-deployment, VirtualService" in out
    assert [c[1] for c in log_of(repo)] == ["cancel", "up", "checkout", "commit"]


def test_all_rolls_back_every_stack_in_one_commit(repo: Path, capsys) -> None:
    assert rollback(repo, "--emergency", "--all", "--to", "5") == 0
    ups = sorted(c[c.index("--stack") + 1] for c in log_of(repo) if c[1] == "up")
    assert ups == ["prod", "staging"]
    assert git(repo, "branch", "--show-current").strip() == "dualstack/rollback-all"
    assert git(repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "Pulumi.prod.yaml",
        "Pulumi.staging.yaml",
    ]
    assert capsys.readouterr().out.count("traffic applied") == 2


def test_dry_run_changes_nothing_and_runs_nothing(repo: Path, capsys) -> None:
    before = (repo / "Pulumi.prod.yaml").read_bytes()
    assert rollback(repo, "--emergency", "--dry-run", "--stack", "prod") == 0
    out = capsys.readouterr().out
    assert (repo / "Pulumi.prod.yaml").read_bytes() == before
    assert log_of(repo) == []
    assert "  pulumi cancel --yes --stack prod\n" in out
    assert "  pulumi up --yes --skip-preview --refresh=false --stack prod --target " in out
    assert "git: commit Pulumi.prod.yaml on new branch dualstack/prod-rollback-0" in out


def emergency_document(capsys) -> tuple[dict, str]:
    """The whole of stdout as one `dualstack/emergency-rollback/v1` document, checked against
    its JSON Schema (docs/schemas/), and stderr."""
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    schema = REPO / "docs" / "schemas" / "dualstack-emergency-rollback-v1.json"
    jsonschema.validate(doc, json.loads(schema.read_text()))
    assert next(iter(doc)) == "schema" and doc["schema"] == "dualstack/emergency-rollback/v1"
    return doc, captured.err


def test_dry_run_json_is_one_document_of_what_would_run(repo: Path, capsys) -> None:
    assert rollback(repo, "--emergency", "--dry-run", "--stack", "prod", "-o", "json") == 0
    doc, err = emergency_document(capsys)
    assert "Dry run: nothing is changed and no command is run." in err  # the text: stderr
    assert (doc["dryRun"], doc["result"], doc["commit"], doc["pr"]) == (True, "dry-run", None, None)
    assert doc["branch"] == "dualstack/prod-rollback-0"
    (stack,) = doc["stacks"]
    assert stack["services"] == [{"service": "inference-service", "fromWeight": 20, "toWeight": 0}]
    assert stack["commands"][0] == "pulumi cancel --yes --stack prod"
    assert stack["commands"][2].startswith("pulumi up --yes --skip-preview --refresh=false")
    assert f"  {stack['commands'][2]}\n" in err  # the text prints the same command
    assert (stack["stopped"], stack["applied"]) == (None, None)
    assert log_of(repo) == []


def test_the_run_json_says_what_was_stopped_applied_and_committed(
    repo: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("RUNNING_prod", "1")
    monkeypatch.setenv("DEPLOYED_prod", "20")
    assert rollback(repo, "--emergency", "--stack", "prod", "-o", "json") == 0
    doc, err = emergency_document(capsys)
    assert "prod: traffic applied: VirtualService" in err
    assert doc["result"] == "applied"
    (stack,) = doc["stacks"]
    assert stack["stopped"] == {"outcome": "cancelled", "note": ""}
    assert stack["deployed"] == {"inference-service": 20}
    assert (stack["applied"], stack["error"]) == (True, None)
    assert [t.rsplit("::", 1)[1] for t in stack["targets"]] == [
        "inference-traffic-virtual-service",
        "inference-monitoring-rules",
    ]
    assert len(stack["pendingOperations"]) == 1
    assert doc["commit"]["branch"] == "dualstack/prod-rollback-0"
    assert doc["commit"]["sha"] == git(repo, "rev-parse", "--short", "HEAD").strip()
    assert doc["pr"]["title"] == "Emergency rollback: prod 20% -> 0%"


def test_a_failed_up_json_is_failed_with_the_break_glass(repo: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("UP_RC_prod", "255")
    assert rollback(repo, "--emergency", "--stack", "prod", "-o", "json") == 2
    doc, _ = emergency_document(capsys)
    assert doc["result"] == "failed"
    (stack,) = doc["stacks"]
    assert stack["applied"] is False and "`pulumi up --yes --skip-preview` failed" in stack["error"]
    assert any("kubectl -n inference patch" in line for line in stack["breakGlass"])


def test_emergency_open_pr_pushes_and_opens_it_after_the_traffic(repo: Path, capsys) -> None:
    assert rollback(repo, "--emergency", "--stack", "prod", "--open-pr", "-o", "json") == 0
    doc, err = emergency_document(capsys)
    steps = [(c[0], c[1]) for c in log_of(repo) if c[0] in ("pulumi", "git", "gh")]
    assert steps == [
        ("pulumi", "cancel"),
        ("pulumi", "up"),
        ("git", "checkout"),
        ("git", "commit"),
        ("git", "push"),
        ("gh", "pr"),
    ]
    (create,) = [c for c in log_of(repo) if c[0] == "gh"]
    assert create[1:8] == [
        "pr",
        "create",
        "--base",
        "main",
        "--head",
        "dualstack/prod-rollback-0",
        "--title",
    ]
    assert doc["pr"]["url"] == "https://github.com/acme/gitops/pull/1"
    assert "Pushed dualstack/prod-rollback-0 and opened the pull request (gh pr create)" in err
    assert "git push -u origin" not in err  # nothing left to do by hand
    assert git(repo, "ls-remote", "--heads", "origin", "dualstack/prod-rollback-0").strip()


def test_a_refused_emergency_prints_no_document(repo: Path, monkeypatch, capsys) -> None:
    hide_pulumi(monkeypatch)
    assert rollback(repo, "--emergency", "--stack", "prod", "-o", "json") == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: --emergency runs `pulumi cancel`")


def test_a_failed_up_still_commits_and_prints_the_break_glass(
    repo: Path, monkeypatch, capsys
) -> None:
    monkeypatch.setenv("UP_RC_prod", "255")
    assert rollback(repo, "--emergency", "--stack", "prod") == 2
    out = capsys.readouterr().out
    assert "prod: the targeted up FAILED:" in out
    assert "kubectl -n inference patch virtualservices.networking.istio.io" in out
    assert git(repo, "branch", "--show-current").strip() == "dualstack/prod-rollback-0"


def test_git_already_at_the_weight_reapplies_the_traffic(repo: Path, capsys) -> None:
    assert rollback(repo, "--emergency", "--stack", "prod", "--to", "20") == 0
    out = capsys.readouterr().out
    assert "prod: git already holds 20%: the traffic is re-applied, nothing to commit" in out
    assert [c[1] for c in log_of(repo)] == ["cancel", "up"]


def test_the_wrong_checkout_is_refused_before_anything(repo: Path, capsys) -> None:
    git(repo, "checkout", "-q", "--detach", "HEAD")
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    git(repo, "commit", "-qm", "elsewhere")
    before = (repo / "Pulumi.prod.yaml").read_bytes()
    (repo.parent / "calls.jsonl").unlink()  # the set-up's own commits
    assert rollback(repo, "--emergency", "--stack", "prod") == 2
    err = capsys.readouterr().err
    assert "--emergency applies the default branch's program, but HEAD is" in err
    assert err.count("\n") == 1
    assert (repo / "Pulumi.prod.yaml").read_bytes() == before
    assert log_of(repo) == []


def test_the_refusal_names_a_branch_git_can_switch_to(repo: Path, capsys) -> None:
    git(repo, "remote", "set-head", "origin", "--auto")  # as `git clone` leaves it:
    git(repo, "branch", "-q", "--set-upstream-to", "origin/main", "main")  # origin/HEAD, upstream
    git(repo, "checkout", "-q", "-b", "feature")
    (repo / "x").write_text("x")
    git(repo, "add", "x")
    git(repo, "commit", "-qm", "elsewhere")
    assert rollback(repo, "--emergency", "--stack", "prod") == 2
    err = capsys.readouterr().err
    assert "not origin/HEAD (" in err
    assert "run `git switch main` and `git pull --ff-only` (or `git checkout --detach" in err
    git(repo, "switch", "main")  # the advice, followed, works
    git(repo, "pull", "-q", "--ff-only")
    assert rollback(repo, "--emergency", "--stack", "prod") == 0


def test_without_the_pulumi_cli_nothing_is_written_or_committed(
    repo: Path, monkeypatch, capsys
) -> None:
    hide_pulumi(monkeypatch)
    before, head = (repo / "Pulumi.prod.yaml").read_bytes(), git(repo, "rev-parse", "HEAD")
    assert rollback(repo, "--emergency", "--stack", "prod") == 2
    assert capsys.readouterr().err == (
        "error: --emergency runs `pulumi cancel` and `pulumi up --target` first, but the "
        "pulumi CLI is not on PATH; nothing was changed: install it "
        "(https://www.pulumi.com/docs/install/), or without Pulumi run `dualstack rollback "
        "--stack prod` for the break-glass `kubectl patch` (docs/operations.md, Break-glass)\n"
    )
    assert (repo / "Pulumi.prod.yaml").read_bytes() == before
    assert git(repo, "rev-parse", "HEAD") == head
    assert git(repo, "branch", "--list", "dualstack/*") == ""
    # the way out it names works without Pulumi: the break-glass patch
    assert rollback(repo, "--stack", "prod") == 0
    assert "kubectl -n inference patch virtualservices.networking.istio.io" in (
        capsys.readouterr().out
    )


def test_dry_run_without_the_pulumi_cli_says_the_run_would_refuse(
    repo: Path, monkeypatch, capsys
) -> None:
    hide_pulumi(monkeypatch)
    assert rollback(repo, "--emergency", "--dry-run", "--stack", "prod") == 0
    out = capsys.readouterr().out
    assert "Note: the pulumi CLI is not on PATH, so the run would refuse: install it" in out


def test_dry_run_goes_with_emergency(repo: Path, capsys) -> None:
    assert rollback(repo, "--dry-run") == 2
    assert capsys.readouterr().err == (
        "error: --dry-run goes with --emergency (dualstack rollback --emergency --dry-run)\n"
    )


def test_all_without_emergency_is_every_service_of_one_stack(repo: Path, capsys) -> None:
    assert rollback(repo, "--all") == 2  # two stacks here: --all alone does not pick one
    assert capsys.readouterr().err == (
        "error: rollback needs a stack: pass -s STACK (this repo has 2: prod, staging)\n"
    )


def test_the_pr_body_says_what_was_applied(repo: Path, tmp_path: Path) -> None:
    body = tmp_path / "body.md"
    argv = ["--emergency", "--stack", "prod", "--reason", "p99", "--body-file", str(body)]
    assert rollback(repo, *argv) == 0
    text = body.read_text()
    assert text.startswith("Reason: p99\n\n## prod: roll back Ascend weight 20% -> 0%\n")
    assert "pulumi cancel --yes --stack prod" in text
    assert "Outcome: applied." in text
    assert read_config(repo, "prod")[WEIGHT] == "0"


@pytest.fixture
def fleet_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    clone, _ = make_gitops(tmp_path, {"fleet": 50})  # chat 50%, embedder 20%, reranker 0%
    install_emergency_tools(tmp_path / "bin")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STUB_LOG", str(tmp_path / "calls.jsonl"))
    for var, value in (("NAME", "Test"), ("EMAIL", "test@example.com")):
        monkeypatch.setenv(f"GIT_AUTHOR_{var}", value)
        monkeypatch.setenv(f"GIT_COMMITTER_{var}", value)
    monkeypatch.setenv(
        "DEPLOYED_fleet",
        '{"chat": {"ascendWeight": 50}, "embedder": {"ascendWeight": 20}, '
        '"reranker": {"ascendWeight": 0}}',
    )
    return clone


def test_emergency_of_one_fleet_service_moves_its_traffic_only(fleet_repo: Path, capsys) -> None:
    assert rollback(fleet_repo, "--emergency", "--service", "chat") == 0
    (up,) = [c for c in log_of(fleet_repo) if c[1] == "up"]
    targets = [up[i + 1].rsplit("::", 1)[1] for i, a in enumerate(up) if a == "--target"]
    assert targets == ["inference-chat-traffic-virtual-service", "inference-chat-monitoring-rules"]
    assert up[-1] == "weight=0,20,0"  # chat written to 0 before the up ran
    message = up[up.index("--message") + 1]
    assert message == "Emergency rollback of fleet (chat 50% -> 0%): emergency rollback"
    assert git(fleet_repo, "branch", "--show-current").strip() == "dualstack/fleet-chat-rollback-0"
    assert "fleet: wrote services.chat.ascendWeight 0 into Pulumi.fleet.yaml" in (
        capsys.readouterr().out
    )


def test_emergency_all_moves_every_service_of_the_fleet(fleet_repo: Path, capsys) -> None:
    assert rollback(fleet_repo, "--emergency", "--all") == 0
    (up,) = [c for c in log_of(fleet_repo) if c[1] == "up"]
    targets = [up[i + 1].rsplit("::", 1)[1] for i, a in enumerate(up) if a == "--target"]
    assert targets == [
        "inference-chat-traffic-virtual-service",
        "inference-embedder-traffic-virtual-service",
        "inference-chat-monitoring-rules",
        "inference-embedder-monitoring-rules",
    ]
    assert up[-1] == "weight=0,0,0"
    config = read_config(fleet_repo, "fleet")["dualstack-inference:services"]
    assert {name: s["ascendWeight"] for name, s in config.items()} == {
        "chat": 0,
        "embedder": 0,
        "reranker": 0,
    }
    subject = git(fleet_repo, "log", "-1", "--format=%s").strip()
    assert subject == "Emergency rollback: fleet (chat 50% -> 0%, embedder 20% -> 0%)"


def test_emergency_of_a_fleet_needs_the_service(fleet_repo: Path, capsys) -> None:
    assert rollback(fleet_repo, "--emergency") == 2
    assert capsys.readouterr().err == (
        "error: this stack holds 3 services (chat, embedder, reranker): pass --service NAME\n"
    )
    assert log_of(fleet_repo) == []
