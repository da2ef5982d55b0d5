"""`-o json` on status, preview, gate, promote, rollback and verify-precision: stdout is one
document, valid against its JSON Schema in docs/schemas/, carrying the values a script reads.
Also `-s/--stack`: writers need one unless the repo has a single stack; readers cover all.

The stack files are written here (not copied from the repo's), so no test depends on the
committed Pulumi.prod.yaml / Pulumi.staging.yaml.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from components.settings import PROJECT
from dualstack.cli import main
from dualstack.repo.stackfile import read_config, set_config_values
from tests.conftest import REPO, copy_code, git
from tests.dualstack.gate.test_gate_prometheus import END, HEALTHY, prometheus, write_stack  # noqa: F401
from tests.dualstack.gate.test_gate_prometheus import project as gate_project  # noqa: F401
from tests.support.precision_servers import OpenAIServer
from tests.support.pulumi_stub import hide_pulumi, install_fake_pulumi

SCHEMAS = REPO / "docs" / "schemas"
IMAGE = "registry/inference-service:v1.2.3-npu"
NEW_NPU = "registry/inference-service:v1.2.4-npu"


def stack_text(weight: int, namespace: str | None = None) -> str:
    lines = ["config:", f'  {PROJECT}:ascendWeight: "{weight}"']
    if namespace:
        lines.append(f"  {PROJECT}:namespace: {namespace}")
    lines.append(f"  {PROJECT}:verifiedAscendImage: {IMAGE}")
    return "\n".join(lines) + "\n"


def make_repo(root: Path, stacks: dict[str, tuple[int, str | None]]) -> Path:
    """A git repo on main: Pulumi.yaml, this tree's code (a base judges with its own code) and
    the stack files."""
    root.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    copy_code(root)
    (root / ".gitignore").write_text("__pycache__/\n*.pyc\n", encoding="utf-8")
    for stack, (weight, namespace) in stacks.items():
        (root / f"Pulumi.{stack}.yaml").write_text(stack_text(weight, namespace))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "stacks")
    return root


@pytest.fixture
def repo(tmp_path: Path, monkeypatch) -> Path:
    """Two stacks: prod at 5%, staging at 20% in namespace inference-staging; no Pulumi CLI."""
    hide_pulumi(monkeypatch)
    return make_repo(tmp_path / "gitops", {"prod": (5, None), "staging": (20, "inference-staging")})


def run_json(capsys, *argv: str) -> tuple[int, dict]:
    code = main(list(argv))
    out = capsys.readouterr().out
    return code, json.loads(out)  # the whole of stdout is the document


def valid(doc: dict, verb: str) -> dict:
    schema = json.loads((SCHEMAS / f"dualstack-{verb}-v1.json").read_text())
    jsonschema.validate(doc, schema)
    assert next(iter(doc)) == "schema" and doc["schema"] == f"dualstack/{verb}/v1"
    return doc


# --- status ---------------------------------------------------------------------------------


def test_status_json_agrees_with_the_stack_output_and_exits_0_in_sync(repo, capsys):
    code, doc = run_json(capsys, "-C", str(repo), "status", "-o", "json")
    valid(doc, "status")
    assert code == 0 and doc["exitCode"] == 0
    prod, staging = doc["stacks"]
    assert (prod["stack"], prod["ladderPosition"], prod["nextStep"]) == ("prod", "1/5", 20)
    assert (staging["stack"], staging["ladderPosition"]) == ("staging", "2/5")
    assert prod["drift"] is False and prod["pending"] is None
    assert prod["deployedWeight"] is None


def test_status_json_alias_prints_the_same_document(repo, capsys):
    _, long = run_json(capsys, "-C", str(repo), "status", "-s", "prod", "-o", "json")
    _, alias = run_json(capsys, "-C", str(repo), "status", "--stack", "prod", "--json")
    assert alias == long and [s["stack"] for s in alias["stacks"]] == ["prod"]


def test_status_exits_3_on_drift(repo, tmp_path, monkeypatch, capsys):
    install_fake_pulumi(tmp_path, monkeypatch)
    monkeypatch.setenv("FAKE_PULUMI_DEPLOYED", "5")  # prod in sync, staging drifted
    code, doc = run_json(capsys, "-C", str(repo), "status", "-o", "json")
    assert code == 3 and doc["exitCode"] == 3
    prod, staging = doc["stacks"]
    assert (prod["drift"], staging["drift"]) == (False, True)
    assert staging["deployed"] == "DIFFERS: deployed 5%, git 20%"
    assert main(["-C", str(repo), "status", "-s", "prod"]) == 0


def test_status_exits_3_on_a_pending_step(repo, capsys):
    set_config_values(repo, "prod", {"ascendWeight": 20})  # written, not landed
    code = main(["-C", str(repo), "status", "-s", "prod"])
    out = capsys.readouterr().out
    assert code == 3
    assert "50% after the pending step: 20% in the working tree (not committed), 5% at " in out
    assert main(["-C", str(repo), "status", "-s", "staging"]) == 0


def test_status_exits_2_on_a_broken_stack_even_with_drift(repo, capsys):
    set_config_values(repo, "staging", {"ascendWeight": "abc"})
    set_config_values(repo, "prod", {"ascendWeight": 20})
    code, doc = run_json(capsys, "-C", str(repo), "status", "-o", "json")
    assert code == 2 and doc["exitCode"] == 2
    assert doc["stacks"][1]["stack"] == "staging" and "error" in doc["stacks"][1]


# --- preview --------------------------------------------------------------------------------


def test_preview_json_of_one_step(repo, capsys):
    code, doc = run_json(
        capsys, "-C", str(repo), "preview", "-s", "prod", "--set", "ascendWeight=20", "-o", "json"
    )
    valid(doc, "preview")
    assert code == 0 and doc["passed"] is True
    (prod,) = doc["stacks"]
    assert (prod["previousWeight"], prod["ascendWeight"], prod["nextStep"]) == (5, 20, 50)
    assert prod["base"] == git(repo, "rev-parse", "--short", "HEAD").strip()
    outcomes = {p["policy"]: p["outcome"] for p in prod["policies"]}
    assert outcomes["no-unsafe-weight-jump"] == "pass"
    changed = {(c["kind"], c["name"]): c["change"] for c in prod["changes"]}
    assert changed[("VirtualService", "inference-vs")] == "update"
    assert "-      weight: 95" in prod["diff"] and "+      weight: 80" in prod["diff"]


def test_preview_json_names_the_violated_policy(repo, capsys):
    code, doc = run_json(
        capsys, "-C", str(repo), "preview", "-s", "prod", "--set", "ascendWeight=80", "-o", "json"
    )
    valid(doc, "preview")
    assert code == 1 and doc["passed"] is False
    assert doc["stacks"][0]["violations"] == ["no-unsafe-weight-jump"]


def test_preview_without_a_stack_covers_every_stack(repo, capsys):
    code, doc = run_json(capsys, "-C", str(repo), "preview", "-o", "json")
    assert code == 0
    assert [(s["stack"], s["ascendWeight"]) for s in doc["stacks"]] == [
        ("prod", 5),
        ("staging", 20),
    ]


def test_preview_json_file_keeps_text_on_stdout(repo, tmp_path, capsys):
    target = tmp_path / "preview.json"
    assert main(["-C", str(repo), "preview", "-s", "prod", "--json-file", str(target)]) == 0
    assert capsys.readouterr().out.startswith("Stack prod\nAscend weight: unchanged at 5%")
    assert valid(json.loads(target.read_text()), "preview")["stacks"][0]["stack"] == "prod"


# --- gate (a real Prometheus over backfilled history) ---------------------------------------


def test_gate_json_carries_each_criterion_and_its_numbers(gate_project, prometheus, capsys):  # noqa: F811
    argv = ["-C", str(gate_project), "gate", "-s", "healthy", "--prometheus", prometheus]
    code, doc = run_json(capsys, *argv, "--at", str(END), "-o", "json")
    valid(doc, "gate")
    assert code == 0 and doc["passed"] is True
    (healthy,) = doc["stacks"]
    assert healthy["prometheus"] == prometheus and healthy["at"] == END
    by_key = {c["key"]: c for c in healthy["criteria"]}
    assert [c["status"] for c in healthy["criteria"]] == ["PASS"] * 6  # split and bake too
    errors = by_key["error-ratio"]
    assert errors["ascendValue"] == pytest.approx(HEALTHY["ascend"]["errors"])
    assert errors["nvidiaValue"] == pytest.approx(HEALTHY["nvidia"]["errors"])
    assert by_key["p99-latency"]["ascendValue"] == pytest.approx(HEALTHY["ascend"]["p99"])
    assert by_key["precision"]["ascendValue"] is None


def test_gate_json_over_several_stacks_fails_when_one_fails(gate_project, prometheus, capsys):  # noqa: F811
    argv = ["-C", str(gate_project), "gate", "-s", "healthy", "-s", "errors-10x"]
    code, doc = run_json(capsys, *argv, "--prometheus", prometheus, "--at", str(END), "-o", "json")
    assert code == 1 and doc["passed"] is False
    assert [(s["stack"], s["verdict"]) for s in doc["stacks"]] == [
        ("healthy", "PASSED"),
        ("errors-10x", "FAILED"),
    ]


def test_gate_progress_on_stderr_when_asked(gate_project, prometheus, capsys):  # noqa: F811
    argv = ["-C", str(gate_project), "gate", "-s", "healthy", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END), "--progress"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("gate healthy: 0/21 queries, ")
    assert err[-1].startswith("gate healthy: 21/21 queries, ")


def test_gate_markdown_has_the_charts(gate_project, prometheus, tmp_path):  # noqa: F811
    write_stack(gate_project, "healthy", "healthy")
    report = tmp_path / "gate.md"
    argv = ["-C", str(gate_project), "gate", "-s", "healthy", "--prometheus", prometheus]
    assert main([*argv, "--at", str(END), "--markdown", str(report)]) == 0
    text = report.read_text()
    assert text.count("```mermaid\nxychart-beta\n") == 2
    assert (
        '    title "5xx error ratio (%): NVIDIA 1st line, Ascend 2nd, Ascend\'s limit 3rd"' in text
    )
    # HEALTHY: NVIDIA 0.2 %, Ascend 0.4 % errors; p99 0.8 s and 1.0 s, all window long.
    assert "    line [0.2, 0.2," in text and "    line [0.4, 0.4," in text
    assert "    line [0.8, 0.8," in text and "    line [1, 1," in text


# --- promote, rollback ----------------------------------------------------------------------


def test_promote_json_with_a_skipped_gate(repo, capsys):
    argv = ["-C", str(repo), "promote", "-s", "prod", "--skip-gate", "--reason", "drill"]
    code, doc = run_json(capsys, *argv, "-o", "json")
    valid(doc, "promote")
    assert code == 0
    assert (doc["result"], doc["fromWeight"], doc["toWeight"]) == ("promoted", 5, 20)
    assert doc["gate"] is None and doc["gateSkipped"] == "drill"
    assert doc["preview"]["ascendWeight"] == 20 and doc["preview"]["previousWeight"] == 5
    assert doc["pr"]["title"] == "prod: Ascend weight 5% -> 20% (ladder step 2 of 5)"
    assert "drill" in doc["pr"]["body"]
    assert read_config(repo, "prod")[f"{PROJECT}:ascendWeight"] in ("20", 20)


def test_promote_refusing_is_exit_2_and_no_document(repo, capsys):
    set_config_values(repo, "prod", {"ascendWeight": 20})  # a pending step
    argv = ["-C", str(repo), "promote", "-s", "prod", "--skip-gate", "--reason", "drill"]
    assert main([*argv, "-o", "json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith("error: stack prod: ascendWeight is 20% in the working tree")


def test_rollback_json(repo, capsys):
    code, doc = run_json(capsys, "-C", str(repo), "rollback", "-s", "staging", "-o", "json")
    valid(doc, "rollback")
    assert code == 0
    assert (doc["result"], doc["fromWeight"], doc["toWeight"]) == ("rolled-back", 20, 0)
    assert any(line.strip().startswith("pulumi up --stack staging") for line in doc["apply"])
    assert doc["preview"]["ascendWeight"] == 0


# --- verify-precision -----------------------------------------------------------------------


def test_verify_precision_json(repo, capsys):
    set_config_values(repo, "prod", {"ascend": {"image": NEW_NPU}})
    fast = ["--backoff", "0.01", "--timeout", "5", "--deadline", "20"]
    with OpenAIServer() as nvidia, OpenAIServer() as ascend:
        argv = ["-C", str(repo), "verify-precision", "-s", "prod", "--nvidia", nvidia.url]
        code, doc = run_json(capsys, *argv, "--ascend", ascend.url, *fast, "-o", "json")
    valid(doc, "verify-precision")
    assert code == 0 and doc["recorded"] is True
    assert (doc["ascendImage"], doc["previousVerifiedImage"]) == (NEW_NPU, IMAGE)
    assert doc["check"]["passed"] is True and doc["check"]["prompts"] == 24
    assert read_config(repo, "prod")[f"{PROJECT}:verifiedAscendImage"] == NEW_NPU


# --- -s/--stack -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["promote", "--skip-gate", "--reason", "x"],
        ["rollback"],
        ["verify-precision", "--nvidia", "http://127.0.0.1:1", "--ascend", "http://127.0.0.1:2"],
        ["render"],
        ["policy-config", "--first-deploy", "--base", "main"],
    ],
    ids=lambda argv: argv[0],
)
def test_single_stack_commands_need_a_stack_when_there_are_several(repo, capsys, argv):
    before = {p.name: p.read_bytes() for p in repo.glob("Pulumi.*.yaml")}
    assert main(["-C", str(repo), *argv]) == 2
    assert capsys.readouterr().err == (
        f"error: {argv[0]} needs a stack: pass -s STACK (this repo has 2: prod, staging)\n"
    )
    assert {p.name: p.read_bytes() for p in repo.glob("Pulumi.*.yaml")} == before


def test_the_only_stack_needs_no_flag(tmp_path, monkeypatch, capsys):
    hide_pulumi(monkeypatch)
    repo = make_repo(tmp_path / "one", {"dev": (20, "inference-dev")})
    assert main(["-C", str(repo), "rollback", "--to", "5"]) == 0
    assert "Rolled back stack dev: Ascend weight 20% -> 5%" in capsys.readouterr().out
    assert read_config(repo, "dev")[f"{PROJECT}:ascendWeight"] in ("5", 5)


# --- a fleet stack ---------------------------------------------------------------------------


@pytest.fixture
def fleet_repo(repo: Path) -> Path:
    """`repo` plus the example fleet (chat 50%, embedder 20%, reranker 0%), committed."""
    shutil.copy(REPO / "examples" / "fleet" / "Pulumi.fleet.yaml", repo / "Pulumi.fleet.yaml")
    git(repo, "add", "Pulumi.fleet.yaml")
    git(repo, "commit", "-qm", "fleet")
    return repo


def test_status_of_a_fleet_is_valid_and_per_service(fleet_repo: Path, capsys) -> None:
    code, doc = run_json(capsys, "-C", str(fleet_repo), "status", "-o", "json")
    valid(doc, "status")
    stacks = {s["stack"]: s for s in doc["stacks"]}
    assert code == 0
    assert [(s["service"], s["ladderPosition"]) for s in stacks["fleet"]["services"]] == [
        ("chat", "3/5"),
        ("embedder", "2/5"),
        ("reranker", "0/5"),
    ]
    assert stacks["prod"]["services"][0]["service"] == "inference-service"


def test_promote_and_rollback_of_a_member_are_valid(fleet_repo: Path, capsys) -> None:
    argv = ["-C", str(fleet_repo), "promote", "-s", "fleet", "--service", "embedder"]
    code, doc = run_json(capsys, *argv, "--skip-gate", "--reason", "r", "-o", "json")
    valid(doc, "promote")
    assert (code, doc["service"], doc["fromWeight"], doc["toWeight"]) == (0, "embedder", 20, 50)
    assert doc["preview"]["service"] == "embedder"
    assert [s["ascendWeight"] for s in doc["preview"]["services"]] == [50, 50, 0]
    git(fleet_repo, "checkout", "-q", "Pulumi.fleet.yaml")
    argv = ["-C", str(fleet_repo), "rollback", "-s", "fleet", "--all", "--to", "5", "-o", "json"]
    code, doc = run_json(capsys, *argv)
    valid(doc, "rollback")
    assert (code, doc["service"], doc["result"]) == (0, None, "rolled-back")
    assert doc["services"] == [
        {"service": "chat", "fromWeight": 50, "toWeight": 5},
        {"service": "embedder", "fromWeight": 20, "toWeight": 5},
    ]


def test_preview_of_a_fleet_is_valid(fleet_repo: Path, capsys) -> None:
    argv = ["-C", str(fleet_repo), "preview", "-s", "fleet", "--base", "main", "-o", "json"]
    code, doc = run_json(capsys, *argv)
    valid(doc, "preview")
    assert code == 0
    assert [s["service"] for s in doc["stacks"][0]["services"]] == ["chat", "embedder", "reranker"]
