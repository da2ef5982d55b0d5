"""The CLI on a fleet stack: `--service NAME` on status, promote, rollback, gate and
verify-precision, the fleet table, `rollback --all` in one change, and the deployed weights
read from the stack output `services`.

The repo is `git_repo` (fixture prod / staging stacks and this tree's code) plus the example
fleet `Pulumi.fleet.yaml` (chat 50%, embedder 20%, reranker 0%), committed on main.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dualstack.cli import main
from dualstack.repo.stackfile import read_config
from tests.conftest import EXAMPLE_FLEET, PROJECT, git
from tests.support.precision_servers import OpenAIServer
from tests.support.pulumi_stub import hide_pulumi, install_fake_pulumi

SKIP = ["--skip-gate", "--reason", "staging ran it for a week"]
SERVICES = f"{PROJECT}:services"


@pytest.fixture
def repo(git_repo: Path) -> Path:
    shutil.copy(EXAMPLE_FLEET / "Pulumi.fleet.yaml", git_repo / "Pulumi.fleet.yaml")
    git(git_repo, "add", "Pulumi.fleet.yaml")
    git(git_repo, "commit", "-qm", "the example fleet")
    return git_repo


def run(repo: Path, *argv: str) -> int:
    return main(["-C", str(repo), *argv])


def weights(repo: Path) -> dict[str, int]:
    return {name: s["ascendWeight"] for name, s in read_config(repo, "fleet")[SERVICES].items()}


def deployed(monkeypatch, **services: int) -> None:
    """What the stand-in `pulumi stack output services --json` answers."""
    answer = {name: {"ascendWeight": weight} for name, weight in services.items()}
    monkeypatch.setenv("FAKE_PULUMI_SERVICES", json.dumps(answer))


# --- status ---------------------------------------------------------------------------------


def test_status_shows_the_fleet_table(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "status", "-s", "fleet") == 0
    assert capsys.readouterr().out.splitlines() == [
        "fleet: 3 services, ladder 0 5 20 50 80 100",
        "  service   weight  rung  next rung  verified  deployed  pending",
        "  chat      50%     3/5   80%        yes       unknown   -",
        "  embedder  20%     2/5   50%        yes       unknown   -",
        "  reranker  0%      0/5   5%         NO        unknown   -",
        "  deployed unknown: the pulumi CLI is not installed, so no backend was asked",
    ]


def test_status_json_reads_the_deployed_weights_from_the_services_output(
    repo, tmp_path, capsys, monkeypatch
):
    log = install_fake_pulumi(tmp_path, monkeypatch)
    deployed(monkeypatch, chat=50, embedder=5)  # embedder's 20% merged, not deployed
    assert run(repo, "status", "-s", "fleet", "-o", "json") == 3
    (fleet,) = json.loads(capsys.readouterr().out)["stacks"]
    rows = {s["service"]: s for s in fleet["services"]}
    assert rows["chat"]["deployed"] == "in sync (50%)"
    assert rows["embedder"]["deployedWeight"] == 5
    assert rows["embedder"]["pending"] == (
        "deployed 5%, git 20%: deploy the merged step, or revert it"
    )
    assert rows["reranker"]["deployed"].startswith("unknown: not in `pulumi stack output services")
    assert (rows["reranker"]["ascendImageVerified"], rows["chat"]["nextStep"]) == (False, 80)
    assert fleet["drift"] is True
    assert fleet["pending"].startswith("embedder: deployed 5%")
    assert log.read_text().splitlines() == ["stack output services --json --stack fleet"]


def test_status_of_one_service(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "status", "-s", "fleet", "--service", "embedder", "--json") == 0
    (fleet,) = json.loads(capsys.readouterr().out)["stacks"]
    assert [(s["service"], s["ascendWeight"]) for s in fleet["services"]] == [("embedder", 20)]


def test_status_of_an_unknown_service_names_the_services(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "status", "-s", "fleet", "--service", "ranker") == 2
    assert capsys.readouterr().err == (
        "error: stack fleet: --service 'ranker': no such service; this stack holds chat, "
        "embedder, reranker\n"
    )


def test_a_single_service_stack_lists_its_one_service(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "status", "-s", "prod", "--json") == 0
    (prod,) = json.loads(capsys.readouterr().out)["stacks"]
    assert prod["ascendWeight"] == 5
    assert [(s["service"], s["ascendWeight"]) for s in prod["services"]] == [
        ("inference-service", 5)
    ]


# --- promote --------------------------------------------------------------------------------


@pytest.mark.parametrize("verb", ["promote", "rollback", "verify-precision"])
def test_a_writing_verb_needs_the_service_of_a_fleet(repo, capsys, monkeypatch, verb):
    hide_pulumi(monkeypatch)
    before = (repo / "Pulumi.fleet.yaml").read_bytes()
    urls = ["--nvidia", "http://127.0.0.1:9", "--ascend", "http://127.0.0.1:9"]
    extra = {"promote": SKIP, "rollback": [], "verify-precision": urls}[verb]
    assert run(repo, verb, "-s", "fleet", *extra) == 2
    assert capsys.readouterr().err == (
        "error: this stack holds 3 services (chat, embedder, reranker): pass --service NAME\n"
    )
    assert (repo / "Pulumi.fleet.yaml").read_bytes() == before


def test_promote_one_service_is_a_one_line_commit(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "promote", "-s", "fleet", "--service", "embedder", "--commit", *SKIP) == 0
    assert weights(repo) == {"chat": 50, "embedder": 50, "reranker": 0}
    assert git(repo, "branch", "--show-current").strip() == "dualstack/fleet-embedder-ascend-50"
    assert git(repo, "diff", "--numstat", "HEAD~1", "HEAD").split() == [
        "1",
        "1",
        "Pulumi.fleet.yaml",
    ]
    diff = git(repo, "diff", "-U0", "HEAD~1", "HEAD")
    assert "-      ascendWeight: 20\n+      ascendWeight: 50\n" in diff
    out = capsys.readouterr().out
    assert "Set services.embedder.ascendWeight 20 -> 50: edited Pulumi.fleet.yaml in place" in out
    title = "fleet/embedder: Ascend weight 20% -> 50% (ladder step 3 of 5)"
    assert f"--- PR title ---\n{title}\n" in out
    assert "Stack fleet, service embedder\nAscend weight: 20% -> 50%" in out
    assert "`dualstack rollback --stack fleet --service embedder --to 20`" in out


def test_promote_asks_pulumi_with_the_path_and_the_services_output(
    repo, tmp_path, capsys, monkeypatch
):
    log = install_fake_pulumi(tmp_path, monkeypatch)  # `config set` fails: the file is edited
    deployed(monkeypatch, chat=50, embedder=20, reranker=0)
    assert run(repo, "promote", "-s", "fleet", "--service", "chat", *SKIP) == 0
    assert log.read_text().splitlines() == [
        "stack output services --json --stack fleet",
        "config set services.chat.ascendWeight 80 --path --stack fleet",
    ]
    assert weights(repo)["chat"] == 80


def test_promote_refuses_while_the_service_is_deployed_elsewhere(
    repo, tmp_path, capsys, monkeypatch
):
    install_fake_pulumi(tmp_path, monkeypatch)
    deployed(monkeypatch, chat=20, embedder=20, reranker=0)
    assert run(repo, "promote", "-s", "fleet", "--service", "chat", *SKIP) == 2
    assert capsys.readouterr().err == (
        "error: stack fleet, service chat: DIFFERS: deployed 20%, git 50%; deploy or revert "
        "the pending step before promoting again\n"
    )
    assert weights(repo)["chat"] == 50


def test_promote_refuses_a_pending_step_of_the_same_service_only(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "promote", "-s", "fleet", "--service", "embedder", *SKIP) == 0
    assert run(repo, "promote", "-s", "fleet", "--service", "embedder", *SKIP) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        "error: stack fleet, service embedder: services.embedder.ascendWeight is 50% in the "
        "working tree (not committed), 20% at HEAD ("
    )


# --- rollback -------------------------------------------------------------------------------


def test_rollback_one_service_targets_its_objects_only(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "rollback", "-s", "fleet", "--service", "chat", "-o", "json") == 0
    assert weights(repo) == {"chat": 0, "embedder": 20, "reranker": 0}
    doc = json.loads(capsys.readouterr().out)
    assert (doc["service"], doc["fromWeight"], doc["toWeight"]) == ("chat", 50, 0)
    targets = [t for t in doc["apply"][1].split() if t.startswith("'urn:")]
    assert [t.rsplit("::", 1)[1].rstrip("'") for t in targets] == [
        "inference-chat-traffic-virtual-service",
        "inference-chat-monitoring-rules",
    ]
    assert doc["apply"][-1].startswith(
        "  kubectl -n inference-fleet patch virtualservices.networking.istio.io chat-vs "
    )
    assert doc["pr"]["title"] == "fleet/chat: roll back Ascend weight 50% -> 0%"


def test_rollback_all_takes_every_service_to_zero_in_one_commit(repo, capsys, monkeypatch):
    hide_pulumi(monkeypatch)
    assert run(repo, "rollback", "-s", "fleet", "--all", "--commit") == 0
    assert weights(repo) == {"chat": 0, "embedder": 0, "reranker": 0}
    assert git(repo, "branch", "--show-current").strip() == "dualstack/fleet-rollback-all-0"
    assert git(repo, "log", "-1", "--format=%s").strip() == (
        "fleet: roll back chat 50% -> 0%, embedder 20% -> 0%"
    )
    assert git(repo, "diff", "--numstat", "HEAD~1", "HEAD").split() == [
        "2",
        "2",
        "Pulumi.fleet.yaml",
    ]
    out = capsys.readouterr().out
    assert "Rolled back every service of stack fleet: chat 50% -> 0%, embedder 20% -> 0%" in out
    assert out.count("patch virtualservices.networking.istio.io") == 4  # 2 in the text, 2 body
    assert "| `embedder` | 20% -> 0% | 2 -> 2 |" in out
    assert "Stack fleet: 3 services\nService chat\n  Ascend weight: 50% -> 0%" in out


def test_rollback_all_with_a_service_is_refused(repo, capsys):
    assert run(repo, "rollback", "-s", "fleet", "--all", "--service", "chat") == 2
    assert "--all rolls back every service: leave out --service" in capsys.readouterr().err


# --- verify-precision -----------------------------------------------------------------------


def test_verify_precision_records_the_members_pair(repo, capsys):
    fast = ["--backoff", "0.01", "--timeout", "5", "--deadline", "20"]
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        argv = ["verify-precision", "-s", "fleet", "--service", "reranker"]
        code = run(repo, *argv, "--nvidia", nvidia.url, "--ascend", ascend.url, *fast)
    assert code == 0
    reranker = read_config(repo, "fleet")[SERVICES]["reranker"]
    pair = {"nvidia": "registry/reranker:v0.9.2-cuda", "ascend": "registry/reranker:v0.9.2-npu"}
    assert reranker["verifiedImages"] == [pair]
    assert reranker["verifiedAscendImage"] == "registry/reranker:v0.9.2-npu"
    assert f"{PROJECT}:verifiedImages" not in read_config(repo, "fleet")
    assert "recording services.reranker.verifiedAscendImage = " in capsys.readouterr().out


# --- gate and preview -----------------------------------------------------------------------


def test_gate_of_an_unknown_service_lists_the_fleet(repo, capsys):
    argv = ["gate", "-s", "fleet", "--service", "chatt", "--prometheus", "http://127.0.0.1:9"]
    assert run(repo, *argv) == 2
    assert capsys.readouterr().err == (
        "error: --service 'chatt': no such service; this stack holds chat, embedder, reranker\n"
    )


def test_preview_without_a_service_previews_every_service(repo, capsys):
    (repo / "Pulumi.fleet.yaml").write_text(
        (repo / "Pulumi.fleet.yaml").read_text().replace("ascendWeight: 50", "ascendWeight: 0")
    )
    assert run(repo, "preview", "-s", "fleet", "--base", "main") == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "Stack fleet: 3 services\n"
        "Service chat\n"
        "  Ascend weight: 50% -> 0% (ladder step 0 of 5, next 5%)\n"
        "  Replicas: nvidia 4, ascend 3 -> 1\n"
    )
    assert "Service embedder\n  Ascend weight: unchanged at 20%" in out
    assert "Service reranker\n  Ascend weight: unchanged at 0%" in out


def test_preview_json_of_a_fleet_lists_every_service(repo, capsys):
    assert run(repo, "preview", "-s", "fleet", "--base", "main", "-o", "json") == 0
    (fleet,) = json.loads(capsys.readouterr().out)["stacks"]
    assert fleet["service"] == "chat"
    assert [(s["service"], s["ascendWeight"], s["previousWeight"]) for s in fleet["services"]] == [
        ("chat", 50, 50),
        ("embedder", 20, 20),
        ("reranker", 0, 0),
    ]


# --- policy-config --------------------------------------------------------------------------


def test_policy_config_reads_each_services_deployed_weight(repo, tmp_path, capsys, monkeypatch):
    log = install_fake_pulumi(tmp_path, monkeypatch)
    deployed(monkeypatch, chat=20, embedder=20, reranker=0)  # chat's 50% not deployed yet
    out = tmp_path / "config.json"
    argv = ["policy-config", "-s", "fleet", "--from-stack-output", "--base", "main"]
    assert run(repo, *argv, "--output", str(out)) == 0
    services = json.loads(out.read_text())["no-unsafe-weight-jump"]["services"]
    assert {name: facts["previousWeight"] for name, facts in services.items()} == {
        "chat": 20,
        "embedder": 20,
        "reranker": 0,
    }
    assert "stack output services --json --stack fleet" in log.read_text()
    assert "previous weight chat 20%, embedder 20%, reranker 0%" in capsys.readouterr().err


def test_policy_config_refuses_one_previous_weight_for_a_fleet(repo, capsys):
    argv = ["policy-config", "-s", "fleet", "--previous-weight", "20", "--base", "main"]
    assert run(repo, *argv) == 2
    assert capsys.readouterr().err == (
        "error: --previous-weight 20: stack fleet holds several services, each with its own "
        "deployed weight; use --from-stack-output (or --first-deploy)\n"
    )
