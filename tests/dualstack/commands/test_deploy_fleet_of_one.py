"""Deploying a fleet-of-one conversion (issue 28): `policy-config --from-stack-output` reads
the stack as it was deployed, whatever layout the merged stack file has now.

A stack converted from one service into `services: {name: ...}` (or back) still exports the
old shape until it is deployed: the single service's outputs at the top (`ascendWeight`), or a
fleet's `services` ({name: the same keys}), as `exports` in components/stack.py writes them.
The stand-in `pulumi` on PATH answers `pulumi stack output NAME --json --stack S` from the
whole outputs object in $FAKE_OUTPUTS as the real CLI does: the output's JSON, or exit 255
with `error: current stack does not have output property 'NAME'`. The repositories are real
(`tests.support.judge_repos`): the base commit on main, the merged stack file in the tree.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest

from components.settings import load_fleet
from dualstack.cli import main
from dualstack.pulumi_cli import StackOutputError, read_fleet_weights
from dualstack.repo.stackfile import read_config
from tests.dualstack.offline.test_redteam_fleet_of_one import SP, fleet_of_one, single
from tests.support.judge_repos import commit, make_repo

STAND_IN = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_PULUMI_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[:2] != ["stack", "output"] or "--json" not in args:
    sys.exit("error: failed to load checkpoint: backend not logged in")
outputs = json.loads(os.environ["FAKE_OUTPUTS"])
names = [a for a in args[2:] if not a.startswith("-") and a != args[args.index("--stack") + 1]]
if not names:
    print(json.dumps(outputs, indent=4))
elif names[0] in outputs:
    print(json.dumps(outputs[names[0]], indent=4))
else:
    sys.stderr.write(f"error: current stack does not have output property '{{names[0]}}'\\n")
    sys.exit(255)
"""


def service_outputs(weight: object, name: str = "inference-service") -> dict[str, object]:
    """One service's outputs as `service_exports` writes them (the fixture prod stack's)."""
    return {
        "ascendImageVerified": True,
        "ascendWeight": weight,
        "deployments": {"ascend": f"{name}-green", "nvidia": f"{name}-blue"},
        "directServices": {"ascend": f"{name}-green", "nvidia": f"{name}-blue"},
        "httpRoute": f"{name}-route",
        "ladderPosition": "step 1 of 5",
        "namespace": "inference",
        "nextStep": 20,
        "replicas": {"ascend": 1, "nvidia": 10},
        "router": "istio",
        "routeWeights": {"ascend": weight, "nvidia": 95},
        "virtualService": f"{name}-vs",
    }


SINGLE_DEPLOYED = service_outputs(5)
"""What a single-service stack at 5 % exports (the top-level outputs)."""
FLEET_DEPLOYED = {"namespace": "inference", "services": {"inference-service": service_outputs(5)}}
"""What a fleet of one, `inference-service` at 5 %, exports."""


@pytest.fixture
def log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in `pulumi` first on PATH; the file it logs its arguments to."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "pulumi"
    script.write_text(STAND_IN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    file = tmp_path / "pulumi.log"
    file.write_text("")
    monkeypatch.setenv("FAKE_PULUMI_LOG", str(file))
    return file


def deployed(monkeypatch: pytest.MonkeyPatch, outputs: object) -> None:
    monkeypatch.setenv("FAKE_OUTPUTS", json.dumps(outputs))


def merged(tmp_path: Path, base: str, head: str) -> Path:
    """A repo whose main holds `base` as the prod stack file and whose tree holds `head`."""
    repo = make_repo(tmp_path)
    (repo / SP).write_text(base, encoding="utf-8")
    commit(repo, "the base")
    (repo / SP).write_text(head, encoding="utf-8")
    return repo


def policy_config(repo: Path, capsys, *args: str) -> tuple[int, dict, str]:
    """`dualstack policy-config --stack prod --from-stack-output --base main --output FILE`:
    (exit code, the written config or {}, stderr)."""
    out = repo.parent / "policy-config.json"
    argv = ["-C", str(repo), "policy-config", "--stack", "prod", "--from-stack-output"]
    code = main([*argv, "--base", "main", "--output", str(out), *args])
    config = json.loads(out.read_text()) if out.exists() else {}
    return code, config, capsys.readouterr().err


def test_a_conversion_to_a_fleet_of_one_is_judged_from_the_single_weight_deployed(
    tmp_path, capsys, monkeypatch, log
):
    repo = merged(tmp_path, single(5), fleet_of_one(5, "chat"))
    deployed(monkeypatch, SINGLE_DEPLOYED)
    code, config, err = policy_config(repo, capsys, "--owner-approved")
    assert code == 0, err
    assert config["no-unsafe-weight-jump"]["services"]["chat"]["previousWeight"] == 5
    assert "previous weight 5% (pulumi stack output ascendWeight)" in err
    assert log.read_text().splitlines() == [
        "stack output services --json --stack prod",
        "stack output ascendWeight --json --stack prod",
    ]


def test_a_conversion_back_to_one_service_is_judged_from_the_fleet_deployed(
    tmp_path, capsys, monkeypatch, log
):
    repo = merged(tmp_path, fleet_of_one(20), single(20))
    deployed(
        monkeypatch, {**FLEET_DEPLOYED, "services": {"inference-service": service_outputs(20)}}
    )
    code, config, err = policy_config(repo, capsys, "--owner-approved")
    assert code == 0, err
    assert config["no-unsafe-weight-jump"]["previousWeight"] == 20
    assert "previous weight inference-service 20% (pulumi stack output services)" in err


def test_a_conversion_raising_the_weight_is_judged_as_a_raise(tmp_path, capsys, monkeypatch, log):
    """The deployed 5 %, not 0 % and not the merged 50 %: a jump of more than a rung."""
    repo = merged(tmp_path, single(5), fleet_of_one(50))
    deployed(monkeypatch, SINGLE_DEPLOYED)
    code, config, err = policy_config(repo, capsys, "--owner-approved")
    assert code == 0, err
    facts = config["no-unsafe-weight-jump"]["services"]["inference-service"]
    assert facts["previousWeight"] == 5


@pytest.mark.parametrize(
    ("outputs", "why"),
    [
        ({}, "current stack does not have output property 'services'"),
        ({"namespace": "inference"}, "does not have output property"),
        (service_outputs("5"), "returned '\"5\"', not a weight 0..100"),
        (service_outputs(None), "returned 'null', not a weight 0..100"),
        ({"services": [5]}, "not a map of service -> outputs"),
        ({"services": {"inference-service": {"ascendWeight": 500}}}, "not a weight 0..100"),
        ({"services": {"inference-service": {}}}, "(inference-service) returned 'null'"),
    ],
    ids=["no outputs", "neither output", "a string", "null", "a list", "500", "no weight"],
)
def test_missing_or_malformed_outputs_fail_closed_in_one_line(
    tmp_path, capsys, monkeypatch, log, outputs, why
):
    repo = merged(tmp_path, single(5), fleet_of_one(5))
    deployed(monkeypatch, outputs)
    code, config, err = policy_config(repo, capsys, "--owner-approved")
    assert (code, config) == (2, {})
    assert len(err.splitlines()) == 1, err
    assert why in err


def test_a_stack_never_deployed_points_at_first_deploy(tmp_path, capsys, monkeypatch, log):
    repo = merged(tmp_path, single(5), fleet_of_one(5))
    deployed(monkeypatch, {})
    code, _config, err = policy_config(repo, capsys)
    assert code == 2
    assert err.rstrip().endswith("(a stack never deployed has no output: use --first-deploy)")


# --- the reader itself, for the rollback's targets (`traffic_first`) ---------------------


def fleet_of(repo: Path):
    return load_fleet(read_config(repo, "prod"))


@pytest.mark.parametrize(
    ("head", "outputs", "expected"),
    [
        (fleet_of_one(5, "chat"), SINGLE_DEPLOYED, {"chat": 5}),
        (single(5), FLEET_DEPLOYED, {"inference-service": 5}),
        (fleet_of_one(5, "chat"), {"services": {"chat": service_outputs(5, "chat")}}, {"chat": 5}),
        (single(5), SINGLE_DEPLOYED, {"inference-service": 5}),
    ],
    ids=["single deployed, fleet of one", "fleet deployed, single", "fleet", "single"],
)
def test_read_fleet_weights_keys_the_deployed_weight_by_the_stack_files_service(
    tmp_path, monkeypatch, log, head, outputs, expected
):
    repo = merged(tmp_path, single(5), head)
    deployed(monkeypatch, outputs)
    assert read_fleet_weights(repo, "prod", fleet_of(repo)) == expected


def test_read_fleet_weights_renames_a_fleet_of_one_deployed_under_another_name(
    tmp_path, monkeypatch, log
):
    """Back to one service: the one member deployed is the single service, whatever it was
    called (`Fleet.laid_out_as`)."""
    repo = merged(tmp_path, fleet_of_one(5, "chat"), single(5))
    deployed(monkeypatch, {"services": {"chat": service_outputs(5, "chat")}})
    (name,) = fleet_of(repo).names
    assert read_fleet_weights(repo, "prod", fleet_of(repo)) == {name: 5}


def test_read_fleet_weights_refuses_one_weight_for_several_services(tmp_path, monkeypatch, log):
    two = fleet_of_one(5, "chat") + fleet_of_one(0, "embedder").split("services:\n", 1)[1]
    repo = merged(tmp_path, single(5), two)
    assert fleet_of(repo).names == ["chat", "embedder"]
    deployed(monkeypatch, SINGLE_DEPLOYED)
    with pytest.raises(StackOutputError, match="one service's ascendWeight \\(5\\), not the"):
        read_fleet_weights(repo, "prod", fleet_of(repo))


# --- --previous-weight N: the PR judge's online preview passes the deployed number ---------


def by_hand(repo: Path, capsys, weight: str) -> tuple[int, dict, str]:
    out = repo.parent / "policy-config.json"
    argv = ["-C", str(repo), "policy-config", "--stack", "prod", "--previous-weight", weight]
    code = main([*argv, "--base", "main", "--owner-approved", "--output", str(out)])
    config = json.loads(out.read_text()) if out.exists() else {}
    return code, config, capsys.readouterr().err


def test_one_previous_weight_is_the_deployed_single_service_of_a_fleet_of_one(tmp_path, capsys):
    repo = merged(tmp_path, single(20), fleet_of_one(20, "chat"))
    code, config, err = by_hand(repo, capsys, "20")
    assert code == 0, err
    assert config["no-unsafe-weight-jump"]["services"]["chat"]["previousWeight"] == 20


def test_one_previous_weight_for_a_fleet_of_one_at_the_base_too_is_refused(tmp_path, capsys):
    """The base declares the member as well: one number says nothing of it (the base's judge
    refuses it, `wire_previous`)."""
    repo = merged(tmp_path, fleet_of_one(5, "chat"), fleet_of_one(5, "chat"))
    code, config, err = by_hand(repo, capsys, "5")
    assert (code, config) == (2, {})
    assert "previousWeight 5 is one number, but the stack holds the services chat" in err
